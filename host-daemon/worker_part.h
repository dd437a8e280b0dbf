/* SPDX-License-Identifier: MIT */
/*
 * vgpu-worker's part of dynamic partitioning (docs/DESIGN.md, "Dynamic
 * partitioning"):
 *
 *   worker_resize.c  VGPU_CTL_RESIZE: the backend's switch to other SM
 *                    groups, within a barrier budget; the change counter
 *                    the clients see; reclaiming the old context
 *   worker_load.c    the workload analyzer: one VGPU_CTL_LOAD per stats
 *                    period (busy time, launches, queue depth, memory)
 *
 * Everything here runs on the worker's main thread, except the reads
 * that client threads make through worker.h (info under info_lock, the
 * change counter).
 */
#ifndef VGPU_WORKER_PART_H
#define VGPU_WORKER_PART_H

#include <stdint.h>

#include "worker.h"

/*
 * Resizes may hold new submissions back (the switch's barrier) for at
 * most WORKER_BARRIER_BUDGET_NS in every WORKER_BARRIER_PERIOD_NS, on
 * average: a token bucket of that size. A resize that finds the bucket
 * empty waits until it has refilled (delay_ns in RESIZED).
 */
#define WORKER_BARRIER_BUDGET_NS 10000000ull   /* 10 ms ... */
#define WORKER_BARRIER_PERIOD_NS 1000000000ull /* ... per second */
#define WORKER_RECLAIM_POLL_MS	 5	       /* while an old context drains */

/* The state behind it (main thread only). */
struct worker_part {
	/* the barrier budget: a token bucket */
	int64_t tokens_ns;
	uint64_t tokens_at;
	/* a resize waiting for the budget */
	int deferred;
	struct vgpu_ctl_resize req;
	uint64_t req_at;
	/* old contexts left to reclaim */
	int reclaiming;
	uint64_t barrier_total_ns; /* every switch's barrier, summed */
	uint32_t resizes;
	/* where the analyzer's last window ended (worker_load.c) */
	uint64_t load_at, load_busy, load_kernels, load_bytes, load_barrier;
};

/* Set up (after bring-up, before any client). 0 or -ENOMEM. */
int worker_part_init(struct worker *w);
void worker_part_fini(struct worker *w);

/* VGPU_CTL_RESIZE from vgpud: checked, run now or when the budget
 * allows; always answered with VGPU_CTL_RESIZED. */
void worker_resize_request(struct worker *w, const void *payload, uint32_t len);
/* Main loop: run a deferred resize, reclaim old contexts. */
void worker_part_tick(struct worker *w);
/* Main loop: its poll timeout, shortened for what tick has to do. */
int worker_part_timeout(const struct worker *w, int timeout_ms);

/* One VGPU_CTL_LOAD for the window since the last (with each STATS). */
void worker_load_send(struct worker *w);

/*
 * After the composition changed (resize, move, resume, migration): the
 * device description anew from the backend, the change counter up, every
 * client's ring told. Returns the new count; *out (may be NULL) gets the
 * description. Main thread; worker_resize.c.
 */
uint32_t worker_publish_info(struct worker *w, struct vgpu_device_info *out);

/* The device description as it is now (client threads; worker_exec.c). */
void worker_info_copy(struct worker *w, struct vgpu_device_info *out);

/* ---- worker_client.c ---- */
/* Tell every client's ring the new change counter. */
void worker_client_publish_change(struct worker *w, uint32_t count);
/* Descriptors submitted to the rings and not yet completed, all
 * clients (each clamped to its ring's size: the client writes sq_tail). */
uint32_t worker_client_queue_depth(struct worker *w);

/* ---- worker_watchdog.c ---- */
/* Nanoseconds with a tracked launch in flight on some stream (see
 * docs/DESIGN.md); 0 without a watchdog. */
uint64_t worker_watchdog_busy_ns(struct worker *w);
/* Launches queued on the GPU and not known to be complete. */
uint32_t worker_watchdog_pending(struct worker *w);
/* Around the owner's wait for q's stream (synced: it succeeded, the
 * stream is idle now). */
void worker_watchdog_sync_begin(struct worker *w, struct worker_wd_queue *q);
void worker_watchdog_sync_end(struct worker *w, struct worker_wd_queue *q,
			      bool synced);

#endif /* VGPU_WORKER_PART_H */
