/* SPDX-License-Identifier: MIT */
/*
 * The export-table entries a vGPU serves (cuda_export.c), each on our own
 * driver. What each does, and the errors it answers, is what NVIDIA's
 * CUDA 13 driver did when its runtime called it (traced on the H200,
 * docs/DRIVER-INVENTORY.md); public interoperability work (for CUDA 12)
 * named most of them.
 *
 *   runtime interface, slot 2: the device's primary context, made if
 *       need be, its reference count left alone;
 *   callback hooks, slots 2 and 6: a buffer of the driver's and its size,
 *       where the runtime keeps tools' callback state;
 *   context-local storage, slots 0-2: put, delete and get a value under a
 *       key for a context (NULL: the current one);
 *   checks, slot 2: whether a context is a wrapped one (never here), and
 *       slot 3: nothing to report;
 *   integrity check, slot 1: cuda_export_integrity.c;
 *   tools TLS {42d85a81-...}, slot 2: the calling thread's current
 *       context (NULL when none);
 *   libraries' table {21318c60-...}, slot 4: a context's id, as
 *       cuCtxGetId gives it (cuBLASLt asks for both before it looks up
 *       its heuristics, and gives up without them); slot 51: a stream
 *       of a context resolved (NULL: the legacy default stream), and
 *       slot 39: the id of a stream slot 51 resolved, as cuStreamGetId
 *       gives it (cuBLASLt, before each launch: it keeps a workspace per
 *       stream);
 *   libraries' table {6e163fbe-...}, slot 7: each function of a module
 *       to a callback (below).
 *
 * Context-local values are not given to their destructor callback when
 * the context goes: the runtime registers them for its own teardown at
 * exit, when the process is ending anyway.
 */
#include <pthread.h>
#include <stdlib.h>

#include "client.h"
#include "client_api.h"
#include "client_ctx.h"
#include "client_module.h"
#include "cuda_export.h"

typedef void (*cls_dtor)(CUcontext, void *, void *);

struct cls_value {
	struct cls_value *next;
	CUcontext ctx;
	void *key, *value;
	cls_dtor dtor;
};

static pthread_mutex_t cls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct cls_value *cls_values;

static CUresult cudart_primary_ctx(CUcontext *pctx, CUdevice dev)
{
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	return client_primary_ctx(dev, pctx);
}

static uint64_t hooks_space1[1024];
static unsigned char hooks_space2[14];

static void hooks_buffer1(void **p, size_t *n)
{
	if (p)
		*p = hooks_space1;
	if (n)
		*n = sizeof(hooks_space1) / sizeof(hooks_space1[0]);
}

static void hooks_buffer2(void **p, size_t *n)
{
	if (p)
		*p = hooks_space2;
	if (n)
		*n = sizeof(hooks_space2);
}

/* ctx, or the current context (CUDA_ERROR_INVALID_CONTEXT: none). */
static CUresult cls_ctx(CUcontext *ctx)
{
	struct client *c;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!*ctx)
		*ctx = client_ctx_current();
	return *ctx ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

static struct cls_value **cls_find(CUcontext ctx, void *key)
{
	struct cls_value **pp;

	for (pp = &cls_values; *pp; pp = &(*pp)->next)
		if ((*pp)->ctx == ctx && (*pp)->key == key)
			return pp;
	return NULL;
}

static CUresult cls_put(CUcontext ctx, void *key, void *value, cls_dtor dtor)
{
	struct cls_value **pp, *v;
	CUresult err = cls_ctx(&ctx);

	if (err != CUDA_SUCCESS)
		return err;
	pthread_mutex_lock(&cls_lock);
	pp = cls_find(ctx, key);
	if (pp) {
		(*pp)->value = value;
		(*pp)->dtor = dtor;
	} else if ((v = malloc(sizeof(*v)))) {
		*v = (struct cls_value){cls_values, ctx, key, value, dtor};
		cls_values = v;
	} else {
		err = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&cls_lock);
	return err;
}

static CUresult cls_delete(CUcontext ctx, void *key)
{
	struct cls_value **pp, *v = NULL;
	CUresult err = cls_ctx(&ctx);

	if (err != CUDA_SUCCESS)
		return err;
	pthread_mutex_lock(&cls_lock);
	pp = cls_find(ctx, key);
	if (pp) {
		v = *pp;
		*pp = v->next;
	}
	pthread_mutex_unlock(&cls_lock);
	free(v);
	return v ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult cls_get(void **value, CUcontext ctx, void *key)
{
	struct cls_value **pp;
	CUresult err;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	err = cls_ctx(&ctx);
	if (err != CUDA_SUCCESS)
		return err;
	pthread_mutex_lock(&cls_lock);
	pp = cls_find(ctx, key);
	if (pp)
		*value = (*pp)->value;
	pthread_mutex_unlock(&cls_lock);
	return pp ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult checks_context(CUcontext ctx, uint32_t *wrapped,
			       CUcontext *inner)
{
	if (wrapped)
		*wrapped = 0;
	return CUDA_SUCCESS;
}

static CUresult checks_none(void)
{
	return CUDA_SUCCESS;
}

/*
 * {42d85a81-...} slot 2 (CUcontext *out, ...): what cuBLASLt passes
 * after out varies (0 or 0x37, pointers) and NVIDIA's driver gave the
 * current context whatever it was (tests/programs/driver_entries.c).
 */
static CUresult tools_current_ctx(CUcontext *out)
{
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	*out = client_ctx_current();
	return CUDA_SUCCESS;
}

/* {21318c60-...} slot 4 (ctx, unsigned long long *id): cuCtxGetId. */
static CUresult libs_ctx_id(CUcontext ctx, unsigned long long *id)
{
	return client_ctx_id(ctx, id);
}

/*
 * {21318c60-...} slot 51 (ctx, stream, CUstream *out) and slot 39 (ctx,
 * resolved, unsigned long long *id): NVIDIA's driver hands out its own
 * stream object, which cuBLASLt passes back to slot 39 and does not
 * read (tests/programs/driver_entries.c); ours is the stream's handle,
 * with the legacy default stream for NULL.
 */
static CUresult libs_stream_resolve(CUcontext ctx, CUstream s, CUstream *out)
{
	unsigned long long id;
	struct client *c;
	CUresult err = client_ctx_check(ctx, &c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	err = client_stream_id(c, s, 0, &id);
	if (err == CUDA_SUCCESS)
		*out = s ? s : CU_STREAM_LEGACY;
	return err;
}

static CUresult libs_stream_id(CUcontext ctx, CUstream s,
			       unsigned long long *id)
{
	struct client *c;
	CUresult err = client_ctx_check(ctx, &c);

	if (err != CUDA_SUCCESS)
		return err;
	return client_stream_id(c, s, 0, id);
}

/*
 * {6e163fbe-...} slot 7 (ctx, module, fn, user): fn(user, f) for each
 * function f of the module; 1 when they could be listed, else 0. Read
 * off cuFFT, its one caller: it loads a module it built and passes a fn
 * that keeps the function it is given, and it takes 1 for success
 * (NVIDIA's driver answered 1 on the H200). The context is the
 * module's; a vGPU process has one.
 */
static int libs_each_function(CUcontext ctx, CUmodule mod,
			      void (*fn)(void *user, CUfunction f), void *user)
{
	struct client_kernel **ks;
	unsigned int n = 0, i;
	int ok;

	if (!fn || client_kernels_list(mod, 1, NULL, 0, &n) != CUDA_SUCCESS ||
	    n > VGPU_MAX_IMAGE_BYTES / 64) /* the worker's mistake */
		return 0;
	ks = calloc(n ? n : 1, sizeof(*ks));
	if (!ks)
		return 0;
	ok = client_kernels_list(mod, 1, ks, n, NULL) == CUDA_SUCCESS;
	for (i = 0; ok && i < n; i++)
		fn(user, (CUfunction)ks[i]);
	free(ks);
	return ok;
}

void export_entries_install(const void *tables[][100])
{
	tables[EXPORT_CUDART][2] = (const void *)cudart_primary_ctx;
	tables[EXPORT_HOOKS][2] = (const void *)hooks_buffer1;
	tables[EXPORT_HOOKS][6] = (const void *)hooks_buffer2;
	tables[EXPORT_CLS][0] = (const void *)cls_put;
	tables[EXPORT_CLS][1] = (const void *)cls_delete;
	tables[EXPORT_CLS][2] = (const void *)cls_get;
	tables[EXPORT_CHECKS][2] = (const void *)checks_context;
	tables[EXPORT_CHECKS][3] = (const void *)checks_none;
	tables[EXPORT_INTEGRITY][1] = (const void *)export_integrity_check;
	tables[EXPORT_TOOLS_TLS][2] = (const void *)tools_current_ctx;
	tables[EXPORT_LIBS_A][4] = (const void *)libs_ctx_id;
	tables[EXPORT_LIBS_A][39] = (const void *)libs_stream_id;
	tables[EXPORT_LIBS_A][51] = (const void *)libs_stream_resolve;
	tables[EXPORT_LIBS_B][7] = (const void *)libs_each_function;
}
