/* SPDX-License-Identifier: MIT */
/*
 * Loaded code as the library sees it. A CUmodule and a CUlibrary are the
 * same object (a library the worker loaded); a CUfunction and a CUkernel
 * are the same object too (a kernel of it, with the parameter layout the
 * worker read), so a CUkernel can be launched as a CUfunction, as CUDA
 * allows.
 */
#ifndef VGPU_CLIENT_MODULE_H
#define VGPU_CLIENT_MODULE_H

#include <pthread.h>

#include <cuda.h>

#include <vgpu/protocol.h>

#include "client_registry.h"

struct client_kernel;

struct client_library {
	struct client_obj obj;
	uint32_t handle;
	int module; /* loaded as a CUmodule: its context's, reset with it
		       (a CUlibrary is context-independent and stays) */
	pthread_mutex_t lock;	       /* guards kernels */
	struct client_kernel *kernels; /* looked up so far, each once */
};

struct client_kernel {
	struct client_obj obj;
	uint32_t handle;
	struct client_kernel *next; /* in its library's list */
	char *name;
	struct vgpu_kernel_info layout; /* checked */
};

/*
 * The kernel called name in library (a CUmodule or CUlibrary; in_ctx: a
 * module, which needs a current context): the same object each time
 * (cuda_module.c).
 */
CUresult client_kernel_get(const void *library, const char *name, int in_ctx,
			   struct client_kernel **out);

/*
 * Up to max of library's kernels into out (NULL: none), in the worker's
 * order; *count (may be NULL) gets how many the library has
 * (cuda_module_enum.c).
 */
CUresult client_kernels_list(const void *library, int in_ctx,
			     struct client_kernel **out, unsigned int max,
			     unsigned int *count);

#endif /* VGPU_CLIENT_MODULE_H */
