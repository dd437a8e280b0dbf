/* SPDX-License-Identifier: MIT */
/*
 * Kernel parameters: the worker reads each kernel's parameter layout
 * (offset and size of every parameter) when the kernel is looked up and
 * sends it as struct vgpu_kernel_info; a launch lays the program's
 * arguments out by it. The client never parses ELF.
 */
#ifndef VGPU_CLIENT_PARAMS_H
#define VGPU_CLIENT_PARAMS_H

#include <stddef.h>

#include <cuda.h>
#include <vgpu/protocol.h>

/*
 * Checks a layout the worker sent: counts and sizes within the protocol's
 * limits, every parameter inside the buffer, none overlapping. Returns 0,
 * or -1 with a sentence in err.
 */
int client_params_check_layout(const struct vgpu_kernel_info *k, char *err,
			       size_t errlen);

/*
 * Fills buf (k->param_bytes bytes) with a launch's arguments, given as
 * cuLaunchKernel takes them: kernelParams[i] points at parameter i, or
 * extra holds CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE with the packed
 * buffer. Padding is zeroed. CUDA_ERROR_INVALID_VALUE when both or
 * neither are given for a kernel with parameters, a pointer is NULL, or
 * the extra buffer is missing or too small.
 */
CUresult client_params_marshal(const struct vgpu_kernel_info *k,
			       void **kernelParams, void **extra, void *buf);

#endif /* VGPU_CLIENT_PARAMS_H */
