/* SPDX-License-Identifier: MIT */
/*
 * The one launch path every runtime launch takes (<<<>>>,
 * cudaLaunchKernel, cudaLaunchKernelEx and their per-thread-stream
 * variants): shape checks, the kernel resolved on first use, then our
 * cuLaunchKernel.
 */
#ifndef VGPU_CUDART_LAUNCH_H
#define VGPU_CUDART_LAUNCH_H

#include "cudart.h"
#include "cudart_registry.h"

/* Launches f (NULL or not a registered kernel:
 * cudaErrorInvalidDeviceFunction); returns through cudart_ret. */
cudaError_t cudart_launch(struct cudart_func *f, dim3 g, dim3 b, void **args,
			  size_t shmem, cudaStream_t stream);

/* cudaLaunchKernelExC with config's stream replaced by stream
 * (cudart_launch_ex.c). */
cudaError_t cudart_launch_ex(const cudaLaunchConfig_t *config, const void *func,
			     void **args, cudaStream_t stream);

#endif /* VGPU_CUDART_LAUNCH_H */
