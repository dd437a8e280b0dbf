// SPDX-License-Identifier: MIT
/*
 * unsupported_rt: calls a vGPU does not offer (graphs, managed memory,
 * IPC and pools shared between processes, stream capture, 3D copies and
 * their per-thread-stream forms) fail
 * with cudaErrorNotSupported, never a crash: the driver under NVIDIA's
 * runtime answers CUDA_ERROR_NOT_SUPPORTED and says so once on stderr,
 * naming its call (tests/integration/runtime_programs.sh checks those
 * lines); the error is not sticky, so the device still works afterwards.
 */
#include <string.h>

#include "rt_check.h"

static int failures;

static void expect_unsupported(const char *what, cudaError_t got)
{
	if (got == cudaErrorNotSupported) {
		printf("  ok: %s -> cudaErrorNotSupported\n", what);
	} else {
		printf("  FAILED: %s -> %s, expected cudaErrorNotSupported\n",
		       what, cudaGetErrorName(got));
		failures++;
	}
	/* the last error is set, as for every failed call, and cleared */
	if (cudaGetLastError() != cudaErrorNotSupported) {
		printf("  FAILED: cudaGetLastError after %s\n", what);
		failures++;
	}
}

int main(void)
{
	cudaStream_t s;
	cudaGraph_t g = NULL;
	cudaIpcMemHandle_t ipc;
	struct cudaMemcpy3DParms p3;
	cudaMemPoolPtrExportData exported;
	void *d = NULL, *m = NULL;
	int h = 0;

	CHECK(cudaStreamCreate(&s));
	CHECK(cudaMalloc(&d, 4096));
	expect_unsupported("cudaGraphCreate", cudaGraphCreate(&g, 0));
	expect_unsupported("cudaGraphCreate again (said once)",
			   cudaGraphCreate(&g, 0));
	expect_unsupported("cudaMallocManaged",
			   cudaMallocManaged(&m, 4096, cudaMemAttachGlobal));
	expect_unsupported("cudaIpcGetMemHandle", cudaIpcGetMemHandle(&ipc, d));
	expect_unsupported(
		"cudaStreamBeginCapture",
		cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
	memset(&p3, 0, sizeof(p3));
	expect_unsupported("cudaMemcpy3D", cudaMemcpy3D(&p3));
	/* generated stubs: no hand-written code behind these */
	expect_unsupported("cudaGraphAddEmptyNode",
			   cudaGraphAddEmptyNode(NULL, g, NULL, 0));
	expect_unsupported("cudaMemPoolExportPointer",
			   cudaMemPoolExportPointer(&exported, d));

	/* nothing above is sticky */
	CHECK(cudaMemset(d, 7, 4));
	CHECK(cudaMemcpy(&h, d, 4, cudaMemcpyDeviceToHost));
	if (h != 0x07070707) {
		printf("  FAILED: the device read %#x after the errors\n", h);
		failures++;
	}
	CHECK(cudaFree(d));
	CHECK(cudaStreamDestroy(s));
	if (failures) {
		printf("unsupported_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("unsupported_rt: OK (cudaErrorNotSupported, not sticky)\n");
	return 0;
}
