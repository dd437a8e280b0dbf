/* SPDX-License-Identifier: MIT */
/* Loading the real CUDA driver (see cuda_sym.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda_sym.h"

/* cuda.h's declaration of cuGetProcAddress_v2, as a pointer type. */
typedef __typeof__(cuGetProcAddress_v2) cuda_get_proc_fn;

/*
 * One entry point: cuGetProcAddress for the version we were built
 * against (the driver picks the matching ABI variant), else dlsym of the
 * exact versioned name.
 */
static void *resolve(void *dl, cuda_get_proc_fn *get_proc, const char *sym,
		     const char *base)
{
	CUdriverProcAddressQueryResult status;
	void *fn = NULL;

	if (get_proc &&
	    get_proc(base, &fn, CUDA_SYM_VERSION, CU_GET_PROC_ADDRESS_DEFAULT,
		     &status) == CUDA_SUCCESS &&
	    status == CU_GET_PROC_ADDRESS_SUCCESS && fn)
		return fn;
	return dlsym(dl, sym);
}

/*
 * Where NVIDIA's driver library is installed: the distributions' library
 * directories and NVIDIA's container layout. The worker loads it by one
 * of these paths (or VGPU_REAL_LIBCUDA), never by soname search, so that
 * no libcuda.so.1 of vgpu's on some library path can stand in for it.
 */
static const char *const driver_paths[] = {
	"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
	"/usr/lib/aarch64-linux-gnu/libcuda.so.1",
	"/usr/lib64/libcuda.so.1",
	"/usr/lib/libcuda.so.1",
	"/usr/local/nvidia/lib64/libcuda.so.1",
	"/usr/local/nvidia/lib/libcuda.so.1",
	"/usr/lib/wsl/lib/libcuda.so.1",
};

/* The first of driver_paths that exists, or NULL. */
static const char *driver_path(void)
{
	for (size_t i = 0; i < sizeof(driver_paths) / sizeof(driver_paths[0]);
	     i++)
		if (access(driver_paths[i], R_OK) == 0)
			return driver_paths[i];
	return NULL;
}

int cuda_sym_load(struct cuda_sym *cs, char *err, size_t errlen)
{
	const char *path = getenv("VGPU_REAL_LIBCUDA");
	cuda_get_proc_fn *get_proc;
	void *dl;

	memset(cs, 0, sizeof(*cs));
	if (!path || !*path)
		path = driver_path();
	if (!path) {
		snprintf(err, errlen,
			 "cuda: no NVIDIA driver library (libcuda.so.1) in "
			 "/usr/lib/x86_64-linux-gnu, /usr/lib64, /usr/lib, "
			 "/usr/local/nvidia/lib64 or the others vgpu knows; "
			 "set VGPU_REAL_LIBCUDA to its path");
		return -1;
	}
	if (path[0] != '/') {
		snprintf(err, errlen,
			 "cuda: VGPU_REAL_LIBCUDA='%s' is not an absolute path "
			 "(the worker never searches for the driver)",
			 path);
		return -1;
	}
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		snprintf(err, errlen, "cuda: cannot load the CUDA driver: %s",
			 dlerror());
		return -1;
	}
	if (dlsym(dl, "vgpu_client_library")) {
		snprintf(err, errlen,
			 "cuda: %s is vgpu's own guest library, not NVIDIA's "
			 "driver; set VGPU_REAL_LIBCUDA to the real "
			 "libcuda.so.1 or fix LD_LIBRARY_PATH",
			 path);
		dlclose(dl);
		return -1;
	}
	get_proc = (cuda_get_proc_fn *)dlsym(dl, "cuGetProcAddress_v2");

#define CUDA_SYM_RESOLVE(sym, base)                                            \
	cs->sym = (__typeof__(sym) *)resolve(dl, get_proc, #sym, base);        \
	if (!cs->sym) {                                                        \
		snprintf(err, errlen,                                          \
			 "cuda: the driver %s has no %s (CUDA %d.%d needed)",  \
			 path, #sym, CUDA_SYM_VERSION / 1000,                  \
			 CUDA_SYM_VERSION % 1000 / 10);                        \
		dlclose(dl);                                                   \
		memset(cs, 0, sizeof(*cs));                                    \
		return -1;                                                     \
	}
	CUDA_SYM_LIST(CUDA_SYM_RESOLVE)
#undef CUDA_SYM_RESOLVE

	cs->dl = dl;
	return 0;
}

const char *cuda_sym_error_name(const struct cuda_sym *cs, CUresult rc,
				char *buf, size_t buflen)
{
	const char *name = NULL;

	if (cs->cuGetErrorName && cs->cuGetErrorName(rc, &name) == 0 && name)
		return name;
	snprintf(buf, buflen, "CUresult %d", (int)rc);
	return buf;
}
