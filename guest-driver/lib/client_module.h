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

#include <vgpu/protocol.h>

#include "client_registry.h"

struct client_kernel;

struct client_library {
	struct client_obj obj;
	uint32_t handle;
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

#endif /* VGPU_CLIENT_MODULE_H */
