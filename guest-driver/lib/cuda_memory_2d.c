/* SPDX-License-Identifier: MIT */
/*
 * Pitched (2D) memory in the driver API: cuMemAllocPitch, cuMemcpy2D
 * (and its Async and Unaligned forms), cuMemsetD2D8/16/32 (and Async),
 * which NVIDIA's runtime builds cudaMallocPitch, cudaMemcpy2D and
 * cudaMemset2D on. A pitched allocation is an ordinary one whose rows
 * start PITCH_ALIGN bytes apart; a 2D copy or fill is one 1D call when
 * the rows are contiguous, else one per row, so the padding between rows
 * is never touched, as in CUDA. CUDA arrays are not served on a vGPU
 * (CUDA_ERROR_NOT_SUPPORTED).
 */
#include <stdint.h>
#include <stdio.h>

#include "client_api.h"
#include "cuda_unsupported.h"

/* What NVIDIA's driver hands out on current GPUs (a multiple of the
 * texture pitch alignment), so programs that size buffers from a pitch
 * see the same numbers. */
#define PITCH_ALIGN 512

VGPU_API CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr *dptr, size_t *pitch,
					  size_t width, size_t height,
					  unsigned int elementSize)
{
	size_t p;

	if (!dptr || !pitch || width == 0 || height == 0 ||
	    (elementSize != 4 && elementSize != 8 && elementSize != 16))
		return CUDA_ERROR_INVALID_VALUE;
	if (width > SIZE_MAX - (PITCH_ALIGN - 1))
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = (width + PITCH_ALIGN - 1) & ~(size_t)(PITCH_ALIGN - 1);
	if (p > SIZE_MAX / height)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*pitch = p;
	return cuMemAlloc(dptr, p * height);
}

/* Where one side of a 2D copy starts, and its pitch; CUDA_SUCCESS or
 * why not. */
static CUresult side(CUmemorytype type, const void *host, CUdeviceptr dev,
		     size_t x, size_t y, size_t pitch, size_t width,
		     size_t height, uintptr_t *start)
{
	uintptr_t base;

	switch (type) {
	case CU_MEMORYTYPE_HOST:
		base = (uintptr_t)host;
		break;
	case CU_MEMORYTYPE_DEVICE:
	case CU_MEMORYTYPE_UNIFIED:
		base = (uintptr_t)dev;
		break;
	case CU_MEMORYTYPE_ARRAY: {
		static int said;

		cuda_say_once(&said, "cuMemcpy2D with a CUDA array is not "
				     "supported on a vGPU "
				     "(CUDA_ERROR_NOT_SUPPORTED)");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* rows no wider than the pitch, nothing wrapping the address space */
	if (x > pitch || width > pitch - x)
		return CUDA_ERROR_INVALID_VALUE;
	if (y > (UINTPTR_MAX - base) / (pitch ? pitch : 1) ||
	    height - 1 > (UINTPTR_MAX - base - y * pitch - x - width) /
				 (pitch ? pitch : 1))
		return CUDA_ERROR_INVALID_VALUE;
	*start = base + y * pitch + x;
	return CUDA_SUCCESS;
}

static CUresult copy_2d(const CUDA_MEMCPY2D *m, CUstream stream, int async)
{
	uintptr_t s, d;
	CUresult err;
	size_t r;

	if (!m)
		return CUDA_ERROR_INVALID_VALUE;
	if (m->WidthInBytes == 0 || m->Height == 0)
		return CUDA_SUCCESS;
	err = side(m->srcMemoryType, m->srcHost, m->srcDevice, m->srcXInBytes,
		   m->srcY, m->srcPitch, m->WidthInBytes, m->Height, &s);
	if (err == CUDA_SUCCESS)
		err = side(m->dstMemoryType, m->dstHost, m->dstDevice,
			   m->dstXInBytes, m->dstY, m->dstPitch,
			   m->WidthInBytes, m->Height, &d);
	if (err != CUDA_SUCCESS)
		return err;
	if (m->srcPitch == m->WidthInBytes && m->dstPitch == m->WidthInBytes)
		return async ? cuMemcpyAsync(d, s, m->WidthInBytes * m->Height,
					     stream)
			     : cuMemcpy(d, s, m->WidthInBytes * m->Height);
	for (r = 0; r < m->Height && err == CUDA_SUCCESS; r++)
		err = async ? cuMemcpyAsync(d + r * m->dstPitch,
					    s + r * m->srcPitch,
					    m->WidthInBytes, stream)
			    : cuMemcpy(d + r * m->dstPitch, s + r * m->srcPitch,
				       m->WidthInBytes);
	return err;
}

VGPU_API CUresult CUDAAPI cuMemcpy2D(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, NULL, 0);
}

VGPU_API CUresult CUDAAPI cuMemcpy2DUnaligned(const CUDA_MEMCPY2D *pCopy)
{
	return copy_2d(pCopy, NULL, 0);
}

VGPU_API CUresult CUDAAPI cuMemcpy2DAsync(const CUDA_MEMCPY2D *pCopy,
					  CUstream hStream)
{
	return copy_2d(pCopy, hStream, 1);
}

/* A 2D fill of elements of size elem (1, 2 or 4 bytes). */
static CUresult memset_2d(CUdeviceptr dst, size_t pitch, unsigned int value,
			  unsigned int elem, size_t width, size_t height,
			  CUstream stream, int async)
{
	CUresult err = CUDA_SUCCESS;
	size_t r, n;

	if (width == 0 || height == 0)
		return CUDA_SUCCESS;
	if (width > SIZE_MAX / elem || width * elem > pitch ||
	    height - 1 > (UINT64_MAX - dst - width * elem) / pitch)
		return CUDA_ERROR_INVALID_VALUE;
	if (pitch == width * elem) {
		width *= height;
		height = 1;
	}
	for (r = 0; r < height && err == CUDA_SUCCESS; r++) {
		CUdeviceptr row = dst + r * pitch;

		n = width;
		switch (elem) {
		case 1:
			err = async ? cuMemsetD8Async(row, (unsigned char)value,
						      n, stream)
				    : cuMemsetD8(row, (unsigned char)value, n);
			break;
		case 2:
			err = async ? cuMemsetD16Async(row,
						       (unsigned short)value, n,
						       stream)
				    : cuMemsetD16(row, (unsigned short)value,
						  n);
			break;
		default:
			err = async ? cuMemsetD32Async(row, value, n, stream)
				    : cuMemsetD32(row, value, n);
		}
	}
	return err;
}

VGPU_API CUresult CUDAAPI cuMemsetD2D8(CUdeviceptr dstDevice, size_t dstPitch,
				       unsigned char uc, size_t Width,
				       size_t Height)
{
	return memset_2d(dstDevice, dstPitch, uc, 1, Width, Height, NULL, 0);
}

VGPU_API CUresult CUDAAPI cuMemsetD2D16(CUdeviceptr dstDevice, size_t dstPitch,
					unsigned short us, size_t Width,
					size_t Height)
{
	return memset_2d(dstDevice, dstPitch, us, 2, Width, Height, NULL, 0);
}

VGPU_API CUresult CUDAAPI cuMemsetD2D32(CUdeviceptr dstDevice, size_t dstPitch,
					unsigned int ui, size_t Width,
					size_t Height)
{
	return memset_2d(dstDevice, dstPitch, ui, 4, Width, Height, NULL, 0);
}

VGPU_API CUresult CUDAAPI cuMemsetD2D8Async(CUdeviceptr dstDevice,
					    size_t dstPitch, unsigned char uc,
					    size_t Width, size_t Height,
					    CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, uc, 1, Width, Height, hStream, 1);
}

VGPU_API CUresult CUDAAPI cuMemsetD2D16Async(CUdeviceptr dstDevice,
					     size_t dstPitch, unsigned short us,
					     size_t Width, size_t Height,
					     CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, us, 2, Width, Height, hStream, 1);
}

VGPU_API CUresult CUDAAPI cuMemsetD2D32Async(CUdeviceptr dstDevice,
					     size_t dstPitch, unsigned int ui,
					     size_t Width, size_t Height,
					     CUstream hStream)
{
	return memset_2d(dstDevice, dstPitch, ui, 4, Width, Height, hStream, 1);
}
