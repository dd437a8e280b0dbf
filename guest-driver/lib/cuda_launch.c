/* SPDX-License-Identifier: MIT */
/*
 * cuLaunchKernel: the arguments are laid out in a data-area buffer by the
 * kernel's parameter layout and the launch is submitted without waiting;
 * its errors come with the next synchronizing call.
 */
#include "client.h"
#include "client_api.h"
#include "client_module.h"
#include "client_params.h"

/* The launch shape against the device's limits, where the worker gave
 * them (0 = unknown, not checked). */
static int shape_ok(const struct vgpu_device_info *info, const uint32_t g[3],
		    const uint32_t b[3])
{
	static const CUdevice_attribute gmax[3] = {
		CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
		CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
		CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
	};
	static const CUdevice_attribute bmax[3] = {
		CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X,
		CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
		CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z,
	};
	int32_t tmax = info->attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];

	for (int i = 0; i < 3; i++) {
		if (g[i] == 0 || b[i] == 0)
			return 0;
		if (info->attrs[gmax[i]] > 0 &&
		    g[i] > (uint32_t)info->attrs[gmax[i]])
			return 0;
		if (info->attrs[bmax[i]] > 0 &&
		    b[i] > (uint32_t)info->attrs[bmax[i]])
			return 0;
	}
	return tmax <= 0 || (uint64_t)b[0] * b[1] * b[2] <= (uint64_t)tmax;
}

VGPU_API CUresult CUDAAPI cuLaunchKernel(
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
	unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
	unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
	void **kernelParams, void **extra)
{
	const uint32_t grid[3] = {gridDimX, gridDimY, gridDimZ};
	const uint32_t block[3] = {blockDimX, blockDimY, blockDimZ};
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_LAUNCH};
	struct client_push how = {.mode = CLIENT_SLOT_ASYNC};
	struct client_kernel *k;
	struct client_ring *r;
	struct client_obj *o;
	struct client *c;
	uint64_t off = 0;
	uint32_t bytes;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	o = client_registry_get(&c->registry, f, CLIENT_OBJ_KERNEL);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	k = (struct client_kernel *)o;
	r = &c->ring;
	err = client_stream_handle(c, hStream, &sqe.stream);
	if (err != CUDA_SUCCESS)
		goto out;
	if (!shape_ok(&c->info, grid, block)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	sqe.handle = k->handle;
	sqe.a[0] = gridDimX | (uint64_t)gridDimY << 32;
	sqe.a[1] = gridDimZ | (uint64_t)blockDimX << 32;
	sqe.a[2] = blockDimY | (uint64_t)blockDimZ << 32;
	sqe.a[3] = sharedMemBytes;
	bytes = k->layout.param_bytes;

	client_ring_lock(r);
	if (bytes) {
		err = client_ring_data_alloc(r, bytes, &off);
		if (err != CUDA_SUCCESS)
			goto unlock;
		err = client_params_marshal(&k->layout, kernelParams, extra,
					    client_ring_data(r, off));
		if (err != CUDA_SUCCESS) {
			client_ring_data_free(r, off, bytes);
			goto unlock;
		}
		how.data_off = off;
		how.data_len = bytes;
	} else if (kernelParams && extra) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto unlock;
	}
	sqe.a[4] = off;
	sqe.a[5] = bytes;
	err = client_ring_push(r, &sqe, &how, NULL);
	if (err != CUDA_SUCCESS && bytes)
		client_ring_data_free(r, off, bytes);
	client_ring_flush(r);
unlock:
	client_ring_unlock(r);
out:
	client_obj_put(&c->registry, o);
	return err;
}
