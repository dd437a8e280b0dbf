/* SPDX-License-Identifier: MIT */
/*
 * Runtime calls a vGPU does not offer (managed memory, graphs and stream
 * capture, IPC, mapped host memory, pitched and array memory, limits,
 * cooperative launches, peers, memory pools): each fails with
 * cudaErrorNotSupported and says so once on stderr, naming the call.
 * Prototypes are cuda_runtime_api.h 13's.
 */
#include "cudart.h"

CUDART_API cudaError_t CUDARTAPI cudaMallocManaged(void **devPtr, size_t size,
						   unsigned int flags)
{
	return cudart_unsupported("cudaMallocManaged");
}

CUDART_API cudaError_t CUDARTAPI cudaMemPrefetchAsync(
	const void *devPtr, size_t count, struct cudaMemLocation location,
	unsigned int flags, cudaStream_t stream)
{
	return cudart_unsupported("cudaMemPrefetchAsync");
}

CUDART_API cudaError_t CUDARTAPI cudaMemAdvise(const void *devPtr, size_t count,
					       enum cudaMemoryAdvise advice,
					       struct cudaMemLocation location)
{
	return cudart_unsupported("cudaMemAdvise");
}

CUDART_API cudaError_t CUDARTAPI cudaStreamAttachMemAsync(cudaStream_t stream,
							  void *devPtr,
							  size_t length,
							  unsigned int flags)
{
	return cudart_unsupported("cudaStreamAttachMemAsync");
}

CUDART_API cudaError_t CUDARTAPI
cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	return cudart_unsupported("cudaStreamBeginCapture");
}

CUDART_API cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream,
						      cudaGraph_t *pGraph)
{
	return cudart_unsupported("cudaStreamEndCapture");
}

CUDART_API cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t *pGraph,
						 unsigned int flags)
{
	return cudart_unsupported("cudaGraphCreate");
}

CUDART_API cudaError_t CUDARTAPI
cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
		     unsigned long long flags)
{
	return cudart_unsupported("cudaGraphInstantiate");
}

CUDART_API cudaError_t CUDARTAPI
cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
			      unsigned long long flags)
{
	return cudart_unsupported("cudaGraphInstantiateWithFlags");
}

CUDART_API cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec,
						 cudaStream_t stream)
{
	return cudart_unsupported("cudaGraphLaunch");
}

CUDART_API cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	return cudart_unsupported("cudaGraphExecDestroy");
}

CUDART_API cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph)
{
	return cudart_unsupported("cudaGraphDestroy");
}

CUDART_API cudaError_t CUDARTAPI cudaGraphAddKernelNode(
	cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
	const cudaGraphNode_t *pDependencies, size_t numDependencies,
	const struct cudaKernelNodeParams *pNodeParams)
{
	return cudart_unsupported("cudaGraphAddKernelNode");
}

CUDART_API cudaError_t CUDARTAPI cudaGraphUpload(cudaGraphExec_t graphExec,
						 cudaStream_t stream)
{
	return cudart_unsupported("cudaGraphUpload");
}

CUDART_API cudaError_t CUDARTAPI cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle,
						     void *devPtr)
{
	return cudart_unsupported("cudaIpcGetMemHandle");
}

CUDART_API cudaError_t CUDARTAPI cudaIpcOpenMemHandle(void **devPtr,
						      cudaIpcMemHandle_t handle,
						      unsigned int flags)
{
	return cudart_unsupported("cudaIpcOpenMemHandle");
}

CUDART_API cudaError_t CUDARTAPI cudaIpcCloseMemHandle(void *devPtr)
{
	return cudart_unsupported("cudaIpcCloseMemHandle");
}

CUDART_API cudaError_t CUDARTAPI
cudaIpcGetEventHandle(cudaIpcEventHandle_t *handle, cudaEvent_t event)
{
	return cudart_unsupported("cudaIpcGetEventHandle");
}

CUDART_API cudaError_t CUDARTAPI
cudaIpcOpenEventHandle(cudaEvent_t *event, cudaIpcEventHandle_t handle)
{
	return cudart_unsupported("cudaIpcOpenEventHandle");
}

CUDART_API cudaError_t CUDARTAPI cudaHostGetDevicePointer(void **pDevice,
							  void *pHost,
							  unsigned int flags)
{
	return cudart_unsupported("cudaHostGetDevicePointer");
}

CUDART_API cudaError_t CUDARTAPI cudaMallocPitch(void **devPtr, size_t *pitch,
						 size_t width, size_t height)
{
	return cudart_unsupported("cudaMallocPitch");
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy2D(void *dst, size_t dpitch,
					      const void *src, size_t spitch,
					      size_t width, size_t height,
					      enum cudaMemcpyKind kind)
{
	return cudart_unsupported("cudaMemcpy2D");
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy2DAsync(
	void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
	size_t height, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return cudart_unsupported("cudaMemcpy2DAsync");
}

CUDART_API cudaError_t CUDARTAPI cudaMemset2D(void *devPtr, size_t pitch,
					      int value, size_t width,
					      size_t height)
{
	return cudart_unsupported("cudaMemset2D");
}

CUDART_API cudaError_t CUDARTAPI
cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
		size_t width, size_t height, unsigned int flags)
{
	return cudart_unsupported("cudaMallocArray");
}

CUDART_API cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array)
{
	return cudart_unsupported("cudaFreeArray");
}

CUDART_API cudaError_t CUDARTAPI
cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
	return cudart_unsupported("cudaMalloc3D");
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpy3D(const struct cudaMemcpy3DParms *p)
{
	return cudart_unsupported("cudaMemcpy3D");
}

CUDART_API cudaError_t CUDARTAPI cudaDeviceSetLimit(enum cudaLimit limit,
						    size_t value)
{
	return cudart_unsupported("cudaDeviceSetLimit");
}

CUDART_API cudaError_t CUDARTAPI cudaDeviceGetLimit(size_t *pValue,
						    enum cudaLimit limit)
{
	return cudart_unsupported("cudaDeviceGetLimit");
}

CUDART_API cudaError_t CUDARTAPI
cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
			    void **args, size_t sharedMem, cudaStream_t stream)
{
	return cudart_unsupported("cudaLaunchCooperativeKernel");
}

CUDART_API cudaError_t CUDARTAPI cudaLaunchKernelExC(
	const cudaLaunchConfig_t *config, const void *func, void **args)
{
	return cudart_unsupported("cudaLaunchKernelExC");
}

CUDART_API cudaError_t CUDARTAPI cudaDeviceEnablePeerAccess(int peerDevice,
							    unsigned int flags)
{
	return cudart_unsupported("cudaDeviceEnablePeerAccess");
}

CUDART_API cudaError_t CUDARTAPI cudaMemcpyPeer(void *dst, int dstDevice,
						const void *src, int srcDevice,
						size_t count)
{
	return cudart_unsupported("cudaMemcpyPeer");
}

CUDART_API cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void **ptr,
							 size_t size,
							 cudaMemPool_t memPool,
							 cudaStream_t stream)
{
	return cudart_unsupported("cudaMallocFromPoolAsync");
}

CUDART_API cudaError_t CUDARTAPI
cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	return cudart_unsupported("cudaDeviceGetDefaultMemPool");
}

CUDART_API cudaError_t CUDARTAPI cudaMemPoolCreate(
	cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
	return cudart_unsupported("cudaMemPoolCreate");
}
