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
 * Nothing here blocks while it holds a lock but the resize's bounded
 * wait, which holds the write side (new cooperative launches wait for
 * it). The wait is bounded (an endless kernel would hold the resize for
 * good): past it the resize is refused, and says why.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <cuda.h>

#include "worker.h"

/* Streams with a cooperative kernel in flight that are tracked; past
 * that, resizes are refused (only this vGPU's; no real program queues
 * cooperative kernels on a thousand streams at once). */
#define COOP_STREAMS_MAX 1024

/* A stream's latest cooperative launch: events on one stream complete in
 * order, so one event per stream, recorded again at each launch. */
struct coop_entry {
	const struct backend_stream *bs; /* compared, never followed */
	struct backend_event *ev;
};

struct worker_coop {
	pthread_rwlock_t lock; /* launches read, a resize writes */
	pthread_mutex_t list_lock;
	struct coop_entry *e;
	uint32_t n, cap;
	uint32_t lost; /* launches that could not be tracked (logged) */
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
		w->ops->event_destroy(w->be, c->e[i].ev);
	free(c->e);
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

/* Drop the entries whose kernels are done (never waits). Under
 * list_lock. */
static void coop_prune(struct worker *w, struct worker_coop *c)
{
	uint32_t i = 0;

	while (i < c->n) {
		if (w->ops->event_query(w->be, c->e[i].ev) ==
		    CUDA_ERROR_NOT_READY) {
			i++;
			continue;
		}
		w->ops->event_destroy(w->be, c->e[i].ev);
		c->e[i] = c->e[--c->n];
	}
}

/* The entry of bs, a new one, or NULL (out of room). Under list_lock. */
static struct coop_entry *coop_entry(struct worker *w, struct worker_coop *c,
				     const struct backend_stream *bs)
{
	struct coop_entry *ne;
	uint32_t i, ncap;

	for (i = 0; i < c->n; i++)
		if (c->e[i].bs == bs)
			return &c->e[i];
	if (c->n == c->cap)
		coop_prune(w, c);
	if (c->n == c->cap) {
		ncap = c->cap ? 2 * c->cap : 8;
		if (ncap > COOP_STREAMS_MAX)
			return NULL;
		ne = realloc(c->e, ncap * sizeof(*ne));
		if (!ne)
			return NULL;
		c->e = ne;
		c->cap = ncap;
	}
	if (w->ops->event_create(w->be, CU_EVENT_DISABLE_TIMING,
				 &c->e[c->n].ev))
		return NULL;
	c->e[c->n].bs = bs;
	return &c->e[c->n++];
}

void worker_coop_release(struct worker *w, struct backend_stream *bs,
			 int launched)
{
	struct worker_coop *c = w->coop;
	struct coop_entry *e;

	if (!c)
		return;
	if (launched) {
		pthread_mutex_lock(&c->list_lock);
		e = coop_entry(w, c, bs);
		if (!e || w->ops->event_record(w->be, e->ev, bs)) {
			if (!c->lost++)
				worker_log(w, "a cooperative kernel could not "
					      "be tracked: resizes are "
					      "refused from now on");
		}
		pthread_mutex_unlock(&c->list_lock);
	}
	pthread_rwlock_unlock(&c->lock);
}

int worker_coop_drain(struct worker *w, uint64_t bound_ns, uint32_t *left,
		      uint64_t *waited_ns)
{
	struct worker_coop *c = w->coop;
	uint64_t t0 = worker_now_ns(), end = t0 + bound_ns;
	struct timespec nap = {0, 1000000}, until; /* 1 ms */
	uint32_t first;

	*left = 0;
	*waited_ns = 0;
	if (!c)
		return 0;
	/* timed: a steady stream of cooperative launches (readers) must not
	 * hold the resize off for good */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += (time_t)(bound_ns / 1000000000ull);
	until.tv_nsec += (long)(bound_ns % 1000000000ull);
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	if (pthread_rwlock_timedwrlock(&c->lock, &until)) {
		*left = 1;
		return -EBUSY;
	}
	pthread_mutex_lock(&c->list_lock);
	coop_prune(w, c);
	first = c->n;
	while (c->n && worker_now_ns() < end) {
		pthread_mutex_unlock(&c->list_lock);
		nanosleep(&nap, NULL);
		pthread_mutex_lock(&c->list_lock);
		coop_prune(w, c);
	}
	*left = c->n + c->lost;
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
