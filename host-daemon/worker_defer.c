/* SPDX-License-Identifier: MIT */
/*
 * Work held back behind host functions.
 *
 * A host function (STREAM_GATE) makes its stream wait until the client
 * has run it. The stream does not wait on the GPU: the driver makes
 * loading code, freeing and unpinning memory wait for every stream of the
 * process, so one client's slow host function would hold up every other
 * client of the vGPU (worker_gate.c). Instead the gate's "reached" write
 * goes to the GPU, and what the client queues on that stream after the
 * gate stays here, in order, until the gate opens; then it is handed to
 * the backend as if it had just arrived.
 *
 * What may wait here (the stream's asynchronous work): launches (with a
 * copy of their parameters), memsets, device-to-device and host-region
 * copies, event records, waits for events, further gates. An op that
 * needs the stream's work done first (a synchronize, a copy through the
 * data area) waits in the client thread for the stream's queue to drain,
 * as it would wait for the GPU; queries answer NOT_READY. Destroying a
 * stream opens its gates first, as the worker always did (a stream's
 * gates must not outlive it).
 * Records of one event are handed on in the order the client made them
 * (rec_enq, rec_run): a record that follows a held one is held too, and
 * a wait for an event is held until the record it names has been handed
 * on, so a stream that waits for an event recorded behind a host
 * function is held too. An event destroyed while held work names it
 * leaves the handle table at once and goes when that work is handed on. Freeing
 * memory, unloading a library, destroying a host region and synchronising the
 * context wait for every queue of the client: deferred work may use what they
 * free (CUDA's own cuMemFree waits for the device too).
 *
 * Errors of deferred work come back at the client's next synchronising
 * call, as CUDA reports asynchronous errors. A client may hold
 * WORKER_DEFER_MAX entries and WORKER_DEFER_BYTES_MAX of launch
 * parameters; beyond that its next op waits for room. Only the session's client
 * thread touches the queues; the gate pump reads nheld and wakes the thread
 * through wake_fd when a gate opens.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>

#include "worker.h"

#define WORKER_DEFER_MAX       65536 /* entries one client may hold back */
#define WORKER_DEFER_BYTES_MAX (64ull << 20) /* and their parameters */
#define WORKER_DEFER_POLL_MS   1 /* a wait re-checks the gates this often */

struct worker_deferred {
	struct worker_deferred *next;
	struct worker_op op;
	uint64_t gen;	 /* EVENT_RECORD: its number; WAIT_EVENT: awaited */
	int issued;	 /* STREAM_GATE: "reached" is on the GPU */
	uint8_t *params; /* LAUNCH: the parameter buffer as validated */
	uint32_t param_bytes;
};

static uint32_t session_entries(const struct worker_session *s)
{
	const struct worker_stream *st;
	uint32_t n = 0;

	for (st = s->held; st; st = st->next_held)
		n += st->ndq;
	return n;
}

/* The client holds back as much as it may. */
static int session_full(const struct worker_session *s)
{
	return s->held && (session_entries(s) >= WORKER_DEFER_MAX ||
			   s->defer_bytes >= WORKER_DEFER_BYTES_MAX);
}

static void hold_stream(struct worker_session *s, struct worker_stream *st)
{
	st->next_held = s->held;
	s->held = st;
	__atomic_add_fetch(&s->nheld, 1, __ATOMIC_RELEASE);
}

static void release_stream(struct worker_session *s, struct worker_stream *st)
{
	struct worker_stream **pp;

	for (pp = &s->held; *pp; pp = &(*pp)->next_held) {
		if (*pp == st) {
			*pp = st->next_held;
			st->next_held = NULL;
			__atomic_sub_fetch(&s->nheld, 1, __ATOMIC_RELEASE);
			return;
		}
	}
}

static int append(struct worker_session *s, const struct worker_op *op,
		  uint64_t gen)
{
	struct worker_stream *st = op->stream;
	struct worker_deferred *e = calloc(1, sizeof(*e));

	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->op = *op;
	e->gen = gen;
	if (op->opcode == VGPU_OP_LAUNCH) {
		e->param_bytes = op->launch.k->info.param_bytes;
		if (e->param_bytes) {
			e->params = malloc(e->param_bytes);
			if (!e->params) {
				free(e);
				return CUDA_ERROR_OUT_OF_MEMORY;
			}
			memcpy(e->params, s->param_buf, e->param_bytes);
			s->defer_bytes += e->param_bytes;
		}
	}
	if (op->opcode == VGPU_OP_EVENT_RECORD ||
	    op->opcode == VGPU_OP_STREAM_WAIT_EVENT)
		op->event->refs++;
	if (st->dq_tail)
		st->dq_tail->next = e;
	else
		st->dq_head = e;
	st->dq_tail = e;
	if (!st->ndq++)
		hold_stream(s, st);
	return CUDA_SUCCESS;
}

static void entry_free(struct worker_session *s, struct worker_deferred *e)
{
	struct worker_event *ev = e->op.event;

	if ((e->op.opcode == VGPU_OP_EVENT_RECORD ||
	     e->op.opcode == VGPU_OP_STREAM_WAIT_EVENT) &&
	    !--ev->refs && ev->destroyed) {
		/* the client destroyed it meanwhile: now it can go */
		s->w->ops->event_destroy(s->w->be, ev->be);
		free(ev);
	}
	s->defer_bytes -= e->param_bytes;
	free(e->params);
	free(e);
}

static void pop(struct worker_session *s, struct worker_stream *st)
{
	struct worker_deferred *e = st->dq_head;

	st->dq_head = e->next;
	if (!st->dq_head)
		st->dq_tail = NULL;
	if (!--st->ndq)
		release_stream(s, st);
	entry_free(s, e);
}

/*
 * The "reached" write of a gate could not be queued: the client must still
 * run its function, after the work before it. Wait for the stream, then
 * write the number from here.
 */
static void gate_reached_by_hand(struct worker_session *s,
				 struct worker_stream *st,
				 const struct worker_op *op)
{
	uint64_t *reached = (uint64_t *)(s->data + op->gate.off +
					 offsetof(struct vgpu_gate, reached));

	worker_check(s->w, s->w->ops->stream_sync(s->w->be, st->bs),
		     "stream_sync");
	__atomic_store_n(reached, op->gate.seq, __ATOMIC_RELEASE);
}

static void note_error(struct worker_session *s, int rc)
{
	if (rc && !s->defer_error)
		s->defer_error = rc;
}

/*
 * Hand on st's entries until one must wait (a closed gate, an event whose
 * record is still held elsewhere). Returns how many went.
 */
static uint32_t flush_stream(struct worker_session *s, struct worker_stream *st)
{
	struct worker_deferred *e;
	uint64_t r[2];
	uint32_t n = 0;
	int rc;

	while ((e = st->dq_head)) {
		switch (e->op.opcode) {
		case VGPU_OP_STREAM_GATE:
			if (!e->issued) {
				e->issued = 1;
				rc = worker_gate_issue(s, st, e->op.gate.off,
						       e->op.gate.seq);
				if (rc) /* the function must still run */
					gate_reached_by_hand(s, st, &e->op);
				else if (st->wd) /* as a wait for an event */
					worker_watchdog_track_wait(s->w, st->wd,
								   st->bs);
			}
			if (!worker_gate_is_open(s, st, e->op.gate.seq))
				return n;
			break;
		case VGPU_OP_STREAM_WAIT_EVENT:
			if (e->op.event->rec_run < e->gen)
				return n;
			note_error(s, worker_execute(s, &e->op, r));
			break;
		case VGPU_OP_EVENT_RECORD:
			if (e->op.event->rec_run + 1 != e->gen)
				return n; /* an earlier record is held */
			note_error(s, worker_execute(s, &e->op, r));
			e->op.event->rec_run++;
			break;
		case VGPU_OP_LAUNCH:
			memcpy(s->param_buf, e->params, e->param_bytes);
			/* fall through */
		default:
			note_error(s, worker_execute(s, &e->op, r));
			break;
		}
		pop(s, st);
		n++;
	}
	return n;
}

void worker_defer_flush(struct worker_session *s)
{
	struct worker_stream *st, *next;
	uint32_t moved;

	/* an event record handed on in one queue may free a wait in another */
	do {
		moved = 0;
		for (st = s->held; st; st = next) {
			next = st->next_held; /* st may leave the list */
			moved += flush_stream(s, st);
		}
	} while (moved && s->held);
}

void worker_defer_discard(struct worker_session *s)
{
	struct worker_stream *st;

	while ((st = s->held)) {
		while (st->dq_head) {
			if (st->dq_head->op.opcode == VGPU_OP_EVENT_RECORD)
				st->dq_head->op.event->rec_run++;
			pop(s, st);
		}
	}
}

/* What a wait waits for. */
enum until { UNTIL_STREAM, UNTIL_EVENT, UNTIL_ALL, UNTIL_ROOM };

static int settled(const struct worker_session *s, enum until u,
		   const struct worker_op *op)
{
	switch (u) {
	case UNTIL_STREAM:
		return !op->stream->ndq;
	case UNTIL_EVENT:
		return op->event->rec_run == op->event->rec_enq;
	case UNTIL_ROOM:
		return !session_full(s);
	case UNTIL_ALL:
		break;
	}
	return !s->held;
}

/*
 * Hand on deferred work until u holds, sleeping on wake_fd (the pump
 * writes it when a gate opens) or a short poll. CUDA_SUCCESS, or an error
 * when the client thread must stop (the client is gone).
 */
static int wait_until(struct worker_session *s, enum until u,
		      const struct worker_op *op)
{
	struct pollfd pfd = {.fd = s->wake_fd, .events = POLLIN};
	uint64_t v;
	ssize_t n;

	for (;;) {
		worker_defer_flush(s);
		if (settled(s, u, op))
			return CUDA_SUCCESS;
		if (s->stop && __atomic_load_n(s->stop, __ATOMIC_ACQUIRE))
			return CUDA_ERROR_DEINITIALIZED;
		if (poll(&pfd, s->wake_fd >= 0 ? 1 : 0, WORKER_DEFER_POLL_MS) >
		    0) {
			n = read(s->wake_fd, &v, sizeof(v));
			(void)n;
		}
	}
}

/* The first deferred error, once, for a synchronising call. */
static int take_error(struct worker_session *s)
{
	int rc = s->defer_error;

	s->defer_error = 0;
	return rc;
}

int worker_defer_route(struct worker_session *s, const struct worker_op *op,
		       int *rc)
{
	struct worker_stream *st = op->stream;
	struct worker_event *ev;

	*rc = CUDA_SUCCESS;
	if (session_full(s)) {
		/* the flushes below put deferred launches' parameters in
		 * param_buf, where this op's already are */
		uint32_t n = op->opcode == VGPU_OP_LAUNCH
				     ? op->launch.k->info.param_bytes
				     : 0;
		uint8_t *save = n ? malloc(n) : NULL;

		if (n && !save) {
			*rc = CUDA_ERROR_OUT_OF_MEMORY;
			return 1;
		}
		if (n)
			memcpy(save, s->param_buf, n);
		*rc = wait_until(s, UNTIL_ROOM, op);
		if (n)
			memcpy(s->param_buf, save, n);
		free(save);
		if (*rc)
			return 0;
	}
	switch (op->opcode) {
	case VGPU_OP_STREAM_GATE:
		*rc = worker_gate_reserve(s, st, op->gate.off, op->gate.seq);
		if (*rc)
			return 1;
		if (!st->ndq) {
			/* first in line: "reached" goes now, and if it cannot,
			 * the client hears so (its library then waits for the
			 * stream and calls the function itself) */
			*rc = worker_gate_issue(s, st, op->gate.off,
						op->gate.seq);
			if (*rc) {
				worker_gate_open_stream(s, st);
				return 1;
			}
			if (st->wd) /* as a wait for an event */
				worker_watchdog_track_wait(s->w, st->wd,
							   st->bs);
		}
		if ((*rc = append(s, op, 0)) == 0 && st->ndq == 1)
			st->dq_head->issued = 1;
		worker_defer_flush(s);
		return 1;
	case VGPU_OP_LAUNCH:
	case VGPU_OP_MEMSET:
	case VGPU_OP_MEMCPY_DTOD:
	case VGPU_OP_MEMCPY_REGION_HTOD:
	case VGPU_OP_MEMCPY_REGION_DTOH:
		if (!st->ndq)
			return 0;
		*rc = append(s, op, 0);
		return 1;
	case VGPU_OP_EVENT_RECORD:
		ev = op->event;
		if (st->ndq) {
			*rc = append(s, op, ev->rec_enq + 1);
			if (*rc == CUDA_SUCCESS)
				ev->rec_enq++;
			return 1;
		}
		/* after the records still held, in order: held itself (its
		 * stream with it) rather than making the client wait */
		if (ev->rec_run != ev->rec_enq) {
			*rc = append(s, op, ev->rec_enq + 1);
			if (*rc == CUDA_SUCCESS)
				ev->rec_enq++;
			return 1;
		}
		ev->rec_enq++;
		ev->rec_run++;
		return 0;
	case VGPU_OP_STREAM_WAIT_EVENT:
		ev = op->event;
		if (!st->ndq && ev->rec_run == ev->rec_enq)
			return 0;
		*rc = append(s, op, ev->rec_enq);
		return 1;
	case VGPU_OP_STREAM_QUERY:
		if (!st->ndq)
			return 0;
		*rc = CUDA_ERROR_NOT_READY;
		return 1;
	case VGPU_OP_EVENT_QUERY:
		if (op->event->rec_run == op->event->rec_enq)
			return 0;
		*rc = CUDA_ERROR_NOT_READY;
		return 1;
	case VGPU_OP_EVENT_ELAPSED:
		if (op->elapsed.start->rec_run == op->elapsed.start->rec_enq &&
		    op->elapsed.end->rec_run == op->elapsed.end->rec_enq)
			return 0;
		*rc = CUDA_ERROR_NOT_READY;
		return 1;
	case VGPU_OP_EVENT_SYNC:
		if ((*rc = wait_until(s, UNTIL_EVENT, op)) == 0)
			*rc = take_error(s);
		return *rc != 0;
	case VGPU_OP_EVENT_DESTROY:
		if (!op->event->refs)
			return 0;
		/* as CUDA: the destroy returns now, the event goes when the
		 * work held back that names it has been handed on */
		handle_table_remove(&s->h.events, op->handle);
		op->event->destroyed = 1;
		return 1;
	case VGPU_OP_STREAM_SYNC:
		if ((*rc = wait_until(s, UNTIL_STREAM, op)) == 0)
			*rc = take_error(s);
		return *rc != 0;
	case VGPU_OP_STREAM_DESTROY:
		/* as before deferral: its gates open, what they held goes
		 * (the host functions still run, unordered) */
		if (st->ndq) {
			worker_gate_open_stream(s, st);
			*rc = wait_until(s, UNTIL_STREAM, op);
		}
		return 0;
	case VGPU_OP_MEMCPY_HTOD:
	case VGPU_OP_MEMCPY_DTOH:
		if (st && st->ndq)
			*rc = wait_until(s, UNTIL_STREAM, op);
		return 0;
	case VGPU_OP_CTX_SYNC:
		if ((*rc = wait_until(s, UNTIL_ALL, op)) == 0)
			*rc = take_error(s);
		return *rc != 0;
	case VGPU_OP_MEM_FREE:
	case VGPU_OP_LIBRARY_UNLOAD:
	case VGPU_OP_HOST_REGION_DESTROY:
		if (s->held)
			*rc = wait_until(s, UNTIL_ALL, op);
		return 0;
	}
	return 0;
}
