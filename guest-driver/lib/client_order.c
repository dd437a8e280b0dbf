/* SPDX-License-Identifier: MIT */
/*
 * The legacy default stream's implicit ordering (see client_order.h).
 *
 * A blocking stream is dirty from its first work after the legacy stream
 * last waited for it. Legacy work first makes the legacy stream wait for
 * each dirty stream's event, recorded there and then. Blocking work first
 * waits, when the legacy stream has had work since it last looked, for
 * the legacy stream's event, recorded once per change and shared by every
 * stream that waits for it. The records and waits are ordinary ring
 * operations, so the worker orders them with held-back work (behind host
 * functions) as it orders the program's own.
 */
#include <stdlib.h>

#include <vgpu/protocol.h>

#include "client.h"
#include "client_copy.h"
#include "client_order.h"

/* Blocking streams whose host functions a staging copy waits for one by
 * one; with more, it waits for every stream's. */
#define ORDER_HOSTFN_STREAMS 64

void client_order_init(struct client_order *o)
{
	pthread_mutex_init(&o->lock, NULL);
	o->blocking = NULL;
	o->dirty_any = 0;
	o->busy = 0;
	o->legacy = 0;
	o->recorded = 0;
	o->event = 0;
}

void client_order_add(struct client *c, struct client_order_stream *s)
{
	struct client_order *o = &c->order;

	pthread_mutex_lock(&o->lock);
	s->next = o->blocking;
	o->blocking = s;
	pthread_mutex_unlock(&o->lock);
}

static void order_event_destroy(struct client *c, uint32_t ev)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_EVENT_DESTROY, .handle = ev};

	if (ev)
		client_ring_call(&c->ring, &sqe, NULL);
}

void client_order_remove(struct client *c, struct client_order_stream *s)
{
	struct client_order *o = &c->order;
	struct client_order_stream **p;
	uint32_t ev;

	pthread_mutex_lock(&o->lock);
	for (p = &o->blocking; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			break;
		}
	ev = s->event;
	s->event = 0;
	pthread_mutex_unlock(&o->lock);
	order_event_destroy(c, ev);
}

/* *ev, an event of the library's own (no timing), made when first needed.
 * Under the lock. */
static CUresult order_event(struct client *c, uint32_t *ev)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_EVENT_CREATE,
			       .a = {CU_EVENT_DISABLE_TIMING}};
	struct vgpu_cqe cqe;
	CUresult err;

	if (*ev)
		return CUDA_SUCCESS;
	err = client_ring_call(&c->ring, &sqe, &cqe);
	if (err == CUDA_SUCCESS && !client_handle_ok(cqe.r[0]))
		err = CUDA_ERROR_INVALID_HANDLE; /* the worker's mistake */
	if (err == CUDA_SUCCESS)
		*ev = (uint32_t)cqe.r[0];
	return err;
}

/* Stream waiter waits for event ev. */
static CUresult order_wait_event(struct client *c, uint32_t waiter, uint32_t ev)
{
	struct vgpu_sqe wait = {.opcode = VGPU_OP_STREAM_WAIT_EVENT,
				.stream = waiter,
				.handle = ev};

	return client_ring_submit_async(&c->ring, &wait);
}

/* Stream waiter waits for what stream source has queued until now. */
static CUresult order_wait(struct client *c, uint32_t *ev, uint32_t source,
			   uint32_t waiter)
{
	struct vgpu_sqe rec = {.opcode = VGPU_OP_EVENT_RECORD,
			       .stream = source};
	CUresult err = order_event(c, ev);

	if (err != CUDA_SUCCESS)
		return err;
	rec.handle = *ev;
	err = client_ring_submit_async(&c->ring, &rec);
	if (err != CUDA_SUCCESS)
		return err;
	return order_wait_event(c, waiter, *ev);
}

CUresult client_order_legacy(struct client *c)
{
	struct client_order *o = &c->order;
	struct client_order_stream *s;
	CUresult err = CUDA_SUCCESS;

	/* busy: another thread cleared dirty_any and is still queueing the
	 * waits it stood for; work queued now must come after them */
	if (!__atomic_load_n(&o->dirty_any, __ATOMIC_SEQ_CST) &&
	    !__atomic_load_n(&o->busy, __ATOMIC_SEQ_CST))
		return CUDA_SUCCESS;
	pthread_mutex_lock(&o->lock);
	__atomic_store_n(&o->busy, 1, __ATOMIC_SEQ_CST);
	/* cleared first: a stream made dirty from now on sets it again */
	__atomic_store_n(&o->dirty_any, 0, __ATOMIC_SEQ_CST);
	for (s = o->blocking; s; s = s->next) {
		if (!__atomic_exchange_n(&s->dirty, 0, __ATOMIC_ACQ_REL))
			continue;
		err = order_wait(c, &s->event, s->handle, 0);
		if (err != CUDA_SUCCESS) { /* the next legacy call retries */
			__atomic_store_n(&s->dirty, 1, __ATOMIC_RELAXED);
			__atomic_store_n(&o->dirty_any, 1, __ATOMIC_RELEASE);
			break;
		}
	}
	__atomic_store_n(&o->busy, 0, __ATOMIC_SEQ_CST);
	pthread_mutex_unlock(&o->lock);
	return err;
}

CUresult client_order_blocking(struct client *c, struct client_order_stream *s)
{
	struct client_order *o = &c->order;
	uint64_t now = __atomic_load_n(&o->legacy, __ATOMIC_ACQUIRE);
	CUresult err = CUDA_SUCCESS;

	if (now == __atomic_load_n(&s->seen, __ATOMIC_RELAXED))
		return CUDA_SUCCESS;
	pthread_mutex_lock(&o->lock);
	if (o->recorded != now || !o->event) {
		err = order_wait(c, &o->event, 0, s->handle);
		if (err == CUDA_SUCCESS)
			o->recorded = now;
	} else {
		err = order_wait_event(c, s->handle, o->event);
	}
	if (err == CUDA_SUCCESS)
		__atomic_store_n(&s->seen, now, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&o->lock);
	return err;
}

void client_order_wait_hostfns(struct client *c)
{
	struct client_order *o = &c->order;
	struct client_order_stream *s;
	uint32_t h[ORDER_HOSTFN_STREAMS];
	unsigned int n = 0, i;
	int all = 0;

	pthread_mutex_lock(&o->lock);
	for (s = o->blocking; s; s = s->next) {
		if (n == ORDER_HOSTFN_STREAMS) {
			all = 1; /* more than that: every stream's */
			break;
		}
		h[n++] = s->handle;
	}
	pthread_mutex_unlock(&o->lock);
	if (all) {
		client_hostfn_wait_all();
		return;
	}
	client_hostfn_wait_stream(0);
	for (i = 0; i < n; i++)
		client_hostfn_wait_stream(h[i]);
}
