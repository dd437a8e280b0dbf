/* SPDX-License-Identifier: MIT */
/*
 * savepoint_load SECONDS MIB: what periodic save points cost a running
 * program (tests/integration/recovery.sh, scripts/gpu-check.sh
 * --bench-only). It holds MIB MiB of device memory (written once) and
 * launches chainStep on a small buffer for SECONDS, synchronising every
 * 64 launches; every launch makes the vGPU's whole memory dirty for the
 * next save point. Prints the launch rate and the longest gap between two
 * synchronisations (a save point holds the program for its copy).
 */
#include "prog.h"

#define N 1024

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5, t0, t, last, gap = 0;
	size_t mib = argc > 2 ? strtoul(argv[2], NULL, 0) : 64;
	unsigned long long k = 0;
	CUdeviceptr big, c;
	CUlibrary lib;
	CUkernel kc;
	CUdevice dev;
	void *image;
	int n = N;

	if (secs <= 0 || secs > 3600 || !mib || mib > 65536) {
		fprintf(stderr, "usage: savepoint_load SECONDS MIB\n");
		return 2;
	}
	prog_init(&dev);
	image = prog_read_cubin("chain");
	CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	free(image);
	CHECK(cuLibraryGetKernel(&kc, lib, "chainStep"));
	CHECK(cuMemAlloc(&big, mib << 20));
	CHECK(cuMemsetD8(big, 0x33, mib << 20));
	CHECK(cuMemAlloc(&c, N * sizeof(unsigned long long)));
	CHECK(cuMemsetD8(c, 0, N * sizeof(unsigned long long)));
	CHECK(cuCtxSynchronize());
	t0 = last = prog_now();
	do {
		for (int i = 0; i < 64; i++, k++) {
			void *p[] = {&c, &n, &k};

			CHECK(cuLaunchKernel((CUfunction)kc, N / 256, 1, 1, 256,
					     1, 1, 0, NULL, p, NULL));
		}
		CHECK(cuCtxSynchronize());
		t = prog_now();
		if (t - last > gap)
			gap = t - last;
		last = t;
	} while (t - t0 < secs);
	printf("savepoint_load: %llu launches in %.2f s: %.0f launches/s, "
	       "longest gap %.1f ms (%zu MiB held)\n",
	       k, t - t0, k / (t - t0), gap * 1e3, mib);
	CHECK(cuMemFree(big));
	CHECK(cuMemFree(c));
	CHECK(cuLibraryUnload(lib));
	prog_fini(dev);
	return 0;
}
