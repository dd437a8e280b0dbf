/* SPDX-License-Identifier: MIT */
/*
 * Holds and activity edges in the worker (VGPU_CTL_SCHED, see
 * worker_sched.h and docs/DESIGN.md, "Scheduling").
 *
 *   busy edge   a client thread finds work while the vGPU was idle: one
 *               ACTIVITY{busy 1}, sent from that thread at once (the
 *               scheduler reclaims on it, so it must not wait for a tick);
 *   idle edge   the tick finds no work found for idle_ms, no descriptor
 *               waiting or being served, and nothing of the vGPU on the
 *               GPU: ACTIVITY{busy 0};
 *   hold        client threads stop before their next descriptor; once
 *               none is active: ACTIVITY{seq, held}; once nothing runs on
 *               the GPU either: ACTIVITY{seq, held, drained, drain_ns}.
 *               It ends on SCHED{hold 0} (ACTIVITY{seq} at once), after
 *               hold_max_ms, or when vgpud's connection is gone.
 *
 * "Nothing on the GPU": the backend's busy time stands still between two
 * ticks (sim), or the watchdog knows no launch in flight (cuda; late by
 * up to its poll period, so drain_ns is an upper bound).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "worker_part.h"
#include "worker_sched.h"

int worker_sched_init(struct worker *w)
{
	struct worker_sched *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->busy = 1; /* no reports until vgpud asks */
	s->last_work_ns = worker_now_ns();
	__atomic_store_n(&w->sched, s, __ATOMIC_RELEASE);
	return 0;
}

void worker_sched_fini(struct worker *w)
{
	free(w->sched);
	w->sched = NULL;
}

static void send_activity(struct worker *w, uint32_t seq, uint32_t busy,
			  uint32_t held, uint32_t drained, uint64_t drain_ns)
{
	int fd = __atomic_load_n(&w->ctl_fd, __ATOMIC_ACQUIRE);
	struct vgpu_ctl_activity a;

	if (fd < 0)
		return;
	memset(&a, 0, sizeof(a));
	a.seq = seq;
	a.busy = busy;
	a.held = held;
	a.drained = drained;
	a.drain_ns = drain_ns;
	a.queue_depth =
		worker_client_queue_depth(w) + worker_watchdog_pending(w);
	ctl_send(fd, VGPU_CTL_ACTIVITY, &a, sizeof(a), -1);
}

void worker_sched_busy_edge(struct worker *w)
{
	struct worker_sched *s = w->sched;
	uint64_t one = 1;
	int idle = 0;
	ssize_t n;

	/* one thread wins the edge; the others see busy already */
	if (!__atomic_compare_exchange_n(&s->busy, &idle, 1, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return;
	send_activity(w, 0, 1, __atomic_load_n(&s->hold, __ATOMIC_RELAXED), 0,
		      0);
	/* the main loop sleeps long while idle: wake it, so that its tick
	 * watches for the idle edge from now on (else up to a stats period
	 * late) */
	n = write(w->wake_fd, &one, sizeof(one));
	(void)n;
}

/* Whether something of the vGPU may still run on the GPU. */
static bool gpu_busy(struct worker *w, struct worker_sched *s)
{
	uint64_t b;
	bool moved;

	if (w->ops && w->ops->busy_ns) {
		b = w->ops->busy_ns(w->be);
		moved = !s->busy_prev_ok || b != s->busy_prev;
		s->busy_prev = b;
		s->busy_prev_ok = true;
		return moved;
	}
	return worker_watchdog_pending(w) != 0;
}

static void release(struct worker *w, struct worker_sched *s, uint32_t seq,
		    bool answer)
{
	__atomic_store_n(&s->hold, 0, __ATOMIC_SEQ_CST);
	worker_client_kick_all(w);
	s->parked_sent = s->drained_sent = false;
	if (answer)
		send_activity(w, seq,
			      __atomic_load_n(&s->busy, __ATOMIC_RELAXED), 0, 0,
			      0);
}

void worker_sched_request(struct worker *w, const void *payload, uint32_t len)
{
	struct worker_sched *s = w->sched;
	struct vgpu_ctl_sched q;
	uint64_t now = worker_now_ns(), max_ms;

	if (len != sizeof(q)) {
		worker_log(w, "SCHED message of %u bytes ignored (needs %zu)",
			   len, sizeof(q));
		return;
	}
	memcpy(&q, payload, sizeof(q));
	if (!s)
		return;
	/* edges from now on, starting from what it is doing now (a client
	 * with work has a descriptor waiting or in hand; a kernel running
	 * has its client waiting for it, in a descriptor); without edges,
	 * busy stays 1 so the client threads never report */
	if (q.idle_ms != s->idle_ms) {
		__atomic_store_n(&s->idle_ms, q.idle_ms, __ATOMIC_RELAXED);
		s->last_work_ns = now;
		__atomic_store_n(&s->work_seen, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&s->busy,
				 !q.idle_ms || worker_client_queue_depth(w) ||
					 worker_client_any_active(w),
				 __ATOMIC_SEQ_CST);
	}
	s->seq = q.seq;
	if (!q.hold) {
		if (__atomic_load_n(&s->hold, __ATOMIC_RELAXED))
			worker_log(w, "hold released after %.1f ms",
				   (now - s->hold_at_ns) / 1e6);
		release(w, s, q.seq, true);
		return;
	}
	max_ms = q.hold_max_ms ? q.hold_max_ms : VGPU_SCHED_HOLD_MAX_MS;
	if (max_ms > VGPU_SCHED_HOLD_MAX_MS)
		max_ms = VGPU_SCHED_HOLD_MAX_MS;
	if (!__atomic_load_n(&s->hold, __ATOMIC_RELAXED))
		s->hold_at_ns = now;
	s->hold_until_ns = now + max_ms * 1000000ull;
	s->parked_sent = s->drained_sent = false;
	__atomic_store_n(&s->hold, 1, __ATOMIC_SEQ_CST);
	worker_sched_tick(w); /* answer at once when nothing is running */
}

void worker_sched_tick(struct worker *w)
{
	struct worker_sched *s = w->sched;
	uint64_t now;
	bool busy_gpu;

	if (!s)
		return;
	now = worker_now_ns();
	if (__atomic_load_n(&s->hold, __ATOMIC_RELAXED)) {
		if (__atomic_load_n(&w->ctl_fd, __ATOMIC_ACQUIRE) < 0 ||
		    now >= s->hold_until_ns) {
			worker_log(w, "hold ended by itself after %.1f ms (%s)",
				   (now - s->hold_at_ns) / 1e6,
				   now >= s->hold_until_ns ? "its time is up"
							   : "vgpud is gone");
			release(w, s, s->seq, false);
		} else if (!s->drained_sent && !worker_client_any_active(w)) {
			busy_gpu = gpu_busy(w, s);
			if (!busy_gpu || !s->parked_sent)
				send_activity(w, s->seq,
					      __atomic_load_n(&s->busy,
							      __ATOMIC_RELAXED),
					      1, !busy_gpu,
					      busy_gpu ? 0
						       : now - s->hold_at_ns);
			s->parked_sent = true;
			s->drained_sent = !busy_gpu;
		}
	}
	if (!s->idle_ms || !__atomic_load_n(&s->busy, __ATOMIC_RELAXED))
		return;
	if (__atomic_exchange_n(&s->work_seen, 0, __ATOMIC_RELAXED)) {
		s->last_work_ns = now;
		return;
	}
	if (now - s->last_work_ns < s->idle_ms * 1000000ull ||
	    worker_client_queue_depth(w) || gpu_busy(w, s) ||
	    worker_client_any_active(w))
		return;
	/*
	 * The idle edge races with a thread's busy edge. A thread stores
	 * work_seen, then loads busy; here busy is stored, then work_seen
	 * loaded (both sequentially consistent): a thread that missed our
	 * busy = 0 is seen here. One that took the busy edge after our
	 * store may have sent it before our idle edge: say busy again.
	 */
	__atomic_store_n(&s->busy, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&s->work_seen, __ATOMIC_SEQ_CST)) {
		__atomic_store_n(&s->busy, 1, __ATOMIC_SEQ_CST);
		return;
	}
	send_activity(w, 0, 0, __atomic_load_n(&s->hold, __ATOMIC_RELAXED), 0,
		      0);
	if (__atomic_load_n(&s->busy, __ATOMIC_SEQ_CST))
		send_activity(w, 0, 1,
			      __atomic_load_n(&s->hold, __ATOMIC_RELAXED), 0,
			      0);
}

int worker_sched_timeout(const struct worker *w, int timeout_ms)
{
	const struct worker_sched *s = w->sched;
	bool held;
	uint64_t now, left;
	int t = -1;

	if (!s)
		return timeout_ms;
	held = __atomic_load_n(&s->hold, __ATOMIC_RELAXED);
	if ((held && !s->drained_sent) ||
	    (s->idle_ms && __atomic_load_n(&s->busy, __ATOMIC_RELAXED)))
		t = WORKER_SCHED_TICK_MS;
	else if (held) { /* only its expiry is left to watch */
		now = worker_now_ns();
		left = s->hold_until_ns > now ? s->hold_until_ns - now : 0;
		t = (int)(left / 1000000u) + 1;
	}
	if (t >= 0 && (timeout_ms < 0 || timeout_ms > t))
		return t;
	return timeout_ms;
}
