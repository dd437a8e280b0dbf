/* SPDX-License-Identifier: MIT */
/*
 * Cooperative kernels and resizes. A cooperative kernel needs all of its
 * blocks resident at once on the slice it was checked against; one still
 * queued on the old green context when a resize switches the slice would
 * start later on SMs that may belong to another vGPU by then. So every
 * cooperative launch records an event behind it, and a resize first
 * waits for those (worker_coop_drain), with new cooperative launches held
 * (a read lock around the check and the launch, the resize's write lock
 * around the wait and the switch): the slice never changes under one.
 * The wait is bounded (an endless kernel would hold the resize for good):
 * past it the resize is refused, and says why.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

#include "worker.h"

#define COOP_MAX 64 /* cooperative kernels in flight tracked; then a wait */

struct worker_coop {
	pthread_rwlock_t lock; /* launches read, a resize writes */
	pthread_mutex_t list_lock;
	struct backend_event *ev[COOP_MAX]; /* one behind each launch */
	uint32_t n;
};

int worker_coop_init(struct worker *w)
{
	struct worker_coop *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	pthread_rwlock_init(&c->lock, NULL);
	pthread_mutex_init(&c->list_lock, NULL);
	w->coop = c;
	return 0;
}

void worker_coop_fini(struct worker *w)
{
	struct worker_coop *c = w->coop;
	uint32_t i;

	if (!c)
		return;
	for (i = 0; i < c->n; i++)
		w->ops->event_destroy(w->be, c->ev[i]);
	pthread_rwlock_destroy(&c->lock);
	pthread_mutex_destroy(&c->list_lock);
	free(c);
	w->coop = NULL;
}

void worker_coop_hold(struct worker *w)
{
	if (w->coop)
		pthread_rwlock_rdlock(&w->coop->lock);
}

/* Drop the events of kernels that are done. Under list_lock. */
static void coop_prune(struct worker *w, struct worker_coop *c)
{
	uint32_t i = 0;
	int rc;

	while (i < c->n) {
		rc = w->ops->event_query(w->be, c->ev[i]);
		if (rc == CUDA_ERROR_NOT_READY) {
			i++;
			continue;
		}
		w->ops->event_destroy(w->be, c->ev[i]);
		c->ev[i] = c->ev[--c->n];
	}
}

void worker_coop_release(struct worker *w, struct backend_stream *bs,
			 int launched)
{
	struct worker_coop *c = w->coop;
	struct backend_event *ev;

	if (!c)
		return;
	if (launched) {
		pthread_mutex_lock(&c->list_lock);
		if (c->n == COOP_MAX)
			coop_prune(w, c);
		/* still full: this one waits for the oldest's end */
		if (c->n == COOP_MAX)
			w->ops->event_sync(w->be, c->ev[0]);
		if (c->n == COOP_MAX)
			coop_prune(w, c);
		if (c->n < COOP_MAX &&
		    !w->ops->event_create(w->be, CU_EVENT_DISABLE_TIMING,
					  &ev)) {
			if (!w->ops->event_record(w->be, ev, bs))
				c->ev[c->n++] = ev;
			else
				w->ops->event_destroy(w->be, ev);
		}
		pthread_mutex_unlock(&c->list_lock);
	}
	pthread_rwlock_unlock(&c->lock);
}

int worker_coop_drain(struct worker *w, uint64_t bound_ns, uint32_t *left,
		      uint64_t *waited_ns)
{
	struct worker_coop *c = w->coop;
	uint64_t t0 = worker_now_ns();
	struct timespec nap = {0, 1000000}; /* 1 ms */
	uint32_t first;

	*left = 0;
	*waited_ns = 0;
	if (!c)
		return 0;
	pthread_rwlock_wrlock(&c->lock);
	pthread_mutex_lock(&c->list_lock);
	coop_prune(w, c);
	first = c->n;
	while (c->n && worker_now_ns() - t0 < bound_ns) {
		pthread_mutex_unlock(&c->list_lock);
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&c->list_lock);
		coop_prune(w, c);
	}
	*left = c->n;
	pthread_mutex_unlock(&c->list_lock);
	*waited_ns = first ? worker_now_ns() - t0 : 0;
	if (*left) {
		pthread_rwlock_unlock(&c->lock);
		return -EBUSY;
	}
	return 0;
}

void worker_coop_resume(struct worker *w)
{
	if (w->coop)
		pthread_rwlock_unlock(&w->coop->lock);
}
