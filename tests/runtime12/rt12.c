/* SPDX-License-Identifier: MIT */
/*
 * rt12: a program of NVIDIA's CUDA 12 runtime (libcudart.so.12, as most
 * PyTorch wheels of 2025 carry), on our driver (issue 17: versions). It
 * has no kernels (nvcc 13 cannot build for the CUDA 12 runtime's
 * registration), so it takes the runtime by dlopen and calls what needs
 * no kernel: the device count, versions, allocation, copies both ways, a
 * fill, a synchronize, a free; each result is checked. Prints "rt12: OK".
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define N 4096

#define LOAD(var, name)                                                        \
	do {                                                                   \
		*(void **)&var = dlsym(rt, name);                              \
		if (!var) {                                                    \
			printf("rt12: libcudart.so.12 has no %s\n", name);     \
			return 2;                                              \
		}                                                              \
	} while (0)

#define CALL(what, call)                                                       \
	do {                                                                   \
		int rc_ = (call);                                              \
		if (rc_) {                                                     \
			printf("rt12: %s failed: %s\n", what, name(rc_));      \
			return 1;                                              \
		}                                                              \
	} while (0)

int main(void)
{
	int (*count)(int *), (*rtver)(int *), (*drvver)(int *);
	int (*alloc)(void **, size_t), (*memset_)(void *, int, size_t);
	int (*copy)(void *, const void *, size_t, int), (*release)(void *);
	int (*sync)(void);
	const char *(*name)(int);
	static int h[N], g[N];
	void *rt = dlopen("libcudart.so.12", RTLD_NOW), *d = NULL;
	int n = 0, v = 0, dv = 0, bad = 0;

	if (!rt) {
		printf("rt12: %s\n", dlerror());
		return 2;
	}
	LOAD(count, "cudaGetDeviceCount");
	LOAD(rtver, "cudaRuntimeGetVersion");
	LOAD(drvver, "cudaDriverGetVersion");
	LOAD(alloc, "cudaMalloc");
	LOAD(memset_, "cudaMemset");
	LOAD(copy, "cudaMemcpy");
	LOAD(release, "cudaFree");
	LOAD(sync, "cudaDeviceSynchronize");
	LOAD(name, "cudaGetErrorName");

	CALL("cudaGetDeviceCount", count(&n));
	CALL("cudaRuntimeGetVersion", rtver(&v));
	CALL("cudaDriverGetVersion", drvver(&dv));
	printf("rt12: %d device(s), runtime %d, driver %d\n", n, v, dv);
	if (n != 1 || v / 1000 != 12 || dv < v)
		bad++;
	for (int i = 0; i < N; i++)
		h[i] = i * 7 + 1;
	CALL("cudaMalloc", alloc(&d, sizeof(h)));
	CALL("cudaMemcpy host to device", copy(d, h, sizeof(h), 1));
	CALL("cudaMemcpy device to host", copy(g, d, sizeof(g), 2));
	bad += memcmp(h, g, sizeof(h)) != 0;
	CALL("cudaMemset", memset_(d, 0x5a, sizeof(h)));
	CALL("cudaDeviceSynchronize", sync());
	CALL("cudaMemcpy device to host", copy(g, d, sizeof(g), 2));
	for (int i = 0; i < N; i++)
		bad += g[i] != 0x5a5a5a5a;
	CALL("cudaFree", release(d));
	printf("rt12: %s\n", bad ? "FAILED" : "OK");
	return bad != 0;
}
