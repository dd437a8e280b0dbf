/* SPDX-License-Identifier: MIT */
/*
 * device_query [expected-sms]: prints what the driver says about device
 * 0, as deviceQuery does. Fails unless the name says it is a vGPU and,
 * when given, the SM count is the expected one.
 */
#include "prog.h"

static const struct {
	CUdevice_attribute attr;
	const char *name;
} attrs[] = {
	{CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessors"},
	{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cc major"},
	{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cc minor"},
	{CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads per block"},
	{CU_DEVICE_ATTRIBUTE_WARP_SIZE, "warp size"},
	{CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, "max block dim x"},
	{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, "max grid dim x"},
	{CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, "shared mem/block"},
	{CU_DEVICE_ATTRIBUTE_CLOCK_RATE, "clock rate (kHz)"},
	{CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, "unified addressing"},
};

int main(int argc, char **argv)
{
	int expect_sms = argc > 1 ? atoi(argv[1]) : -1;
	int version, count, sms = 0;
	size_t total, mfree, mtotal;
	char name[256];
	CUdevice dev;

	CHECK(cuInit(0));
	CHECK(cuDriverGetVersion(&version));
	CHECK(cuDeviceGetCount(&count));
	if (count < 1) {
		printf("device_query: FAILED (no device)\n");
		return 1;
	}
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDeviceGetName(name, sizeof(name), dev));
	CHECK(cuDeviceTotalMem(&total, dev));
	printf("driver version %d, %d device(s)\n", version, count);
	printf("device 0: %s\n", name);
	printf("  total memory: %zu bytes (%zu MiB)\n", total, total >> 20);
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		int v;

		CHECK(cuDeviceGetAttribute(&v, attrs[i].attr, dev));
		printf("  %s: %d\n", attrs[i].name, v);
		if (attrs[i].attr == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
			sms = v;
	}

	prog_init(&dev);
	CHECK(cuMemGetInfo(&mfree, &mtotal));
	printf("  cuMemGetInfo: %zu free of %zu\n", mfree, mtotal);
	prog_fini(dev);

	if (!strstr(name, "vGPU")) {
		printf("device_query: FAILED (name \"%s\" does not say vGPU)\n",
		       name);
		return 1;
	}
	if (expect_sms >= 0 && sms != expect_sms) {
		printf("device_query: FAILED (%d SMs, expected %d)\n", sms,
		       expect_sms);
		return 1;
	}
	if (mtotal != total || mfree > mtotal) {
		printf("device_query: FAILED (cuMemGetInfo %zu/%zu vs "
		       "cuDeviceTotalMem %zu)\n",
		       mfree, mtotal, total);
		return 1;
	}
	printf("device_query: \"%s\" sms=%d memory=%zu OK\n", name, sms, total);
	return 0;
}
