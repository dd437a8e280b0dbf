// SPDX-License-Identifier: MIT
/*
 * device_props_rt [--vgpu] [--sms N] [--memory BYTES]: what
 * cudaGetDeviceProperties and cudaDeviceGetAttribute say about device 0,
 * as deviceQuery prints it. Checks, when asked: the name contains "vGPU",
 * multiProcessorCount is N, totalGlobalMem is BYTES (a vGPU's quota);
 * always: the attribute and the property agree, cudaMemGetInfo's total is
 * totalGlobalMem, and the versions are sane.
 */
#include <string.h>

#include "rt_check.h"

int main(int argc, char **argv)
{
	int want_vgpu = 0, want_sms = -1, count = 0, dev = -1, sms = 0;
	int drv = 0, rt = 0, bad = 0;
	long long want_mem = -1;
	size_t mfree = 0, mtotal = 0;
	cudaDeviceProp prop;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--vgpu") == 0) {
			want_vgpu = 1;
		} else if (strcmp(argv[i], "--sms") == 0 && i + 1 < argc) {
			want_sms = atoi(argv[++i]);
		} else if (strcmp(argv[i], "--memory") == 0 && i + 1 < argc) {
			want_mem = atoll(argv[++i]);
		} else {
			fprintf(stderr, "usage: device_props_rt [--vgpu] "
					"[--sms N] [--memory BYTES]\n");
			return 2;
		}
	}
	CHECK(cudaGetDeviceCount(&count));
	CHECK(cudaSetDevice(0));
	CHECK(cudaGetDevice(&dev));
	CHECK(cudaGetDeviceProperties(&prop, 0));
	CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
	CHECK(cudaMemGetInfo(&mfree, &mtotal));
	CHECK(cudaDriverGetVersion(&drv));
	CHECK(cudaRuntimeGetVersion(&rt));

	printf("%d device(s); device %d: %s\n", count, dev, prop.name);
	printf("  compute capability %d.%d, %d SMs, %zu bytes (%zu MiB)\n",
	       prop.major, prop.minor, prop.multiProcessorCount,
	       prop.totalGlobalMem, prop.totalGlobalMem >> 20);
	printf("  max threads/block %d, warp %d, shared/block %zu\n",
	       prop.maxThreadsPerBlock, prop.warpSize, prop.sharedMemPerBlock);
	printf("  cudaMemGetInfo %zu free of %zu; driver %d, runtime %d\n",
	       mfree, mtotal, drv, rt);

	if (count < 1 || dev != 0) {
		printf("  FAILED: %d devices, current %d\n", count, dev);
		bad++;
	}
	if (want_vgpu && !strstr(prop.name, "vGPU")) {
		printf("  FAILED: the name does not say vGPU\n");
		bad++;
	}
	if (want_sms >= 0 && prop.multiProcessorCount != want_sms) {
		printf("  FAILED: %d SMs, expected %d\n",
		       prop.multiProcessorCount, want_sms);
		bad++;
	}
	if (sms != prop.multiProcessorCount) {
		printf("  FAILED: attribute says %d SMs, properties %d\n", sms,
		       prop.multiProcessorCount);
		bad++;
	}
	if (want_mem >= 0 && prop.totalGlobalMem != (size_t)want_mem) {
		printf("  FAILED: totalGlobalMem %zu, expected %lld\n",
		       prop.totalGlobalMem, want_mem);
		bad++;
	}
	if (mtotal != prop.totalGlobalMem || mfree > mtotal) {
		printf("  FAILED: cudaMemGetInfo %zu/%zu vs totalGlobalMem "
		       "%zu\n",
		       mfree, mtotal, prop.totalGlobalMem);
		bad++;
	}
	if (prop.maxThreadsPerBlock < 1 || prop.warpSize != 32 ||
	    prop.major < 1 || drv < 13000 || rt < 13000) {
		printf("  FAILED: implausible properties or versions\n");
		bad++;
	}
	if (bad) {
		printf("device_props_rt: FAILED (%d checks)\n", bad);
		return 1;
	}
	printf("device_props_rt: \"%s\" sms=%d memory=%zu OK\n", prop.name,
	       prop.multiProcessorCount, prop.totalGlobalMem);
	return 0;
}
