/* SPDX-License-Identifier: MIT */
/*
 * Launches (the <<<>>> path __cudaLaunchKernel, and cudaLaunchKernel),
 * kernel attributes and occupancy. A launch resolves its kernel on first
 * use and goes through our cuLaunchKernel, which submits without
 * waiting: errors of the kernel itself come with the next synchronizing
 * call, as in CUDA.
 */
#include <string.h>

#include "cudart.h"
#include "cudart_launch.h"
#include "cudart_module.h"

/* Registers per thread assumed by the occupancy calculation (our driver
 * API does not report a kernel's register count yet). */
#define CUDART_OCC_REGS_PER_THREAD 32

/* CUDA's launch-shape check: cudaErrorInvalidConfiguration. */
static cudaError_t shape_check(dim3 g, dim3 b)
{
	const unsigned int gv[3] = {g.x, g.y, g.z}, bv[3] = {b.x, b.y, b.z};
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
	int tmax = cudart_attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);

	for (int i = 0; i < 3; i++) {
		int gm = cudart_attr(gmax[i]), bm = cudart_attr(bmax[i]);

		if (gv[i] == 0 || bv[i] == 0)
			return cudaErrorInvalidConfiguration;
		if ((gm > 0 && gv[i] > (unsigned int)gm) ||
		    (bm > 0 && bv[i] > (unsigned int)bm))
			return cudaErrorInvalidConfiguration;
	}
	if (tmax > 0 && (uint64_t)b.x * b.y * b.z > (uint64_t)tmax)
		return cudaErrorInvalidConfiguration;
	return cudaSuccess;
}

cudaError_t cudart_launch(struct cudart_func *f, dim3 g, dim3 b, void **args,
			  size_t shmem, cudaStream_t stream)
{
	cudaError_t err = cudart_enter();
	CUkernel k;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!f || f->magic != CUDART_FUNC_MAGIC)
		return cudart_ret(cudaErrorInvalidDeviceFunction);
	err = shape_check(g, b);
	if (err == cudaSuccess && shmem > UINT32_MAX)
		err = cudaErrorInvalidValue;
	if (err == cudaSuccess)
		err = cudart_func_kernel(f, &k);
	if (err != cudaSuccess)
		return cudart_ret(err);
	return cudart_ret_cu(cuLaunchKernel((CUfunction)k, g.x, g.y, g.z, b.x,
					    b.y, b.z, (unsigned int)shmem,
					    cudart_stream(stream), args, NULL));
}

CUDART_API cudaError_t CUDARTAPI __cudaLaunchKernel(cudaKernel_t kernel,
						    dim3 gridDim, dim3 blockDim,
						    void **args,
						    size_t sharedMem,
						    cudaStream_t stream)
{
	return cudart_launch((struct cudart_func *)kernel, gridDim, blockDim,
			     args, sharedMem, stream);
}

CUDART_API cudaError_t CUDARTAPI cudaLaunchKernel(const void *func,
						  dim3 gridDim, dim3 blockDim,
						  void **args, size_t sharedMem,
						  cudaStream_t stream)
{
	return cudart_launch(cudart_func_of(func), gridDim, blockDim, args,
			     sharedMem, stream);
}

/* The kernel of a registered function (loading its library if needed). */
static cudaError_t func_kernel(const void *func, CUkernel *k)
{
	cudaError_t err = cudart_enter();
	struct cudart_func *f;

	if (err != cudaSuccess)
		return err;
	f = cudart_func_of(func);
	if (!f)
		return cudaErrorInvalidDeviceFunction;
	return cudart_func_kernel(f, k);
}

static cudaError_t func_enter(const void *func)
{
	CUkernel k;

	return func_kernel(func, &k);
}

/* The device's limits: what a worker without kernel attributes (protocol
 * before 1.3) lets us say. numRegs and the sizes are 0 (unknown). */
static void func_attrs_from_device(struct cudaFuncAttributes *attr)
{
	int cc =
		cudart_attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
		cudart_attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);

	memset(attr, 0, sizeof(*attr));
	attr->maxThreadsPerBlock =
		cudart_attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
	attr->ptxVersion = cc;
	attr->binaryVersion = cc;
	attr->maxDynamicSharedSizeBytes =
		cudart_attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
	attr->preferredShmemCarveout = -1;
}

/* The kernel's own attributes, from the driver on the host. */
CUDART_API cudaError_t CUDARTAPI
cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
	static const struct {
		CUfunction_attribute a;
		size_t off;
		int is_size;
	} map[] = {
#define FIELD(a, f, sz) {a, offsetof(struct cudaFuncAttributes, f), sz}
		FIELD(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, sharedSizeBytes, 1),
		FIELD(CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES, constSizeBytes, 1),
		FIELD(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, localSizeBytes, 1),
		FIELD(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
		      maxThreadsPerBlock, 0),
		FIELD(CU_FUNC_ATTRIBUTE_NUM_REGS, numRegs, 0),
		FIELD(CU_FUNC_ATTRIBUTE_PTX_VERSION, ptxVersion, 0),
		FIELD(CU_FUNC_ATTRIBUTE_BINARY_VERSION, binaryVersion, 0),
		FIELD(CU_FUNC_ATTRIBUTE_CACHE_MODE_CA, cacheModeCA, 0),
		FIELD(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
		      maxDynamicSharedSizeBytes, 0),
		FIELD(CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
		      preferredShmemCarveout, 0),
#undef FIELD
	};
	cudaError_t err;
	CUkernel k;
	CUresult rc;
	size_t i;

	if (!attr)
		return cudart_ret(cudaErrorInvalidValue);
	err = func_kernel(func, &k);
	if (err != cudaSuccess)
		return cudart_ret(err);
	memset(attr, 0, sizeof(*attr));
	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		char *field = (char *)attr + map[i].off;
		int v;

		rc = cuKernelGetAttribute(&v, map[i].a, k, 0);
		if (rc == CUDA_ERROR_NOT_SUPPORTED && i == 0) {
			func_attrs_from_device(attr); /* an older worker */
			return cudaSuccess;
		}
		if (rc != CUDA_SUCCESS)
			return cudart_ret_cu(rc);
		if (map[i].is_size) {
			size_t z = v < 0 ? 0 : (size_t)v;

			memcpy(field, &z, sizeof(z));
		} else {
			memcpy(field, &v, sizeof(v));
		}
	}
	return cudaSuccess;
}

/*
 * The dynamic shared memory limit and the carveout go to the driver on the
 * host (an older worker: accepted up to 48 KiB, as before); other
 * attributes are not supported.
 */
CUDART_API cudaError_t CUDARTAPI cudaFuncSetAttribute(const void *func,
						      enum cudaFuncAttribute a,
						      int value)
{
	cudaError_t err;
	CUkernel k;
	CUresult rc;

	err = func_kernel(func, &k);
	if (err != cudaSuccess)
		return cudart_ret(err);
	switch (a) {
	case cudaFuncAttributePreferredSharedMemoryCarveout:
		rc = cuKernelSetAttribute(
			CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT,
			value, k, 0);
		if (rc == CUDA_ERROR_NOT_SUPPORTED)
			return cudaSuccess; /* a hint */
		return cudart_ret_cu(rc);
	case cudaFuncAttributeMaxDynamicSharedMemorySize:
		rc = cuKernelSetAttribute(
			CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, value,
			k, 0);
		if (rc != CUDA_ERROR_NOT_SUPPORTED)
			return cudart_ret_cu(rc);
		if (value >= 0 &&
		    value <=
			    cudart_attr(
				    CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK))
			return cudaSuccess;
		return cudart_unsupported(
			"cudaFuncSetAttribute(MaxDynamicSharedMemorySize "
			"above 48 KiB)");
	default:
		return cudart_unsupported("cudaFuncSetAttribute");
	}
}

/* Cache and bank preferences are hints (cudart_hints.c): checked for a
 * registered kernel and a valid value, then nothing else. */
CUDART_API cudaError_t CUDARTAPI
cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig)
{
	cudaError_t err = func_enter(func);

	if (err == cudaSuccess &&
	    (unsigned int)cacheConfig > cudaFuncCachePreferEqual)
		err = cudaErrorInvalidValue;
	return cudart_ret(err);
}

CUDART_API cudaError_t CUDARTAPI
cudaFuncSetSharedMemConfig(const void *func, enum cudaSharedMemConfig config)
{
	cudaError_t err = func_enter(func);

	if (err == cudaSuccess &&
	    (unsigned int)config > cudaSharedMemBankSizeEightByte)
		err = cudaErrorInvalidValue;
	return cudart_ret(err);
}

/* a / b rounded up */
static int div_up(int a, int b)
{
	return (a + b - 1) / b;
}

/*
 * Resident blocks per SM, the smallest of four limits: threads (in whole
 * warps), blocks, shared memory (dynamic plus the per-block reserve) and
 * registers at CUDART_OCC_REGS_PER_THREAD per thread (the kernel's real
 * count is not known here: a kernel using more registers fits fewer
 * blocks natively). Static shared memory is not known either.
 */
static int occupancy(int block, size_t dyn_smem)
{
	int warp = cudart_attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
	int tpsm =
		cudart_attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
	int bpsm =
		cudart_attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
	int smem = cudart_attr(
		CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
	int rsv = cudart_attr(
		CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
	int regs = cudart_attr(
		CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
	int threads, n;

	if (warp <= 0)
		warp = 32;
	if (tpsm <= 0)
		tpsm = 2048;
	if (bpsm <= 0)
		bpsm = 32;
	threads = div_up(block, warp) * warp;
	n = tpsm / threads;
	if (n > bpsm)
		n = bpsm;
	if (smem > 0 && dyn_smem > 0) {
		size_t per = dyn_smem + (rsv > 0 ? (size_t)rsv : 0);
		int by_smem = (int)((size_t)smem / per);

		if (by_smem < n)
			n = by_smem;
	}
	if (regs > 0) {
		int by_regs = regs / (threads * CUDART_OCC_REGS_PER_THREAD);

		if (by_regs < n)
			n = by_regs;
	}
	return n;
}

CUDART_API cudaError_t CUDARTAPI
cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *numBlocks,
						       const void *func,
						       int blockSize,
						       size_t dynamicSMemSize,
						       unsigned int flags)
{
	cudaError_t err;
	CUkernel k;
	CUresult rc;
	int tmax;

	if (!numBlocks || blockSize <= 0 ||
	    (flags & ~(unsigned int)cudaOccupancyDisableCachingOverride))
		return cudart_ret(cudaErrorInvalidValue);
	err = func_kernel(func, &k);
	if (err != cudaSuccess)
		return cudart_ret(err);
	rc = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
		numBlocks, (CUfunction)k, blockSize, dynamicSMemSize, flags);
	if (rc != CUDA_ERROR_NOT_SUPPORTED)
		return cudart_ret_cu(rc);
	/* an older worker: our estimate */
	tmax = cudart_attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
	*numBlocks = tmax > 0 && blockSize > tmax
			     ? 0
			     : occupancy(blockSize, dynamicSMemSize);
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaOccupancyMaxActiveBlocksPerMultiprocessor(
	int *numBlocks, const void *func, int blockSize, size_t dynamicSMemSize)
{
	return cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
		numBlocks, func, blockSize, dynamicSMemSize,
		cudaOccupancyDefault);
}
