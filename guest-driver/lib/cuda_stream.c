/* SPDX-License-Identifier: MIT */
/*
 * Streams. A CUstream is the address of a registered struct holding the
 * worker's stream handle; NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * all name the worker's default stream (handle 0). The worker's streams
 * never wait for each other by themselves: the legacy default stream's
 * waits on blocking streams, and theirs on it, are the library's
 * (client_order.c), from the flags a stream was created with.
 */
#include <stdlib.h>

#include "client_pool.h"
#include "client.h"
#include "client_api.h"
#include "client_copy.h"

struct client_stream {
	struct client_obj obj;
	uint32_t handle;
	unsigned int flags;
	unsigned long long id;		  /* cuStreamGetId */
	struct client_order_stream order; /* blocking streams only */
};

/*
 * Stream ids (cuStreamGetId): the legacy default stream is 1 and the
 * per-thread one 2 (every thread's: here they are one stream, the
 * worker's default); created streams count on from 3 and an id is never
 * reused, so a stream made where another was gets a new one.
 */
enum { STREAM_ID_LEGACY = 1, STREAM_ID_PER_THREAD = 2 };
static unsigned long long stream_last_id = STREAM_ID_PER_THREAD;

static void stream_release(struct client_obj *o)
{
	free(o);
}

/* A created stream's worker handle and id (either may be NULL). */
static CUresult stream_find(struct client *c, CUstream s, uint32_t *h,
			    unsigned long long *id)
{
	struct client_obj *o =
		client_registry_get(&c->registry, s, CLIENT_OBJ_STREAM);

	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	if (h)
		*h = ((struct client_stream *)o)->handle;
	if (id)
		*id = ((struct client_stream *)o)->id;
	client_obj_put(&c->registry, o);
	return CUDA_SUCCESS;
}

CUresult client_stream_handle(struct client *c, CUstream s, uint32_t *h)
{
	if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
		*h = 0;
		return CUDA_SUCCESS;
	}
	return stream_find(c, s, h, NULL);
}

static int stream_blocking(const struct client_stream *st)
{
	return !(st->flags & CU_STREAM_NON_BLOCKING);
}

CUresult client_stream_begin(struct client *c, CUstream s, int stages,
			     struct client_stream_use *u)
{
	struct client_stream *st;
	CUresult err;

	*u = (struct client_stream_use){0};
	if (!s || s == CU_STREAM_LEGACY) {
		u->legacy = 1;
		err = client_order_legacy(c);
		if (err == CUDA_SUCCESS && stages)
			client_order_wait_hostfns(c);
		return err;
	}
	if (s == CU_STREAM_PER_THREAD) {
		/* the legacy stream's own worker stream: ordered with it */
		if (stages)
			client_order_wait_hostfns(c);
		return CUDA_SUCCESS;
	}
	u->obj = client_registry_get(&c->registry, s, CLIENT_OBJ_STREAM);
	if (!u->obj)
		return CUDA_ERROR_INVALID_HANDLE;
	st = (struct client_stream *)u->obj;
	u->handle = st->handle;
	if (!stream_blocking(st))
		return CUDA_SUCCESS;
	u->order = &st->order;
	err = client_order_blocking(c, u->order);
	if (err != CUDA_SUCCESS) {
		client_obj_put(&c->registry, u->obj);
		u->obj = NULL;
		return err;
	}
	if (stages)
		client_order_wait_hostfns(c);
	return CUDA_SUCCESS;
}

CUresult client_stream_end(struct client *c, struct client_stream_use *u,
			   CUresult err)
{
	/* noted even after a failure: a wait too many costs little */
	if (u->legacy)
		client_order_legacy_done(&c->order);
	else if (u->order)
		client_order_blocking_done(&c->order, u->order);
	if (u->obj)
		client_obj_put(&c->registry, u->obj);
	return err;
}

VGPU_API CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_STREAM_CREATE};
	struct client_stream *st;
	struct vgpu_cqe cqe;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!phStream || (Flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	st = calloc(1, sizeof(*st));
	if (!st)
		return CUDA_ERROR_OUT_OF_MEMORY;
	err = client_ring_call(&c->ring, &sqe, &cqe);
	if (err == CUDA_SUCCESS && !client_handle_ok(cqe.r[0]))
		err = CUDA_ERROR_INVALID_HANDLE; /* the worker's mistake */
	if (err != CUDA_SUCCESS) {
		free(st);
		return err;
	}
	st->obj.type = CLIENT_OBJ_STREAM;
	st->obj.release = stream_release;
	st->handle = (uint32_t)cqe.r[0];
	st->flags = Flags;
	st->id = __atomic_add_fetch(&stream_last_id, 1, __ATOMIC_RELAXED);
	st->order.handle = st->handle;
	if (stream_blocking(st))
		client_order_add(c, &st->order);
	if (client_registry_add(&c->registry, &st->obj)) {
		if (stream_blocking(st))
			client_order_remove(c, &st->order);
		sqe = (struct vgpu_sqe){.opcode = VGPU_OP_STREAM_DESTROY,
					.handle = st->handle};
		client_ring_call(&c->ring, &sqe, NULL);
		free(st);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*phStream = (CUstream)st;
	return CUDA_SUCCESS;
}

/* Every stream has priority 0 (cuStreamGetPriority): a priority asked
 * for is clamped into that range, as CUDA clamps one outside its own. */
VGPU_API CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream,
						     unsigned int flags,
						     int priority)
{
	(void)priority;
	return cuStreamCreate(phStream, flags);
}

VGPU_API CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_STREAM_DESTROY};
	uint64_t mark;
	struct client_obj *o;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	o = client_registry_take(&c->registry, hStream, CLIENT_OBJ_STREAM);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	sqe.handle = ((struct client_stream *)o)->handle;
	if (stream_blocking((struct client_stream *)o))
		client_order_remove(c, &((struct client_stream *)o)->order);
	mark = client_pool_mark();
	err = client_ring_call(&c->ring, &sqe, NULL);
	if (err == CUDA_SUCCESS) /* the worker waited for its work */
		client_pool_stream_idle(sqe.handle, mark);
	client_obj_put(&c->registry, o);
	return err;
}

/* A synchronizing stream call: the op's status, else a deferred error. */
static CUresult stream_sync_op(CUstream hStream, uint16_t opcode)
{
	struct vgpu_sqe sqe = {.opcode = opcode};
	uint64_t mark;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	err = client_stream_handle(c, hStream, &sqe.stream);
	if (err != CUDA_SUCCESS)
		return err;
	if (opcode == VGPU_OP_STREAM_SYNC) /* its host functions first */
		client_hostfn_wait_stream(sqe.stream);
	mark = client_pool_mark();
	err = client_ring_call(&c->ring, &sqe, NULL);
	if (opcode == VGPU_OP_STREAM_SYNC && err == CUDA_SUCCESS)
		client_pool_stream_idle(sqe.stream, mark); /* its frees done */
	return client_ring_sync_result(&c->ring, err);
}

VGPU_API CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	return stream_sync_op(hStream, VGPU_OP_STREAM_SYNC);
}

VGPU_API CUresult CUDAAPI cuStreamQuery(CUstream hStream)
{
	return stream_sync_op(hStream, VGPU_OP_STREAM_QUERY);
}

/* The flags a stream was created with; the default streams have none. */
VGPU_API CUresult CUDAAPI cuStreamGetFlags(CUstream hStream,
					   unsigned int *flags)
{
	struct client_obj *o;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (!hStream || hStream == CU_STREAM_LEGACY ||
	    hStream == CU_STREAM_PER_THREAD) {
		*flags = 0;
		return CUDA_SUCCESS;
	}
	o = client_registry_get(&c->registry, hStream, CLIENT_OBJ_STREAM);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	*flags = ((struct client_stream *)o)->flags;
	client_obj_put(&c->registry, o);
	return CUDA_SUCCESS;
}

/* Every stream has priority 0: the worker does not order streams by
 * priority, so the range it reports is [0, 0]. */
VGPU_API CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
	struct client *c;
	uint32_t h;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!priority)
		return CUDA_ERROR_INVALID_VALUE;
	err = client_stream_handle(c, hStream, &h);
	if (err == CUDA_SUCCESS)
		*priority = 0;
	return err;
}

CUresult client_stream_id(struct client *c, CUstream s, int per_thread,
			  unsigned long long *id)
{
	if (!id)
		return CUDA_ERROR_INVALID_VALUE;
	if (s == CU_STREAM_PER_THREAD || (!s && per_thread)) {
		*id = STREAM_ID_PER_THREAD;
		return CUDA_SUCCESS;
	}
	if (!s || s == CU_STREAM_LEGACY) {
		*id = STREAM_ID_LEGACY;
		return CUDA_SUCCESS;
	}
	return stream_find(c, s, NULL, id);
}

static CUresult stream_get_id(CUstream hStream, int per_thread,
			      unsigned long long *id)
{
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_id(c, hStream, per_thread, id);
}

VGPU_API CUresult CUDAAPI cuStreamGetId(CUstream hStream,
					unsigned long long *streamId)
{
	return stream_get_id(hStream, 0, streamId);
}

/* NULL is the calling thread's per-thread default stream here. */
VGPU_API CUresult CUDAAPI cuStreamGetId_ptsz(CUstream hStream,
					     unsigned long long *streamId)
{
	return stream_get_id(hStream, 1, streamId);
}
