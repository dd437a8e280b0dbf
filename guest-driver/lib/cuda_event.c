/* SPDX-License-Identifier: MIT */
/*
 * Events, and cuStreamWaitEvent. Recording and waiting are submitted
 * without waiting for the worker; their errors come with the next
 * synchronizing call.
 */
#include <stdlib.h>
#include <string.h>

#include "client.h"
#include "client_api.h"

#define EVENT_FLAGS                                                            \
	(CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING |                    \
	 CU_EVENT_INTERPROCESS)

struct client_event {
	struct client_obj obj;
	uint32_t handle;
};

static void event_release(struct client_obj *o)
{
	free(o);
}

/* The worker handle of a live event, or CUDA_ERROR_INVALID_HANDLE. */
static CUresult event_handle(struct client *c, CUevent e, uint32_t *h)
{
	struct client_obj *o =
		client_registry_get(&c->registry, e, CLIENT_OBJ_EVENT);

	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	*h = ((struct client_event *)o)->handle;
	client_obj_put(&c->registry, o);
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_EVENT_CREATE};
	struct client_event *ev;
	struct vgpu_cqe cqe;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!phEvent || (Flags & ~(unsigned int)EVENT_FLAGS))
		return CUDA_ERROR_INVALID_VALUE;
	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	sqe.a[0] = Flags;
	err = client_ring_call(&c->ring, &sqe, &cqe);
	if (err == CUDA_SUCCESS && !client_handle_ok(cqe.r[0]))
		err = CUDA_ERROR_INVALID_HANDLE;
	if (err != CUDA_SUCCESS) {
		free(ev);
		return err;
	}
	ev->obj.type = CLIENT_OBJ_EVENT;
	ev->obj.release = event_release;
	ev->handle = (uint32_t)cqe.r[0];
	if (client_registry_add(&c->registry, &ev->obj)) {
		sqe = (struct vgpu_sqe){.opcode = VGPU_OP_EVENT_DESTROY,
					.handle = ev->handle};
		client_ring_call(&c->ring, &sqe, NULL);
		free(ev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*phEvent = (CUevent)ev;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_EVENT_DESTROY};
	struct client_obj *o;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	o = client_registry_take(&c->registry, hEvent, CLIENT_OBJ_EVENT);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	sqe.handle = ((struct client_event *)o)->handle;
	err = client_ring_call(&c->ring, &sqe, NULL);
	client_obj_put(&c->registry, o);
	return err;
}

VGPU_API CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_EVENT_RECORD};
	struct client_stream_use u;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	err = event_handle(c, hEvent, &sqe.handle);
	if (err == CUDA_SUCCESS)
		err = client_stream_begin(c, hStream, 0, &u);
	if (err != CUDA_SUCCESS)
		return err;
	sqe.stream = u.handle;
	return client_stream_end(c, &u,
				 client_ring_submit_async(&c->ring, &sqe));
}

/* Event calls that wait for an answer: the op's status (NOT_READY
 * included), else a deferred error. */
static CUresult event_sync_op(CUevent hEvent, uint16_t opcode)
{
	struct vgpu_sqe sqe = {.opcode = opcode};
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	err = event_handle(c, hEvent, &sqe.handle);
	if (err != CUDA_SUCCESS)
		return err;
	err = client_ring_call(&c->ring, &sqe, NULL);
	return client_ring_sync_result(&c->ring, err);
}

VGPU_API CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
	return event_sync_op(hEvent, VGPU_OP_EVENT_SYNC);
}

VGPU_API CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
	return event_sync_op(hEvent, VGPU_OP_EVENT_QUERY);
}

/* cuEventElapsedTime of cuda.h 13 is cuEventElapsedTime_v2; the plain
 * name (same arguments) is in cuda_compat.c. */
VGPU_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds,
					     CUevent hStart, CUevent hEnd)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_EVENT_ELAPSED};
	struct vgpu_cqe cqe;
	struct client *c;
	uint32_t end, bits;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pMilliseconds)
		return CUDA_ERROR_INVALID_VALUE;
	err = event_handle(c, hStart, &sqe.handle);
	if (err == CUDA_SUCCESS)
		err = event_handle(c, hEnd, &end);
	if (err != CUDA_SUCCESS)
		return err;
	sqe.a[0] = end;
	err = client_ring_call(&c->ring, &sqe, &cqe);
	if (err != CUDA_SUCCESS)
		return err;
	bits = (uint32_t)cqe.r[0];
	memcpy(pMilliseconds, &bits, sizeof(*pMilliseconds));
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent,
					    unsigned int Flags)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_STREAM_WAIT_EVENT};
	struct client_stream_use u;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (Flags & ~(unsigned int)CU_EVENT_WAIT_EXTERNAL)
		return CUDA_ERROR_INVALID_VALUE;
	err = event_handle(c, hEvent, &sqe.handle);
	if (err == CUDA_SUCCESS)
		err = client_stream_begin(c, hStream, 0, &u);
	if (err != CUDA_SUCCESS)
		return err;
	sqe.stream = u.handle;
	return client_stream_end(c, &u,
				 client_ring_submit_async(&c->ring, &sqe));
}
