/* SPDX-License-Identifier: MIT */
/*
 * The per-thread-default-stream names (NAME_ptsz for calls that take a
 * stream, NAME_ptds for synchronous ones) that programs built with
 * nvcc --default-stream per-thread link instead of NAME, for every call
 * we implement. In them stream 0 means the calling thread's default
 * stream, so it is passed on as cudaStreamPerThread.
 *
 * Our driver has no per-thread streams: like cuda_compat.c's cu*_ptsz it
 * gives NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD the process's one
 * default stream on the worker. That is still correct: a per-thread
 * default stream orders the work of its own thread, and running every
 * thread's on one stream adds ordering, never removes it. What it costs
 * is concurrency between threads' default streams (and a program whose
 * kernel in one thread waits for a kernel of another thread's default
 * stream would wait forever, as it would with the legacy stream), and
 * cudaStreamQuery(0) may say cudaErrorNotReady for another thread's work
 * (synchronizing waits for it too: later, never wrong).
 * The synchronous _ptds calls behave as their plain forms for the same
 * reason. Calls a vGPU does not support get their _ptsz stubs from
 * gen_cudart_stubs.py.
 */
#include "cudart.h"
#include "cudart_launch.h"
#include "cudart_module.h"

/* What a _ptsz call's stream means. */
static cudaStream_t pt(cudaStream_t s)
{
	return s ? s : cudaStreamPerThread;
}

/* ---- launches ---------------------------------------------------------- */

CUDART_API cudaError_t CUDARTAPI
__cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim,
			void **args, size_t sharedMem, cudaStream_t stream)
{
	return cudart_launch((struct cudart_func *)kernel, gridDim, blockDim,
			     args, sharedMem, pt(stream));
}

CUDART_API cudaError_t CUDARTAPI
cudaLaunchKernel_ptsz(const void *func, dim3 gridDim, dim3 blockDim,
		      void **args, size_t sharedMem, cudaStream_t stream)
{
	return cudart_launch(cudart_func_of(func), gridDim, blockDim, args,
			     sharedMem, pt(stream));
}

CUDART_API cudaError_t CUDARTAPI cudaLaunchKernelExC_ptsz(
	const cudaLaunchConfig_t *config, const void *func, void **args)
{
	return cudart_launch_ex(config, func, args,
				config ? pt(config->stream) : NULL);
}

CUDART_API cudaError_t CUDARTAPI cudaLaunchHostFunc_ptsz(cudaStream_t stream,
							 cudaHostFn_t fn,
							 void *userData)
{
	return cudaLaunchHostFunc(pt(stream), fn, userData);
}

CUDART_API cudaError_t CUDARTAPI
cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
			   void *userData, unsigned int flags)
{
	return cudaStreamAddCallback(pt(stream), callback, userData, flags);
}

/* ---- memory ------------------------------------------------------------ */

CUDART_API cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **devPtr,
						      size_t size,
						      cudaStream_t hStream)
{
	return cudaMallocAsync(devPtr, size, pt(hStream));
}

CUDART_API cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr,
						    cudaStream_t hStream)
{
	return cudaFreeAsync(devPtr, pt(hStream));
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy_ptds(void *dst, const void *src,
						 size_t count,
						 enum cudaMemcpyKind kind)
{
	return cudaMemcpy(dst, src, count, kind);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyAsync_ptsz(void *dst,
						      const void *src,
						      size_t count,
						      enum cudaMemcpyKind kind,
						      cudaStream_t stream)
{
	return cudaMemcpyAsync(dst, src, count, kind, pt(stream));
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy2D_ptds(void *dst, size_t dpitch,
						   const void *src,
						   size_t spitch, size_t width,
						   size_t height,
						   enum cudaMemcpyKind kind)
{
	return cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy2DAsync_ptsz(
	void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
	size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, height, kind,
				 pt(stream));
}

CUDART_API cudaError_t CUDARTAPI cudaMemset_ptds(void *devPtr, int value,
						 size_t count)
{
	return cudaMemset(devPtr, value, count);
}

CUDART_API cudaError_t CUDARTAPI cudaMemsetAsync_ptsz(void *devPtr, int value,
						      size_t count,
						      cudaStream_t stream)
{
	return cudaMemsetAsync(devPtr, value, count, pt(stream));
}

CUDART_API cudaError_t CUDARTAPI cudaMemset2D_ptds(void *devPtr, size_t pitch,
						   int value, size_t width,
						   size_t height)
{
	return cudaMemset2D(devPtr, pitch, value, width, height);
}

CUDART_API cudaError_t CUDARTAPI cudaMemset2DAsync_ptsz(void *devPtr,
							size_t pitch, int value,
							size_t width,
							size_t height,
							cudaStream_t stream)
{
	return cudaMemset2DAsync(devPtr, pitch, value, width, height,
				 pt(stream));
}

CUDART_API cudaError_t CUDARTAPI
cudaMemcpyToSymbol_ptds(const void *symbol, const void *src, size_t count,
			size_t offset, enum cudaMemcpyKind kind)
{
	return cudaMemcpyToSymbol(symbol, src, count, offset, kind);
}

CUDART_API cudaError_t CUDARTAPI
cudaMemcpyFromSymbol_ptds(void *dst, const void *symbol, size_t count,
			  size_t offset, enum cudaMemcpyKind kind)
{
	return cudaMemcpyFromSymbol(dst, symbol, count, offset, kind);
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyToSymbolAsync_ptsz(
	const void *symbol, const void *src, size_t count, size_t offset,
	enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return cudaMemcpyToSymbolAsync(symbol, src, count, offset, kind,
				       pt(stream));
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyFromSymbolAsync_ptsz(
	void *dst, const void *symbol, size_t count, size_t offset,
	enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return cudaMemcpyFromSymbolAsync(dst, symbol, count, offset, kind,
					 pt(stream));
}

/* ---- streams and events ------------------------------------------------ */

CUDART_API cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	return cudaStreamSynchronize(pt(stream));
}

CUDART_API cudaError_t CUDARTAPI cudaStreamQuery_ptsz(cudaStream_t stream)
{
	return cudaStreamQuery(pt(stream));
}

CUDART_API cudaError_t CUDARTAPI cudaStreamWaitEvent_ptsz(cudaStream_t stream,
							  cudaEvent_t event,
							  unsigned int flags)
{
	return cudaStreamWaitEvent(pt(stream), event, flags);
}

CUDART_API cudaError_t CUDARTAPI cudaStreamIsCapturing_ptsz(
	cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	return cudaStreamIsCapturing(pt(stream), pCaptureStatus);
}

CUDART_API cudaError_t CUDARTAPI cudaStreamGetFlags_ptsz(cudaStream_t hStream,
							 unsigned int *flags)
{
	return cudaStreamGetFlags(pt(hStream), flags);
}

CUDART_API cudaError_t CUDARTAPI
cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
{
	return cudaStreamGetPriority(pt(hStream), priority);
}

CUDART_API cudaError_t CUDARTAPI cudaEventRecord_ptsz(cudaEvent_t event,
						      cudaStream_t stream)
{
	return cudaEventRecord(event, pt(stream));
}

CUDART_API cudaError_t CUDARTAPI cudaEventRecordWithFlags_ptsz(
	cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
	return cudaEventRecordWithFlags(event, pt(stream), flags);
}
