// SPDX-License-Identifier: MIT
/*
 * streams_overlap_rt [N [STREAMS]]: the classic copy/compute overlap. N
 * ints (default 4M) in pinned host buffers (cudaMallocHost) are cut into
 * one chunk per stream (default 4); each stream copies its chunk in with
 * cudaMemcpyAsync, runs a kernel on it and copies it back, all queued
 * before anything is waited for. Events time the whole pipeline; every
 * element is checked against the CPU.
 */
#include "rt_check.h"

/* d[i] = d[i] * 3 + (first + i) % 7: integer, so exact everywhere. */
__global__ void transformChunk(int *d, int n, int first)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = d[i] * 3 + (first + i) % 7;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4 << 20;
	int ns = argc > 2 ? atoi(argv[2]) : 4;
	int *in, *out, *dev, bad = 0;
	cudaStream_t s[16];
	cudaEvent_t start, stop;
	float ms = 0;

	if (n <= 0 || ns < 2 || ns > 16) {
		fprintf(stderr,
			"usage: streams_overlap_rt [N > 0 [STREAMS 2..16]]\n");
		return 2;
	}
	size_t bytes = (size_t)n * sizeof(int);
	CHECK(cudaMallocHost(&in, bytes));
	CHECK(cudaMallocHost(&out, bytes));
	CHECK(cudaMalloc(&dev, bytes));
	for (int i = 0; i < n; i++) {
		in[i] = i - n / 2;
		out[i] = -1;
	}
	for (int k = 0; k < ns; k++)
		CHECK(cudaStreamCreateWithFlags(&s[k], cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&start));
	CHECK(cudaEventCreate(&stop));

	int chunk = (n + ns - 1) / ns;
	CHECK(cudaEventRecord(start, s[0]));
	for (int k = 0; k < ns; k++) /* the other streams start after it */
		if (k > 0)
			CHECK(cudaStreamWaitEvent(s[k], start, 0));
	for (int k = 0; k < ns; k++) {
		int first = k * chunk;
		int len = first + chunk <= n ? chunk : n - first;

		if (len <= 0)
			continue;
		CHECK(cudaMemcpyAsync(dev + first, in + first,
				      (size_t)len * sizeof(int),
				      cudaMemcpyHostToDevice, s[k]));
		transformChunk<<<(len + 255) / 256, 256, 0, s[k]>>>(dev + first,
								    len, first);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(out + first, dev + first,
				      (size_t)len * sizeof(int),
				      cudaMemcpyDeviceToHost, s[k]));
	}
	/* stop is recorded after every stream's work */
	for (int k = 1; k < ns; k++) {
		cudaEvent_t done;

		CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
		CHECK(cudaEventRecord(done, s[k]));
		CHECK(cudaStreamWaitEvent(s[0], done, 0));
		CHECK(cudaEventDestroy(done));
	}
	CHECK(cudaEventRecord(stop, s[0]));
	CHECK(cudaEventSynchronize(stop));
	CHECK(cudaEventElapsedTime(&ms, start, stop));
	for (int k = 0; k < ns; k++)
		CHECK(cudaStreamSynchronize(s[k]));

	for (int i = 0; i < n; i++) {
		int want = in[i] * 3 + i % 7;

		if (out[i] != want && bad++ < 5)
			fprintf(stderr, "out[%d] = %d, expected %d\n", i,
				out[i], want);
	}
	for (int k = 0; k < ns; k++)
		CHECK(cudaStreamDestroy(s[k]));
	CHECK(cudaEventDestroy(start));
	CHECK(cudaEventDestroy(stop));
	CHECK(cudaFree(dev));
	CHECK(cudaFreeHost(in));
	CHECK(cudaFreeHost(out));
	if (bad) {
		printf("streams_overlap_rt: n=%d streams=%d FAILED (%d "
		       "wrong)\n",
		       n, ns, bad);
		return 1;
	}
	if (!(ms >= 0)) {
		printf("streams_overlap_rt: FAILED (elapsed time %g ms)\n", ms);
		return 1;
	}
	printf("streams_overlap_rt: n=%d streams=%d OK (%.3f ms)\n", n, ns, ms);
	return 0;
}
