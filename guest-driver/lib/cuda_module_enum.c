/* SPDX-License-Identifier: MIT */
/*
 * What a library holds: the counts and lists of cuLibraryGetKernelCount /
 * cuLibraryEnumerateKernels and their module twins (a kernel's name is
 * cuda_module.c's, cuKernelGetName). The worker knows the
 * kernels (VGPU_OP_LIBRARY_KERNEL_NAME, protocol 1.4: the host driver's
 * list, or the simulator's from the cubin); each listed kernel is then
 * looked up by name as cuLibraryGetKernel does, so a kernel is one object
 * however it was found.
 */
#include <string.h>

#include "client.h"
#include "client_api.h"
#include "client_module.h"

/*
 * Kernel index of library handle lib: *count gets the library's number
 * of kernels and, when index is below it, name (VGPU_KERNEL_NAME_MAX
 * bytes) its name.
 */
static CUresult kernel_name_at(struct client *c, uint32_t lib, uint32_t index,
			       char *name, uint32_t *count)
{
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_sqe sqe = {
		.opcode = VGPU_OP_LIBRARY_KERNEL_NAME,
		.handle = lib,
	};
	struct client_ring *r = &c->ring;
	struct vgpu_cqe cqe;
	uint64_t off;
	uint32_t tag;
	CUresult err;

	client_ring_lock(r);
	err = client_ring_data_alloc(r, VGPU_KERNEL_NAME_MAX, &off);
	if (err != CUDA_SUCCESS)
		goto out;
	sqe.a[0] = index;
	sqe.a[1] = off;
	sqe.a[2] = name ? VGPU_KERNEL_NAME_MAX : 0;
	err = client_ring_push(r, &sqe, &how, &tag);
	if (err == CUDA_SUCCESS)
		err = client_ring_wait(r, tag, &cqe);
	if (err == CUDA_SUCCESS)
		err = (CUresult)cqe.status;
	if (err == CUDA_SUCCESS && cqe.r[0] > UINT32_MAX)
		err = CUDA_ERROR_INVALID_VALUE; /* the worker's mistake */
	if (err == CUDA_SUCCESS && name && index < cqe.r[0]) {
		/* the name the worker wrote, with its NUL, or none */
		if (cqe.r[1] < 2 || cqe.r[1] > VGPU_KERNEL_NAME_MAX)
			err = CUDA_ERROR_INVALID_VALUE;
		else
			memcpy(name, client_ring_data(r, off), cqe.r[1]);
		if (err == CUDA_SUCCESS && name[cqe.r[1] - 1] != '\0')
			err = CUDA_ERROR_INVALID_VALUE;
	}
	if (err == CUDA_SUCCESS)
		*count = (uint32_t)cqe.r[0];
	client_ring_data_free(r, off, VGPU_KERNEL_NAME_MAX);
out:
	client_ring_unlock(r);
	return err;
}

CUresult client_kernels_list(const void *library, int in_ctx,
			     struct client_kernel **out, unsigned int max,
			     unsigned int *count)
{
	char name[VGPU_KERNEL_NAME_MAX];
	struct client_obj *o;
	struct client *c;
	uint32_t n = 0, lib, i;
	CUresult err = in_ctx ? client_enter(&c) : client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	o = client_registry_get(&c->registry, library, CLIENT_OBJ_LIBRARY);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	lib = ((struct client_library *)o)->handle;
	client_obj_put(&c->registry, o);
	err = kernel_name_at(c, lib, 0, NULL, &n);
	for (i = 0; err == CUDA_SUCCESS && i < n && i < max; i++) {
		uint32_t again;

		err = kernel_name_at(c, lib, i, name, &again);
		if (err == CUDA_SUCCESS && again != n)
			err = CUDA_ERROR_INVALID_VALUE; /* it cannot change */
		if (err == CUDA_SUCCESS)
			err = client_kernel_get(library, name, in_ctx, &out[i]);
	}
	if (err == CUDA_SUCCESS && count)
		*count = n;
	return err;
}

VGPU_API CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count,
						  CUlibrary lib)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	return client_kernels_list(lib, 0, NULL, 0, count);
}

VGPU_API CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int *count,
						   CUmodule mod)
{
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	return client_kernels_list(mod, 1, NULL, 0, count);
}

VGPU_API CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels,
						    unsigned int numKernels,
						    CUlibrary lib)
{
	if (!kernels || !numKernels)
		return CUDA_ERROR_INVALID_VALUE;
	return client_kernels_list(lib, 0, (struct client_kernel **)kernels,
				   numKernels, NULL);
}

VGPU_API CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction *functions,
						     unsigned int numFunctions,
						     CUmodule mod)
{
	if (!functions || !numFunctions)
		return CUDA_ERROR_INVALID_VALUE;
	return client_kernels_list(mod, 1, (struct client_kernel **)functions,
				   numFunctions, NULL);
}
