/* SPDX-License-Identifier: MIT */
/*
 * copy_sizes: host-to-device, device-to-device and device-to-host copies
 * of 1 B, 4 KiB, 1 MiB + 1 and 37 MiB (larger than the ring's data area,
 * so the library must chunk it), at the start of an allocation and at an
 * odd offset inside it, and cuMemsetD8/D16/D32; every byte is checked.
 */
#include "prog.h"

static int fail(size_t size, const char *what, size_t at, unsigned got,
		unsigned want)
{
	printf("copy_sizes: FAILED (%zu bytes, %s: byte %zu is 0x%x, expected "
	       "0x%x)\n",
	       size, what, at, got, want);
	return 1;
}

/* Copies size bytes through two allocations and back. */
static int check_copies(size_t size, unsigned char *src, unsigned char *dst)
{
	size_t off = size > 8 ? 3 : 0; /* odd offset inside the allocation */
	CUdeviceptr d1, d2;

	for (size_t i = 0; i < size; i++)
		src[i] = (unsigned char)(i * 7 + size);
	CHECK(cuMemAlloc(&d1, size));
	CHECK(cuMemAlloc(&d2, size));
	CHECK(cuMemcpyHtoD(d1, src, size));
	CHECK(cuMemcpyDtoD(d2, d1, size));
	memset(dst, 0, size);
	CHECK(cuMemcpyDtoH(dst, d2, size));
	for (size_t i = 0; i < size; i++)
		if (dst[i] != src[i])
			return fail(size, "HtoD+DtoD+DtoH", i, dst[i], src[i]);

	/* the same at an offset: d2[off..] = src[0..size-off) */
	CHECK(cuMemcpyHtoD(d1 + off, src, size - off));
	CHECK(cuMemcpyDtoD(d2 + off, d1 + off, size - off));
	memset(dst, 0, size);
	CHECK(cuMemcpyDtoH(dst, d2 + off, size - off));
	for (size_t i = 0; i < size - off; i++)
		if (dst[i] != src[i])
			return fail(size, "copies at an offset", i, dst[i],
				    src[i]);

	CHECK(cuMemFree(d1));
	CHECK(cuMemFree(d2));
	return 0;
}

/* cuMemsetD8/D16/D32 over the whole allocation, read back. */
static int check_memsets(size_t size, unsigned char *dst)
{
	CUdeviceptr d;

	CHECK(cuMemAlloc(&d, size));
	CHECK(cuMemsetD8(d, 0xa5, size));
	CHECK(cuMemcpyDtoH(dst, d, size));
	for (size_t i = 0; i < size; i++)
		if (dst[i] != 0xa5)
			return fail(size, "cuMemsetD8", i, dst[i], 0xa5);
	if (size >= 2) {
		size_t n = size / 2;
		unsigned short *p = (unsigned short *)dst;

		CHECK(cuMemsetD16(d, 0x1234, n));
		CHECK(cuMemcpyDtoH(dst, d, size));
		for (size_t i = 0; i < n; i++)
			if (p[i] != 0x1234)
				return fail(size, "cuMemsetD16", 2 * i, p[i],
					    0x1234);
		if (size & 1 && dst[size - 1] != 0xa5)
			return fail(size, "cuMemsetD16 overran", size - 1,
				    dst[size - 1], 0xa5);
	}
	if (size >= 4) {
		size_t n = size / 4;
		unsigned int *p = (unsigned int *)dst;

		CHECK(cuMemsetD32(d, 0xdeadbeefu, n));
		CHECK(cuMemcpyDtoH(dst, d, size));
		for (size_t i = 0; i < n; i++)
			if (p[i] != 0xdeadbeefu)
				return fail(size, "cuMemsetD32", 4 * i, p[i],
					    0xdeadbeefu);
	}
	CHECK(cuMemFree(d));
	return 0;
}

int main(void)
{
	static const size_t sizes[] = {1, 4096, (1 << 20) + 1, 37u << 20};
	unsigned char *src = malloc(37u << 20), *dst = malloc(37u << 20);
	CUdevice dev;

	if (!src || !dst) {
		fprintf(stderr, "copy_sizes: out of host memory\n");
		return 1;
	}
	prog_init(&dev);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (check_copies(sizes[i], src, dst) ||
		    check_memsets(sizes[i], dst))
			return 1;
	}
	prog_fini(dev);
	free(src);
	free(dst);
	printf("copy_sizes: 1 B, 4 KiB, 1 MiB + 1, 37 MiB OK\n");
	return 0;
}
