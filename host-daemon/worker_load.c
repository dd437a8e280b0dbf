/* SPDX-License-Identifier: MIT */
/*
 * The workload analyzer of a worker: what its vGPU did in the last window
 * (the stats period, about a second), sent to vgpud as VGPU_CTL_LOAD
 * right after each VGPU_CTL_STATS. docs/DESIGN.md defines the figures:
 *
 *   busy      time with at least one kernel in flight on the slice: the
 *             backend's own count where it has one (sim: exact), else
 *             the watchdog's per-stream events (cuda), else unknown;
 *   kernels   launches; bytes copied; resize barriers, all in the window;
 *   queue     at its end: descriptors in the rings not yet completed,
 *             plus launches queued on the GPU and not known complete;
 *   memory    bytes allocated by the clients.
 *
 * Counters are cumulative; a window is the difference of two readings,
 * so nothing here costs the clients anything. Main thread only.
 */
#include <string.h>

#include "ctl_msg.h"
#include "worker_part.h"

void worker_load_send(struct worker *w)
{
	struct worker_part *p = w->part;
	struct vgpu_ctl_stats st;
	struct vgpu_ctl_load l;
	uint64_t now, busy = 0;
	int fd;

	if (!p)
		return;
	memset(&l, 0, sizeof(l));
	now = worker_now_ns();
	worker_client_stats(w, &st);
	if (w->ops->busy_ns) {
		l.busy_source = VGPU_BUSY_BACKEND;
		busy = w->ops->busy_ns(w->be);
	} else if (w->wd) {
		l.busy_source = VGPU_BUSY_EVENTS;
		busy = worker_watchdog_busy_ns(w);
	}
	l.window_ns = now - p->load_at;
	if (l.busy_source != VGPU_BUSY_NONE && busy >= p->load_busy)
		l.busy_ns = busy - p->load_busy;
	if (l.busy_ns > l.window_ns)
		l.busy_ns = l.window_ns; /* edges seen a poll late */
	l.kernels = st.kernels >= p->load_kernels ? st.kernels - p->load_kernels
						  : 0;
	l.bytes_copied = st.bytes_copied >= p->load_bytes
				 ? st.bytes_copied - p->load_bytes
				 : 0;
	l.barrier_ns = p->barrier_total_ns - p->load_barrier;
	l.memory_used = st.memory_used;
	l.gpu_inflight = worker_watchdog_pending(w);
	l.queue_depth = worker_client_queue_depth(w) + l.gpu_inflight;
	l.sm_count = w->info.sm_count;
	l.change_count = __atomic_load_n(&w->change_count, __ATOMIC_ACQUIRE);
	l.clients = st.clients;

	p->load_at = now;
	p->load_busy = busy;
	/* a client that left takes its counts along into gone_*: the
	 * totals never go down (worker_client_reap) */
	p->load_kernels = st.kernels;
	p->load_bytes = st.bytes_copied;
	p->load_barrier = p->barrier_total_ns;
	fd = __atomic_load_n(&w->ctl_fd, __ATOMIC_ACQUIRE);
	if (fd >= 0)
		ctl_send(fd, VGPU_CTL_LOAD, &l, sizeof(l), -1);
}
