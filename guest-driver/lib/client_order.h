/* SPDX-License-Identifier: MIT */
/*
 * The legacy default stream's implicit ordering (client_order.c).
 *
 * In CUDA, work on the legacy default stream (NULL, CU_STREAM_LEGACY)
 * waits for all earlier work of every blocking stream of its context
 * (created without CU_STREAM_NON_BLOCKING), and work on a blocking stream
 * waits for all earlier work of the legacy stream. The worker creates
 * every stream of a client non-blocking (green contexts allow nothing
 * else, and one worker serves several processes), so the library makes
 * these waits itself, from events of its own: only where work moves from
 * one side to the other, so a program that uses one kind of stream pays
 * nothing. The per-thread default stream is the worker's default stream
 * too, where it is ordered with the legacy stream by being the same one.
 */
#ifndef VGPU_CLIENT_ORDER_H
#define VGPU_CLIENT_ORDER_H

#include <pthread.h>
#include <stdint.h>

#include <cuda.h>

struct client;

/* A blocking stream's part, embedded in its struct client_stream. */
struct client_order_stream {
	uint32_t handle; /* the worker's stream */
	uint32_t event;	 /* an event of the library's own; 0: none yet */
	int dirty;	 /* work since the legacy stream last waited (atomic) */
	uint64_t seen;	 /* the legacy work it last waited for (atomic) */
	struct client_order_stream *next; /* the client's list, under lock */
};

/* A client's part, in struct client. */
struct client_order {
	pthread_mutex_t lock;
	struct client_order_stream *blocking; /* the blocking streams */
	int dirty_any;	   /* some blocking stream is dirty (atomic) */
	int busy;	   /* a legacy call is queueing its waits (atomic) */
	uint64_t legacy;   /* legacy-stream operations submitted (atomic) */
	uint64_t recorded; /* the value of legacy when event was recorded */
	uint32_t event;	   /* on the legacy stream; 0: none yet */
};

void client_order_init(struct client_order *o);

/* A blocking stream was created, or is about to be destroyed. */
void client_order_add(struct client *c, struct client_order_stream *s);
void client_order_remove(struct client *c, struct client_order_stream *s);

/*
 * Before work is submitted to the legacy stream: make it wait for every
 * blocking stream with work since its last wait. An error: nothing was
 * submitted for it.
 */
CUresult client_order_legacy(struct client *c);

/* Before work is submitted to blocking stream s: make s wait for the
 * legacy stream's work since it last did. */
CUresult client_order_blocking(struct client *c, struct client_order_stream *s);

/*
 * Before work on the legacy stream or a blocking stream copies host
 * memory when it is submitted (a copy from pageable memory is staged
 * then, not when the stream reaches it): wait for the host functions
 * queued on the legacy stream and on every blocking stream, which may
 * write that memory and which the work comes after (a blocking stream's
 * since the legacy stream last waited for it only through the legacy
 * stream's next work: waiting for those too orders more than CUDA, never
 * less). Never for a non-blocking stream's: the work does not wait for
 * them, and a host function there may wait for the caller.
 */
void client_order_wait_hostfns(struct client *c);

/* After work was submitted to the legacy stream, or to blocking stream
 * s: later work of the other side waits for it. */
static inline void client_order_legacy_done(struct client_order *o)
{
	__atomic_add_fetch(&o->legacy, 1, __ATOMIC_RELEASE);
}

static inline void client_order_blocking_done(struct client_order *o,
					      struct client_order_stream *s)
{
	/* after the submission: a legacy call that clears it records its
	 * event behind this work (a flag set before could be cleared by a
	 * record that the work then overtakes) */
	if (!__atomic_load_n(&s->dirty, __ATOMIC_RELAXED)) {
		__atomic_store_n(&s->dirty, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&o->dirty_any, 1, __ATOMIC_RELEASE);
	}
}

#endif /* VGPU_CLIENT_ORDER_H */
