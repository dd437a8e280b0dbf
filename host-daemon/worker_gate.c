/* SPDX-License-Identifier: MIT */
/*
 * Stream gates: what makes cuLaunchHostFunc asynchronous (protocol.h,
 * VGPU_OP_STREAM_GATE).
 *
 * On the stream the backend writes the sequence number to the client's
 * gate.reached; the work the client queues on that stream after the gate
 * is held back in the worker (worker_defer.c) until a word reaches the
 * number. The GPU itself never waits for a host function: the driver
 * makes loading code, freeing and unpinning memory wait for every stream
 * of the process, so a stream held on the GPU by one client's slow host
 * function would hold up the other clients of the vGPU (measured on the
 * H200, issue 16). Processes do not wait for each other: vGPUs never did.
 *
 * The word is the worker's own: the client's gate.open lives in the
 * shared data area, where a hostile client (or a process it forked) could
 * move it back and forth for ever. A pump thread copies gate.open into
 * the worker's word, never beyond the last sequence number issued on that
 * stream and never backwards, and wakes the client's thread when it
 * moves; a stream that is destroyed, or a client that goes away, has its
 * words set to the last number issued, which opens every gate of that
 * stream.
 *
 * The pump polls only while some gate is closed: every 20 us for 2 ms
 * after the last change, then every 250 us. A host function therefore
 * starts within tens of microseconds of its turn, as with CUDA.
 *
 * Locks: pump->lock guards the list of sessions with gates and every
 * slot (it nests inside clients_lock: worker_client_departed). Backend
 * calls are made outside it.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include "worker.h"

#define GATE_FAST_POLL_NS 20000L
#define GATE_SLOW_POLL_NS 250000L
#define GATE_FAST_FOR_NS  2000000ull

struct gate_slot {
	int used;
	uint64_t open_off; /* the client's gate.open in the data area */
	uint64_t issued;   /* the highest sequence number enqueued */
};

struct worker_gates {
	struct worker_gates *next; /* pump->sessions */
	struct worker_session *s;
	uint64_t *words; /* the opened numbers, one per slot */
	struct gate_slot slot[WORKER_GATES_PER_SESSION];
};

struct worker_gate_pump {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* a gate was closed, or stop */
	pthread_t thread;
	int started, stop;
	struct worker_gates *sessions;
};

/* Signed distance, as the GPU compares (cuda.h, CU_STREAM_WAIT_VALUE_GEQ) */
static int seq_before(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

static void sleep_ns(long ns)
{
	struct timespec t = {0, ns};

	nanosleep(&t, NULL);
}

/* A gate of s opened: its client thread may hand deferred work on. */
static void pump_wake_client(struct worker_session *s)
{
	uint64_t one = 1;
	ssize_t n;

	if (s->wake_fd < 0 || !__atomic_load_n(&s->nheld, __ATOMIC_ACQUIRE))
		return;
	n = write(s->wake_fd, &one, sizeof(one)); /* non-blocking */
	(void)n;
}

/* One pass over every slot. Lock held. Returns whether any is closed;
 * *moved when a word advanced. */
static int pump_pass(struct worker_gate_pump *p, int *moved)
{
	struct worker_gates *g;
	int closed = 0;

	for (g = p->sessions; g; g = g->next) {
		uint32_t i;

		for (i = 0; i < WORKER_GATES_PER_SESSION; i++) {
			struct gate_slot *sl = &g->slot[i];
			uint64_t cur, want;

			if (!sl->used)
				continue;
			cur = __atomic_load_n(&g->words[i], __ATOMIC_RELAXED);
			if (!seq_before(cur, sl->issued))
				continue;
			want = __atomic_load_n(
				(uint64_t *)(g->s->data + sl->open_off),
				__ATOMIC_ACQUIRE);
			if (seq_before(sl->issued, want))
				want = sl->issued; /* never past what we issued
						    */
			if (seq_before(cur, want)) {
				__atomic_store_n(&g->words[i], want,
						 __ATOMIC_RELEASE);
				cur = want;
				*moved = 1;
				pump_wake_client(g->s);
			}
			if (seq_before(cur, sl->issued))
				closed = 1;
		}
	}
	return closed;
}

static void *pump_main(void *arg)
{
	struct worker_gate_pump *p = arg;
	uint64_t last_move = 0;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		int moved = 0;
		uint64_t now;

		if (!pump_pass(p, &moved)) {
			pthread_cond_wait(&p->wake, &p->lock);
			last_move = worker_now_ns();
			continue;
		}
		now = worker_now_ns();
		if (moved)
			last_move = now;
		pthread_mutex_unlock(&p->lock);
		sleep_ns(now - last_move < GATE_FAST_FOR_NS
				 ? GATE_FAST_POLL_NS
				 : GATE_SLOW_POLL_NS);
		pthread_mutex_lock(&p->lock);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

int worker_gate_init(struct worker *w)
{
	struct worker_gate_pump *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->wake, NULL);
	w->gate_pump = p;
	return 0;
}

void worker_gate_fini(struct worker *w)
{
	struct worker_gate_pump *p = w->gate_pump;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	if (p->started)
		pthread_join(p->thread, NULL);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
	w->gate_pump = NULL;
}

/*
 * The session's gate table, made on first use: allocated before the
 * pump's lock is taken, installed under it. Only the session's own client
 * thread makes its table.
 */
static int session_gates_alloc(struct worker_session *s,
			       struct worker_gates **out)
{
	struct worker_gates *g;

	*out = NULL;
	if (s->gates) /* set by this thread only: no lock to read it */
		return CUDA_SUCCESS;
	g = calloc(1, sizeof(*g));
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	g->words = calloc(WORKER_GATES_PER_SESSION, sizeof(uint64_t));
	if (!g->words) {
		free(g);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	g->s = s;
	*out = g;
	return CUDA_SUCCESS;
}

/* Install a table made by session_gates_alloc (NULL: s has one). Lock
 * held. */
static int session_gates(struct worker_session *s, struct worker_gates *made,
			 struct worker_gates **out)
{
	struct worker_gate_pump *p = s->w->gate_pump;

	if (s->gates) {
		*out = s->gates;
		return CUDA_SUCCESS;
	}
	if (!p->started) {
		if (pthread_create(&p->thread, NULL, pump_main, p))
			return CUDA_ERROR_OUT_OF_MEMORY;
		p->started = 1;
	}
	made->next = p->sessions;
	p->sessions = made;
	s->gates = made;
	*out = made;
	return CUDA_SUCCESS;
}

int worker_gate_validate(struct worker_session *s, uint64_t off, uint64_t seq,
			 const char **why)
{
	if (!s->w->gate_pump || !s->w->ops->stream_write_host ||
	    !s->data_gpu_ok) {
		*why = "stream gates are not supported here";
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (off % 8 ||
	    !ring_range_ok(off, sizeof(struct vgpu_gate), s->data_size)) {
		*why = "gate not 8-byte aligned inside the data area";
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (seq == 0) {
		*why = "gate sequence number 0";
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

int worker_gate_reserve(struct worker_session *s, struct worker_stream *st,
			uint64_t off, uint64_t seq)
{
	struct worker *w = s->w;
	struct worker_gate_pump *p = w->gate_pump;
	struct worker_gates *g, *made;
	struct gate_slot *sl;
	uint32_t i;
	int rc;

	rc = session_gates_alloc(s, &made);
	if (rc)
		return worker_check(w, rc, "stream gate");
	pthread_mutex_lock(&p->lock);
	rc = session_gates(s, made, &g);
	if (rc) {
		pthread_mutex_unlock(&p->lock);
		free(made->words);
		free(made);
		return worker_check(w, rc, "stream gate");
	}
	if (!st->gate) {
		for (i = 0; i < WORKER_GATES_PER_SESSION; i++)
			if (!g->slot[i].used)
				break;
		if (i == WORKER_GATES_PER_SESSION) {
			/* the library falls back to a synchronous call */
			rc = CUDA_ERROR_NOT_SUPPORTED;
			goto out;
		}
		g->slot[i] = (struct gate_slot){.used = 1};
		__atomic_store_n(&g->words[i], 0, __ATOMIC_RELEASE);
		st->gate = i + 1;
	}
	sl = &g->slot[st->gate - 1];
	if (sl->issued && !seq_before(sl->issued, seq)) {
		rc = CUDA_ERROR_INVALID_VALUE; /* not above the last one */
		goto out;
	}
	sl->open_off = off + offsetof(struct vgpu_gate, open);
	sl->issued = seq;
	if (s->gates_gone) /* nobody will run the function */
		__atomic_store_n(&g->words[st->gate - 1], seq,
				 __ATOMIC_RELEASE);
	pthread_cond_signal(&p->wake);
out:
	pthread_mutex_unlock(&p->lock);
	return rc;
}

int worker_gate_issue(struct worker_session *s, struct worker_stream *st,
		      uint64_t off, uint64_t seq)
{
	struct worker *w = s->w;
	int rc;

	rc = w->ops->stream_write_host(
		w->be, st->bs,
		(uint64_t *)(s->data + off +
			     offsetof(struct vgpu_gate, reached)),
		seq);
	return worker_check(w, rc, "stream gate");
}

int worker_gate_is_open(struct worker_session *s, struct worker_stream *st,
			uint64_t seq)
{
	struct worker_gates *g = s->gates;

	if (!g || !st->gate)
		return 1;
	return !seq_before(
		__atomic_load_n(&g->words[st->gate - 1], __ATOMIC_ACQUIRE),
		seq);
}

void worker_gate_open_stream(struct worker_session *s, struct worker_stream *st)
{
	struct worker_gate_pump *p = s->w->gate_pump;
	struct worker_gates *g = s->gates;

	if (!g || !st->gate)
		return;
	pthread_mutex_lock(&p->lock);
	__atomic_store_n(&g->words[st->gate - 1], g->slot[st->gate - 1].issued,
			 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->lock);
}

void worker_gate_forget_stream(struct worker_session *s,
			       struct worker_stream *st)
{
	struct worker_gate_pump *p = s->w->gate_pump;
	struct worker_gates *g = s->gates;

	if (!g || !st->gate)
		return;
	pthread_mutex_lock(&p->lock);
	g->slot[st->gate - 1].used = 0;
	st->gate = 0;
	pthread_mutex_unlock(&p->lock);
}

void worker_gate_session_gone(struct worker *w, struct worker_session *s)
{
	struct worker_gate_pump *p = w->gate_pump;
	struct worker_gates *g;
	uint32_t i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	s->gates_gone = 1;
	g = s->gates;
	for (i = 0; g && i < WORKER_GATES_PER_SESSION; i++)
		if (g->slot[i].used)
			__atomic_store_n(&g->words[i], g->slot[i].issued,
					 __ATOMIC_RELEASE);
	pthread_mutex_unlock(&p->lock);
}

void worker_gate_session_fini(struct worker_session *s)
{
	struct worker *w = s->w;
	struct worker_gate_pump *p = w->gate_pump;
	struct worker_gates *g = s->gates, **pp;

	if (!g)
		return;
	pthread_mutex_lock(&p->lock);
	for (pp = &p->sessions; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
	s->gates = NULL; /* under the lock: worker_gate_session_gone */
	pthread_mutex_unlock(&p->lock);
	free(g->words);
	free(g);
}
