/* SPDX-License-Identifier: MIT */
/*
 * Kernel time limit (cfg.kernel_time_limit_ms).
 *
 * A stream's launches are tracked sparsely: a launch records a
 * timing-disabled event and pushes {event, submit time} on the stream's
 * queue only when nothing tracked is pending there; otherwise it only
 * counts itself as untracked (an atomic add). When the watchdog has seen
 * every tracked event complete and untracked launches remain, it records
 * the catch-up event itself, with the clock of the first untracked launch.
 * So a hang is still caught (an event behind it never completes), while a
 * stream of many short launches pays for one event per GPU round, not one
 * per launch: measured on the H100, an event per launch held the async
 * launch rate at 0.64x native (the client also waited whenever 128 were
 * pending); sparse tracking ran at 1.03-1.07x the rate without a watchdog.
 * The slots own their events (created on first use, then recycled).
 *
 * The watchdog thread polls every queue (every limit/10, at most 20 ms):
 * heads whose event has completed are popped, and the time that was seen
 * starts the clock of the next head (a kernel cannot start before its
 * predecessor on the stream is done); a head still running longer than
 * the limit since its clock started is a fault. So is a sticky error from
 * event_query. Both end the process (w->fault).
 *
 * Both pushes (the client's and the watchdog's catch-up) and pops happen
 * under pop_lock; the untracked counter is the only lock-free path, and a
 * launch counted just as the watchdog drained the queue is caught at its
 * next poll.
 *
 * The same events feed the workload analyzer (worker_load.c): a stream is
 * busy from the push onto its empty queue until the watchdog (or a
 * synchronisation of the stream) finds the queue drained; the vGPU is
 * busy while any stream is (busy_lock). Each slot remembers how many
 * launches the stream had made when it was pushed, so a popped event
 * says how many are known complete (worker_watchdog_pending).
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

#define WD_SLOTS	 128u /* in-flight launches tracked per stream */
#define WD_MAX_PERIOD_MS 20u
/* under a dynamic policy: the scheduler's idle edge and drain estimate
 * (launches not known done) are late by about a poll */
#define WD_SCHED_PERIOD_MS 2u
#define WD_FULL_WAIT_NS	   20000L

struct wd_slot {
	struct backend_event *ev;
	uint64_t submit_ns;
	uint64_t launches; /* q->launched when it was pushed */
};

struct worker_wd_queue {
	struct worker_wd_queue *prev, *next; /* registry, under wd->lock */
	uint32_t tail;	       /* under pop_lock; published with release */
	uint32_t head;	       /* under pop_lock; published with release */
	uint64_t clock_ns;     /* when the head's predecessor was seen done */
	uint32_t untracked;    /* launches since the last push (atomic) */
	uint64_t untracked_ns; /* submit time of the first of them */
	struct backend_stream *bs; /* the stream (set by the first push) */
	uint64_t launched;	   /* launches on the stream (atomic) */
	uint64_t completed;	   /* of them, known complete (pop_lock) */
	int busy;		   /* counted in wd->nbusy (pop_lock) */
	/* since when the owner waits for the stream (atomic; 0: it does not) */
	uint64_t sync_ns;
	pthread_mutex_t pop_lock;
	struct wd_slot slots[WD_SLOTS];
};

struct worker_watchdog {
	struct worker *w;
	uint64_t limit_ns;
	uint32_t period_ms; /* without a dynamic policy */
	pthread_t thread;
	pthread_mutex_t lock; /* the registry and stop */
	pthread_cond_t cond;
	struct worker_wd_queue *queues;
	int stop;
	/* the analyzer's busy time: while nbusy streams are busy */
	pthread_mutex_t busy_lock;
	uint32_t nbusy;
	uint64_t busy_since, busy_acc;
};

/* A stream of the vGPU became busy (+1) or idle (-1) at now. Under the
 * queue's pop_lock; busy_lock nests inside it. */
static void wd_busy_edge(struct worker_watchdog *wd, struct worker_wd_queue *q,
			 int busy, uint64_t now)
{
	if (q->busy == busy)
		return;
	q->busy = busy;
	pthread_mutex_lock(&wd->busy_lock);
	if (busy && wd->nbusy++ == 0)
		wd->busy_since = now;
	else if (!busy && --wd->nbusy == 0 && now > wd->busy_since)
		wd->busy_acc += now - wd->busy_since;
	pthread_mutex_unlock(&wd->busy_lock);
}

/* Record a tracking event on q's stream. Called with q->pop_lock held. */
static int wd_push(struct worker *w, struct worker_wd_queue *q,
		   uint64_t submit_ns)
{
	uint32_t tail = q->tail;
	struct wd_slot *s = &q->slots[tail % WD_SLOTS];
	int rc;

	if (!s->ev) {
		rc = w->ops->event_create(w->be, CU_EVENT_DISABLE_TIMING,
					  &s->ev);
		if (rc) {
			s->ev = NULL;
			return worker_check(w, rc, "event_create (watchdog)");
		}
	}
	rc = w->ops->event_record(w->be, s->ev, q->bs);
	if (rc)
		return worker_check(w, rc, "event_record (watchdog)");
	s->submit_ns = submit_ns;
	s->launches = __atomic_load_n(&q->launched, __ATOMIC_ACQUIRE);
	ring_store_release(&q->tail, tail + 1);
	return CUDA_SUCCESS;
}

/*
 * Pop the completed heads of q and check the running one against the
 * limit. Called with q->pop_lock held. Returns nonzero after a fault (in
 * tests, where the fault handler returns).
 */
static int wd_poll_queue(struct worker *w, struct worker_wd_queue *q)
{
	struct worker_watchdog *wd = w->wd;
	uint32_t head = q->head, tail = ring_load_acquire(&q->tail);
	uint64_t now = worker_now_ns(), start;
	char msg[VGPU_MESSAGE_MAX];
	struct wd_slot *s;
	int rc;

	while (head != tail) {
		s = &q->slots[head % WD_SLOTS];
		rc = w->ops->event_query(w->be, s->ev);
		if (rc == CUDA_SUCCESS) {
			head++;
			ring_store_release(&q->head, head);
			q->clock_ns = now;
			if (s->launches > q->completed)
				__atomic_store_n(&q->completed, s->launches,
						 __ATOMIC_RELAXED);
			continue;
		}
		if (rc == CUDA_ERROR_NOT_READY) {
			start = q->clock_ns > s->submit_ns ? q->clock_ns
							   : s->submit_ns;
			if (now > start && now - start > wd->limit_ns) {
				snprintf(msg, sizeof(msg),
					 "kernel ran longer than the %u ms "
					 "limit",
					 w->cfg.kernel_time_limit_ms);
				w->fault(w, VGPU_FAULT_WATCHDOG,
					 CUDA_ERROR_LAUNCH_TIMEOUT, msg);
				return 1;
			}
			return 0;
		}
		if (worker_error_is_fatal(rc)) {
			worker_check(w, rc, "event_query (watchdog)");
			return 1;
		}
		/* any other error: stop tracking that launch */
		head++;
		ring_store_release(&q->head, head);
		q->clock_ns = now;
	}
	/* all tracked work done: cover the untracked launches behind it */
	if (__atomic_load_n(&q->untracked, __ATOMIC_ACQUIRE)) {
		uint64_t launched;

		start = __atomic_load_n(&q->untracked_ns, __ATOMIC_RELAXED);
		__atomic_store_n(&q->untracked, 0, __ATOMIC_RELEASE);
		/*
		 * Not on a stream that is already idle: the catch-up record
		 * is work the client never queued, and until the device has
		 * passed it cuStreamQuery on that stream says NOT_READY
		 * although all of the client's work there is done (seen as
		 * streams_events failing its query after a cross-stream
		 * wait). Idle now means every launch counted so far is done:
		 * a launch is queued before it counts itself. (A stream that
		 * drains between this query and the record still shows it
		 * for as long as the device takes to pass it: on the cuda
		 * backend microseconds; the sim completes such a record at
		 * once, sim_event_record.)
		 */
		launched = __atomic_load_n(&q->launched, __ATOMIC_ACQUIRE);
		rc = w->ops->stream_query(w->be, q->bs);
		if (rc == CUDA_SUCCESS) {
			if (launched > q->completed)
				__atomic_store_n(&q->completed, launched,
						 __ATOMIC_RELAXED);
			wd_busy_edge(wd, q, 0, now); /* drained */
			return 0;
		}
		if (worker_error_is_fatal(rc)) {
			worker_check(w, rc, "stream_query (watchdog)");
			return 1;
		}
		if (wd_push(w, q, start))
			return 1;
		return 0;
	}
	wd_busy_edge(wd, q, 0, now); /* drained */
	return 0;
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
		pthread_cond_timedwait(&wd->cond, &wd->lock, &ts);
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

int worker_watchdog_queue_create(struct worker *w, struct worker_wd_queue **out)
{
	struct worker_watchdog *wd = w->wd;
	struct worker_wd_queue *q;

	*out = NULL;
	if (!wd)
		return 0;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
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
	for (i = 0; i < WD_SLOTS; i++)
		if (q->slots[i].ev)
			w->ops->event_destroy(w->be, q->slots[i].ev);
	pthread_mutex_destroy(&q->pop_lock);
	free(q);
}

int worker_watchdog_track(struct worker *w, struct worker_wd_queue *q,
			  struct backend_stream *bs)
{
	const struct timespec pause = {0, WD_FULL_WAIT_NS};
	uint64_t now = worker_now_ns();
	int rc;

	__atomic_add_fetch(&q->launched, 1, __ATOMIC_ACQ_REL);
	/* something tracked is pending: the watchdog covers this launch */
	if (ring_load_acquire(&q->head) != ring_load_acquire(&q->tail)) {
		if (__atomic_fetch_add(&q->untracked, 1, __ATOMIC_ACQ_REL) == 0)
			__atomic_store_n(&q->untracked_ns, now,
					 __ATOMIC_RELAXED);
		return CUDA_SUCCESS;
	}
	pthread_mutex_lock(&q->pop_lock);
	q->bs = bs;
	/* full only when the catch-up pushes outran the GPU: wait for it */
	while (q->tail - q->head >= WD_SLOTS) {
		rc = wd_poll_queue(w, q);
		if (rc) {
			pthread_mutex_unlock(&q->pop_lock);
			return CUDA_ERROR_LAUNCH_TIMEOUT;
		}
		if (q->tail - q->head < WD_SLOTS)
			break;
		pthread_mutex_unlock(&q->pop_lock);
		nanosleep(&pause, NULL);
		pthread_mutex_lock(&q->pop_lock);
	}
	wd_busy_edge(w->wd, q, 1, now);
	rc = wd_push(w, q, now);
	pthread_mutex_unlock(&q->pop_lock);
	return rc;
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

	if (!wd)
		return 0;
	pthread_mutex_lock(&wd->lock);
	for (q = wd->queues; q; q = q->next) {
		launched = __atomic_load_n(&q->launched, __ATOMIC_ACQUIRE);
		done = __atomic_load_n(&q->completed, __ATOMIC_RELAXED);
		if (launched > done)
			n += launched - done;
	}
	pthread_mutex_unlock(&wd->lock);
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
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
 * The owner's wait for q's stream returned; when it succeeded, everything
 * tracked on it is done, so pop it now rather than at the next poll (the
 * busy time ends here).
 */
void worker_watchdog_sync_end(struct worker *w, struct worker_wd_queue *q,
			      bool synced)
{
	uint64_t launched;

	if (!q || !w->wd)
		return;
	__atomic_store_n(&q->sync_ns, 0, __ATOMIC_RELEASE);
	if (!synced)
		return;
	pthread_mutex_lock(&q->pop_lock);
	/* only the stream's owner launches on it, and it is here: every
	 * launch so far is done, the untracked ones need no catch-up */
	launched = __atomic_load_n(&q->launched, __ATOMIC_ACQUIRE);
	__atomic_store_n(&q->untracked, 0, __ATOMIC_RELEASE);
	wd_poll_queue(w, q);
	if (launched > q->completed)
		__atomic_store_n(&q->completed, launched, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&q->pop_lock);
}
