// SPDX-License-Identifier: MIT
/*
 * events_rt [STEPS]: events between streams. A producer stream runs STEPS
 * (default 200) dependent increment kernels over a buffer and records an
 * event; a consumer stream waits for it with cudaStreamWaitEvent and
 * copies the buffer, doubled, elsewhere. The consumer must see the
 * producer's final values (2 * STEPS everywhere). cudaEventElapsedTime
 * between two recorded events must be positive and ordered;
 * cudaEventQuery says done after cudaEventSynchronize.
 */
#include "rt_check.h"

__global__ void incrementAll(int *d, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] += 1;
}

__global__ void doubleInto(const int *in, int *out, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = in[i] * 2;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 200;
	const int n = 1 << 16;
	int *buf, *res, *host, bad = 0;
	cudaStream_t producer, consumer;
	cudaEvent_t t0, t1, produced, t2;
	float ms01 = -1, ms02 = -1;

	if (steps <= 0) {
		fprintf(stderr, "usage: events_rt [STEPS > 0]\n");
		return 2;
	}
	host = (int *)malloc(n * sizeof(int));
	if (!host)
		return 1;
	CHECK(cudaMalloc(&buf, n * sizeof(int)));
	CHECK(cudaMalloc(&res, n * sizeof(int)));
	CHECK(cudaMemset(buf, 0, n * sizeof(int)));
	CHECK(cudaMemset(res, 0, n * sizeof(int)));
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaStreamCreateWithFlags(&producer, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&consumer, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&t0));
	CHECK(cudaEventCreate(&t1));
	CHECK(cudaEventCreate(&t2));
	CHECK(cudaEventCreateWithFlags(&produced, cudaEventDisableTiming));

	CHECK(cudaEventRecord(t0, producer));
	for (int k = 0; k < steps; k++) {
		incrementAll<<<n / 256, 256, 0, producer>>>(buf, n);
		CHECK_LAUNCH();
	}
	CHECK(cudaEventRecord(t1, producer));
	CHECK(cudaEventRecord(produced, producer));
	CHECK(cudaStreamWaitEvent(consumer, produced, 0));
	doubleInto<<<n / 256, 256, 0, consumer>>>(buf, res, n);
	CHECK_LAUNCH();
	CHECK(cudaEventRecord(t2, consumer));
	CHECK(cudaMemcpyAsync(host, res, n * sizeof(int),
			      cudaMemcpyDeviceToHost, consumer));
	CHECK(cudaStreamSynchronize(consumer));

	for (int i = 0; i < n; i++)
		if (host[i] != 2 * steps && bad++ < 5)
			fprintf(stderr, "res[%d] = %d, expected %d\n", i,
				host[i], 2 * steps);

	CHECK(cudaEventSynchronize(t2));
	CHECK(cudaEventQuery(t1)); /* t2 waited for it: cudaSuccess */
	CHECK(cudaEventElapsedTime(&ms01, t0, t1));
	CHECK(cudaEventElapsedTime(&ms02, t0, t2));
	if (!(ms01 >= 0) || !(ms02 >= ms01)) {
		printf("events_rt: FAILED (elapsed t0->t1 %g ms, t0->t2 %g "
		       "ms)\n",
		       ms01, ms02);
		bad++;
	}

	CHECK(cudaEventDestroy(t0));
	CHECK(cudaEventDestroy(t1));
	CHECK(cudaEventDestroy(t2));
	CHECK(cudaEventDestroy(produced));
	CHECK(cudaStreamDestroy(producer));
	CHECK(cudaStreamDestroy(consumer));
	CHECK(cudaFree(buf));
	CHECK(cudaFree(res));
	free(host);
	if (bad) {
		printf("events_rt: steps=%d FAILED (%d wrong)\n", steps, bad);
		return 1;
	}
	printf("events_rt: steps=%d OK (%d kernels took %.3f ms, consumer "
	       "done at %.3f ms)\n",
	       steps, steps, ms01, ms02);
	return 0;
}
