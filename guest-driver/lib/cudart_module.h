/* SPDX-License-Identifier: MIT */
/*
 * Registered code made real on first use: a fatbin's library is loaded
 * (cuLibraryLoadData) when one of its kernels is first launched or one
 * of its variables first used, never in the static constructors that
 * register it.
 */
#ifndef VGPU_CUDART_MODULE_H
#define VGPU_CUDART_MODULE_H

#include "cudart.h"
#include "cudart_registry.h"

/* The kernel of a registered function, loading its fatbin if needed
 * (cudart_enter done). */
cudaError_t cudart_func_kernel(struct cudart_func *f, CUkernel *k);

/* The device address and size of a registered variable. */
cudaError_t cudart_var_resolve(struct cudart_var *v, CUdeviceptr *dptr,
			       size_t *bytes);

/* The registered function behind a host stub address, or NULL. */
struct cudart_func *cudart_func_of(const void *host);

#endif /* VGPU_CUDART_MODULE_H */
