/* SPDX-License-Identifier: MIT */
/*
 * A kernel's attributes and occupancy, asked of the worker (protocol 1.3:
 * KERNEL_GET_ATTRIBUTE, KERNEL_SET_ATTRIBUTE, KERNEL_OCCUPANCY): registers,
 * static shared memory, the dynamic shared memory opt-in are the compiled
 * kernel's and only the driver on the host knows them. A CUfunction and
 * a CUkernel are the same object here.
 */
#include <string.h>

#include "client.h"
#include "client_api.h"
#include "client_ctx.h"
#include "client_module.h"

/* One call on kernel f with arguments a; r0 into *out when out is set. */
static CUresult kernel_call_a(void *f, uint16_t opcode, const uint64_t a[6],
			      int *out)
{
	struct vgpu_sqe sqe = {.opcode = opcode};
	struct client_obj *o;
	struct vgpu_cqe cqe;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	memcpy(sqe.a, a, sizeof(sqe.a));
	o = client_registry_get(&c->registry, f, CLIENT_OBJ_KERNEL);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	sqe.handle = ((struct client_kernel *)o)->handle;
	client_obj_put(&c->registry, o);
	err = client_ring_call(&c->ring, &sqe, &cqe);
	if (err == CUDA_SUCCESS && out) {
		int64_t v = (int64_t)cqe.r[0];

		if (v < INT32_MIN || v > INT32_MAX)
			return CUDA_ERROR_INVALID_VALUE; /* the worker's mistake
							  */
		*out = (int)v;
	}
	return err;
}

static CUresult kernel_call(void *f, uint16_t opcode, uint64_t a0, uint64_t a1,
			    uint64_t a2, int *out)
{
	const uint64_t a[6] = {a0, a1, a2};

	return kernel_call_a(f, opcode, a, out);
}

VGPU_API CUresult CUDAAPI cuKernelGetAttribute(int *pi,
					       CUfunction_attribute attrib,
					       CUkernel kernel, CUdevice dev)
{
	if (!pi || attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	return kernel_call(kernel, VGPU_OP_KERNEL_GET_ATTRIBUTE,
			   (uint64_t)attrib, 0, 0, pi);
}

VGPU_API CUresult CUDAAPI cuFuncGetAttribute(int *pi,
					     CUfunction_attribute attrib,
					     CUfunction hfunc)
{
	return cuKernelGetAttribute(pi, attrib, (CUkernel)hfunc, 0);
}

VGPU_API CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib,
					       int val, CUkernel kernel,
					       CUdevice dev)
{
	if (attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	return kernel_call(kernel, VGPU_OP_KERNEL_SET_ATTRIBUTE,
			   (uint64_t)attrib, (uint64_t)(int64_t)val, 0, NULL);
}

VGPU_API CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc,
					     CUfunction_attribute attrib,
					     int value)
{
	return cuKernelSetAttribute(attrib, value, (CUkernel)hfunc, 0);
}

VGPU_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
	int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize,
	unsigned int flags)
{
	if (!numBlocks || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	return kernel_call(func, VGPU_OP_KERNEL_OCCUPANCY, (uint64_t)blockSize,
			   dynamicSMemSize, flags, numBlocks);
}

VGPU_API CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessor(
	int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
		numBlocks, func, blockSize, dynamicSMemSize,
		CU_OCCUPANCY_DEFAULT);
}

/*
 * Thread-block clusters: the grid, block, shared memory, cluster shape and
 * scheduling policy of config go to the worker, whose driver answers for
 * the slice. Other launch attributes do not change the answer. The
 * stream is not needed: a vGPU process has one context.
 */
static CUresult cluster_call(int *out, CUfunction f, const CUlaunchConfig *cfg,
			     enum vgpu_cluster_query query)
{
	uint64_t a[6] = {0}, policy = 0;
	const CUlaunchAttribute *at;
	unsigned int i;

	if (!out || !cfg || (cfg->numAttrs && !cfg->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	a[0] = cfg->gridDimX | (uint64_t)cfg->gridDimY << 32;
	a[1] = cfg->gridDimZ | (uint64_t)cfg->blockDimX << 32;
	a[2] = cfg->blockDimY | (uint64_t)cfg->blockDimZ << 32;
	a[3] = cfg->sharedMemBytes;
	for (i = 0; i < cfg->numAttrs; i++) {
		at = &cfg->attrs[i];
		if (at->id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) {
			if (at->value.clusterDim.x > 0xffff ||
			    at->value.clusterDim.y > 0xffff ||
			    at->value.clusterDim.z > 0xffff)
				return CUDA_ERROR_INVALID_CLUSTER_SIZE;
			a[4] = at->value.clusterDim.x |
			       (uint64_t)at->value.clusterDim.y << 16 |
			       (uint64_t)at->value.clusterDim.z << 32;
		} else if (
			at->id ==
			CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE) {
			policy = (uint32_t)at->value
					 .clusterSchedulingPolicyPreference;
		}
	}
	a[5] = policy | (uint64_t)query << 32;
	return kernel_call_a(f, VGPU_OP_KERNEL_CLUSTERS, a, out);
}

VGPU_API CUresult CUDAAPI cuOccupancyMaxActiveClusters(
	int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
	return cluster_call(numClusters, func, config, VGPU_CLUSTERS_ACTIVE);
}

VGPU_API CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(
	int *clusterSize, CUfunction func, const CUlaunchConfig *config)
{
	return cluster_call(clusterSize, func, config, VGPU_CLUSTERS_MAX_SIZE);
}

/* A preference for kernel f that is accepted and applied to nothing:
 * CUDA_SUCCESS when f is a kernel of the process and ok holds. */
static CUresult kernel_hint(void *f, int ok)
{
	struct client_obj *o;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	o = client_registry_get(&c->registry, f, CLIENT_OBJ_KERNEL);
	if (!o)
		return CUDA_ERROR_INVALID_HANDLE;
	client_obj_put(&c->registry, o);
	return CUDA_SUCCESS;
}

/* A kernel's L1/shared preference: a hint, accepted for a kernel the
 * process has and applied to none (cuCtxSetCacheConfig's reasons). */
VGPU_API CUresult CUDAAPI cuKernelSetCacheConfig(CUkernel kernel,
						 CUfunc_cache config,
						 CUdevice dev)
{
	if (dev != 0)
		return CUDA_ERROR_INVALID_DEVICE;
	return kernel_hint(kernel, client_cache_config_ok(config));
}

VGPU_API CUresult CUDAAPI cuFuncSetCacheConfig(CUfunction hfunc,
					       CUfunc_cache config)
{
	return cuKernelSetCacheConfig((CUkernel)hfunc, config, 0);
}

/* Bank width: not configurable (cuCtxSetSharedMemConfig). */
VGPU_API CUresult CUDAAPI cuFuncSetSharedMemConfig(CUfunction hfunc,
						   CUsharedconfig config)
{
	return kernel_hint(hfunc, client_shared_config_ok(config));
}

/* Blocks of blockSize threads of func per SM with dyn bytes of dynamic
 * shared memory, as the driver's occupancy calculator says. */
static CUresult blocks_with(CUfunction func, int blockSize, size_t dyn,
			    int *blocks)
{
	return cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
		blocks, func, blockSize, dyn, CU_OCCUPANCY_DEFAULT);
}

/*
 * The most dynamic shared memory a block may have so that numBlocks
 * blocks of blockSize threads still fit on one SM: the largest size the
 * worker's driver (its occupancy calculator, the kernel as compiled)
 * allows that many blocks with, found by bisection between 0 and the
 * per-block opt-in limit less the kernel's static shared memory; 0 when
 * not even that many blocks without dynamic memory fit.
 */
VGPU_API CUresult CUDAAPI cuOccupancyAvailableDynamicSMemPerBlock(
	size_t *dynamicSmemSize, CUfunction func, int numBlocks, int blockSize)
{
	int optin = 0, stat = 0, blocks = 0;
	size_t lo, hi;
	CUresult err;

	if (!dynamicSmemSize || numBlocks <= 0 || blockSize <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	err = cuDeviceGetAttribute(
		&optin, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
		0);
	if (err == CUDA_SUCCESS)
		err = cuFuncGetAttribute(
			&stat, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, func);
	if (err == CUDA_SUCCESS)
		err = blocks_with(func, blockSize, 0, &blocks);
	if (err != CUDA_SUCCESS)
		return err;
	*dynamicSmemSize = 0;
	if (blocks < numBlocks || optin <= stat)
		return CUDA_SUCCESS;
	lo = 0;				 /* fits */
	hi = (size_t)(optin - stat) + 1; /* does not */
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		err = blocks_with(func, blockSize, mid, &blocks);
		if (err != CUDA_SUCCESS)
			return err;
		if (blocks >= numBlocks)
			lo = mid;
		else
			hi = mid;
	}
	*dynamicSmemSize = lo;
	return CUDA_SUCCESS;
}

/*
 * The block size that gives func the most resident threads per SM (the
 * largest such one on a tie), and the smallest grid that fills every SM
 * of the slice with it, as cuda.h defines it: block sizes are tried in
 * warp steps from the most the kernel and the device (and blockSizeLimit,
 * when given) allow, each with its dynamic shared memory (the callback's,
 * else dynamicSMemSize), against the worker's occupancy calculator.
 */
static CUresult max_potential(int *minGridSize, int *blockSize, CUfunction func,
			      CUoccupancyB2DSize b2d, size_t dynamicSMemSize,
			      int blockSizeLimit, unsigned int flags)
{
	int dev_max = 0, fn_max = 0, warp = 32, sms = 0, sm_threads = 0;
	int best = 0, best_size = 0, best_blocks = 0, limit, b;
	CUresult err;

	if (!minGridSize || !blockSize || blockSizeLimit < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if ((err = cuDeviceGetAttribute(
		     &dev_max, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 0)) ||
	    (err = cuDeviceGetAttribute(&warp, CU_DEVICE_ATTRIBUTE_WARP_SIZE,
					0)) ||
	    (err = cuDeviceGetAttribute(
		     &sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0)) ||
	    (err = cuDeviceGetAttribute(
		     &sm_threads,
		     CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 0)) ||
	    (err = cuFuncGetAttribute(
		     &fn_max, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, func)))
		return err;
	if (warp <= 0)
		warp = 32;
	limit = dev_max;
	if (fn_max > 0 && fn_max < limit)
		limit = fn_max;
	if (blockSizeLimit > 0 && blockSizeLimit < limit)
		limit = blockSizeLimit;
	for (b = limit > warp ? limit - limit % warp : limit; b > 0;
	     b -= b > warp ? warp : b) {
		size_t dyn = b2d ? b2d(b) : dynamicSMemSize;
		int blocks = 0;

		err = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
			&blocks, func, b, dyn, flags);
		if (err != CUDA_SUCCESS)
			return err;
		if (blocks * b > best) {
			best = blocks * b;
			best_size = b;
			best_blocks = blocks;
			if (sm_threads > 0 && best >= sm_threads)
				break; /* nothing can do better */
		}
	}
	*blockSize = best_size;
	*minGridSize = best_blocks * sms;
	return CUDA_SUCCESS;
}

VGPU_API CUresult CUDAAPI cuOccupancyMaxPotentialBlockSize(
	int *minGridSize, int *blockSize, CUfunction func,
	CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
	int blockSizeLimit)
{
	return max_potential(minGridSize, blockSize, func,
			     blockSizeToDynamicSMemSize, dynamicSMemSize,
			     blockSizeLimit, CU_OCCUPANCY_DEFAULT);
}

VGPU_API CUresult CUDAAPI cuOccupancyMaxPotentialBlockSizeWithFlags(
	int *minGridSize, int *blockSize, CUfunction func,
	CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize,
	int blockSizeLimit, unsigned int flags)
{
	return max_potential(minGridSize, blockSize, func,
			     blockSizeToDynamicSMemSize, dynamicSMemSize,
			     blockSizeLimit, flags);
}
