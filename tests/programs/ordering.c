/* SPDX-License-Identifier: MIT */
/*
 * ordering [launches]: a chain of dependent chainStep launches (default
 * 1000) on one stream, v[i] = v[i] * 31 + k + i for k = 0, 1, ...; the
 * result is right only if every launch ran once, in order. Loads with
 * cuLibraryLoadData and launches through cuKernelGetFunction.
 */
#include "prog.h"

#define N 1024

int main(int argc, char **argv)
{
	int launches = argc > 1 ? atoi(argv[1]) : 1000;
	static unsigned long long host[N], ref[N];
	CUdeviceptr v;
	CUlibrary lib;
	CUkernel kern;
	CUfunction fn;
	CUstream s;
	CUdevice dev;
	void *image;
	int n = N;

	for (int i = 0; i < N; i++)
		host[i] = ref[i] = 1000 + i;
	for (unsigned long long k = 0; k < (unsigned long long)launches; k++)
		for (int i = 0; i < N; i++)
			ref[i] = ref[i] * 31 + k + i;

	prog_init(&dev);
	image = prog_read_cubin("chain");
	CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	free(image);
	CHECK(cuLibraryGetKernel(&kern, lib, "chainStep"));
	CHECK(cuKernelGetFunction(&fn, kern));
	CHECK(cuStreamCreate(&s, CU_STREAM_DEFAULT));
	CHECK(cuMemAlloc(&v, sizeof(host)));
	CHECK(cuMemcpyHtoD(v, host, sizeof(host)));
	for (unsigned long long k = 0; k < (unsigned long long)launches; k++) {
		void *params[] = {&v, &n, &k};

		CHECK(cuLaunchKernel(fn, N / 256, 1, 1, 256, 1, 1, 0, s, params,
				     NULL));
	}
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemcpyDtoH(host, v, sizeof(host)));
	for (int i = 0; i < N; i++) {
		if (host[i] != ref[i]) {
			printf("ordering: FAILED (v[%d] = %llu, expected "
			       "%llu)\n",
			       i, host[i], ref[i]);
			return 1;
		}
	}
	CHECK(cuMemFree(v));
	CHECK(cuStreamDestroy(s));
	CHECK(cuLibraryUnload(lib));
	prog_fini(dev);
	printf("ordering: %d dependent launches OK\n", launches);
	return 0;
}
