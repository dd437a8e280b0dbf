/* SPDX-License-Identifier: MIT */
/*
 * Stream capture status outside capture. A vGPU does not capture streams
 * into graphs yet (cuStreamBeginCapture says so, the PyTorch issue brings
 * graphs), so no stream is ever capturing: the queries CUDA's runtime and
 * libraries make before they enqueue work (PyTorch's allocator, cuBLAS)
 * answer "not capturing" for any valid stream, as NVIDIA's driver does
 * for a stream outside capture.
 */
#include "client.h"
#include "client_api.h"

VGPU_API CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream,
					      CUstreamCaptureStatus *status)
{
	struct client *c;
	uint32_t h;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	err = client_stream_handle(c, hStream, &h);
	if (err != CUDA_SUCCESS)
		return err;
	*status = CU_STREAM_CAPTURE_STATUS_NONE;
	return CUDA_SUCCESS;
}

/* Outside capture only the status is defined; the rest is left alone. */
VGPU_API CUresult CUDAAPI cuStreamGetCaptureInfo(
	CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
	cuuint64_t *id_out, CUgraph *graph_out,
	const CUgraphNode **dependencies_out,
	const CUgraphEdgeData **edgeData_out, size_t *numDependencies_out)
{
	return cuStreamIsCapturing(hStream, captureStatus_out);
}
