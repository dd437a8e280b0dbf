/* SPDX-License-Identifier: MIT */
/*
 * What cuDevicePrimaryCtxReset (and so cudaDeviceReset) destroys: every
 * stream, event, module, device allocation and page-locked host buffer
 * of the process. A vGPU's contexts share one set of resources
 * (cuda_context.c), so that is everything made in any context. Each goes
 * through its ordinary destroy call, so the worker frees what it holds
 * (cuMemGetInfo shows the memory back at once) and a handle kept by the
 * program is afterwards as invalid as after its own destroy call.
 * Libraries (cuLibraryLoad*) stay: CUDA makes them context-independent,
 * and NVIDIA's runtime keeps launching its kernels through them after
 * cudaDeviceReset.
 */
#include <stdlib.h>

#include "client.h"
#include "client_api.h"
#include "client_ctx.h"
#include "client_module.h"
#include "client_pool.h"

/* The first error wins; the rest is still destroyed. */
static void keep_first(CUresult *err, CUresult res)
{
	if (*err == CUDA_SUCCESS)
		*err = res;
}

/* Destroys every registered object of type with destroy. */
static CUresult destroy_all(struct client *c, uint32_t type,
			    CUresult (*destroy)(void *handle))
{
	CUresult err = CUDA_SUCCESS;
	void **v;
	long n = client_registry_handles(&c->registry, type, &v);

	if (n < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (long i = 0; i < n; i++) {
		CUresult res = destroy(v[i]);

		/* another thread destroyed it meanwhile: fine */
		if (res != CUDA_ERROR_INVALID_HANDLE)
			keep_first(&err, res);
	}
	free(v);
	return err;
}

static CUresult stream_destroy(void *h)
{
	return cuStreamDestroy((CUstream)h);
}

static CUresult event_destroy(void *h)
{
	return cuEventDestroy((CUevent)h);
}

/* Unloads every library loaded as a module. */
static CUresult modules_unload(struct client *c)
{
	CUresult err = CUDA_SUCCESS;
	struct client_obj *o;
	void **v;
	long n = client_registry_handles(&c->registry, CLIENT_OBJ_LIBRARY, &v);
	int module;

	if (n < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (long i = 0; i < n; i++) {
		o = client_registry_get(&c->registry, v[i], CLIENT_OBJ_LIBRARY);
		if (!o)
			continue; /* unloaded meanwhile */
		module = ((struct client_library *)o)->module;
		client_obj_put(&c->registry, o);
		if (module) {
			CUresult res = cuModuleUnload((CUmodule)v[i]);

			if (res != CUDA_ERROR_INVALID_HANDLE)
				keep_first(&err, res);
		}
	}
	free(v);
	return err;
}

static CUresult allocs_free(struct client *c)
{
	CUresult err = CUDA_SUCCESS;
	struct client_alloc *v;
	long n = client_alloc_snapshot(&c->allocs, &v);

	if (n < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (long i = 0; i < n; i++) {
		CUresult res = cuMemFree((CUdeviceptr)v[i].base);

		if (res != CUDA_ERROR_INVALID_VALUE) /* freed meanwhile */
			keep_first(&err, res);
	}
	free(v);
	return err;
}

static CUresult host_buffers_free(struct client *c)
{
	CUresult err = CUDA_SUCCESS;
	struct client_region *v;
	long n = client_region_snapshot(&c->regions, &v);

	if (n < 0)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (long i = 0; i < n; i++) {
		CUresult res = cuMemFreeHost((void *)(uintptr_t)v[i].base);

		if (res != CUDA_ERROR_INVALID_VALUE)
			keep_first(&err, res);
	}
	free(v);
	return err;
}

CUresult client_reset(struct client *c)
{
	CUresult err = CUDA_SUCCESS;

	keep_first(&err, destroy_all(c, CLIENT_OBJ_STREAM, stream_destroy));
	keep_first(&err, destroy_all(c, CLIENT_OBJ_EVENT, event_destroy));
	keep_first(&err, modules_unload(c));
	client_pool_reset(); /* its blocks are freed with the rest */
	keep_first(&err, allocs_free(c));
	keep_first(&err, host_buffers_free(c));
	client_ctx_prefs_reset(); /* the cache preference, as set at start */
	return err;
}
