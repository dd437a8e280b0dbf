/* SPDX-License-Identifier: MIT */
/*
 * What every test program needs and a CUDA driver-API user would write
 * anyway: a CHECK macro that names the failing call and its error, a way
 * to find the test kernels (VGPU_KERNEL_DIR, default build/kernels), and a
 * context on device 0. Header-only so each program stays one file.
 */
#ifndef VGPU_TEST_PROG_H
#define VGPU_TEST_PROG_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Prints "file:line: call: CUDA_ERROR_X (n)" and exits 1 on any error. */
#define CHECK(call)                                                            \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != CUDA_SUCCESS) {                                      \
			fprintf(stderr, "%s:%d: %s: %s (%d)\n", __FILE__,      \
				__LINE__, #call, prog_err_name(r_), (int)r_);  \
			exit(1);                                               \
		}                                                              \
	} while (0)

static inline const char *prog_err_name(CUresult r)
{
	const char *name = NULL;

	if (cuGetErrorName(r, &name) != CUDA_SUCCESS || !name)
		return "unknown CUresult";
	return name;
}

/* Path of a test kernel's cubin, e.g. "build/kernels/vector_add.cubin". */
static inline const char *prog_cubin_path(const char *name)
{
	static char path[4096];
	const char *dir = getenv("VGPU_KERNEL_DIR");

	if (!dir || !*dir)
		dir = "build/kernels";
	snprintf(path, sizeof(path), "%s/%s.cubin", dir, name);
	return path;
}

/*
 * Reads a whole cubin into memory for cuModuleLoadData/cuLibraryLoadData.
 * The caller frees it.
 */
static inline void *prog_read_cubin(const char *name)
{
	const char *path = prog_cubin_path(name);
	FILE *f = fopen(path, "rb");
	char *buf;
	long len;

	if (!f) {
		perror(path);
		exit(1);
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) <= 0 ||
	    fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "%s: cannot size the file\n", path);
		exit(1);
	}
	buf = malloc(len);
	if (!buf || fread(buf, 1, len, f) != (size_t)len) {
		fprintf(stderr, "%s: cannot read the file\n", path);
		exit(1);
	}
	fclose(f);
	return buf;
}

/* cuInit, device 0, its primary context made current. */
static inline CUcontext prog_init(CUdevice *dev_out)
{
	CUdevice dev;
	CUcontext ctx;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	if (dev_out)
		*dev_out = dev;
	return ctx;
}

static inline void prog_fini(CUdevice dev)
{
	CHECK(cuCtxSetCurrent(NULL));
	CHECK(cuDevicePrimaryCtxRelease(dev));
}

static inline double prog_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Deterministic pseudo-random numbers, so a failure can be replayed. */
static inline unsigned int prog_rand(unsigned long long *state)
{
	*state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (unsigned int)(*state >> 33);
}

static inline float prog_rand_float(unsigned long long *state)
{
	return (float)prog_rand(state) / 1073741824.0f - 1.0f; /* [-1, 1) */
}

#endif /* VGPU_TEST_PROG_H */
