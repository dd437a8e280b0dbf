/* SPDX-License-Identifier: MIT */
/*
 * vgpu-worker's part of scheduling (docs/DESIGN.md, "Scheduling"):
 * VGPU_CTL_SCHED holds the vGPU (its client threads take no descriptor;
 * what is on the GPU finishes) or lets it go on, and asks for activity
 * edges; VGPU_CTL_ACTIVITY tells vgpud when the vGPU gets work, goes
 * idle, is held and has drained.
 *
 * Client threads pass a gate before each descriptor (worker_client.c):
 * one load of the hold flag when not held, and a store when the vGPU
 * had no work; everything else runs on the main thread (the tick).
 *
 * A client thread is "active" from the moment it found work until it
 * waits for more; a hold has taken effect when no thread is active.
 * Both sides order their store before their load (sequentially
 * consistent), so a thread either sees the hold before its next
 * descriptor, or the main thread sees it active.
 */
#ifndef VGPU_WORKER_SCHED_H
#define VGPU_WORKER_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "worker.h"

#define WORKER_HOLD_POLL_MS  50 /* a held thread re-checks (kicks wake it) */
#define WORKER_SCHED_TICK_MS 2	/* the main thread's tick while it matters */

struct worker_sched {
	/* shared with the client threads (atomics) */
	int hold;      /* 1: take no descriptor */
	int busy;      /* the state last reported (1 without reports) */
	int work_seen; /* a thread found work since the last tick */
	/* main thread only */
	uint32_t idle_ms; /* 0: no edge reports */
	uint32_t seq;	  /* of the SCHED being answered */
	uint64_t hold_at_ns, hold_until_ns;
	bool parked_sent, drained_sent;
	uint64_t last_work_ns;
	uint64_t busy_prev; /* the backend's busy_ns at the last tick */
	bool busy_prev_ok;
};

/* Set up (after bring-up). 0 or -ENOMEM. */
int worker_sched_init(struct worker *w);
void worker_sched_fini(struct worker *w);
/* VGPU_CTL_SCHED from vgpud. */
void worker_sched_request(struct worker *w, const void *payload, uint32_t len);
/* Main loop: edges, the hold's answers, its expiry. */
void worker_sched_tick(struct worker *w);
/* Main loop: its poll timeout, shortened while the tick matters. */
int worker_sched_timeout(const struct worker *w, int timeout_ms);

/* Whether vgpud asked for activity edges (a dynamic policy); any thread
 * (inline: the watchdog's unit tests link no scheduler). */
static inline bool worker_sched_edges(const struct worker *w)
{
	const struct worker_sched *s =
		__atomic_load_n(&w->sched, __ATOMIC_ACQUIRE);

	return s && __atomic_load_n(&s->idle_ms, __ATOMIC_RELAXED);
}

/* Client threads: a busy edge (the vGPU had no work). */
void worker_sched_busy_edge(struct worker *w);

/*
 * Client threads, before each descriptor: note the work; true when the
 * vGPU is held (the caller parks: worker_client.c). The caller is
 * already marked active (see top).
 */
static inline bool worker_sched_gate(struct worker *w)
{
	struct worker_sched *s = w->sched;

	if (!s)
		return false;
	if (!__atomic_load_n(&s->work_seen, __ATOMIC_RELAXED))
		__atomic_store_n(&s->work_seen, 1, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&s->busy, __ATOMIC_SEQ_CST))
		worker_sched_busy_edge(w);
	return __atomic_load_n(&s->hold, __ATOMIC_SEQ_CST) != 0;
}

static inline bool worker_sched_held(struct worker *w)
{
	return w->sched && __atomic_load_n(&w->sched->hold, __ATOMIC_SEQ_CST);
}

/* ---- worker_client.c ---- */
/* Wake every client thread (a hold ended). */
void worker_client_kick_all(struct worker *w);
/* Whether some client thread is active (has work in hand). */
bool worker_client_any_active(struct worker *w);

#endif /* VGPU_WORKER_SCHED_H */
