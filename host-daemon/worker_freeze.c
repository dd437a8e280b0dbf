/* SPDX-License-Identifier: MIT */
/*
 * The kernel boundary that save, restore and migration need
 * (worker_state.h): no client thread inside a descriptor, nothing of the
 * vGPU queued or running on the GPU.
 *
 * w->frozen is the client threads' gate (worker_client.c): a thread
 * checks it before each descriptor, and before it sets up or frees its
 * session, and stands aside while it is set. Each thread has an
 * `active` flag it sets before it looks at the gate; the freeze sets the
 * gate before it looks at the flags (both sequentially consistent), so
 * either the thread sees the gate or the freeze sees it active and waits
 * for it to finish the descriptor in hand. Then the streams of every
 * client are polled until idle (cuStreamQuery, never a blocking
 * synchronise: a stream held by a host function that never returns must
 * not hang the worker); what does not finish in time fails the freeze,
 * and the clients go on as if nothing happened.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "worker_sched.h"
#include "worker_state.h"

static void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};

	nanosleep(&ts, NULL);
}

/* Poll one stream until it is idle or the deadline passes. CUresult. */
static int stream_drain(struct worker *w, struct backend_stream *bs,
			uint64_t deadline)
{
	int rc;

	for (;;) {
		rc = w->ops->stream_query(w->be, bs);
		if (rc != CUDA_ERROR_NOT_READY)
			return worker_check(w, rc, "stream_query");
		if (worker_now_ns() > deadline)
			return CUDA_ERROR_NOT_READY;
		nap_us(50);
	}
}

/* Every stream of every client idle, by the deadline. CUresult. */
static int drain_all(struct worker *w, uint64_t deadline, char *err, size_t len)
{
	struct worker_session **v;
	struct worker_stream *st;
	uint32_t n, i, pos, h;
	int rc = CUDA_SUCCESS;

	v = worker_client_sessions(w, &n);
	if (!v) {
		snprintf(err, len, "out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (i = 0; i < n && rc == CUDA_SUCCESS; i++) {
		struct worker_session *s = v[i];

		if (s->default_stream_ok)
			rc = stream_drain(w, s->default_stream.bs, deadline);
		pos = 0;
		while (rc == CUDA_SUCCESS &&
		       (st = handle_table_next(&s->h.streams, &pos, &h)))
			rc = stream_drain(w, st->bs, deadline);
		if (rc == CUDA_ERROR_NOT_READY)
			snprintf(err, len,
				 "a stream of client %u (pid %d) still had "
				 "work after the time allowed (a long kernel, "
				 "or a host function that does not return); "
				 "try again later",
				 s->owner, (int)s->pid);
		else if (rc)
			snprintf(err, len,
				 "a stream of client %u failed: CUDA error %d",
				 s->owner, rc);
	}
	free(v);
	return rc;
}

int worker_freeze(struct worker *w, uint32_t timeout_ms, uint64_t *ns,
		  char *err, size_t len)
{
	uint64_t t0 = worker_now_ns(), deadline;
	int rc;

	if (!timeout_ms)
		timeout_ms = VGPU_STATE_TIMEOUT_MS;
	deadline = t0 + (uint64_t)timeout_ms * 1000000ull;
	__atomic_store_n(&w->frozen, 1, __ATOMIC_SEQ_CST);
	/* sleeping threads wake, see the gate and stand aside */
	worker_client_kick_all(w);
	while (worker_client_any_active(w)) {
		if (worker_now_ns() > deadline) {
			snprintf(err, len,
				 "a client's call did not return within %u ms "
				 "(a synchronisation waiting for a long "
				 "kernel?); try again later",
				 timeout_ms);
			worker_thaw(w);
			return CUDA_ERROR_NOT_READY;
		}
		nap_us(100);
	}
	rc = drain_all(w, deadline, err, len);
	if (rc) {
		worker_thaw(w);
		return rc;
	}
	*ns = worker_now_ns() - t0;
	return CUDA_SUCCESS;
}

void worker_thaw(struct worker *w)
{
	__atomic_store_n(&w->frozen, 0, __ATOMIC_SEQ_CST);
	worker_client_kick_all(w); /* held threads re-check at once */
}

void worker_state_enter(struct worker *w, int *active, const int *stop)
{
	for (;;) {
		__atomic_store_n(active, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&w->frozen, __ATOMIC_SEQ_CST) ||
		    __atomic_load_n(stop, __ATOMIC_ACQUIRE))
			return;
		__atomic_store_n(active, 0, __ATOMIC_SEQ_CST);
		nap_us(5000);
	}
}
