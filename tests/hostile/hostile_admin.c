/* SPDX-License-Identifier: MIT */
/*
 * hostile_admin SOCKET ATTACK: one bad request on vgpud's admin socket
 * (include/vgpu/admin.h) and a check of the answer: a response with
 * VGPU_ADMIN_BAD_REQUEST (BAD_VERSION for a wrong major) and a sentence,
 * or for a packet that is not a request at all, at least a closed
 * connection. Exit 0 when vgpud answered as it must.
 *
 * Attacks: garbage, truncated, oversized, empty, wrong-magic, wrong-major,
 * nonzero-flags, unterminated-name, unknown-op, zero-sms, huge-sms,
 * zero-memory, destroy-unknown, list-past-end, silent SECONDS, permission
 * (run as a user other than root: connect refused or PERMISSION).
 * Admin 1.1: bad-isolation, bad-consumer-kind, group-without-gid,
 * user-with-gid, huge-time-limit, show-unterminated, show-unknown,
 * plan-check-bad-isolation, plan-check-huge-sms, plan-check-ok (answers
 * OK and creates nothing), gpus-with-garbage (reserved bytes and name
 * ignored: OK).
 * Admin 1.4 (swap): swap-gpu-mode, swap-vgpu-mode, swap-idle, swap-wait,
 * swap-reserved, swap-unterminated, swap-no-gpu, swap-flags (CREATE with
 * swap allowed and never), swap-query (OK).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vgpu/admin.h>

#include "hostile.h"

/* Reads the response: 1 read, 0 closed without one, -1 timeout/error. */
static int read_response(int fd, struct vgpu_admin_response *resp)
{
	ssize_t n = recv(fd, resp, sizeof(*resp), 0);

	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return 0;
	if (n < 0) {
		fprintf(stderr, "no admin response within %d s: %s\n",
			HOSTILE_TIMEOUT_S, strerror(errno));
		return -1;
	}
	if ((size_t)n != sizeof(*resp)) {
		fprintf(stderr, "admin response of %zd bytes, expected %zu\n",
			n, sizeof(*resp));
		return -1;
	}
	return 1;
}

/* want: the status expected; may_close: a silent close is acceptable. */
static int expect(int fd, int32_t want, int may_close)
{
	static struct vgpu_admin_response resp;
	int r = read_response(fd, &resp);

	if (r < 0)
		return 1;
	if (r == 0) {
		if (may_close) {
			printf("vgpud closed the connection without a "
			       "response\n");
			return 0;
		}
		fprintf(stderr,
			"vgpud closed without a response (expected "
			"status %d)\n",
			want);
		return 1;
	}
	if (memchr(resp.message, '\0', sizeof(resp.message)) == NULL) {
		fprintf(stderr, "response message is not NUL-terminated\n");
		return 1;
	}
	printf("response: status %d: \"%s\"\n", resp.status, resp.message);
	if (resp.magic != VGPU_ADMIN_MAGIC || resp.major != VGPU_ADMIN_MAJOR) {
		fprintf(stderr, "response magic 0x%x major %u\n", resp.magic,
			resp.major);
		return 1;
	}
	if (resp.status != want) {
		fprintf(stderr, "expected status %d, got %d\n", want,
			resp.status);
		return 1;
	}
	if (want != VGPU_ADMIN_OK && resp.message[0] == '\0') {
		fprintf(stderr, "refusal without a message saying why\n");
		return 1;
	}
	if (resp.count > VGPU_ADMIN_LIST_MAX) {
		fprintf(stderr, "response count %u > %d\n", resp.count,
			VGPU_ADMIN_LIST_MAX);
		return 1;
	}
	return 0;
}

static void request_init(struct vgpu_admin_request *q, uint32_t op)
{
	memset(q, 0, sizeof(*q));
	q->magic = VGPU_ADMIN_MAGIC;
	q->major = VGPU_ADMIN_MAJOR;
	q->minor = VGPU_ADMIN_MINOR;
	q->op = op;
	q->gpu = VGPU_ADMIN_GPU_ANY;
	q->uid = VGPU_ADMIN_UID_PEER;
	q->time_limit_ms = VGPU_ADMIN_TIME_DEFAULT;
}

int main(int argc, char **argv)
{
	static char big[sizeof(struct vgpu_admin_request) + 4096];
	struct vgpu_admin_request q;
	const char *attack;
	int fd, rc;

	if (argc < 3) {
		fprintf(stderr, "usage: hostile_admin SOCKET ATTACK\n");
		return 2;
	}
	attack = argv[2];
	fd = hostile_connect(argv[1], SOCK_SEQPACKET);
	if (fd < 0) {
		if (!strcmp(attack, "permission") && errno == EACCES) {
			printf("connect refused (EACCES), as expected\n");
			return 0;
		}
		return 1;
	}
	request_init(&q, VGPU_ADMIN_CREATE);
	snprintf(q.name, sizeof(q.name), "hostile");
	q.sms = 8;
	q.memory = 64u << 20;

	if (!strcmp(attack, "garbage")) {
		srand(getpid());
		for (size_t i = 0; i < sizeof(q); i++)
			((unsigned char *)&q)[i] = rand();
		q.magic = 0x12345678;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 1);
	} else if (!strcmp(attack, "truncated")) {
		hostile_send(fd, &q, sizeof(q) / 2);
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 1);
	} else if (!strcmp(attack, "oversized")) {
		memset(big, 'x', sizeof(big));
		memcpy(big, &q, sizeof(q));
		hostile_send(fd, big, sizeof(big));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 1);
	} else if (!strcmp(attack, "empty")) {
		hostile_send(fd, &q, 0);
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 1);
	} else if (!strcmp(attack, "wrong-magic")) {
		q.magic = VGPU_PROTO_MAGIC; /* the client protocol's */
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "wrong-major")) {
		q.major = VGPU_ADMIN_MAJOR + 1;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_VERSION, 0);
	} else if (!strcmp(attack, "nonzero-flags")) {
		q.flags = 0x80000000u; /* no op defines it */
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "unterminated-name")) {
		memset(q.name, 'n', sizeof(q.name));
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "unknown-op")) {
		q.op = 99;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "zero-sms")) {
		q.sms = 0;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "huge-sms")) {
		q.sms = 0xfffffff0u;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_NO_ROOM, 0);
	} else if (!strcmp(attack, "zero-memory")) {
		q.memory = 0;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "destroy-unknown")) {
		request_init(&q, VGPU_ADMIN_DESTROY);
		snprintf(q.name, sizeof(q.name), "no-such-vgpu");
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_NO_SUCH_VGPU, 0);
	} else if (!strcmp(attack, "list-past-end")) {
		request_init(&q, VGPU_ADMIN_LIST);
		q.first = 0xffffffffu;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_OK, 0);
	} else if (!strcmp(attack, "bad-isolation")) {
		q.isolation = 7;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "bad-consumer-kind")) {
		q.consumer_kind = 0x80000000u;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "group-without-gid")) {
		q.consumer_kind = VGPU_ADMIN_CONSUMER_GROUP;
		q.gid = 0xffffffffu;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "user-with-gid")) {
		q.gid = 5;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "huge-time-limit")) {
		q.time_limit_ms = 0xfffffff0u;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "show-unterminated")) {
		request_init(&q, VGPU_ADMIN_SHOW);
		memset(q.name, 's', sizeof(q.name));
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "show-unknown")) {
		request_init(&q, VGPU_ADMIN_SHOW);
		snprintf(q.name, sizeof(q.name), "no-such-vgpu");
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_NO_SUCH_VGPU, 0);
	} else if (!strcmp(attack, "plan-check-bad-isolation")) {
		q.op = VGPU_ADMIN_PLAN_CHECK;
		q.isolation = 2;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "plan-check-huge-sms")) {
		q.op = VGPU_ADMIN_PLAN_CHECK;
		q.sms = 0xffffffffu;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_NO_ROOM, 0);
	} else if (!strcmp(attack, "plan-check-ok")) {
		q.op = VGPU_ADMIN_PLAN_CHECK;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_OK, 0);
	} else if (!strcmp(attack, "gpus-with-garbage")) {
		request_init(&q, VGPU_ADMIN_GPUS);
		memset(q.name, 'g', sizeof(q.name));
		memset(q.reserved, 0xff, sizeof(q.reserved));
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_OK, 0);
	} else if (!strncmp(attack, "swap-", 5) &&
		   strcmp(attack, "swap-flags")) {
		int32_t want = VGPU_ADMIN_BAD_REQUEST;

		request_init(&q, VGPU_ADMIN_SWAP);
		q.gpu = 0;
		q.swap.mode = VGPU_ADMIN_SWAP_ON;
		if (!strcmp(attack, "swap-gpu-mode")) {
			q.swap.mode = VGPU_ADMIN_SWAP_GPU; /* a vGPU's only */
		} else if (!strcmp(attack, "swap-vgpu-mode")) {
			snprintf(q.name, sizeof(q.name), "a");
			q.swap.mode = 9;
		} else if (!strcmp(attack, "swap-idle")) {
			q.swap.idle_ms = 1;
		} else if (!strcmp(attack, "swap-wait")) {
			q.swap.wait_ms = 0xffff;
		} else if (!strcmp(attack, "swap-reserved")) {
			q.swap.reserved = 1;
		} else if (!strcmp(attack, "swap-unterminated")) {
			memset(q.name, 'w', sizeof(q.name));
		} else if (!strcmp(attack, "swap-no-gpu")) {
			q.gpu = VGPU_ADMIN_GPU_ANY;
		} else if (!strcmp(attack, "swap-query")) {
			q.gpu = VGPU_ADMIN_GPU_ANY;
			q.swap.mode = 0;
			q.first = 0xffffffffu;
			want = VGPU_ADMIN_OK;
		} else {
			fprintf(stderr, "unknown attack %s\n", attack);
			close(fd);
			return 2;
		}
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, want, 0);
	} else if (!strcmp(attack, "swap-flags")) {
		q.flags = VGPU_ADMIN_CREATE_SWAP_ALLOW |
			  VGPU_ADMIN_CREATE_SWAP_NEVER;
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_BAD_REQUEST, 0);
	} else if (!strcmp(attack, "permission")) {
		request_init(&q, VGPU_ADMIN_LIST);
		hostile_send(fd, &q, sizeof(q));
		rc = expect(fd, VGPU_ADMIN_PERMISSION, 1);
	} else if (!strcmp(attack, "silent")) {
		printf("silent: connected\n");
		fflush(stdout);
		sleep(argc > 3 ? atoi(argv[3]) : 5);
		rc = 0;
	} else {
		fprintf(stderr, "unknown attack %s\n", attack);
		rc = 2;
	}
	close(fd);
	return rc;
}
