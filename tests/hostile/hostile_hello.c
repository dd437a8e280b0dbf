/* SPDX-License-Identifier: MIT */
/*
 * hostile_hello SOCKET NAME ATTACK: one bad (or good) handshake on vgpud's
 * client socket, and a check of vgpud's answer. Exit 0 when vgpud
 * answered as it must, 1 otherwise (with the reason on stderr).
 *
 *   garbage          80 random bytes            -> BAD_MESSAGE or close
 *   truncated        half a hello, then EOF     -> BAD_MESSAGE or close
 *   oversized        a hello plus 4 KiB         -> BAD_MESSAGE or close
 *   empty            connect, shutdown          -> close, no crash
 *   wrong-magic      magic flipped              -> BAD_MESSAGE
 *   wrong-major      major + 1                  -> BAD_VERSION + message
 *   older-major      major 0                    -> BAD_VERSION + message
 *   newer-minor      same major, minor + 7      -> OK (compatible)
 *   nonzero-flags    flags = 1                  -> BAD_MESSAGE
 *   unterminated     64 name bytes, no NUL      -> BAD_MESSAGE/NO_SUCH_VGPU
 *   unknown-name     a name nobody created      -> NO_SUCH_VGPU
 *   permission       a valid hello (run it as another user) -> PERMISSION
 *   ok               a valid hello              -> OK with 3 descriptors
 *   late MS          connect, wait MS, then a valid hello -> OK (a client
 *                    that waits its turn is served during a flood)
 *   silent SECONDS   connect, say nothing, hold the connection
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hostile.h"

static const char *const hello_status_names[] = {
	"VGPU_HELLO_OK",	  "VGPU_HELLO_BAD_MESSAGE",
	"VGPU_HELLO_BAD_VERSION", "VGPU_HELLO_NO_SUCH_VGPU",
	"VGPU_HELLO_PERMISSION",  "VGPU_HELLO_UNAVAILABLE",
	"VGPU_HELLO_RESOURCES",
};

static const char *status_name(int32_t s)
{
	if (s >= 0 && s < (int32_t)(sizeof(hello_status_names) /
				    sizeof(hello_status_names[0])))
		return hello_status_names[s];
	return "an unknown status";
}

/*
 * Reads vgpud's answer and compares it with what the attack deserves:
 * one of the two statuses (want2 = -1 for none), or, when may_close, the
 * connection closed without a reply.
 */
static int expect(int fd, int32_t want1, int32_t want2, int may_close)
{
	struct vgpu_hello_reply reply;
	int fds[3], nfds, r;

	r = hostile_recv_reply(fd, &reply, fds, &nfds);
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	if (r < 0)
		return 1;
	if (r == 0) {
		if (may_close) {
			printf("vgpud closed the connection without a reply\n");
			return 0;
		}
		fprintf(stderr,
			"vgpud closed the connection without the "
			"reply %s\n",
			status_name(want1));
		return 1;
	}
	printf("reply: %s (%d): \"%s\"\n", status_name(reply.status),
	       reply.status, reply.message);
	if (reply.magic != VGPU_PROTO_MAGIC ||
	    reply.major != VGPU_PROTO_MAJOR) {
		fprintf(stderr, "reply has magic 0x%x major %u\n", reply.magic,
			reply.major);
		return 1;
	}
	if (reply.status != want1 && reply.status != want2) {
		fprintf(stderr, "expected %s, got %s\n", status_name(want1),
			status_name(reply.status));
		return 1;
	}
	if (reply.status != VGPU_HELLO_OK && reply.message[0] == '\0') {
		fprintf(stderr, "refusal without a message saying why\n");
		return 1;
	}
	if (reply.status == VGPU_HELLO_OK && nfds != 3) {
		fprintf(stderr, "OK with %d descriptors instead of 3\n", nfds);
		return 1;
	}
	if (reply.status != VGPU_HELLO_OK && nfds != 0) {
		fprintf(stderr, "a refusal carried %d descriptors\n", nfds);
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *path, *name, *attack;
	struct vgpu_hello h;
	char big[sizeof(h) + 4096];
	int fd, rc;

	if (argc < 4) {
		fprintf(stderr, "usage: hostile_hello SOCKET NAME ATTACK\n");
		return 2;
	}
	path = argv[1];
	name = argv[2];
	attack = argv[3];
	fd = hostile_connect(path, SOCK_SEQPACKET);
	if (fd < 0)
		return 1;
	hostile_hello_init(&h, name);

	if (!strcmp(attack, "garbage")) {
		srand(getpid());
		for (size_t i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = rand();
		h.magic = 0x12345678; /* never the right one by chance */
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_BAD_MESSAGE, -1, 1);
	} else if (!strcmp(attack, "truncated")) {
		hostile_send(fd, &h, sizeof(h) / 2);
		shutdown(fd, SHUT_WR);
		rc = expect(fd, VGPU_HELLO_BAD_MESSAGE, -1, 1);
	} else if (!strcmp(attack, "oversized")) {
		memset(big, 'x', sizeof(big));
		memcpy(big, &h, sizeof(h));
		hostile_send(fd, big, sizeof(big));
		rc = expect(fd, VGPU_HELLO_BAD_MESSAGE, -1, 1);
	} else if (!strcmp(attack, "empty")) {
		shutdown(fd, SHUT_WR);
		rc = expect(fd, VGPU_HELLO_BAD_MESSAGE, -1, 1);
	} else if (!strcmp(attack, "wrong-magic")) {
		h.magic = ~VGPU_PROTO_MAGIC;
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_BAD_MESSAGE, -1, 0);
	} else if (!strcmp(attack, "wrong-major")) {
		h.major = VGPU_PROTO_MAJOR + 1;
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_BAD_VERSION, -1, 0);
	} else if (!strcmp(attack, "older-major")) {
		h.major = VGPU_PROTO_MAJOR - 1;
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_BAD_VERSION, -1, 0);
	} else if (!strcmp(attack, "newer-minor")) {
		h.minor = VGPU_PROTO_MINOR + 7;
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_OK, -1, 0);
	} else if (!strcmp(attack, "nonzero-flags")) {
		h.flags = 1;
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_BAD_MESSAGE, -1, 0);
	} else if (!strcmp(attack, "unterminated")) {
		memset(h.vgpu_name, 'a', sizeof(h.vgpu_name));
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_BAD_MESSAGE, VGPU_HELLO_NO_SUCH_VGPU,
			    0);
	} else if (!strcmp(attack, "unknown-name")) {
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_NO_SUCH_VGPU, -1, 0);
	} else if (!strcmp(attack, "permission")) {
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_PERMISSION, -1, 0);
	} else if (!strcmp(attack, "ok")) {
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_OK, -1, 0);
	} else if (!strcmp(attack, "late")) {
		usleep((argc > 4 ? atoi(argv[4]) : 500) * 1000);
		hostile_send(fd, &h, sizeof(h));
		rc = expect(fd, VGPU_HELLO_OK, -1, 0);
	} else if (!strcmp(attack, "silent")) {
		int secs = argc > 4 ? atoi(argv[4]) : 5;

		printf("silent: connected\n");
		fflush(stdout);
		sleep(secs);
		rc = 0;
	} else {
		fprintf(stderr, "unknown attack %s\n", attack);
		rc = 2;
	}
	close(fd);
	return rc;
}
