// SPDX-License-Identifier: MIT
/*
 * legacy_stream_rt: the legacy default stream's implicit synchronization,
 * as programs written without explicit synchronization rely on it. Work
 * on stream 0 waits for earlier work of every blocking stream
 * (cudaStreamCreate), work on a blocking stream waits for earlier work on
 * stream 0, and a non-blocking stream (cudaStreamNonBlocking) waits for
 * neither. Each check puts a slow kernel first, so that an order that is
 * missing shows as a wrong value, not as luck:
 *  - a kernel on a blocking stream, then cudaMemcpy (stream 0) of what it
 *    wrote, with no synchronize between;
 *  - a fill on stream 0, then an increment on a blocking stream;
 *  - an event recorded on stream 0 after a blocking stream's work;
 *  - a host function on a blocking stream writes a buffer that a
 *    cudaMemcpy on stream 0 then copies, with stream-0 work between (the
 *    copy reads the buffer after the function, as stream 0 waits for it);
 *  - cudaStreamCreateWithPriority's stream is blocking too;
 *  - a non-blocking stream finishes while stream 0 still spins.
 */
#include <time.h>

#include "rt_check.h"

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failures++;
}

__device__ static unsigned long long global_ns(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* as kernels/spin.cu's (the simulator's twin sleeps the time) */
extern "C" __global__ void spinFor(unsigned int *count, unsigned long long ns)
{
	unsigned long long t0 = global_ns();

	while (global_ns() - t0 < ns)
		;
	if (blockIdx.x == 0 && threadIdx.x == 0)
		*(volatile unsigned int *)count =
			*(volatile unsigned int *)count + 1;
}

__global__ void fillValue(int *d, int n, int value)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = value;
}

__global__ void addScalar(int *d, int n, int value)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] += value;
}

static const int n = 4096, threads = 256;

/* a host function: after a while, every element of the buffer is 21 */
static void CUDART_CB writeLater(void *p)
{
	struct timespec t = {0, 200000000};

	nanosleep(&t, NULL);
	for (int i = 0; i < 4096; i++)
		((int *)p)[i] = 21;
}
static const unsigned long long slow_ns = 300000000ull; /* 0.3 s */

static int all_equal(const int *h, int v)
{
	for (int i = 0; i < n; i++)
		if (h[i] != v) {
			printf("  element %d is %d, not %d\n", i, h[i], v);
			return 0;
		}
	return 1;
}

int main(void)
{
	cudaStream_t blocking, nonblocking, prio;
	unsigned int *count;
	int *d, *h, lo, hi, p;
	cudaEvent_t e;

	h = (int *)malloc(n * sizeof(int));
	if (!h)
		return 1;
	CHECK(cudaMalloc((void **)&d, n * sizeof(int)));
	CHECK(cudaMalloc((void **)&count, sizeof(*count)));
	CHECK(cudaMemset(d, 0, n * sizeof(int)));
	CHECK(cudaMemset(count, 0, sizeof(*count)));
	CHECK(cudaStreamCreate(&blocking));
	CHECK(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));
	CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
	CHECK(cudaDeviceSynchronize());

	/* a blocking stream's work, then a copy on stream 0 */
	spinFor<<<1, 1, 0, blocking>>>(count, slow_ns);
	fillValue<<<n / threads, threads, 0, blocking>>>(d, n, 7);
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(all_equal(h, 7),
	       "cudaMemcpy waits for a blocking stream's earlier kernels");

	/* stream 0's work, then a blocking stream's */
	spinFor<<<1, 1>>>(count, slow_ns);
	fillValue<<<n / threads, threads>>>(d, n, 9);
	addScalar<<<n / threads, threads, 0, blocking>>>(d, n, 1);
	CHECK(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost,
			      blocking));
	CHECK(cudaStreamSynchronize(blocking));
	expect(all_equal(h, 10),
	       "a blocking stream's kernel waits for stream 0's earlier work");

	/* an event on stream 0 covers the blocking streams' work */
	spinFor<<<1, 1, 0, blocking>>>(count, slow_ns);
	fillValue<<<n / threads, threads, 0, blocking>>>(d, n, 11);
	CHECK(cudaEventRecord(e, 0));
	CHECK(cudaEventSynchronize(e));
	CHECK(cudaMemcpyAsync(h, d, n * sizeof(int), cudaMemcpyDeviceToHost,
			      nonblocking));
	CHECK(cudaStreamSynchronize(nonblocking));
	expect(all_equal(h, 11), "an event recorded on stream 0 after a "
				 "blocking stream's work completes after it");

	/* a host function's write, then stream-0 work, then a copy of it */
	int *src = (int *)calloc(n, sizeof(int));
	if (!src)
		return 1;
	CHECK(cudaLaunchHostFunc(blocking, writeLater, src));
	fillValue<<<n / threads, threads>>>(d, n, 0);
	CHECK(cudaMemcpy(d, src, n * sizeof(int), cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(all_equal(h, 21), "cudaMemcpy on stream 0 copies what a "
				 "blocking stream's host function wrote");
	free(src);

	/* a stream made with a priority is blocking as well */
	CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
	CHECK(cudaStreamCreateWithPriority(&prio, cudaStreamDefault, hi));
	CHECK(cudaStreamGetPriority(prio, &p));
	expect(p >= hi && p <= lo,
	       "cudaStreamCreateWithPriority: a priority in the range");
	spinFor<<<1, 1, 0, prio>>>(count, slow_ns);
	fillValue<<<n / threads, threads, 0, prio>>>(d, n, 13);
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(all_equal(h, 13), "cudaMemcpy waits for a prioritised "
				 "stream's kernels");

	/* a non-blocking stream does not wait for stream 0 */
	spinFor<<<1, 1>>>(count, 4 * slow_ns);
	fillValue<<<n / threads, threads, 0, nonblocking>>>(d, n, 15);
	CHECK(cudaStreamSynchronize(nonblocking));
	expect(cudaStreamQuery(0) == cudaErrorNotReady,
	       "a non-blocking stream's kernel ran while stream 0 was busy");
	CHECK(cudaDeviceSynchronize());
	CHECK(cudaMemcpy(h, d, n * sizeof(int), cudaMemcpyDeviceToHost));
	expect(all_equal(h, 15), "the non-blocking stream's fill");

	CHECK(cudaStreamDestroy(prio));
	CHECK(cudaStreamDestroy(blocking));
	CHECK(cudaStreamDestroy(nonblocking));
	CHECK(cudaEventDestroy(e));
	CHECK(cudaFree(d));
	CHECK(cudaFree(count));
	free(h);
	printf("legacy_stream_rt: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
