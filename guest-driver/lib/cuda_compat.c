/* SPDX-License-Identifier: MIT */
/*
 * The other names under which programs and cudart bind the same calls:
 *  - the plain legacy names where their arguments are the same as the
 *    current version's (cuCtxDestroy, cuStreamDestroy, ...), and the
 *    old 32-bit-size queries (cuDeviceTotalMem, cuMemGetInfo), clamped;
 *  - the per-thread-default-stream variants (_ptds, _ptsz) that programs
 *    built with --default-stream per-thread reference. The vGPU has one
 *    default stream per process, so they behave as the legacy ones.
 * The legacy calls that take 32-bit device pointers are not provided:
 * vGPU addresses do not fit in them.
 *
 * cuda.h with __CUDA_API_VERSION_INTERNAL declares every one of these
 * names without renaming them.
 */
#define __CUDA_API_VERSION_INTERNAL 1

#include <limits.h>

#include "client_api.h"

VGPU_API CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags,
				      CUdevice dev)
{
	return cuCtxCreate_v2(pctx, flags, dev);
}

VGPU_API CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	return cuCtxDestroy_v2(ctx);
}

VGPU_API CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
	return cuCtxPopCurrent_v2(pctx);
}

VGPU_API CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
	return cuCtxPushCurrent_v2(ctx);
}

VGPU_API CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	return cuStreamDestroy_v2(hStream);
}

VGPU_API CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
	return cuEventDestroy_v2(hEvent);
}

VGPU_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds,
					     CUevent hStart, CUevent hEnd)
{
	return cuEventElapsedTime_v2(pMilliseconds, hStart, hEnd);
}

VGPU_API CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	return cuDevicePrimaryCtxRelease_v2(dev);
}

VGPU_API CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	return cuDevicePrimaryCtxReset_v2(dev);
}

VGPU_API CUresult CUDAAPI cuDevicePrimaryCtxSetFlags(CUdevice dev,
						     unsigned int flags)
{
	return cuDevicePrimaryCtxSetFlags_v2(dev, flags);
}

VGPU_API CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid_v2(uuid, dev);
}

static unsigned int clamp_uint(size_t v)
{
	return v > UINT_MAX ? UINT_MAX : (unsigned int)v;
}

VGPU_API CUresult CUDAAPI cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
	size_t b;
	CUresult err;

	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	err = cuDeviceTotalMem_v2(&b, dev);
	if (err == CUDA_SUCCESS)
		*bytes = clamp_uint(b);
	return err;
}

VGPU_API CUresult CUDAAPI cuMemGetInfo(unsigned int *free, unsigned int *total)
{
	size_t f, t;
	CUresult err;

	if (!free || !total)
		return CUDA_ERROR_INVALID_VALUE;
	err = cuMemGetInfo_v2(&f, &t);
	if (err == CUDA_SUCCESS) {
		*free = clamp_uint(f);
		*total = clamp_uint(t);
	}
	return err;
}

/* The 32-bit-size original of cuMemAllocHost: same buffer, smaller size. */
VGPU_API CUresult CUDAAPI cuMemAllocHost(void **pp, unsigned int bytesize)
{
	return cuMemAllocHost_v2(pp, bytesize);
}

VGPU_API CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn,
					   int cudaVersion, cuuint64_t flags)
{
	return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}

/* ---- per-thread default stream -------------------------------------- */

/* NULL in a _ptsz call is the calling thread's default stream, which
 * does not wait for blocking streams as the legacy one does. */
static CUstream ptsz(CUstream s)
{
	return s ? s : CU_STREAM_PER_THREAD;
}

VGPU_API CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src,
					size_t ByteCount)
{
	return cuMemcpy(dst, src, ByteCount);
}

VGPU_API CUresult CUDAAPI cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src,
					     size_t ByteCount, CUstream hStream)
{
	return cuMemcpyAsync(dst, src, ByteCount, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemcpyHtoD_v2_ptds(CUdeviceptr dstDevice,
					       const void *srcHost,
					       size_t ByteCount)
{
	return cuMemcpyHtoD_v2(dstDevice, srcHost, ByteCount);
}

VGPU_API CUresult CUDAAPI cuMemcpyDtoH_v2_ptds(void *dstHost,
					       CUdeviceptr srcDevice,
					       size_t ByteCount)
{
	return cuMemcpyDtoH_v2(dstHost, srcDevice, ByteCount);
}

VGPU_API CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dstDevice,
					       CUdeviceptr srcDevice,
					       size_t ByteCount)
{
	return cuMemcpyDtoD_v2(dstDevice, srcDevice, ByteCount);
}

VGPU_API CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
						    const void *srcHost,
						    size_t ByteCount,
						    CUstream hStream)
{
	return cuMemcpyHtoDAsync_v2(dstDevice, srcHost, ByteCount,
				    ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void *dstHost,
						    CUdeviceptr srcDevice,
						    size_t ByteCount,
						    CUstream hStream)
{
	return cuMemcpyDtoHAsync_v2(dstHost, srcDevice, ByteCount,
				    ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dstDevice,
						    CUdeviceptr srcDevice,
						    size_t ByteCount,
						    CUstream hStream)
{
	return cuMemcpyDtoDAsync_v2(dstDevice, srcDevice, ByteCount,
				    ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice,
					     unsigned char uc, size_t N)
{
	return cuMemsetD8_v2(dstDevice, uc, N);
}

VGPU_API CUresult CUDAAPI cuMemsetD16_v2_ptds(CUdeviceptr dstDevice,
					      unsigned short us, size_t N)
{
	return cuMemsetD16_v2(dstDevice, us, N);
}

VGPU_API CUresult CUDAAPI cuMemsetD32_v2_ptds(CUdeviceptr dstDevice,
					      unsigned int ui, size_t N)
{
	return cuMemsetD32_v2(dstDevice, ui, N);
}

VGPU_API CUresult CUDAAPI cuMemsetD8Async_ptsz(CUdeviceptr dstDevice,
					       unsigned char uc, size_t N,
					       CUstream hStream)
{
	return cuMemsetD8Async(dstDevice, uc, N, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemsetD16Async_ptsz(CUdeviceptr dstDevice,
						unsigned short us, size_t N,
						CUstream hStream)
{
	return cuMemsetD16Async(dstDevice, us, N, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemsetD32Async_ptsz(CUdeviceptr dstDevice,
						unsigned int ui, size_t N,
						CUstream hStream)
{
	return cuMemsetD32Async(dstDevice, ui, N, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr,
					       size_t bytesize,
					       CUstream hStream)
{
	return cuMemAllocAsync(dptr, bytesize, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr,
						       size_t bytesize,
						       CUmemoryPool pool,
						       CUstream hStream)
{
	return cuMemAllocFromPoolAsync(dptr, bytesize, pool, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr,
					      CUstream hStream)
{
	return cuMemFreeAsync(dptr, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuStreamQuery_ptsz(CUstream hStream)
{
	return cuStreamQuery(ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
	return cuStreamSynchronize(ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuStreamWaitEvent_ptsz(CUstream hStream,
						 CUevent hEvent,
						 unsigned int Flags)
{
	return cuStreamWaitEvent(ptsz(hStream), hEvent, Flags);
}

VGPU_API CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	return cuEventRecord(hEvent, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuLaunchKernel_ptsz(
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
	unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
	unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
	void **kernelParams, void **extra)
{
	return cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX,
			      blockDimY, blockDimZ, sharedMemBytes,
			      ptsz(hStream), kernelParams, extra);
}

VGPU_API CUresult CUDAAPI cuLaunchCooperativeKernel_ptsz(
	CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
	unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
	unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
	void **kernelParams)
{
	return cuLaunchCooperativeKernel(
		f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY,
		blockDimZ, sharedMemBytes, ptsz(hStream), kernelParams);
}

VGPU_API CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig *config,
						CUfunction f,
						void **kernelParams,
						void **extra)
{
	CUlaunchConfig cfg;

	if (!config)
		return cuLaunchKernelEx(config, f, kernelParams, extra);
	cfg = *config;
	cfg.hStream = ptsz(cfg.hStream);
	return cuLaunchKernelEx(&cfg, f, kernelParams, extra);
}

VGPU_API CUresult CUDAAPI cuStreamGetFlags_ptsz(CUstream hStream,
						unsigned int *flags)
{
	return cuStreamGetFlags(ptsz(hStream), flags);
}

VGPU_API CUresult CUDAAPI cuStreamGetPriority_ptsz(CUstream hStream,
						   int *priority)
{
	return cuStreamGetPriority(ptsz(hStream), priority);
}

VGPU_API CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream hStream,
						   CUstreamCallback callback,
						   void *userData,
						   unsigned int flags)
{
	return cuStreamAddCallback(ptsz(hStream), callback, userData, flags);
}

VGPU_API CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream hStream, CUhostFn fn,
						void *userData)
{
	return cuLaunchHostFunc(ptsz(hStream), fn, userData);
}

/* ---- pitched memory (cuda_memory_2d.c), per-thread variants ---------- */

VGPU_API CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
	return cuMemcpy2D_v2(pCopy);
}

VGPU_API CUresult CUDAAPI
cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
	return cuMemcpy2DUnaligned_v2(pCopy);
}

VGPU_API CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy,
						  CUstream hStream)
{
	return cuMemcpy2DAsync_v2(pCopy, ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemsetD2D8_v2_ptds(CUdeviceptr dstDevice,
					       size_t dstPitch,
					       unsigned char uc, size_t Width,
					       size_t Height)
{
	return cuMemsetD2D8_v2(dstDevice, dstPitch, uc, Width, Height);
}

VGPU_API CUresult CUDAAPI cuMemsetD2D16_v2_ptds(CUdeviceptr dstDevice,
						size_t dstPitch,
						unsigned short us, size_t Width,
						size_t Height)
{
	return cuMemsetD2D16_v2(dstDevice, dstPitch, us, Width, Height);
}

VGPU_API CUresult CUDAAPI cuMemsetD2D32_v2_ptds(CUdeviceptr dstDevice,
						size_t dstPitch,
						unsigned int ui, size_t Width,
						size_t Height)
{
	return cuMemsetD2D32_v2(dstDevice, dstPitch, ui, Width, Height);
}

VGPU_API CUresult CUDAAPI cuMemsetD2D8Async_ptsz(CUdeviceptr dstDevice,
						 size_t dstPitch,
						 unsigned char uc, size_t Width,
						 size_t Height,
						 CUstream hStream)
{
	return cuMemsetD2D8Async(dstDevice, dstPitch, uc, Width, Height,
				 ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemsetD2D16Async_ptsz(CUdeviceptr dstDevice,
						  size_t dstPitch,
						  unsigned short us,
						  size_t Width, size_t Height,
						  CUstream hStream)
{
	return cuMemsetD2D16Async(dstDevice, dstPitch, us, Width, Height,
				  ptsz(hStream));
}

VGPU_API CUresult CUDAAPI cuMemsetD2D32Async_ptsz(CUdeviceptr dstDevice,
						  size_t dstPitch,
						  unsigned int ui, size_t Width,
						  size_t Height,
						  CUstream hStream)
{
	return cuMemsetD2D32Async(dstDevice, dstPitch, ui, Width, Height,
				  ptsz(hStream));
}

/* ---- capture status (cuda_capture.c): older versions, per-thread ---- */

VGPU_API CUresult CUDAAPI
cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *status)
{
	return cuStreamIsCapturing(ptsz(hStream), status);
}

VGPU_API CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(
	CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
	cuuint64_t *id_out, CUgraph *graph_out,
	const CUgraphNode **dependencies_out,
	const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	return cuStreamIsCapturing(ptsz(hStream), captureStatus_out);
}

VGPU_API CUresult CUDAAPI cuStreamGetCaptureInfo_v2(
	CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
	cuuint64_t *id_out, CUgraph *graph_out,
	const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
	return cuStreamIsCapturing(ptsz(hStream), captureStatus_out);
}

VGPU_API CUresult CUDAAPI cuStreamGetCaptureInfo_v2_ptsz(
	CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
	cuuint64_t *id_out, CUgraph *graph_out,
	const CUgraphNode **dependencies_out, size_t *numDependencies_out)
{
	return cuStreamIsCapturing(ptsz(hStream), captureStatus_out);
}

VGPU_API CUresult CUDAAPI cuStreamGetCaptureInfo(
	CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
	cuuint64_t *id_out)
{
	return cuStreamIsCapturing(ptsz(hStream), captureStatus_out);
}

VGPU_API CUresult CUDAAPI cuStreamGetCaptureInfo_ptsz(
	CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
	cuuint64_t *id_out)
{
	return cuStreamIsCapturing(ptsz(hStream), captureStatus_out);
}
