/* SPDX-License-Identifier: MIT */
/*
 * libcuda.so.1 through dlopen (nvml_cuda.h). The name is resolved the
 * way any CUDA program's is (LD_LIBRARY_PATH, then the system's): in a
 * VM with vgpu's guest libraries that is vgpu's libcuda.so.1; on a host
 * it is vgpu's only where its directory comes first, as under vgpu-run.
 * NVIDIA's driver, found instead, is refused (it lacks vgpu's marker,
 * the one the worker refuses to load): its answers would be the
 * machine's GPUs, not a vGPU's, and NVIDIA's own NVML gives those.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "nvml_cuda.h"

#define NVML_CUDA_LIBRARY "libcuda.so.1"

/* The symbol cuda.h maps a name to: NVML_CUDA_SYM(cuMemGetInfo) is
 * "cuMemGetInfo_v2". */
#define NVML_CUDA_STR(x) #x
#define NVML_CUDA_SYM(x) NVML_CUDA_STR(x)

static struct nvml_cuda nvml_cuda_table;
static const struct nvml_cuda *nvml_cuda_loaded;
static pthread_once_t nvml_cuda_once = PTHREAD_ONCE_INIT;

/* One symbol into *slot; -1 (said on stderr) when the library lacks it. */
static int nvml_cuda_resolve(void *lib, const char *name, void **slot)
{
	*slot = dlsym(lib, name);
	if (*slot)
		return 0;
	fprintf(stderr, "vgpu: NVML needs %s, which this %s lacks\n", name,
		NVML_CUDA_LIBRARY);
	return -1;
}

#define NVML_CUDA_RESOLVE(lib, t, field, call)                                 \
	nvml_cuda_resolve(lib, NVML_CUDA_SYM(call), (void **)&(t)->field)

static void nvml_cuda_load(void)
{
	struct nvml_cuda *t = &nvml_cuda_table;
	void *lib = dlopen(NVML_CUDA_LIBRARY, RTLD_NOW | RTLD_GLOBAL);

	if (!lib) {
		fprintf(stderr, "vgpu: NVML cannot load the CUDA driver: %s\n",
			dlerror());
		return;
	}
	if (!dlsym(lib, "vgpu_client_library")) {
		fprintf(stderr,
			"vgpu: NVML found a %s that is not vgpu's (NVIDIA's "
			"driver?): it answers for a vGPU only; put vgpu's "
			"library directory first on LD_LIBRARY_PATH\n",
			NVML_CUDA_LIBRARY);
		dlclose(lib);
		return;
	}
	if (NVML_CUDA_RESOLVE(lib, t, init, cuInit) ||
	    NVML_CUDA_RESOLVE(lib, t, driver_get_version, cuDriverGetVersion) ||
	    NVML_CUDA_RESOLVE(lib, t, device_get, cuDeviceGet) ||
	    NVML_CUDA_RESOLVE(lib, t, device_get_count, cuDeviceGetCount) ||
	    NVML_CUDA_RESOLVE(lib, t, device_get_name, cuDeviceGetName) ||
	    NVML_CUDA_RESOLVE(lib, t, device_get_uuid, cuDeviceGetUuid) ||
	    NVML_CUDA_RESOLVE(lib, t, device_get_attribute,
			      cuDeviceGetAttribute) ||
	    NVML_CUDA_RESOLVE(lib, t, device_total_mem, cuDeviceTotalMem) ||
	    NVML_CUDA_RESOLVE(lib, t, primary_ctx_retain,
			      cuDevicePrimaryCtxRetain) ||
	    NVML_CUDA_RESOLVE(lib, t, primary_ctx_release,
			      cuDevicePrimaryCtxRelease) ||
	    NVML_CUDA_RESOLVE(lib, t, ctx_push_current, cuCtxPushCurrent) ||
	    NVML_CUDA_RESOLVE(lib, t, ctx_pop_current, cuCtxPopCurrent) ||
	    NVML_CUDA_RESOLVE(lib, t, mem_get_info, cuMemGetInfo)) {
		dlclose(lib);
		return;
	}
	nvml_cuda_loaded = t;
}

const struct nvml_cuda *nvml_cuda_get(void)
{
	pthread_once(&nvml_cuda_once, nvml_cuda_load);
	return nvml_cuda_loaded;
}
