/* SPDX-License-Identifier: MIT */
/*
 * cuLaunchKernel: the arguments are laid out in a data-area buffer by the
 * kernel's parameter layout and the launch is submitted without waiting;
 * its errors come with the next synchronizing call. cuLaunchKernelEx
 * (cuda_launch_ex.c) adds a thread-block cluster shape.
 */
#include "client.h"
#include "client_api.h"
#include "client_module.h"
#include "client_params.h"
#include "cuda_unsupported.h"

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

/*
 * A cluster shape CUDA takes: edges of at least 1 (a shape of ones is no
 * cluster), at most 16 blocks and a grid that is a multiple of it.
 * Whether the kernel and the slice take it (more than 8 blocks needs the
 * kernel's opt-in, a small slice may hold fewer) is the backend's to
 * say, when the launch runs: like any launch error, at the next
 * synchronizing call, where CUDA answers cuLaunchKernelEx itself.
 */
static int cluster_ok(const uint32_t g[3], const uint32_t c[3])
{
	for (int i = 0; i < 3; i++)
		if (!c[i] || c[i] > 16 || g[i] % c[i])
			return 0;
	return c[0] * c[1] * c[2] <= 16;
}

/*
 * A cooperative launch must have every block resident at once: as many
 * as the slice's SMs hold of this kernel. CUDA says so at the launch
 * (CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE), not at the next synchronise,
 * so it is asked here; the worker checks again.
 */
static CUresult cooperative_ok(struct client *c, CUfunction f,
			       const uint32_t grid[3], const uint32_t block[3],
			       unsigned int shared)
{
	uint64_t blocks = (uint64_t)grid[0] * grid[1] * grid[2];
	int per_sm = 0, sms;
	CUresult err;

	if (c->transport.minor < VGPU_PROTO_MINOR_COOPERATIVE) {
		static int said;

		cuda_say_once(&said,
			      "a cooperative launch needs protocol 1.%d, the "
			      "host speaks 1.%u (CUDA_ERROR_NOT_SUPPORTED)",
			      VGPU_PROTO_MINOR_COOPERATIVE, c->transport.minor);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	/* a round trip per cooperative launch: the answer depends on the
	 * kernel's attributes as set now */
	err = cuOccupancyMaxActiveBlocksPerMultiprocessor(
		&per_sm, f, (int)(block[0] * block[1] * block[2]), shared);
	if (err != CUDA_SUCCESS)
		return err;
	if (per_sm <= 0) /* a shape no SM takes: the launch's own error */
		return CUDA_SUCCESS;
	client_info_refresh(c); /* the slice as it is now (a resize) */
	client_info_lock(c);
	sms = (int)c->info.sm_count;
	client_info_unlock(c);
	if (blocks > (uint64_t)per_sm * (uint64_t)sms)
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	return CUDA_SUCCESS;
}

CUresult client_launch(CUfunction f, const uint32_t grid[3],
		       const uint32_t block[3], unsigned int sharedMemBytes,
		       CUstream hStream, void **kernelParams, void **extra,
		       const uint32_t *cluster, int cooperative)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_LAUNCH};
	struct client_push how = {.mode = CLIENT_SLOT_ASYNC};
	struct client_stream_use u;
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
	if (!shape_ok(&c->info, grid, block)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (cluster && !cluster_ok(grid, cluster)) {
		err = CUDA_ERROR_INVALID_CLUSTER_SIZE;
		goto out;
	}
	if (cluster && c->transport.minor < VGPU_PROTO_MINOR_CLUSTERS) {
		static int said;

		cuda_say_once(&said,
			      "cuLaunchKernelEx: clusters need protocol "
			      "1.%d, the host speaks 1.%u "
			      "(CUDA_ERROR_NOT_SUPPORTED)",
			      VGPU_PROTO_MINOR_CLUSTERS, c->transport.minor);
		err = CUDA_ERROR_NOT_SUPPORTED;
		goto out;
	}
	if (cooperative && cluster) {
		err = CUDA_ERROR_NOT_SUPPORTED; /* as the worker says */
		goto out;
	}
	if (cooperative) {
		err = cooperative_ok(c, f, grid, block, sharedMemBytes);
		if (err != CUDA_SUCCESS)
			goto out;
	}
	sqe.handle = k->handle;
	sqe.a[0] = grid[0] | (uint64_t)grid[1] << 32;
	sqe.a[1] = grid[2] | (uint64_t)block[0] << 32;
	sqe.a[2] = block[1] | (uint64_t)block[2] << 32;
	sqe.a[3] = sharedMemBytes;
	if (cluster)
		sqe.a[3] |= (uint64_t)cluster[0] << 32 |
			    (uint64_t)cluster[1] << 40 |
			    (uint64_t)cluster[2] << 48;
	if (cooperative)
		sqe.a[3] |= VGPU_LAUNCH_COOPERATIVE;
	bytes = k->layout.param_bytes;
	err = client_stream_begin(c, hStream, 0, &u);
	if (err != CUDA_SUCCESS)
		goto out;
	sqe.stream = u.handle;

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
	err = client_stream_end(c, &u, err);
out:
	client_obj_put(&c->registry, o);
	return err;
}

VGPU_API CUresult CUDAAPI cuLaunchKernel(
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
	unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
	unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
	void **kernelParams, void **extra)
{
	const uint32_t grid[3] = {gridDimX, gridDimY, gridDimZ};
	const uint32_t block[3] = {blockDimX, blockDimY, blockDimZ};

	return client_launch(f, grid, block, sharedMemBytes, hStream,
			     kernelParams, extra, NULL, 0);
}

VGPU_API CUresult CUDAAPI cuLaunchCooperativeKernel(
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
	unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
	unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
	void **kernelParams)
{
	const uint32_t grid[3] = {gridDimX, gridDimY, gridDimZ};
	const uint32_t block[3] = {blockDimX, blockDimY, blockDimZ};

	return client_launch(f, grid, block, sharedMemBytes, hStream,
			     kernelParams, NULL, NULL, 1);
}
