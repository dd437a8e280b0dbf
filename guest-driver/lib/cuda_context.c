/* SPDX-License-Identifier: MIT */
/*
 * Contexts: cuCtx* and the primary context (cuDevicePrimaryCtx*).
 *
 * Each thread has its own stack of current contexts, as in CUDA. All
 * contexts share the process's connection: work of any context goes to
 * the one worker, and handles (streams, events, modules) made in one
 * context work in every other. cuCtxDestroy waits for the vGPU's work and
 * drops the context; it does not free the resources made in it, which
 * the worker frees when the process disconnects. cuDevicePrimaryCtxReset
 * waits for the work and destroys every resource of the process
 * (cuda_reset.c).
 */
#include <stdlib.h>

#include "client_pool.h"
#include "client_api.h"
#include "client_copy.h"
#include "client_ctx.h"

#define CTX_STACK_MAX 64

struct ctx_stack {
	CUcontext v[CTX_STACK_MAX];
	int n;
};

static __thread struct ctx_stack ctx_stack;

/* the last context id handed out: ids are never reused, so a context
 * made where another was gets another id */
static unsigned long long ctx_last_id;

CUcontext client_ctx_current(void)
{
	return ctx_stack.n ? ctx_stack.v[ctx_stack.n - 1] : NULL;
}

static void ctx_release(struct client_obj *o)
{
	free(o);
}

struct client_ctx *client_ctx_new(struct client *c, unsigned int flags,
				  int primary)
{
	struct client_ctx *x = calloc(1, sizeof(*x));

	if (!x)
		return NULL;
	x->obj.type = CLIENT_OBJ_CTX;
	x->obj.release = ctx_release;
	x->dev = 0;
	x->flags = flags;
	x->primary = primary;
	x->id = __atomic_add_fetch(&ctx_last_id, 1, __ATOMIC_RELAXED);
	if (client_registry_add(&c->registry, &x->obj)) {
		free(x);
		return NULL;
	}
	return x;
}

static int ctx_valid(struct client *c, CUcontext ctx)
{
	struct client_obj *o =
		client_registry_get(&c->registry, ctx, CLIENT_OBJ_CTX);

	if (!o)
		return 0;
	client_obj_put(&c->registry, o);
	return 1;
}

CUresult client_ctx_require(struct client *c)
{
	CUcontext cur = client_ctx_current();

	return cur && ctx_valid(c, cur) ? CUDA_SUCCESS
					: CUDA_ERROR_INVALID_CONTEXT;
}

static CUresult ctx_sync(struct client *c)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_CTX_SYNC};
	uint64_t mark;
	CUresult err;

	client_hostfn_wait_all(); /* as for a stream (cuda_hostfn.c) */
	mark = client_pool_mark();
	err = client_ring_call(&c->ring, &sqe, NULL);
	if (err == CUDA_SUCCESS) /* the frees before are done: give back */
		client_pool_ctx_idle(mark);
	return client_ring_sync_result(&c->ring, err);
}

static CUresult ctx_push(CUcontext ctx)
{
	if (ctx_stack.n == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_stack.v[ctx_stack.n++] = ctx;
	return CUDA_SUCCESS;
}

/* The work of every cuCtxCreate version once arguments are checked. */
static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	struct client_ctx *x;
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pctx || (flags & ~(unsigned int)CU_CTX_FLAGS_MASK))
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	if (ctx_stack.n == CTX_STACK_MAX)
		return CUDA_ERROR_OUT_OF_MEMORY;
	x = client_ctx_new(c, flags, 0);
	if (!x)
		return CUDA_ERROR_OUT_OF_MEMORY;
	ctx_push((CUcontext)x);
	*pctx = (CUcontext)x;
	return CUDA_SUCCESS;
}

/* cuCtxCreate of cuda.h 13 is cuCtxCreate_v4. */
VGPU_API CUresult CUDAAPI cuCtxCreate(CUcontext *pctx,
				      CUctxCreateParams *ctxCreateParams,
				      unsigned int flags, CUdevice dev)
{
	if (ctxCreateParams) {
		if (ctxCreateParams->numExecAffinityParams > 0)
			return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
		if (ctxCreateParams->cigParams)
			return CUDA_ERROR_NOT_SUPPORTED;
	}
	return ctx_create(pctx, flags, dev);
}

/* The older versions, also reachable through cuGetProcAddress. */
VGPU_API CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags,
					 CUdevice dev)
{
	return ctx_create(pctx, flags, dev);
}

VGPU_API CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx,
					 CUexecAffinityParam *paramsArray,
					 int numParams, unsigned int flags,
					 CUdevice dev)
{
	if (numParams > 0)
		return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
	return ctx_create(pctx, flags, dev);
}

VGPU_API CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	struct client_ctx *x;
	struct client_obj *o;
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	o = client_registry_get(&c->registry, ctx, CLIENT_OBJ_CTX);
	if (!o)
		return CUDA_ERROR_INVALID_CONTEXT;
	x = (struct client_ctx *)o;
	if (x->primary) {
		client_obj_put(&c->registry, o);
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	client_obj_put(&c->registry, o);
	o = client_registry_take(&c->registry, ctx, CLIENT_OBJ_CTX);
	if (!o)
		return CUDA_ERROR_INVALID_CONTEXT; /* another thread won */
	if (client_ctx_current() == ctx)
		ctx_stack.n--;
	err = ctx_sync(c);
	client_obj_put(&c->registry, o);
	return err;
}

VGPU_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!ctx) {
		if (ctx_stack.n)
			ctx_stack.n--;
		return CUDA_SUCCESS;
	}
	if (!ctx_valid(c, ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx_stack.n == 0)
		return ctx_push(ctx);
	ctx_stack.v[ctx_stack.n - 1] = ctx;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = client_ctx_current();
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!ctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ctx_valid(c, ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	return ctx_push(ctx);
}

VGPU_API CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (ctx_stack.n == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	ctx_stack.n--;
	if (pctx)
		*pctx = ctx_stack.v[ctx_stack.n];
	return CUDA_SUCCESS;
}

/* ctx, or the current context when ctx is NULL, must be valid. */
static CUresult ctx_resolve(CUcontext ctx, struct client **c)
{
	CUresult err = client_get(c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!ctx)
		return client_ctx_require(*c);
	return ctx_valid(*c, ctx) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult client_ctx_check(CUcontext ctx, struct client **c)
{
	return ctx_resolve(ctx, c);
}

CUresult client_ctx_id(CUcontext ctx, unsigned long long *id)
{
	struct client_obj *o;
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!ctx)
		ctx = client_ctx_current();
	o = ctx ? client_registry_get(&c->registry, ctx, CLIENT_OBJ_CTX) : NULL;
	if (!o)
		return CUDA_ERROR_INVALID_CONTEXT;
	if (id)
		*id = ((struct client_ctx *)o)->id;
	client_obj_put(&c->registry, o);
	return id ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

VGPU_API CUresult CUDAAPI cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
	return client_ctx_id(ctx, ctxId);
}

VGPU_API CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
	struct client *c;
	CUresult err = ctx_resolve(NULL, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = 0;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	struct client *c;
	CUresult err = ctx_resolve(ctx, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = 0;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuCtxSynchronize(void)
{
	struct client *c;
	CUresult err = ctx_resolve(NULL, &c);

	if (err != CUDA_SUCCESS)
		return err;
	return ctx_sync(c);
}

VGPU_API CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
	struct client *c;
	CUresult err = ctx_resolve(ctx, &c);

	if (err != CUDA_SUCCESS)
		return err;
	return ctx_sync(c);
}

/* ---- primary context ------------------------------------------------ */

static CUresult primary_enter(CUdevice dev, struct client **c)
{
	CUresult err = client_get(c);

	if (err != CUDA_SUCCESS)
		return err;
	return dev == 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

CUresult client_primary_ctx(CUdevice dev, CUcontext *pctx)
{
	struct client *c;
	CUresult err = primary_enter(dev, &c);

	if (err != CUDA_SUCCESS)
		return err;
	pthread_mutex_lock(&c->primary_lock);
	if (!c->primary)
		c->primary = client_ctx_new(c, c->primary_flags, 1);
	if (c->primary)
		*pctx = (CUcontext)c->primary;
	else
		err = CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_unlock(&c->primary_lock);
	return err;
}

VGPU_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx,
						   CUdevice dev)
{
	struct client *c;
	CUresult err = primary_enter(dev, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&c->primary_lock);
	if (!c->primary)
		c->primary = client_ctx_new(c, c->primary_flags, 1);
	if (c->primary) {
		c->primary_refs++;
		*pctx = (CUcontext)c->primary;
	} else {
		err = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&c->primary_lock);
	return err;
}

VGPU_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	struct client *c;
	CUresult err = primary_enter(dev, &c);

	if (err != CUDA_SUCCESS)
		return err;
	pthread_mutex_lock(&c->primary_lock);
	if (c->primary_refs == 0)
		err = CUDA_ERROR_INVALID_CONTEXT;
	else
		c->primary_refs--;
	pthread_mutex_unlock(&c->primary_lock);
	return err;
}

/* Whether the process has a context of its own (cuCtxCreate) besides
 * the primary one. */
static int user_contexts(struct client *c, const struct client_ctx *primary)
{
	long n, i, user = 0;
	void **v;

	n = client_registry_handles(&c->registry, CLIENT_OBJ_CTX, &v);
	if (n < 0)
		return 1; /* out of memory: assume so, and free nothing */
	for (i = 0; i < n; i++)
		if ((const struct client_ctx *)v[i] != primary)
			user = 1;
	free(v);
	return user;
}

/*
 * Waits for the vGPU, then destroys every resource of the process
 * (client_reset: the contexts share them) with the primary context
 * current for the duration, and leaves the primary context inactive
 * (retain count 0) but valid: a thread that has it current keeps using
 * it, as after a reset in CUDA. The resources are not tagged with the
 * context that made them, so while a context of the program's own
 * (cuCtxCreate) is alive nothing is freed: CUDA would keep its resources,
 * and freeing them under it would be a silent wrong answer. An error of
 * earlier work is returned and the reset done anyway; a dead worker's
 * error is returned as it is.
 */
VGPU_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	struct client_ctx *primary;
	struct client *c;
	CUresult err = primary_enter(dev, &c), res;

	if (err != CUDA_SUCCESS)
		return err;
	err = ctx_sync(c);
	if (client_ring_dead(&c->ring))
		return err;
	pthread_mutex_lock(&c->primary_lock);
	primary = c->primary;
	c->primary_refs = 0;
	pthread_mutex_unlock(&c->primary_lock);
	if (primary && !user_contexts(c, primary) &&
	    ctx_push((CUcontext)primary) == CUDA_SUCCESS) {
		res = client_reset(c);
		ctx_stack.n--;
		if (err == CUDA_SUCCESS)
			err = res;
	}
	return err;
}

VGPU_API CUresult CUDAAPI cuDevicePrimaryCtxGetState(CUdevice dev,
						     unsigned int *flags,
						     int *active)
{
	struct client *c;
	CUresult err = primary_enter(dev, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&c->primary_lock);
	*flags = c->primary_flags;
	*active = c->primary_refs > 0;
	pthread_mutex_unlock(&c->primary_lock);
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev,
						     unsigned int flags)
{
	struct client *c;
	CUresult err = primary_enter(dev, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (flags & ~(unsigned int)CU_CTX_FLAGS_MASK)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&c->primary_lock);
	c->primary_flags = flags;
	if (c->primary)
		c->primary->flags = flags;
	pthread_mutex_unlock(&c->primary_lock);
	return CUDA_SUCCESS;
}

/* ---- what NVIDIA's runtime asks of every context -------------------- */

/* 3020: the context API every context since CUDA 3.2 has. */
VGPU_API CUresult CUDAAPI cuCtxGetApiVersion(CUcontext ctx,
					     unsigned int *version)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	if (!ctx)
		ctx = client_ctx_current();
	if (!ctx || !ctx_valid(c, ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	*version = 3020;
	return CUDA_SUCCESS;
}

/*
 * The L1/shared split is a preference the driver may ignore (cuda.h); the
 * worker's context keeps the GPU's default, so a vGPU accepts each valid
 * preference, applies none, and reads back the last one set, as CUDA
 * does (one per process: every context of it is on the one vGPU).
 */
static CUfunc_cache ctx_cache = CU_FUNC_CACHE_PREFER_NONE;

void client_ctx_prefs_reset(void)
{
	__atomic_store_n(&ctx_cache, CU_FUNC_CACHE_PREFER_NONE,
			 __ATOMIC_RELAXED);
}

int client_cache_config_ok(CUfunc_cache config)
{
	switch (config) {
	case CU_FUNC_CACHE_PREFER_NONE:
	case CU_FUNC_CACHE_PREFER_SHARED:
	case CU_FUNC_CACHE_PREFER_L1:
	case CU_FUNC_CACHE_PREFER_EQUAL:
		return 1;
	}
	return 0;
}

VGPU_API CUresult CUDAAPI cuCtxSetCacheConfig(CUfunc_cache config)
{
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!client_cache_config_ok(config))
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_store_n(&ctx_cache, config, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuCtxGetCacheConfig(CUfunc_cache *config)
{
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!config)
		return CUDA_ERROR_INVALID_VALUE;
	*config = __atomic_load_n(&ctx_cache, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

/* Shared memory banks are four bytes wide on every GPU since Maxwell and
 * not configurable (CUDA 12 deprecated the calls): accepted, unchanged. */
int client_shared_config_ok(CUsharedconfig config)
{
	return config == CU_SHARED_MEM_CONFIG_DEFAULT_BANK_SIZE ||
	       config == CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE ||
	       config == CU_SHARED_MEM_CONFIG_EIGHT_BYTE_BANK_SIZE;
}

VGPU_API CUresult CUDAAPI cuCtxSetSharedMemConfig(CUsharedconfig config)
{
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	return client_shared_config_ok(config) ? CUDA_SUCCESS
					       : CUDA_ERROR_INVALID_VALUE;
}

VGPU_API CUresult CUDAAPI cuCtxGetSharedMemConfig(CUsharedconfig *pConfig)
{
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pConfig)
		return CUDA_ERROR_INVALID_VALUE;
	*pConfig = CU_SHARED_MEM_CONFIG_FOUR_BYTE_BANK_SIZE;
	return CUDA_SUCCESS;
}

/* A vGPU's streams have no priorities: the range is [0, 0], as CUDA
 * reports for a device without them. */
VGPU_API CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority,
						      int *greatestPriority)
{
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = 0;
	return CUDA_SUCCESS;
}
