/* SPDX-License-Identifier: MIT */
/*
 * quota [chunk-MiB] [hold-seconds]: allocates chunks (default 8 MiB) until
 * cuMemAlloc says CUDA_ERROR_OUT_OF_MEMORY, which must come within the
 * vGPU's quota (cuMemGetInfo's total) and not long before it. Optionally
 * holds the memory for a while (so a test can show another vGPU is not
 * affected), then frees one chunk and allocates it again, then frees all.
 */
#include <unistd.h>

#include "prog.h"

#define MAX_CHUNKS 65536

int main(int argc, char **argv)
{
	size_t chunk = (argc > 1 ? strtoull(argv[1], NULL, 0) : 8) << 20;
	int hold = argc > 2 ? atoi(argv[2]) : 0;
	static CUdeviceptr p[MAX_CHUNKS];
	size_t mfree, total, got = 0;
	CUresult r = CUDA_SUCCESS;
	CUdevice dev;
	int n = 0;

	if (!chunk) {
		fprintf(stderr,
			"usage: quota [chunk-MiB > 0] [hold-seconds]\n");
		return 2;
	}
	prog_init(&dev);
	CHECK(cuMemGetInfo(&mfree, &total));
	while (n < MAX_CHUNKS) {
		r = cuMemAlloc(&p[n], chunk);
		if (r != CUDA_SUCCESS)
			break;
		n++;
		got += chunk;
	}
	if (r != CUDA_ERROR_OUT_OF_MEMORY) {
		printf("quota: FAILED (after %zu bytes cuMemAlloc returned %s, "
		       "expected CUDA_ERROR_OUT_OF_MEMORY)\n",
		       got, prog_err_name(r));
		return 1;
	}
	/* Granules are 2 MiB: up to one chunk plus one granule may be left. */
	if (got > total || got + chunk + (2u << 20) < mfree) {
		printf("quota: FAILED (out of memory after %zu bytes; quota "
		       "%zu, %zu were free)\n",
		       got, total, mfree);
		return 1;
	}
	printf("quota: out of memory after %zu of %zu bytes, as expected\n",
	       got, total);
	fflush(stdout);
	if (hold > 0)
		sleep(hold);

	if (n == 0) {
		printf("quota: FAILED (not even one chunk fits)\n");
		return 1;
	}
	CHECK(cuMemFree(p[n - 1]));
	CHECK(cuMemAlloc(&p[n - 1], chunk)); /* room again after a free */
	CHECK(cuMemsetD8(p[n - 1], 0x5a, chunk));
	for (int i = 0; i < n; i++)
		CHECK(cuMemFree(p[i]));
	CHECK(cuMemGetInfo(&mfree, &total));
	prog_fini(dev);
	printf("quota: %d chunks of %zu MiB then OUT_OF_MEMORY, reuse after "
	       "free OK\n",
	       n, chunk >> 20);
	return 0;
}
