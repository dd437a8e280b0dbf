/* SPDX-License-Identifier: MIT */
/* Picking a backend: by kind, or by the name given on a command line. */
#include <string.h>

#include "backend.h"

const struct backend_ops *backend_by_kind(uint32_t kind)
{
	switch (kind) {
	case VGPU_BACKEND_CUDA:
		return &backend_cuda_ops;
	case VGPU_BACKEND_SIM:
		return &backend_sim_ops;
	default:
		return NULL;
	}
}

/*
 * "cuda", "sim" or "auto". auto probes the real driver in this process:
 * cuda when it finds at least one GPU, the simulator otherwise (no
 * libcuda, no device, or our own guest library on the search path).
 * Returns 0, or -1 for an unknown name.
 */
int backend_kind_from_name(const char *name, uint32_t *kind)
{
	struct vgpu_gpu_info gpu;
	char err[256];

	if (!name)
		return -1;
	if (strcmp(name, "cuda") == 0) {
		*kind = VGPU_BACKEND_CUDA;
		return 0;
	}
	if (strcmp(name, "sim") == 0) {
		*kind = VGPU_BACKEND_SIM;
		return 0;
	}
	if (strcmp(name, "auto") == 0) {
		if (backend_cuda_ops.probe(&gpu, 1, err, sizeof(err)) >= 1)
			*kind = VGPU_BACKEND_CUDA;
		else
			*kind = VGPU_BACKEND_SIM;
		return 0;
	}
	return -1;
}
