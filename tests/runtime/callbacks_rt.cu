// SPDX-License-Identifier: MIT
/*
 * callbacks_rt [N]: host functions in a stream. A kernel fills a buffer
 * and it is copied back; a cudaLaunchHostFunc callback must see those
 * results, and writes the next input, which the stream then copies in
 * (so the work after a callback waits for it). A second kernel and copy
 * follow; a cudaStreamAddCallback callback must see their results and a
 * cudaSuccess status. Both callbacks run once, in order.
 * Then a host function that waits (at most 10 s) for the main thread to
 * let it go, which the main thread does only after cudaLaunchHostFunc has
 * returned: it must not run on the caller's thread inside the call.
 */
#include <time.h>

#include "rt_check.h"

__global__ void fillPattern(int *d, int n, int base)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = base + 2 * i;
}

__global__ void addScalar(int *d, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] += v;
}

struct cb_state {
	int n;
	int *h1, *h2, *h3; /* pinned */
	int order;	   /* incremented by each callback */
	int first_at, second_at;
	int first_bad, second_bad;
	cudaError_t status;
	int released; /* set by the main thread after the launch returned */
	int released_seen;
};

/* Waits for the main thread, which lets go only after the launch call
 * returned: a synchronous cudaLaunchHostFunc would time out here. */
static void CUDART_CB wait_for_release(void *arg)
{
	struct cb_state *st = (struct cb_state *)arg;
	time_t end = time(NULL) + 10;

	while (!__atomic_load_n(&st->released, __ATOMIC_ACQUIRE) &&
	       time(NULL) < end)
		;
	st->released_seen = __atomic_load_n(&st->released, __ATOMIC_ACQUIRE);
}

/* After fillPattern and the copy back: checks them, writes the input of
 * the next step. */
static void CUDART_CB first_callback(void *arg)
{
	struct cb_state *st = (struct cb_state *)arg;

	st->first_at = ++st->order;
	for (int i = 0; i < st->n; i++) {
		if (st->h1[i] != 5 + 2 * i)
			st->first_bad++;
		st->h2[i] = st->h1[i] + 1;
	}
}

static void CUDART_CB second_callback(cudaStream_t s, cudaError_t status,
				      void *arg)
{
	struct cb_state *st = (struct cb_state *)arg;

	st->second_at = ++st->order;
	st->status = status;
	for (int i = 0; i < st->n; i++)
		if (st->h3[i] != 5 + 2 * i + 1 + 10)
			st->second_bad++;
}

int main(int argc, char **argv)
{
	struct cb_state st = {};
	int n = argc > 1 ? atoi(argv[1]) : 1 << 18;
	int *d1, *d2;
	cudaStream_t s;

	if (n <= 0 || n > (1 << 28)) {
		fprintf(stderr, "usage: callbacks_rt [N in 1..2^28]\n");
		return 2;
	}
	size_t bytes = (size_t)n * sizeof(int);
	st.n = n;
	st.status = cudaErrorUnknown;
	CHECK(cudaMallocHost(&st.h1, bytes));
	CHECK(cudaMallocHost(&st.h2, bytes));
	CHECK(cudaMallocHost(&st.h3, bytes));
	for (int i = 0; i < n; i++)
		st.h1[i] = st.h2[i] = st.h3[i] = -7;
	CHECK(cudaMalloc(&d1, bytes));
	CHECK(cudaMalloc(&d2, bytes));
	CHECK(cudaStreamCreate(&s));

	int blocks = (n + 255) / 256;
	fillPattern<<<blocks, 256, 0, s>>>(d1, n, 5);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(st.h1, d1, bytes, cudaMemcpyDeviceToHost, s));
	CHECK(cudaLaunchHostFunc(s, first_callback, &st));
	CHECK(cudaMemcpyAsync(d2, st.h2, bytes, cudaMemcpyHostToDevice, s));
	addScalar<<<blocks, 256, 0, s>>>(d2, n, 10);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(st.h3, d2, bytes, cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamAddCallback(s, second_callback, &st, 0));
	CHECK(cudaStreamSynchronize(s));
	CHECK(cudaLaunchHostFunc(s, wait_for_release, &st));
	__atomic_store_n(&st.released, 1, __ATOMIC_RELEASE);
	CHECK(cudaStreamSynchronize(s));

	int bad = 0;
	if (st.first_at != 1 || st.second_at != 2) {
		printf("callbacks_rt: FAILED (callbacks ran as #%d and #%d, "
		       "expected 1 and 2)\n",
		       st.first_at, st.second_at);
		bad = 1;
	} else if (st.first_bad || st.second_bad) {
		printf("callbacks_rt: FAILED (the first callback saw %d wrong "
		       "values, the second %d)\n",
		       st.first_bad, st.second_bad);
		bad = 1;
	} else if (!st.released_seen) {
		printf("callbacks_rt: FAILED (a host function ran inside "
		       "cudaLaunchHostFunc, on the caller's thread)\n");
		bad = 1;
	} else if (st.status != cudaSuccess) {
		printf("callbacks_rt: FAILED (stream callback status %s)\n",
		       cudaGetErrorName(st.status));
		bad = 1;
	}
	CHECK(cudaStreamDestroy(s));
	CHECK(cudaFree(d1));
	CHECK(cudaFree(d2));
	CHECK(cudaFreeHost(st.h1));
	CHECK(cudaFreeHost(st.h2));
	CHECK(cudaFreeHost(st.h3));
	if (bad)
		return 1;
	printf("callbacks_rt: n=%d OK (both callbacks ran in order and saw "
	       "the preceding work, and ran asynchronously)\n",
	       n);
	return 0;
}
