/* SPDX-License-Identifier: MIT */
/*
 * Streams, events and host callbacks. A cudaStream_t is our CUstream and
 * a cudaEvent_t our CUevent (the runtime and driver types are the same
 * structs), so these are thin.
 *
 * cudaLaunchHostFunc and cudaStreamAddCallback are the driver's
 * (cuda_hostfn.c): asynchronous, run by the library's host-function
 * thread when the stream reaches them.
 */
#include <stdlib.h>

#include "cudart.h"

/* enter + call + map: the shape of most calls here. */
#define CU_CALL(expr)                                                          \
	do {                                                                   \
		cudaError_t err_ = cudart_enter();                             \
		if (err_ != cudaSuccess)                                       \
			return cudart_ret(err_);                               \
		return cudart_ret_cu(expr);                                    \
	} while (0)

CUDART_API cudaError_t CUDARTAPI
cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	if (!pStream || (flags & ~(unsigned int)cudaStreamNonBlocking))
		return cudart_ret(cudaErrorInvalidValue);
	CU_CALL(cuStreamCreate((CUstream *)pStream, flags));
}

CUDART_API cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *pStream)
{
	return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

/* Priorities are accepted; the worker does not order by them. */
CUDART_API cudaError_t CUDARTAPI cudaStreamCreateWithPriority(
	cudaStream_t *pStream, unsigned int flags, int priority)
{
	return cudaStreamCreateWithFlags(pStream, flags);
}

CUDART_API cudaError_t CUDARTAPI cudaStreamGetFlags(cudaStream_t hStream,
						    unsigned int *flags)
{
	if (!flags)
		return cudart_ret(cudaErrorInvalidValue);
	CU_CALL(cuStreamGetFlags(cudart_stream(hStream), flags));
}

/* 0 for every stream: cudaDeviceGetStreamPriorityRange is [0, 0]. */
CUDART_API cudaError_t CUDARTAPI cudaStreamGetPriority(cudaStream_t hStream,
						       int *priority)
{
	if (!priority)
		return cudart_ret(cudaErrorInvalidValue);
	CU_CALL(cuStreamGetPriority(cudart_stream(hStream), priority));
}

CUDART_API cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream)
{
	CU_CALL(cuStreamDestroy(cudart_stream(stream)));
}

CUDART_API cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream)
{
	CU_CALL(cuStreamSynchronize(cudart_stream(stream)));
}

CUDART_API cudaError_t CUDARTAPI cudaStreamQuery(cudaStream_t stream)
{
	CU_CALL(cuStreamQuery(cudart_stream(stream)));
}

CUDART_API cudaError_t CUDARTAPI cudaStreamWaitEvent(cudaStream_t stream,
						     cudaEvent_t event,
						     unsigned int flags)
{
	CU_CALL(cuStreamWaitEvent(cudart_stream(stream), (CUevent)event,
				  flags));
}

/* Nothing is ever captured: capture itself is not supported. */
CUDART_API cudaError_t CUDARTAPI cudaStreamIsCapturing(
	cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
	if (!pCaptureStatus)
		return cudart_ret(cudaErrorInvalidValue);
	*pCaptureStatus = cudaStreamCaptureStatusNone;
	return cudaSuccess;
}

CUDART_API cudaError_t CUDARTAPI cudaLaunchHostFunc(cudaStream_t stream,
						    cudaHostFn_t fn,
						    void *userData)
{
	if (!fn)
		return cudart_ret(cudaErrorInvalidValue);
	CU_CALL(cuLaunchHostFunc(cudart_stream(stream), fn, userData));
}

/* A runtime callback gets the stream's status as a cudaError_t. */
struct cudart_callback {
	cudaStreamCallback_t fn;
	void *arg;
};

static void CUDA_CB cudart_callback_trampoline(CUstream stream, CUresult status,
					       void *p)
{
	struct cudart_callback cb = *(struct cudart_callback *)p;

	free(p);
	cb.fn((cudaStream_t)stream, cudart_error_from_cu(status), cb.arg);
}

CUDART_API cudaError_t CUDARTAPI
cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
		      void *userData, unsigned int flags)
{
	struct cudart_callback *cb;
	cudaError_t err = cudart_enter();
	CUresult rc;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!callback || flags != 0)
		return cudart_ret(cudaErrorInvalidValue);
	cb = malloc(sizeof(*cb));
	if (!cb)
		return cudart_ret(cudaErrorMemoryAllocation);
	cb->fn = callback;
	cb->arg = userData;
	rc = cuStreamAddCallback(cudart_stream(stream),
				 cudart_callback_trampoline, cb, 0);
	if (rc != CUDA_SUCCESS)
		free(cb); /* never queued nor called: still ours */
	return cudart_ret_cu(rc);
}

/* ---- events ------------------------------------------------------------ */

CUDART_API cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t *event,
							  unsigned int flags)
{
	if (!event || (flags & ~(unsigned int)(cudaEventBlockingSync |
					       cudaEventDisableTiming |
					       cudaEventInterprocess)))
		return cudart_ret(cudaErrorInvalidValue);
	if (flags & cudaEventInterprocess)
		return cudart_unsupported("cudaEventCreateWithFlags("
					  "cudaEventInterprocess)");
	CU_CALL(cuEventCreate((CUevent *)event, flags));
}

CUDART_API cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *event)
{
	return cudaEventCreateWithFlags(event, cudaEventDefault);
}

CUDART_API cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event,
						 cudaStream_t stream)
{
	CU_CALL(cuEventRecord((CUevent)event, cudart_stream(stream)));
}

CUDART_API cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event,
							  cudaStream_t stream,
							  unsigned int flags)
{
	if (flags & ~(unsigned int)cudaEventRecordExternal)
		return cudart_ret(cudaErrorInvalidValue);
	return cudaEventRecord(event, stream);
}

CUDART_API cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event)
{
	CU_CALL(cuEventSynchronize((CUevent)event));
}

CUDART_API cudaError_t CUDARTAPI cudaEventQuery(cudaEvent_t event)
{
	CU_CALL(cuEventQuery((CUevent)event));
}

CUDART_API cudaError_t CUDARTAPI cudaEventElapsedTime(float *ms,
						      cudaEvent_t start,
						      cudaEvent_t end)
{
	if (!ms)
		return cudart_ret(cudaErrorInvalidValue);
	CU_CALL(cuEventElapsedTime(ms, (CUevent)start, (CUevent)end));
}

CUDART_API cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event)
{
	CU_CALL(cuEventDestroy((CUevent)event));
}
