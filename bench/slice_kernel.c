/* SPDX-License-Identifier: MIT */
/*
 * The same compute-bound measurement as raw_slice, written as an ordinary
 * driver-API program: run it with VGPU=name and LD_LIBRARY_PATH=build/lib
 * and it goes through the whole vgpu stack (guest library, ring, worker,
 * green context). Run it natively and it uses the whole GPU.
 *
 *   slice_kernel CUBIN [BLOCKS ITERS LAUNCHES REPS]
 */
#include "bench_common.h"

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr,
			"usage: %s CUBIN [BLOCKS ITERS LAUNCHES REPS]\n",
			argv[0]);
		return 2;
	}
	int blocks = argc > 2 ? atoi(argv[2]) : 1056;
	int iters = argc > 3 ? atoi(argv[3]) : 20000;
	int launches = argc > 4 ? atoi(argv[4]) : 10;
	int reps = argc > 5 ? atoi(argv[5]) : 7;
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUstream s;
	CUdeviceptr out;
	int sms;
	char name[256], label[320];
	size_t len;
	void *img = bench_read_file(argv[1], &len);

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDeviceGetName(name, sizeof name, dev));
	CHECK(cuDeviceGetAttribute(
		&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&fn, mod, "computeBound"));
	CHECK(cuMemAlloc(&out, (size_t)blocks * 256 * sizeof(float)));
	snprintf(label, sizeof label, "%s (%d SMs)", name, sms);
	bench_compute_bound(fn, s, out, blocks, iters, launches, reps, label);
	CHECK(cuMemFree(out));
	CHECK(cuModuleUnload(mod));
	CHECK(cuStreamDestroy(s));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	return 0;
}
