/* SPDX-License-Identifier: MIT */
/*
 * mempool: the stream-ordered allocator's edges through the driver API
 * (issue 18), the way a program that misuses it meets them: a stream's
 * freed block comes back to the same stream at once and to another one
 * only after a wait on the first, a pool's maximum size holds,
 * the release threshold and high marks read back as set, and bad input
 * is refused with CUDA's own errors, nothing else disturbed: a garbage
 * pool handle, an unknown or read-only attribute, a NULL value, a free
 * of an address never allocated, a second free, destroying the default
 * pool, a shared (exportable) pool, another device. cuMemAlloc memory
 * may be freed stream-ordered. Prints "mempool: OK".
 */
#include "prog.h"

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

static cuuint64_t attr(CUmemoryPool p, CUmemPool_attribute a)
{
	cuuint64_t v = 0;

	CHECK(cuMemPoolGetAttribute(p, a, &v));
	return v;
}

int main(void)
{
	CUdeviceptr a, b, c2, d2, plain;
	CUmemoryPool def, mine, mine2;
	CUmemPoolProps props = {0};
	CUstream s, s2;
	CUdevice dev;
	cuuint64_t v;
	int reuse = -1, yes = 1;

	prog_init(&dev);
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuDeviceGetDefaultMemPool(&def, dev));

	/* a freed block is the stream's again at once */
	CHECK(cuMemAllocAsync(&a, 1 << 20, s));
	CHECK(cuMemFreeAsync(a, s));
	CHECK(cuMemAllocAsync(&b, 1 << 20, s));
	expect(a == b, "a block freed on a stream comes back on that stream");
	/* another stream gets it only once a wait has covered the free */
	CHECK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemFreeAsync(b, s));
	CHECK(cuMemAllocAsync(&c2, 1 << 20, s2));
	expect(c2 != b, "another stream does not get a block freed on a "
			"stream not waited for");
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemAllocAsync(&d2, 1 << 20, s2));
	expect(d2 == b, "... and does once that stream was synchronised");
	CHECK(cuMemFreeAsync(c2, s2));
	CHECK(cuMemFreeAsync(d2, s2));
	CHECK(cuStreamSynchronize(s2));
	CHECK(cuStreamDestroy(s2));
	CHECK(cuMemAllocAsync(&b, 1 << 20, s));
	CHECK(cuMemFreeAsync(b, s));
	expect(cuMemFreeAsync(b, s) == CUDA_ERROR_INVALID_VALUE,
	       "a second free is CUDA_ERROR_INVALID_VALUE");
	CHECK(cuMemAlloc(&plain, 4096));
	CHECK(cuMemFreeAsync(plain, s)); /* cuMemAlloc memory, stream-ordered */
	expect(cuMemFree(plain) == CUDA_ERROR_INVALID_VALUE,
	       "cuMemAlloc memory freed stream-ordered is freed");
	expect(cuMemFreeAsync(0xdead0000ull, s) == CUDA_ERROR_INVALID_VALUE,
	       "freeing a made-up address is refused");
	CHECK(cuStreamSynchronize(s));

	/* attributes */
	v = 64 << 20;
	CHECK(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
				    &v));
	expect(attr(def, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) == (64 << 20),
	       "the release threshold reads back as set");
	CHECK(cuMemPoolGetAttribute(
		def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &reuse));
	expect(reuse == 1, "opportunistic reuse is on by default");
	CHECK(cuMemPoolSetAttribute(
		def, CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC, &yes));
	v = 1;
	expect(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &v) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "a high mark may only be reset to 0");
	expect(cuMemPoolSetAttribute(def, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT,
				     &v) == CUDA_ERROR_INVALID_VALUE,
	       "the reserved figure cannot be set");
	expect(cuMemPoolGetAttribute(def, (CUmemPool_attribute)999, &v) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "an unknown attribute is CUDA_ERROR_INVALID_VALUE");
	expect(cuMemPoolGetAttribute(def, CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
				     NULL) == CUDA_ERROR_INVALID_VALUE,
	       "a NULL value is CUDA_ERROR_INVALID_VALUE");
	expect(cuMemPoolGetAttribute((CUmemoryPool)&v,
				     CU_MEMPOOL_ATTR_USED_MEM_CURRENT,
				     &v) == CUDA_ERROR_INVALID_VALUE,
	       "a made-up pool handle is CUDA_ERROR_INVALID_VALUE");
	expect(cuMemPoolDestroy(def) == CUDA_ERROR_INVALID_VALUE,
	       "the default pool cannot be destroyed");
	CHECK(cuMemPoolTrimTo(def, 0));

	/* pools of our own: a maximum size, and what cannot be had */
	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	props.maxSize = 4 << 20;
	CHECK(cuMemPoolCreate(&mine, &props));
	CHECK(cuMemAllocFromPoolAsync(&a, 3 << 20, mine, s));
	expect(cuMemAllocFromPoolAsync(&b, 3 << 20, mine, s) ==
		       CUDA_ERROR_OUT_OF_MEMORY,
	       "a pool's maximum size holds (3 + 3 MiB of 4)");
	CHECK(cuMemFreeAsync(a, s));
	CHECK(cuDeviceSetMemPool(dev, mine));
	CHECK(cuMemAllocAsync(&a, 1 << 20, s));
	expect(attr(mine, CU_MEMPOOL_ATTR_USED_MEM_CURRENT) >= (1 << 20),
	       "cuMemAllocAsync takes from the current pool");
	CHECK(cuMemFreeAsync(a, s));
	CHECK(cuDeviceSetMemPool(dev, def));
	CHECK(cuStreamSynchronize(s));
	CHECK(cuMemPoolDestroy(mine));
	expect(cuMemAllocFromPoolAsync(&a, 4096, mine, s) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "a destroyed pool is gone");
	props.maxSize = 0;
	props.handleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	expect(cuMemPoolCreate(&mine2, &props) == CUDA_ERROR_NOT_SUPPORTED,
	       "a pool shared with other processes is not supported");
	props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
	props.location.id = 1;
	expect(cuMemPoolCreate(&mine2, &props) == CUDA_ERROR_INVALID_DEVICE,
	       "a pool on another device is CUDA_ERROR_INVALID_DEVICE");

	/* nothing above disturbed the device */
	CHECK(cuMemAllocAsync(&a, 4096, s));
	CHECK(cuMemsetD32Async(a, 7, 1024, s));
	CHECK(cuMemcpyDtoHAsync(&v, a, sizeof(v), s));
	CHECK(cuMemFreeAsync(a, s));
	CHECK(cuStreamSynchronize(s));
	expect(v == 0x0000000700000007ull, "the device still computes");
	CHECK(cuStreamDestroy(s));
	prog_fini(dev);
	printf("mempool: %s\n", failures ? "FAILED" : "OK");
	return failures != 0;
}
