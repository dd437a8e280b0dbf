/* SPDX-License-Identifier: MIT */
/*
 * Kernel time limit (cfg.kernel_time_limit_ms): no kernel may run longer
 * than the limit, counted from when its stream reached it to its end. Not
 * from when it was queued: a chain of kernels each under the limit, a
 * kernel queued behind a host function that sleeps, or behind a wait for
 * another stream's event, is legal CUDA however long it all takes (issue
 * 16, bug 3: a false fault restarts the whole shared fault domain).
 *
 * Markers. After every launch, and after every wait given to a stream
 * (cuStreamWaitEvent; a host function's gate, worker_gate.c), the stream's
 * owner records a timing-disabled event on it: a slot of the stream's
 * ring, which owns its event (created on first use, then recycled).
 * Nothing on the launch path waits: a record, the slot, a release store;
 * its submission time is read from the coarse clock (a few nanoseconds,
 * up to a tick early, which the limit allows for).
 * A backend with launch_marked records a launch's marker in the launch
 * call itself (worker_watchdog_marker hands it the slot's event first):
 * on the cuda backend that is a launch attribute (a vGPU's launch rate
 * with the watchdog: 0.983 of the rate without, against 0.876 with a
 * record after each launch, H200). Such a marker completes early for a
 * kernel that triggers its dependents (programmatic dependent launch), so
 * a drained ring's stream is asked whether it still runs (wd_drained).
 * Grouping launches under one marker cannot work in general (n kernels
 * each under the limit may take n times it), so each launch has its own.
 *
 * The clock. The watchdog thread polls every ring (every limit/10, at most
 * 20 ms). A kernel's clock starts when the marker before it (the previous
 * kernel's, or a wait's) is first seen complete, or at its submission if
 * that is later: a stream runs in order, so the kernel cannot have started
 * before either. A wait's marker is never timed, so the time a stream
 * spends waiting for an event or a host function counts for nobody. A
 * kernel whose marker is still pending longer than the limit after its
 * clock started is a fault; so is a sticky error from event_query. Both
 * end the process (w->fault). Each end is seen up to a poll late, and the
 * start counts from when it was seen, so a kernel is judged on at most its
 * true run time: an endless one is stopped between the limit and the
 * limit plus a period (two while its owner waits for it: below).
 *
 * What a kernel's run time includes: everything between the marker before
 * it and its own. Under MPS the vGPUs of a shared fault domain run side by
 * side, but fault domains time-slice (an exclusive vGPU against the shared
 * ones, another process's context), and a kernel waiting out another
 * domain's slices is running as far as its stream can tell: those slices
 * count. So does the time its blocks wait for SMs that the vGPU's other
 * streams hold, and an asynchronous memset or device-to-device copy queued
 * between two kernels (bounded by the memory's bandwidth). Copies to and
 * from the host are synchronous in the worker: a kernel queued after one
 * is timed from its submission.
 *
 * Polling. A stream completes in order, so a poll asks a ring's newest
 * marker first (done: so are all) and otherwise finds the first pending
 * one by bisection: at most log2(n) + 1 queries for n markers. A ring
 * starts at WD_SLOTS_MIN slots and doubles when full, up to WD_SLOTS_MAX;
 * a launch that takes a ring to WD_WAKE_DEPTH pending markers wakes the
 * watchdog (wd->kick), so that a stream launching faster than the GPU runs
 * does not outgrow its ring between polls.
 *
 * A full ring of WD_SLOTS_MAX means the GPU is that far behind: a launch
 * then joins the newest marker (re-recorded behind it, under pop_lock),
 * and that group of n kernels is allowed n times the limit. A correct
 * program is never stopped; a hang behind such a backlog is caught, at
 * most n limits after the group could start. A wait cannot join a group
 * of kernels (nor a kernel a wait's marker): the time would be the wait's,
 * unbounded, so it gets a slot beyond WD_SLOTS_MAX, and the backend's own
 * queue bounds how many (CUDA blocks a launch when its queue is full).
 * Only past WD_SLOTS_HARD, or when a record fails and the next marker has
 * to cover what the failed one did, is a marker's work not timed at all
 * (WD_UNTIMED, logged once).
 *
 * What the markers cost the async launch rate is measured on the GPU by
 * scripts/gpu-check.sh ("watchdog"): limit 10 s against none, same run.
 *
 * Locks: the stream's owner (its client's thread: the only one that
 * launches there) writes tail and the slot at tail without a lock, and
 * publishes with a release store. pop_lock guards head, the slots array
 * and its size, clock_ns, completed and busy; the owner takes it to grow
 * the ring, join a group, or mark the stream busy.
 *
 * The same markers feed the workload analyzer (worker_load.c): a stream
 * is busy from a launch onto a ring without pending kernels until the
 * watchdog (or a synchronisation of the stream) finds it drained; the
 * vGPU is busy while any stream is (busy_lock). Each slot remembers how
 * many launches the stream had made when it was recorded, so a marker
 * seen complete says how many are known complete (worker_watchdog_pending).
 *
 * A stream whose owner is synchronising it is not polled for the first
 * normal period of that wait: the owner pops it itself the moment the
 * wait returns (worker_watchdog_sync_end), sooner than a poll would.
 * Under a dynamic policy the polls come every 2 ms, and each one's
 * event_query while a latency-critical client waited on its kernel cost
 * that client about 2 us of p99 (issue 7's fair_fixed window on the
 * H200: rest p99 70.4 against 68.2 us under static, p50 the same). A
 * hang inside such a wait is still caught, one normal period late at
 * most: the same lateness as without a dynamic policy.
 */
#include <cuda.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "worker.h"
#include "worker_part.h"
#include "worker_sched.h"

#define WD_SLOTS_MIN	 32u	    /* a new stream's ring (a power of two) */
#define WD_SLOTS_MAX	 1024u	    /* then launches join the newest marker */
#define WD_SLOTS_HARD	 (1u << 20) /* waits' slots beyond WD_SLOTS_MAX */
#define WD_WAKE_DEPTH	 512u	    /* pending markers that wake the watchdog */
#define WD_UNTIMED	 UINT32_MAX /* a slot's kernels: not timed */
#define WD_MAX_PERIOD_MS 20u
/* how long the main loop waits for the registry (worker_watchdog_pending) */
#define WD_PENDING_WAIT_MS 5L
/* under a dynamic policy: the scheduler's idle edge and drain estimate
 * (launches not known done) are late by about a poll */
#define WD_SCHED_PERIOD_MS 2u

struct wd_slot {
	struct backend_event *ev;
	uint64_t submit_ns; /* when the first kernel it covers was queued */
	uint64_t launches;  /* q->launched when it was last recorded */
	/* kernels it covers: 1; 0 for a wait's marker; n for a group joined
	 * on a full ring; WD_UNTIMED */
	uint32_t kernels;
	bool early; /* recorded by the launch: may complete early */
};

struct worker_wd_queue {
	struct worker_wd_queue *prev, *next; /* registry, under wd->lock */
	struct wd_slot *slots;		     /* cap of them (pop_lock) */
	uint32_t cap;			     /* a power of two (pop_lock) */
	uint32_t tail;	    /* owner only; published with release */
	uint32_t head;	    /* under pop_lock; published with release */
	uint64_t clock_ns;  /* when the head's predecessor was seen done */
	uint64_t launched;  /* launches on the stream (owner; atomic) */
	uint64_t completed; /* of them, known complete (pop_lock) */
	int busy; /* counted in wd->nbusy (pop_lock; the owner reads it) */
	struct backend_stream *bs; /* the stream (fixed) */
	/* a drained ring whose stream still runs (wd_drained; pop_lock):
	 * since when, and the tail + 1 at which the stream was seen idle */
	uint64_t tail_ns;
	uint32_t idle_tail;
	bool last_early; /* the last popped marker's early (pop_lock) */
	/* since when the owner waits for the stream (atomic; 0: it does not) */
	uint64_t sync_ns;
	/* owner only: what a failed record left for the next marker */
	bool unmarked;
	uint32_t unmarked_kernels; /* as wd_slot.kernels */
	uint64_t unmarked_ns;
	pthread_mutex_t pop_lock;
};

struct worker_watchdog {
	struct worker *w;
	uint64_t limit_ns;
	/* submission times come from CLOCK_MONOTONIC_COARSE (a launch reads
	 * no precise clock): up to this much early, which the limit allows
	 * for; 0 when the coarse clock is not used */
	uint64_t coarse_ns;
	uint32_t period_ms; /* without a dynamic policy */
	pthread_t thread;
	pthread_mutex_t lock; /* the registry and stop */
	pthread_cond_t cond;
	struct worker_wd_queue *queues;
	int stop;
	int kick;   /* a ring reached WD_WAKE_DEPTH: poll now (atomic) */
	int warned; /* WD_WARN_* logged once each (atomic) */
	uint32_t last_pending; /* worker_watchdog_pending's last (atomic) */
	/* the analyzer's busy time: while nbusy streams are busy */
	pthread_mutex_t busy_lock;
	uint32_t nbusy;
	uint64_t busy_since, busy_acc;
};

/* The coarse clock's tick, when it is one worth using (at most 10 ms). */
#define WD_COARSE_MAX_NS 10000000ull

/* When a launch was submitted: at most wd->coarse_ns before the truth. */
static uint64_t wd_submit_ns(const struct worker_watchdog *wd)
{
	struct timespec ts;

	if (!wd->coarse_ns || clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		return worker_now_ns();
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* A stream of the vGPU became busy (+1) or idle (-1) at now. Under the
 * queue's pop_lock; busy_lock nests inside it. */
static void wd_busy_edge(struct worker_watchdog *wd, struct worker_wd_queue *q,
			 int busy, uint64_t now)
{
	if (q->busy == busy)
		return;
	__atomic_store_n(&q->busy, busy, __ATOMIC_RELAXED);
	pthread_mutex_lock(&wd->busy_lock);
	if (busy && wd->nbusy++ == 0)
		wd->busy_since = now;
	else if (!busy && --wd->nbusy == 0 && now > wd->busy_since)
		wd->busy_acc += now - wd->busy_since;
	pthread_mutex_unlock(&wd->busy_lock);
}

/*
 * The kernels one marker covers when it follows what another covered
 * (wd_slot.kernels): kernels add up, waits stay a wait, and kernels with
 * a wait cannot be timed (the wait's time is unbounded).
 */
static uint32_t wd_cover(uint32_t a, uint32_t b)
{
	if (!a && !b)
		return 0;
	if (!a || !b || a >= WD_UNTIMED - b)
		return WD_UNTIMED;
	return a + b;
}

enum { WD_WARN_GROUPED = 1, WD_WARN_UNTIMED = 2, WD_WARN_UNMARKED = 4 };

/* One log line per worker for each way the limit is enforced less well. */
static void wd_warn_once(struct worker *w, int what, const char *msg)
{
	if (!(__atomic_fetch_or(&w->wd->warned, what, __ATOMIC_RELAXED) & what))
		worker_log(w, "watchdog: %s", msg);
}

/* Double a full ring. Under pop_lock. */
static int wd_grow(struct worker_wd_queue *q)
{
	uint32_t cap = q->cap, ncap = 2 * cap, i, idx;
	struct wd_slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -ENOMEM;
	/* full: [head, head + cap) is every slot, each keeps its index */
	for (i = 0; i < cap; i++) {
		idx = q->head + i;
		ns[idx & (ncap - 1)] = q->slots[idx & (cap - 1)];
	}
	free(q->slots);
	q->slots = ns;
	q->cap = ncap;
	return 0;
}

/*
 * q's ring is full (as the owner saw it): grow it, or join the new marker
 * to the newest one. Returns 1 when there is room at the tail now, 0 when
 * the marker joined, or a CUresult.
 */
static int wd_full(struct worker *w, struct worker_wd_queue *q,
		   struct backend_stream *bs, uint32_t kernels,
		   uint64_t submit_ns)
{
	uint32_t tail = q->tail;
	struct wd_slot *newest;
	int rc = 1;

	pthread_mutex_lock(&q->pop_lock);
	if (tail - q->head < q->cap)
		goto out; /* popped meanwhile */
	newest = &q->slots[(tail - 1) & (q->cap - 1)];
	if (q->cap >= WD_SLOTS_MAX && kernels && newest->kernels) {
		wd_warn_once(w, WD_WARN_GROUPED,
			     "a stream is more than 1024 markers behind; "
			     "its launches are grouped (a group of n "
			     "kernels is allowed n times the limit)");
	} else if (q->cap < WD_SLOTS_HARD && !wd_grow(q)) {
		goto out;
	} else {
		wd_warn_once(w, WD_WARN_UNTIMED,
			     "a stream's ring cannot grow; some of its "
			     "work is not timed");
	}
	rc = w->ops->event_record(w->be, newest->ev, bs);
	if (rc) {
		rc = worker_check(w, rc, "event_record (watchdog)");
		goto out;
	}
	newest->kernels = wd_cover(newest->kernels, kernels);
	newest->launches = q->launched;
	if (kernels)
		wd_busy_edge(w->wd, q, 1, submit_ns);
out:
	pthread_mutex_unlock(&q->pop_lock);
	return rc;
}

/*
 * Record a marker after what the owner just queued on bs: kernels
 * launches (1), or a wait (0), the first queued at submit_ns. Owner only;
 * never waits for the GPU.
 */
static int wd_mark(struct worker *w, struct worker_wd_queue *q,
		   struct backend_stream *bs, uint32_t kernels,
		   uint64_t submit_ns, int marked)
{
	struct worker_watchdog *wd = w->wd;
	uint32_t tail = q->tail, depth;
	struct wd_slot *s;
	int rc;

	depth = tail - ring_load_acquire(&q->head);
	if (marked != BACKEND_MARKED_NOT) { /* in the slot it gave */
		s = &q->slots[tail & (q->cap - 1)];
		rc = 0;
		goto commit;
	}
	if (q->unmarked) {
		kernels = wd_cover(q->unmarked_kernels, kernels);
		submit_ns = q->unmarked_ns;
	}
	if (depth >= q->cap) {
		rc = wd_full(w, q, bs, kernels, submit_ns);
		if (rc != 1)
			goto done;
	}
	s = &q->slots[tail & (q->cap - 1)];
	if (!s->ev) {
		rc = w->ops->event_create(w->be, CU_EVENT_DISABLE_TIMING,
					  &s->ev);
		if (rc) {
			s->ev = NULL;
			rc = worker_check(w, rc, "event_create (watchdog)");
			goto done;
		}
	}
	rc = w->ops->event_record(w->be, s->ev, bs);
	if (rc) {
		rc = worker_check(w, rc, "event_record (watchdog)");
		goto done;
	}
commit:
	s->early = marked == BACKEND_MARKED_EARLY;
	s->submit_ns = submit_ns;
	s->kernels = kernels;
	s->launches = q->launched;
	ring_store_release(&q->tail, tail + 1);
	if (depth + 1 == WD_WAKE_DEPTH) {
		__atomic_store_n(&wd->kick, 1, __ATOMIC_RELEASE);
		pthread_cond_signal(&wd->cond);
	}
	/* no fence: a poll that drained the ring just as this was published
	 * may clear busy after this looked; the next poll sets it again */
	if (kernels && !__atomic_load_n(&q->busy, __ATOMIC_RELAXED)) {
		pthread_mutex_lock(&q->pop_lock);
		wd_busy_edge(wd, q, 1, submit_ns);
		pthread_mutex_unlock(&q->pop_lock);
	}
done:
	if (rc) { /* the next marker covers this one's work too */
		if (!q->unmarked)
			q->unmarked_ns = submit_ns;
		q->unmarked_kernels = kernels;
		q->unmarked = true;
		wd_warn_once(w, WD_WARN_UNMARKED,
			     "a marker could not be recorded; the next "
			     "one covers its work");
	} else {
		q->unmarked = false;
	}
	return rc;
}

/*
 * Markers of q are pending but it is not busy: a launch published as a
 * poll found the ring drained saw busy still set (wd_mark). Busy again if
 * any of them covers a kernel. Under pop_lock.
 */
static void wd_busy_again(struct worker_watchdog *wd, struct worker_wd_queue *q,
			  uint32_t tail, uint64_t now)
{
	uint32_t i;

	for (i = q->head; i != tail; i++) {
		if (q->slots[i & (q->cap - 1)].kernels) {
			wd_busy_edge(wd, q, 1, now);
			return;
		}
	}
}

/* 1: the slot's marker is done, 0: pending, -1: a fatal error (faulted) */
static int wd_done(struct worker *w, struct wd_slot *s)
{
	int rc = w->ops->event_query(w->be, s->ev);

	if (rc == CUDA_SUCCESS)
		return 1;
	if (rc == CUDA_ERROR_NOT_READY)
		return 0;
	if (worker_error_is_fatal(rc)) {
		worker_check(w, rc, "event_query (watchdog)");
		return -1;
	}
	return 1; /* any other error: stop tracking that marker */
}

/*
 * Every marker of q is done (at tail), but a kernel may still run: one
 * that called cudaTriggerProgrammaticLaunchCompletion completed its
 * marker (launch_marked's event) early. The stream, asked once per drain,
 * says: still busy past the limit from when this was first seen is a
 * fault. Nothing else runs on a stream after its last marker but
 * asynchronous memsets and device copies (bounded by bandwidth; a wait
 * has a marker of its own). Under pop_lock; nonzero after a fault.
 */
static int wd_drained(struct worker *w, struct worker_wd_queue *q,
		      uint32_t tail, uint64_t now)
{
	char msg[VGPU_MESSAGE_MAX];
	int rc;

	/* only a marker the launch recorded can complete early; after any
	 * other, what runs on is memsets and device copies, never timed */
	if (!q->last_early || q->idle_tail == tail + 1)
		return 0; /* or seen idle since its last marker */
	rc = w->ops->stream_query(w->be, q->bs);
	if (rc == CUDA_SUCCESS) {
		q->idle_tail = tail + 1;
		q->tail_ns = 0;
		return 0;
	}
	if (rc != CUDA_ERROR_NOT_READY) {
		if (!worker_error_is_fatal(rc))
			return 0;
		worker_check(w, rc, "stream_query (watchdog)");
		return 1;
	}
	if (!q->tail_ns) {
		q->tail_ns = now;
		return 0;
	}
	if (now - q->tail_ns <= w->wd->limit_ns)
		return 0;
	snprintf(msg, sizeof(msg),
		 "kernel ran longer than the %u ms limit after it signalled "
		 "its completion",
		 w->cfg.kernel_time_limit_ms);
	w->fault(w, VGPU_FAULT_WATCHDOG, CUDA_ERROR_LAUNCH_TIMEOUT, msg);
	return 1;
}

/*
 * Pop q's completed markers and check the first pending one against the
 * limit. Called with q->pop_lock held. Returns nonzero after a fault (in
 * tests, where the fault handler returns).
 */
static int wd_poll_queue(struct worker *w, struct worker_wd_queue *q)
{
	struct worker_watchdog *wd = w->wd;
	uint32_t head = q->head, tail = ring_load_acquire(&q->tail);
	uint32_t mask = q->cap - 1, n = tail - head, lo, hi, mid;
	uint64_t now = worker_now_ns(), start;
	char msg[VGPU_MESSAGE_MAX];
	struct wd_slot *s;
	int d;

	if (!n) {
		wd_busy_edge(wd, q, 0, now); /* drained */
		return wd_drained(w, q, tail, now);
	}
	q->tail_ns = 0;
	/* lo: the first pending marker, n when none is */
	d = wd_done(w, &q->slots[(tail - 1) & mask]);
	if (d < 0)
		return 1;
	if (d) {
		lo = n;
	} else {
		for (lo = 0, hi = n - 1; lo < hi;) { /* hi is pending */
			mid = lo + (hi - lo) / 2;
			d = wd_done(w, &q->slots[(head + mid) & mask]);
			if (d < 0)
				return 1;
			if (d)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (lo) {
		s = &q->slots[(head + lo - 1) & mask];
		q->last_early = s->early;
		if (s->launches > q->completed)
			__atomic_store_n(&q->completed, s->launches,
					 __ATOMIC_RELAXED);
		/* seen done now, after the queries: the next one's clock
		 * starts no earlier than its true start */
		q->clock_ns = worker_now_ns();
		head += lo;
		ring_store_release(&q->head, head);
	}
	if (lo == n) {
		wd_busy_edge(wd, q, 0, now); /* drained */
		return wd_drained(w, q, tail, now);
	}
	if (!q->busy)
		wd_busy_again(wd, q, tail, now);
	s = &q->slots[head & mask];
	if (!s->kernels || s->kernels >= WD_UNTIMED - 1 ||
	    s->kernels + 1 > UINT64_MAX / wd->limit_ns)
		return 0; /* a wait, or not timed */
	/* pending at now (it was, when asked after now). After a marker
	 * that may have completed early, the kernel before may still run
	 * for up to a limit of its own: the clock allows it. */
	start = q->clock_ns > s->submit_ns ? q->clock_ns : s->submit_ns;
	if (now <= start ||
	    now - start <=
		    (s->kernels + q->last_early) * wd->limit_ns + wd->coarse_ns)
		return 0;
	if (s->kernels == 1)
		snprintf(msg, sizeof(msg),
			 "kernel ran longer than the %u ms limit",
			 w->cfg.kernel_time_limit_ms);
	else
		snprintf(msg, sizeof(msg),
			 "%u kernels queued while the stream was far behind "
			 "ran longer than %u times the %u ms limit",
			 s->kernels, s->kernels, w->cfg.kernel_time_limit_ms);
	w->fault(w, VGPU_FAULT_WATCHDOG, CUDA_ERROR_LAUNCH_TIMEOUT, msg);
	return 1;
}

/* Whether q's owner began waiting for its stream less than a normal
 * period before now (it will pop the queue itself). */
static bool wd_owner_waits(const struct worker_watchdog *wd,
			   struct worker_wd_queue *q, uint64_t now)
{
	uint64_t since = __atomic_load_n(&q->sync_ns, __ATOMIC_ACQUIRE);

	return since && now - since < (uint64_t)wd->period_ms * 1000000ull;
}

static void *wd_thread(void *arg)
{
	struct worker *w = arg;
	struct worker_watchdog *wd = w->wd;
	struct worker_wd_queue *q;
	struct timespec ts;
	uint32_t period;
	uint64_t now;
	int rc;

	rc = w->ops->thread_attach(w->be);
	if (rc) {
		worker_check(w, rc, "thread_attach (watchdog)");
		worker_log(w,
			   "watchdog: thread_attach failed (%d); the "
			   "kernel time limit is not enforced",
			   rc);
		return NULL;
	}
	pthread_mutex_lock(&wd->lock);
	while (!wd->stop) {
		period = wd->period_ms;
		if (period > WD_SCHED_PERIOD_MS && worker_sched_edges(w))
			period = WD_SCHED_PERIOD_MS;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += (long)period * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		/* a kick that came while this polled: poll again at once */
		if (!__atomic_exchange_n(&wd->kick, 0, __ATOMIC_ACQ_REL))
			pthread_cond_timedwait(&wd->cond, &wd->lock, &ts);
		__atomic_store_n(&wd->kick, 0, __ATOMIC_RELAXED);
		now = worker_now_ns();
		for (q = wd->queues; q && !wd->stop; q = q->next) {
			if (wd_owner_waits(wd, q, now))
				continue;
			pthread_mutex_lock(&q->pop_lock);
			wd_poll_queue(w, q);
			pthread_mutex_unlock(&q->pop_lock);
		}
	}
	pthread_mutex_unlock(&wd->lock);
	return NULL;
}

int worker_watchdog_start(struct worker *w)
{
	struct worker_watchdog *wd;
	struct timespec res;
	pthread_condattr_t ca;
	uint32_t limit = w->cfg.kernel_time_limit_ms;
	int rc;

	w->wd = NULL;
	if (!limit)
		return 0;
	wd = calloc(1, sizeof(*wd));
	if (!wd)
		return -ENOMEM;
	wd->w = w;
	wd->limit_ns = (uint64_t)limit * 1000000ull;
	if (clock_getres(CLOCK_MONOTONIC_COARSE, &res) == 0 &&
	    (uint64_t)res.tv_sec * 1000000000ull + (uint64_t)res.tv_nsec <=
		    WD_COARSE_MAX_NS)
		wd->coarse_ns = (uint64_t)res.tv_sec * 1000000000ull +
				(uint64_t)res.tv_nsec;
	wd->period_ms = limit / 10;
	if (wd->period_ms > WD_MAX_PERIOD_MS)
		wd->period_ms = WD_MAX_PERIOD_MS;
	if (!wd->period_ms)
		wd->period_ms = 1;
	pthread_mutex_init(&wd->lock, NULL);
	pthread_mutex_init(&wd->busy_lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd->cond, &ca);
	pthread_condattr_destroy(&ca);
	w->wd = wd;
	rc = pthread_create(&wd->thread, NULL, wd_thread, w);
	if (rc) {
		w->wd = NULL;
		pthread_cond_destroy(&wd->cond);
		pthread_mutex_destroy(&wd->lock);
		pthread_mutex_destroy(&wd->busy_lock);
		free(wd);
		return -rc;
	}
	return 0;
}

/* Every queue must be destroyed before the watchdog stops. */
void worker_watchdog_stop(struct worker *w)
{
	struct worker_watchdog *wd = w->wd;

	if (!wd)
		return;
	pthread_mutex_lock(&wd->lock);
	wd->stop = 1;
	pthread_cond_signal(&wd->cond);
	pthread_mutex_unlock(&wd->lock);
	pthread_join(wd->thread, NULL);
	pthread_cond_destroy(&wd->cond);
	pthread_mutex_destroy(&wd->lock);
	pthread_mutex_destroy(&wd->busy_lock);
	free(wd);
	w->wd = NULL;
}

int worker_watchdog_queue_create(struct worker *w, struct backend_stream *bs,
				 struct worker_wd_queue **out)
{
	struct worker_watchdog *wd = w->wd;
	struct worker_wd_queue *q;

	*out = NULL;
	if (!wd)
		return 0;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->slots = calloc(WD_SLOTS_MIN, sizeof(*q->slots));
	if (!q->slots) {
		free(q);
		return -ENOMEM;
	}
	q->cap = WD_SLOTS_MIN;
	q->bs = bs;
	pthread_mutex_init(&q->pop_lock, NULL);
	pthread_mutex_lock(&wd->lock);
	q->next = wd->queues;
	if (wd->queues)
		wd->queues->prev = q;
	wd->queues = q;
	pthread_mutex_unlock(&wd->lock);
	*out = q;
	return 0;
}

void worker_watchdog_queue_destroy(struct worker *w, struct worker_wd_queue *q)
{
	struct worker_watchdog *wd = w->wd;
	uint32_t i;

	if (!q || !wd)
		return;
	pthread_mutex_lock(&wd->lock);
	if (q->prev)
		q->prev->next = q->next;
	else
		wd->queues = q->next;
	if (q->next)
		q->next->prev = q->prev;
	pthread_mutex_unlock(&wd->lock);
	pthread_mutex_lock(&q->pop_lock);
	wd_busy_edge(wd, q, 0, worker_now_ns()); /* the stream is idle */
	pthread_mutex_unlock(&q->pop_lock);
	for (i = 0; i < q->cap; i++)
		if (q->slots[i].ev)
			w->ops->event_destroy(w->be, q->slots[i].ev);
	free(q->slots);
	pthread_mutex_destroy(&q->pop_lock);
	free(q);
}

struct backend_event *worker_watchdog_marker(struct worker *w,
					     struct worker_wd_queue *q)
{
	struct wd_slot *s;

	if (!q || !w->ops->launch_marked || q->unmarked ||
	    q->tail - ring_load_acquire(&q->head) >= q->cap)
		return NULL;
	s = &q->slots[q->tail & (q->cap - 1)];
	if (!s->ev &&
	    w->ops->event_create(w->be, CU_EVENT_DISABLE_TIMING, &s->ev)) {
		s->ev = NULL;
		return NULL;
	}
	return s->ev;
}

int worker_watchdog_track(struct worker *w, struct worker_wd_queue *q,
			  struct backend_stream *bs, int marked)
{
	uint64_t now = wd_submit_ns(w->wd);

	/* only the owner writes it; pending and the pops read it */
	__atomic_store_n(&q->launched, q->launched + 1, __ATOMIC_RELEASE);
	return wd_mark(w, q, bs, 1, now, marked);
}

int worker_watchdog_track_wait(struct worker *w, struct worker_wd_queue *q,
			       struct backend_stream *bs)
{
	return wd_mark(w, q, bs, 0, wd_submit_ns(w->wd), BACKEND_MARKED_NOT);
}

uint64_t worker_watchdog_busy_ns(struct worker *w)
{
	struct worker_watchdog *wd = w->wd;
	uint64_t v, now;

	if (!wd)
		return 0;
	pthread_mutex_lock(&wd->busy_lock);
	v = wd->busy_acc;
	now = worker_now_ns();
	if (wd->nbusy && now > wd->busy_since)
		v += now - wd->busy_since;
	pthread_mutex_unlock(&wd->busy_lock);
	return v;
}

uint32_t worker_watchdog_pending(struct worker *w)
{
	struct worker_watchdog *wd = w->wd;
	struct worker_wd_queue *q;
	uint64_t n = 0, launched, done;
	struct timespec until;

	if (!wd)
		return 0;
	/*
	 * The main loop asks (analyzer, scheduler): never wait. The
	 * watchdog thread holds the lock while it polls, and a poll can
	 * wait for the backend's API lock, which a client thread may hold
	 * across a driver call that waits for the device (a library load
	 * behind another client's pending host function, seen on the
	 * H200): a main loop waiting here sent no stats, and vgpud took the
	 * worker for wedged. A poll takes microseconds: still held after
	 * WD_PENDING_WAIT_MS, the last count again.
	 */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += WD_PENDING_WAIT_MS * 1000000L;
	until.tv_sec += until.tv_nsec / 1000000000L;
	until.tv_nsec %= 1000000000L;
	if (pthread_mutex_timedlock(&wd->lock, &until))
		return __atomic_load_n(&wd->last_pending, __ATOMIC_RELAXED);
	for (q = wd->queues; q; q = q->next) {
		launched = __atomic_load_n(&q->launched, __ATOMIC_ACQUIRE);
		done = __atomic_load_n(&q->completed, __ATOMIC_RELAXED);
		if (launched > done)
			n += launched - done;
	}
	pthread_mutex_unlock(&wd->lock);
	if (n > UINT32_MAX)
		n = UINT32_MAX;
	__atomic_store_n(&wd->last_pending, (uint32_t)n, __ATOMIC_RELAXED);
	return (uint32_t)n;
}

void worker_watchdog_sync_begin(struct worker *w, struct worker_wd_queue *q)
{
	uint64_t now;

	if (!q || !w->wd)
		return;
	now = worker_now_ns();
	__atomic_store_n(&q->sync_ns, now ? now : 1, __ATOMIC_RELEASE);
}

/*
 * The owner's wait for q's stream returned; when it succeeded, every
 * marker on it is done: pop them all now, without asking the GPU, rather
 * than at the next poll (the busy time ends here).
 */
void worker_watchdog_sync_end(struct worker *w, struct worker_wd_queue *q,
			      bool synced)
{
	uint64_t launched, now;

	if (!q || !w->wd)
		return;
	__atomic_store_n(&q->sync_ns, 0, __ATOMIC_RELEASE);
	if (!synced)
		return;
	now = worker_now_ns();
	/* only the owner marks, and it is here: nothing is being published */
	q->unmarked = false;
	pthread_mutex_lock(&q->pop_lock);
	launched = __atomic_load_n(&q->launched, __ATOMIC_ACQUIRE);
	if (q->head != q->tail) {
		q->clock_ns = now;
		ring_store_release(&q->head, q->tail);
	}
	q->last_early = false; /* the stream is idle: nothing runs on */
	q->idle_tail = q->tail + 1;
	q->tail_ns = 0;
	if (launched > q->completed)
		__atomic_store_n(&q->completed, launched, __ATOMIC_RELAXED);
	wd_busy_edge(w->wd, q, 0, now);
	pthread_mutex_unlock(&q->pop_lock);
}
