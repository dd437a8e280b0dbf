/* SPDX-License-Identifier: MIT */
/*
 * long_copy [seconds] [MiB]: copies a buffer (default 32 MiB) to the
 * device over and over for the given time (default 5 s), then reads it
 * back and checks it. Prints "long_copy: copying" once the first copy is
 * done, so a test knows when it is safe to kill it mid-copy.
 */
#include "prog.h"

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 5;
	size_t bytes = (argc > 2 ? strtoull(argv[2], NULL, 0) : 32) << 20;
	unsigned char *src, *dst;
	double t0 = prog_now();
	long copies = 0;
	CUdeviceptr d;
	CUdevice dev;

	src = malloc(bytes);
	dst = malloc(bytes);
	if (!bytes || !src || !dst) {
		fprintf(stderr, "usage: long_copy [seconds] [MiB > 0]\n");
		return 2;
	}
	prog_init(&dev);
	CHECK(cuMemAlloc(&d, bytes));
	do {
		for (size_t i = 0; i < bytes; i += 4096)
			src[i] = (unsigned char)(copies + i / 4096);
		CHECK(cuMemcpyHtoD(d, src, bytes));
		if (copies++ == 0) {
			printf("long_copy: copying\n");
			fflush(stdout);
		}
	} while (prog_now() - t0 < seconds);
	CHECK(cuMemcpyDtoH(dst, d, bytes));
	if (memcmp(src, dst, bytes)) {
		printf("long_copy: FAILED (device copy differs after %ld "
		       "copies)\n",
		       copies);
		return 1;
	}
	CHECK(cuMemFree(d));
	prog_fini(dev);
	printf("long_copy: %ld copies of %zu MiB in %.1f s OK\n", copies,
	       bytes >> 20, prog_now() - t0);
	return 0;
}
