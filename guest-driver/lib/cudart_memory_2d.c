/* SPDX-License-Identifier: MIT */
/*
 * Pitched (2D) memory: cudaMallocPitch, cudaMemcpy2D[Async],
 * cudaMemset2D[Async]. A pitched allocation is an ordinary allocation
 * whose rows start CUDART_PITCH_ALIGN bytes apart; a 2D copy or fill is
 * one call of the 1D path when the rows are contiguous (pitch == width),
 * else one per row, so padding between rows is never touched, as in CUDA.
 */
#include <stdint.h>

#include "cudart.h"
#include "cudart_memory.h"

/*
 * Row alignment of cudaMallocPitch. NVIDIA's runtime hands out pitches in
 * multiples of 512 bytes on current GPUs, more than the 32 bytes
 * cudaDevAttrTexturePitchAlignment asks of a pitch; programs that size
 * buffers from a pitch they got see the same numbers here.
 */
#define CUDART_PITCH_ALIGN 512

CUDART_API cudaError_t CUDARTAPI cudaMallocPitch(void **devPtr, size_t *pitch,
						 size_t width, size_t height)
{
	cudaError_t err = cudart_enter();
	int max_pitch;
	size_t p;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!devPtr || !pitch)
		return cudart_ret(cudaErrorInvalidValue);
	if (width > SIZE_MAX - (CUDART_PITCH_ALIGN - 1))
		return cudart_ret(cudaErrorMemoryAllocation);
	p = (width + CUDART_PITCH_ALIGN - 1) &
	    ~(size_t)(CUDART_PITCH_ALIGN - 1);
	max_pitch = cudart_attr(CU_DEVICE_ATTRIBUTE_MAX_PITCH);
	if (max_pitch > 0 && p > (size_t)max_pitch)
		return cudart_ret(cudaErrorInvalidValue);
	if (height && p > SIZE_MAX / height)
		return cudart_ret(cudaErrorMemoryAllocation);
	*pitch = p;
	/* as cudaMalloc(0): nothing to allocate, a NULL pointer */
	return cudaMalloc(devPtr, p * height);
}

/*
 * CUDA's checks of a 2D range: rows no wider than the pitch
 * (cudaErrorInvalidPitchValue) and a last row that does not wrap the
 * address space.
 */
static cudaError_t range_2d_check(const void *base, size_t pitch, size_t width,
				  size_t height)
{
	uintptr_t b = (uintptr_t)base;

	if (width > pitch)
		return cudaErrorInvalidPitchValue;
	if (height - 1 > (SIZE_MAX - width) / pitch ||
	    (height - 1) * pitch + width > UINTPTR_MAX - b)
		return cudaErrorInvalidValue;
	return cudaSuccess;
}

static cudaError_t memcpy_2d(void *dst, size_t dpitch, const void *src,
			     size_t spitch, size_t width, size_t height,
			     enum cudaMemcpyKind kind, cudaStream_t stream,
			     int sync)
{
	cudaError_t err = cudart_enter();
	CUresult res = CUDA_SUCCESS;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if ((unsigned int)kind > cudaMemcpyDefault)
		return cudart_ret(cudaErrorInvalidMemcpyDirection);
	if (width == 0 || height == 0)
		return cudaSuccess;
	err = range_2d_check(dst, dpitch, width, height);
	if (err == cudaSuccess)
		err = range_2d_check(src, spitch, width, height);
	if (err != cudaSuccess)
		return cudart_ret(err);
	if (dpitch == width && spitch == width)
		return cudart_copy_ret(cudart_copy(dst, src, width * height,
						   kind, stream, sync));
	for (size_t r = 0; r < height && res == CUDA_SUCCESS; r++)
		res = cudart_copy((char *)dst + r * dpitch,
				  (const char *)src + r * spitch, width, kind,
				  stream, sync);
	return cudart_copy_ret(res);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy2D(void *dst, size_t dpitch,
					      const void *src, size_t spitch,
					      size_t width, size_t height,
					      enum cudaMemcpyKind kind)
{
	return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, NULL,
			 1);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy2DAsync(
	void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
	size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream,
			 0);
}

static cudaError_t memset_2d(void *devPtr, size_t pitch, int value,
			     size_t width, size_t height, cudaStream_t stream,
			     int sync)
{
	cudaError_t err = cudart_enter();
	unsigned char v = (unsigned char)value;
	CUresult res = CUDA_SUCCESS;
	size_t rows = height, row_bytes = width;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (width == 0 || height == 0)
		return cudaSuccess;
	err = range_2d_check(devPtr, pitch, width, height);
	if (err != cudaSuccess)
		return cudart_ret(err);
	if (pitch == width) {
		rows = 1;
		row_bytes = width * height;
	}
	for (size_t r = 0; r < rows && res == CUDA_SUCCESS; r++) {
		CUdeviceptr row = DPTR(devPtr) + r * pitch;

		res = sync ? cuMemsetD8(row, v, row_bytes)
			   : cuMemsetD8Async(row, v, row_bytes,
					     cudart_stream(stream));
	}
	return cudart_copy_ret(res);
}

CUDART_API cudaError_t CUDARTAPI cudaMemset2D(void *devPtr, size_t pitch,
					      int value, size_t width,
					      size_t height)
{
	return memset_2d(devPtr, pitch, value, width, height, NULL, 1);
}

CUDART_API cudaError_t CUDARTAPI cudaMemset2DAsync(void *devPtr, size_t pitch,
						   int value, size_t width,
						   size_t height,
						   cudaStream_t stream)
{
	return memset_2d(devPtr, pitch, value, width, height, stream, 0);
}
