/* SPDX-License-Identifier: MIT */
/*
 * Departures: noticing that a client left while its thread is busy.
 *
 * A client thread sees its socket close only when it sleeps between
 * descriptors (worker_client.c). One that is inside a call, a stream
 * synchronise, a free or a region destroy waiting behind a host function
 * (a stream gate, worker_gate.c), would wait for ever once the client is
 * gone, since only the client's process runs host functions: its slot
 * and its memory were lost for good (issue 16: 66 killed clients filled
 * all 64 slots). So a thread of its own watches every client socket for
 * a hang-up, independent of the client threads and of the main loop
 * (which may itself wait for a client thread, for a freeze), and tells
 * worker_client.c, which opens the client's gates and asks its thread to
 * stop.
 *
 * Each socket is registered once, one-shot, for hang-up only (data on it
 * is the client thread's business), with the client's id as the key: the
 * client is looked up under clients_lock when the event comes, so an event
 * for a client already freed finds nothing. Closing the socket takes it
 * out of the epoll set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "worker.h"

#define DEPART_STOP_KEY 0 /* client ids start at 1 */
#define DEPART_EVENTS	16

struct worker_depart {
	int epfd, stop_fd;
	pthread_t thread;
};

static void *depart_main(void *arg)
{
	struct worker *w = arg;
	struct worker_depart *d = w->depart;
	struct epoll_event ev[DEPART_EVENTS];
	int i, n;

	for (;;) {
		n = epoll_wait(d->epfd, ev, DEPART_EVENTS, -1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			worker_log(w, "departures: epoll_wait: %s",
				   strerror(errno));
			return NULL;
		}
		for (i = 0; i < n; i++) {
			if (ev[i].data.u32 == DEPART_STOP_KEY)
				return NULL;
			worker_client_departed(w, ev[i].data.u32);
		}
	}
}

int worker_depart_start(struct worker *w)
{
	struct worker_depart *d = calloc(1, sizeof(*d));
	struct epoll_event ev = {.events = EPOLLIN,
				 .data.u32 = DEPART_STOP_KEY};
	int rc;

	if (!d)
		return -ENOMEM;
	d->epfd = epoll_create1(EPOLL_CLOEXEC);
	d->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (d->epfd < 0 || d->stop_fd < 0 ||
	    epoll_ctl(d->epfd, EPOLL_CTL_ADD, d->stop_fd, &ev) < 0) {
		rc = -errno;
		goto fail;
	}
	w->depart = d;
	rc = -pthread_create(&d->thread, NULL, depart_main, w);
	if (!rc)
		return 0;
	w->depart = NULL;
fail:
	if (d->epfd >= 0)
		close(d->epfd);
	if (d->stop_fd >= 0)
		close(d->stop_fd);
	free(d);
	return rc;
}

void worker_depart_stop(struct worker *w)
{
	struct worker_depart *d = w->depart;
	uint64_t one = 1;

	if (!d)
		return;
	if (write(d->stop_fd, &one, sizeof(one)) < 0)
		(void)errno; /* only at the counter's top: it is set */
	pthread_join(d->thread, NULL);
	close(d->epfd);
	close(d->stop_fd);
	free(d);
	w->depart = NULL;
}

int worker_depart_watch(struct worker *w, int sock, uint32_t id)
{
	struct epoll_event ev = {
		.events = EPOLLRDHUP | EPOLLONESHOT,
		.data.u32 = id,
	};

	if (!w->depart || id == DEPART_STOP_KEY)
		return 0;
	if (epoll_ctl(w->depart->epfd, EPOLL_CTL_ADD, sock, &ev) < 0)
		return -errno;
	return 0;
}
