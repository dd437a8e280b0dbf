/* SPDX-License-Identifier: MIT */
/*
 * streams_events: two streams whose work depends on each other through
 * an event. Stream 1 runs chainStep k = 1..50 on v and records e1; stream
 * 2 waits for e1 (cuStreamWaitEvent) and continues k = 51..100 on the
 * same v. chainStep does not commute, so the result is right only when
 * the order held. Also checks cuStreamQuery, cuEventQuery and that the
 * elapsed time between events is >= 0. Loads with cuModuleLoadData.
 */
#include "prog.h"

#define N     4096
#define STEPS 100

static void chain_cpu(unsigned long long *v, int n, unsigned long long k)
{
	for (int i = 0; i < n; i++)
		v[i] = v[i] * 31 + k + (unsigned long long)i;
}

/* cuStreamQuery/cuEventQuery while work may be pending. */
static void check_query(CUresult r, const char *what)
{
	if (r != CUDA_SUCCESS && r != CUDA_ERROR_NOT_READY) {
		fprintf(stderr, "%s: %s\n", what, prog_err_name(r));
		exit(1);
	}
}

int main(void)
{
	static unsigned long long host[N], ref[N];
	CUevent start, e1, end;
	CUstream s1, s2;
	CUdeviceptr v;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;
	void *image;
	int n = N;
	float ms;

	for (int i = 0; i < N; i++)
		host[i] = ref[i] = i;
	for (unsigned long long k = 1; k <= STEPS; k++)
		chain_cpu(ref, N, k);

	prog_init(&dev);
	image = prog_read_cubin("chain");
	CHECK(cuModuleLoadData(&mod, image));
	free(image);
	CHECK(cuModuleGetFunction(&fn, mod, "chainStep"));
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&e1, CU_EVENT_DEFAULT));
	CHECK(cuEventCreate(&end, CU_EVENT_DEFAULT));
	CHECK(cuMemAlloc(&v, sizeof(host)));
	CHECK(cuMemcpyHtoD(v, host, sizeof(host)));

	CHECK(cuEventRecord(start, s1));
	for (unsigned long long k = 1; k <= STEPS / 2; k++) {
		void *params[] = {&v, &n, &k};

		CHECK(cuLaunchKernel(fn, N / 128, 1, 1, 128, 1, 1, 0, s1,
				     params, NULL));
	}
	CHECK(cuEventRecord(e1, s1));
	CHECK(cuStreamWaitEvent(s2, e1, 0));
	for (unsigned long long k = STEPS / 2 + 1; k <= STEPS; k++) {
		void *params[] = {&v, &n, &k};

		CHECK(cuLaunchKernel(fn, N / 128, 1, 1, 128, 1, 1, 0, s2,
				     params, NULL));
	}
	CHECK(cuEventRecord(end, s2));
	check_query(cuStreamQuery(s2), "cuStreamQuery(s2) while busy");
	check_query(cuEventQuery(end), "cuEventQuery(end) while busy");

	CHECK(cuStreamSynchronize(s2));
	CHECK(cuStreamQuery(s1)); /* e1 completed before s2 could finish */
	CHECK(cuStreamQuery(s2));
	CHECK(cuEventQuery(e1));
	CHECK(cuEventQuery(end));
	CHECK(cuEventElapsedTime(&ms, start, end));
	if (!(ms >= 0)) {
		printf("streams_events: FAILED (elapsed time %f ms < 0)\n", ms);
		return 1;
	}
	CHECK(cuMemcpyDtoH(host, v, sizeof(host)));
	for (int i = 0; i < N; i++) {
		if (host[i] != ref[i]) {
			printf("streams_events: FAILED (v[%d] = %llu, expected "
			       "%llu: the streams ran out of order)\n",
			       i, host[i], ref[i]);
			return 1;
		}
	}

	CHECK(cuMemFree(v));
	CHECK(cuEventDestroy(start));
	CHECK(cuEventDestroy(e1));
	CHECK(cuEventDestroy(end));
	CHECK(cuStreamDestroy(s1));
	CHECK(cuStreamDestroy(s2));
	CHECK(cuModuleUnload(mod));
	prog_fini(dev);
	printf("streams_events: %d steps over 2 streams OK (%.3f ms)\n", STEPS,
	       ms);
	return 0;
}
