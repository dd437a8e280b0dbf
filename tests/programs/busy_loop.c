/* SPDX-License-Identifier: MIT */
/*
 * busy_loop [seconds] [elements]: keeps the vGPU busy for a while with
 * back-to-back chainStep launches (asynchronous, a synchronisation every
 * 16), for the workload analyzer's tests: vgpu-admin top should show it
 * busy most of the time. Prints "busy_loop: started" first, then the
 * launches it made.
 */
#include "prog.h"

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, t0;
	int n = argc > 2 ? atoi(argv[2]) : 1 << 18;
	unsigned long long k = 0;
	CUdeviceptr v;
	CUlibrary lib;
	CUkernel kern;
	CUstream s;
	CUdevice dev;
	void *image;

	if (n < 256 || n > (1 << 26)) {
		fprintf(stderr, "busy_loop: elements 256..2^26\n");
		return 2;
	}
	prog_init(&dev);
	image = prog_read_cubin("chain");
	CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	free(image);
	CHECK(cuLibraryGetKernel(&kern, lib, "chainStep"));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&v, (size_t)n * sizeof(unsigned long long)));
	CHECK(cuMemsetD8(v, 0, (size_t)n * sizeof(unsigned long long)));
	CHECK(cuCtxSynchronize()); /* s does not wait for the default stream */
	printf("busy_loop: started, %.1f s of launches over %d elements\n",
	       secs, n);
	fflush(stdout);
	t0 = prog_now();
	while (prog_now() - t0 < secs) {
		void *params[] = {&v, &n, &k};

		CHECK(cuLaunchKernel((CUfunction)kern, (n + 255) / 256, 1, 1,
				     256, 1, 1, 0, s, params, NULL));
		if (++k % 16 == 0)
			CHECK(cuStreamSynchronize(s));
	}
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemFree(v));
	CHECK(cuStreamDestroy(s));
	CHECK(cuLibraryUnload(lib));
	prog_fini(dev);
	printf("busy_loop: %llu launches in %.1f s\n", k, prog_now() - t0);
	return 0;
}
