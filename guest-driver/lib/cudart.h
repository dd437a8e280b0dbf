/* SPDX-License-Identifier: MIT */
/*
 * libcudart.so.13: the CUDA runtime on top of our driver API
 * (libcuda.so.1), as NVIDIA's runtime sits on theirs. What every
 * cudart_*.c file needs: the export macro, the runtime's lazy start and
 * the conversions between runtime and driver types.
 *
 * Built with -fvisibility=hidden; exactly the runtime API carries
 * CUDART_API, and libcudart.map puts it under the version node
 * libcudart.so.13, where programs built with nvcc -cudart shared look
 * for it.
 */
#ifndef VGPU_CUDART_H
#define VGPU_CUDART_H

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "cudart_error.h"

#define CUDART_API __attribute__((visibility("default")))

/*
 * The entry check of every runtime call that needs the device: cuInit
 * and the primary context once per process, the primary context made
 * current once per thread (unless the thread has a context of its own,
 * as the driver API lets it). Returns the sticky error once there is
 * one. Nothing of this runs before the first such call, so registering
 * kernels in static constructors never connects to the vGPU.
 */
cudaError_t cudart_enter(void);

/* The device description fields the runtime answers from (device 0). */
int cudart_attr(CUdevice_attribute a);

/* The device-wide preferences (cache configuration) back to their
 * defaults, for cudaDeviceReset (cudart_hints.c). */
void cudart_hints_reset(void);

static inline CUstream cudart_stream(cudaStream_t s)
{
	return (CUstream)s;
}

#endif /* VGPU_CUDART_H */
