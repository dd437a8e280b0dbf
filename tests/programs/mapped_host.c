/* SPDX-License-Identifier: MIT */
/*
 * mapped_host: zero-copy host memory as the CUDA programming guide shows
 * it (issue 18): the device says it can map host memory,
 * cuMemHostAlloc(CU_MEMHOSTALLOC_DEVICEMAP) buffers have a device pointer
 * equal to their host address (unified addressing), and vecAdd reads its
 * inputs from and writes its sum to host memory directly, with no copy.
 * Also: cuMemHostGetFlags, the pointer attributes, a cuMemAllocHost
 * buffer mapped as well (unified addressing maps every page-locked
 * buffer), bad arguments refused, and the mapped buffers freed. Prints "mapped_host: OK".
 */
#include "prog.h"

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

int main(void)
{
	enum { N = 1 << 16 };
	const size_t bytes = N * sizeof(float);
	float *a, *b, *c, *plain;
	CUdeviceptr da = 0, db = 0, dc = 0, d;
	CUdevice dev;
	CUmodule mod;
	CUfunction f;
	unsigned int flags = 0, type = 0;
	int can = -1, n = N, i, ok;
	void *args[] = {&da, &db, &dc, &n};

	prog_init(&dev);
	CHECK(cuDeviceGetAttribute(
		&can, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, dev));
	expect(can == 1, "the device can map host memory");
	CHECK(cuMemHostAlloc((void **)&a, bytes, CU_MEMHOSTALLOC_DEVICEMAP));
	CHECK(cuMemHostAlloc((void **)&b, bytes,
			     CU_MEMHOSTALLOC_DEVICEMAP |
				     CU_MEMHOSTALLOC_PORTABLE));
	CHECK(cuMemHostAlloc((void **)&c, bytes, CU_MEMHOSTALLOC_DEVICEMAP));
	CHECK(cuMemHostGetDevicePointer(&da, a, 0));
	CHECK(cuMemHostGetDevicePointer(&db, b, 0));
	CHECK(cuMemHostGetDevicePointer(&dc, c + 100, 0));
	expect(da == (CUdeviceptr)(uintptr_t)a &&
		       db == (CUdeviceptr)(uintptr_t)b &&
		       dc == (CUdeviceptr)(uintptr_t)(c + 100),
	       "a mapped buffer's device pointer is its host address");
	dc = (CUdeviceptr)(uintptr_t)c;
	CHECK(cuMemHostGetFlags(&flags, b));
	expect(flags == (CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
	       "cuMemHostGetFlags gives the flags it was allocated with");
	CHECK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				    da));
	CHECK(cuPointerGetAttribute(&d, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
				    da + 8));
	expect(type == CU_MEMORYTYPE_HOST && d == da + 8,
	       "its pointer attributes: host memory, with a device pointer");

	for (i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = (float)(N - i) * 0.5f;
		c[i] = -1.0f;
	}
	CHECK(cuModuleLoad(&mod, prog_cubin_path("vector_add")));
	CHECK(cuModuleGetFunction(&f, mod, "vecAdd"));
	CHECK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	for (ok = 1, i = 0; i < N; i++)
		ok &= c[i] == a[i] + b[i];
	expect(ok, "vecAdd read and wrote host memory directly (no copy)");
	/* again, after the host changed the inputs in place */
	for (i = 0; i < N; i++)
		a[i] = 1.0f;
	CHECK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, args, NULL));
	CHECK(cuCtxSynchronize());
	for (ok = 1, i = 0; i < N; i++)
		ok &= c[i] == 1.0f + b[i];
	expect(ok, "... and saw the host's new inputs");

	/* unified addressing: every page-locked buffer is mapped, at its
	 * own address; memory that is not page-locked is not */
	CHECK(cuMemAllocHost((void **)&plain, 4096));
	CHECK(cuMemHostGetDevicePointer(&d, plain, 0));
	expect(d == (CUdeviceptr)(uintptr_t)plain,
	       "a cuMemAllocHost buffer is mapped too, at its address");
	expect(cuMemHostGetDevicePointer(&d, &flags, 0) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "memory that is not page-locked has no device pointer");
	expect(cuMemHostGetDevicePointer(&d, a, 1) == CUDA_ERROR_INVALID_VALUE,
	       "flags other than 0 are refused");
	expect(cuMemHostGetDevicePointer(NULL, a, 0) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "a NULL output is refused");
	expect(cuMemHostGetFlags(&flags, &flags) == CUDA_ERROR_INVALID_VALUE,
	       "cuMemHostGetFlags of memory not allocated so is refused");
	CHECK(cuMemFreeHost(plain));
	CHECK(cuModuleUnload(mod));
	CHECK(cuMemFreeHost(a));
	CHECK(cuMemFreeHost(b));
	CHECK(cuMemFreeHost(c));
	expect(cuMemHostGetDevicePointer(&d, a, 0) == CUDA_ERROR_INVALID_VALUE,
	       "a freed buffer has no device pointer");
	prog_fini(dev);
	printf("mapped_host: %s\n", failures ? "FAILED" : "OK");
	return failures != 0;
}
