/* SPDX-License-Identifier: MIT */
/*
 * hostile_flood SOCKET CONNS SECONDS: keeps CONNS connections to vgpud's
 * client socket open for SECONDS without ever saying hello, as a local
 * user who wants to lock everyone else out would (issue 16): every
 * connection vgpud closes, with a refusal or without, is opened again at
 * once. Never blocks: connects are non-blocking (a full backlog is
 * EAGAIN, tried again on the next turn).
 *
 * Prints "flood: started" once the first CONNS connects were tried, and
 * at the end how often it connected, how vgpud answered and each
 * distinct refusal message with its count, so a test can check what the
 * flooding user was told. Exit 0, or 1 when the socket cannot be reached.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hostile.h"

#define FLOOD_MAX_CONNS	   4096
#define FLOOD_MAX_MESSAGES 16 /* distinct refusal messages kept */

struct flood_message {
	int32_t status;
	unsigned long count;
	char text[VGPU_MESSAGE_MAX];
};

struct flood {
	struct sockaddr_un addr;
	struct pollfd *fds;
	int conns;
	unsigned long connects, replies, closed, again;
	struct flood_message msgs[FLOOD_MAX_MESSAGES];
	int nmsgs;
	unsigned long other_msgs; /* past FLOOD_MAX_MESSAGES distinct ones */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A new connection in slot i: 1 connected, 0 backlog full, -1 fatal. */
static int flood_connect(struct flood *f, int i)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC,
			0);

	if (fd < 0) {
		/* out of descriptors here is our limit, not vgpud's answer */
		f->again++;
		return 0;
	}
	if (connect(fd, (struct sockaddr *)&f->addr, sizeof(f->addr)) < 0 &&
	    errno != EINPROGRESS) {
		int err = errno;

		close(fd);
		if (err == EAGAIN) {
			f->again++;
			return 0;
		}
		fprintf(stderr, "flood: connect %s: %s\n", f->addr.sun_path,
			strerror(err));
		return -1;
	}
	f->fds[i].fd = fd;
	f->fds[i].events = POLLIN;
	f->connects++;
	return 1;
}

static void flood_tally(struct flood *f, const struct vgpu_hello_reply *r)
{
	char text[VGPU_MESSAGE_MAX];
	int i;

	f->replies++;
	snprintf(text, sizeof(text), "%.*s", VGPU_MESSAGE_MAX - 1, r->message);
	for (i = 0; i < f->nmsgs; i++) {
		if (f->msgs[i].status == r->status &&
		    !strcmp(f->msgs[i].text, text)) {
			f->msgs[i].count++;
			return;
		}
	}
	if (f->nmsgs == FLOOD_MAX_MESSAGES) {
		f->other_msgs++;
		return;
	}
	f->msgs[f->nmsgs].status = r->status;
	f->msgs[f->nmsgs].count = 1;
	memcpy(f->msgs[f->nmsgs].text, text, sizeof(text));
	f->nmsgs++;
}

/* Slot i became readable or hung up: read vgpud's answer, if any, and
 * close it, so the next turn opens it again. */
static void flood_answer(struct flood *f, int i)
{
	struct vgpu_hello_reply r;
	ssize_t n = recv(f->fds[i].fd, &r, sizeof(r), MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == (ssize_t)sizeof(r))
		flood_tally(f, &r);
	else
		f->closed++;
	close(f->fds[i].fd);
	f->fds[i].fd = -1;
}

int main(int argc, char **argv)
{
	struct flood f = {.addr = {.sun_family = AF_UNIX}};
	double end;
	bool started = false;
	int i;

	if (argc != 4) {
		fprintf(stderr, "usage: hostile_flood SOCKET CONNS SECONDS\n");
		return 2;
	}
	f.conns = atoi(argv[2]);
	end = now_s() + atof(argv[3]);
	if (f.conns < 1 || f.conns > FLOOD_MAX_CONNS ||
	    strlen(argv[1]) >= sizeof(f.addr.sun_path)) {
		fprintf(stderr, "hostile_flood: CONNS 1 to %d, a socket path\n",
			FLOOD_MAX_CONNS);
		return 2;
	}
	strcpy(f.addr.sun_path, argv[1]);
	f.fds = calloc(f.conns, sizeof(*f.fds));
	if (!f.fds)
		return 1;
	for (i = 0; i < f.conns; i++)
		f.fds[i].fd = -1;
	while (now_s() < end) {
		bool empty = false;
		int r;

		for (i = 0; i < f.conns; i++) {
			if (f.fds[i].fd >= 0)
				continue;
			r = flood_connect(&f, i);
			if (r < 0)
				return 1;
			if (r == 0) {
				empty = true;
				break; /* the backlog is full: next turn */
			}
		}
		if (!started) {
			printf("flood: started, %lu connects so far\n",
			       f.connects);
			fflush(stdout);
			started = true;
		}
		/* a short wait while slots are empty: a flooder does not
		 * rest, but the machine running the test must go on */
		r = poll(f.fds, f.conns, empty ? 1 : 50);
		for (i = 0; r > 0 && i < f.conns; i++)
			if (f.fds[i].fd >= 0 && f.fds[i].revents)
				flood_answer(&f, i);
	}
	printf("flood: %lu connects, %lu replies, %lu closed without a reply, "
	       "%lu full-backlog retries\n",
	       f.connects, f.replies, f.closed, f.again);
	for (i = 0; i < f.nmsgs; i++)
		printf("flood: status %d x%lu: \"%s\"\n", f.msgs[i].status,
		       f.msgs[i].count, f.msgs[i].text);
	if (f.other_msgs)
		printf("flood: %lu replies with other messages\n",
		       f.other_msgs);
	for (i = 0; i < f.conns; i++)
		if (f.fds[i].fd >= 0)
			close(f.fds[i].fd);
	free(f.fds);
	return 0;
}
