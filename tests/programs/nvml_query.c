/* SPDX-License-Identifier: MIT */
/*
 * nvml_query [--memory BYTES] [--cc MAJOR.MINOR] [--lib DIR]
 *            [--no-vgpu | --no-driver]:
 * vgpu's guest NVML (guest-driver/nvml) as a monitoring tool uses it,
 * each answer checked against what the CUDA driver says of the same
 * device: one device; its name, UUID ("GPU-" and 36 characters, CUDA's
 * UUID), PCI bus id (NVML's format, CUDA's address) and compute
 * capability are CUDA's; memory total is the vGPU's quota (BYTES when
 * given) and used + free = total, used growing with an allocation; the
 * handles by UUID and bus id are the one device's. Then its errors: a
 * handle it did not give out and NULL pointers are INVALID_ARGUMENT,
 * the physical GPU's state (temperature, power, utilisation) and the
 * generated stubs NOT_SUPPORTED, a buffer too small INSUFFICIENT_SIZE,
 * every call before nvmlInit and after the last nvmlShutdown
 * UNINITIALIZED. --lib DIR: the libnvidia-ml.so.1 loaded must be DIR's
 * (not a system NVML). --no-vgpu: run where there is no vGPU: nvmlInit
 * is DRIVER_NOT_LOADED, and with NVML_INIT_FLAG_NO_GPUS NVML runs with
 * no device. --no-driver: run where the libcuda.so.1 found is not vgpu's:
 * nvmlInit is DRIVER_NOT_LOADED, with or without that flag.
 *
 * Prints "ok ..." or "FAIL ..." per check and "nvml_query: OK" or
 * "nvml_query: FAILED"; exits 1 on any failure.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <nvml.h>
#include <stdarg.h>
#include <stdlib.h>
#include <strings.h>

#include "prog.h"

static int failures;

static void expect(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok  " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures += !ok;
}

/* call returns want (both printed by name when not). */
#define EXPECT_RC(call, want)                                                  \
	do {                                                                   \
		nvmlReturn_t r_ = (call);                                      \
		expect(r_ == (want), "%s: %s%s%s", #call, nvmlErrorString(r_), \
		       r_ == (want) ? "" : ", expected ",                      \
		       r_ == (want) ? "" : nvmlErrorString(want));             \
	} while (0)

/* call must succeed for the program to go on. */
#define NEED(call)                                                             \
	do {                                                                   \
		nvmlReturn_t r_ = (call);                                      \
		if (r_ != NVML_SUCCESS) {                                      \
			printf("FAIL %s: %s\n", #call, nvmlErrorString(r_));   \
			printf("nvml_query: FAILED\n");                        \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* A function of the library by name (the generated stubs are in no
 * header). */
static void *nvml_sym(const char *name)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);

	return lib ? dlsym(lib, name) : NULL;
}

/* The libnvidia-ml.so.1 this process loaded must be dir's. */
static void check_library(const char *dir)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
	char want[PATH_MAX], got[PATH_MAX], path[PATH_MAX];
	struct link_map *map = NULL;

	if (!lib || dlinfo(lib, RTLD_DI_LINKMAP, &map) || !map) {
		expect(0, "libnvidia-ml.so.1 is loaded");
		return;
	}
	printf("# libnvidia-ml: %s\n", map->l_name);
	snprintf(path, sizeof(path), "%s/libnvidia-ml.so.1", dir);
	expect(realpath(path, want) && realpath(map->l_name, got) &&
		       !strcmp(want, got),
	       "the NVML loaded is %s, not another", path);
}

static int is_uuid(const char *s)
{
	static const int dash[] = {8, 13, 18, 23};
	int i, d = 0;

	if (strncmp(s, "GPU-", 4) || strlen(s) != 40)
		return 0;
	for (i = 0; i < 36; i++) {
		if (d < 4 && i == dash[d]) {
			if (s[4 + i] != '-')
				return 0;
			d++;
		} else if (!isxdigit((unsigned char)s[4 + i])) {
			return 0;
		}
	}
	return 1;
}

static void check_no_vgpu(int no_driver)
{
	unsigned int n = 99;
	nvmlDevice_t h;

	EXPECT_RC(nvmlInit_v2(), NVML_ERROR_DRIVER_NOT_LOADED);
	EXPECT_RC(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	if (no_driver) {
		EXPECT_RC(nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS),
			  NVML_ERROR_DRIVER_NOT_LOADED);
		return;
	}
	EXPECT_RC(nvmlInitWithFlags(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
	EXPECT_RC(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
	expect(n == 0, "NVML_INIT_FLAG_NO_GPUS without a vGPU: %u devices", n);
	EXPECT_RC(nvmlDeviceGetHandleByIndex_v2(0, &h),
		  NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlShutdown(), NVML_SUCCESS);
}

/* Identity: count, handles, name, UUID, index. */
static nvmlDevice_t check_identity(CUdevice dev)
{
	char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE], cu_name[256];
	char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE], cu_uuid[64], up[64];
	unsigned int n = 0, idx = 99, minor = 99;
	nvmlDevice_t h, h2;
	CUuuid u;
	int i;

	NEED(nvmlDeviceGetCount_v2(&n));
	expect(n == 1, "one device (the vGPU): %u", n);
	NEED(nvmlDeviceGetHandleByIndex_v2(0, &h));
	EXPECT_RC(nvmlDeviceGetHandleByIndex_v2(1, &h2),
		  NVML_ERROR_INVALID_ARGUMENT);

	NEED(nvmlDeviceGetName(h, name, sizeof(name)));
	CHECK(cuDeviceGetName(cu_name, sizeof(name), dev));
	printf("# name: %s\n", name);
	expect(name[0] && !strcmp(name, cu_name), "the name is CUDA's (\"%s\")",
	       cu_name);
	EXPECT_RC(nvmlDeviceGetName(h, name, 4), NVML_ERROR_INSUFFICIENT_SIZE);

	NEED(nvmlDeviceGetUUID(h, uuid, sizeof(uuid)));
	CHECK(cuDeviceGetUuid(&u, dev));
	snprintf(cu_uuid, sizeof(cu_uuid), "GPU-");
	for (i = 0; i < 16; i++)
		snprintf(cu_uuid + strlen(cu_uuid),
			 sizeof(cu_uuid) - strlen(cu_uuid), "%s%02x",
			 i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
			 (unsigned char)u.bytes[i]);
	printf("# uuid: %s\n", uuid);
	expect(is_uuid(uuid), "the UUID is \"GPU-\" and 8-4-4-4-12 hex digits");
	expect(!strcmp(uuid, cu_uuid), "the UUID is CUDA's (%s)", cu_uuid);
	EXPECT_RC(nvmlDeviceGetUUID(h, uuid, 40), NVML_ERROR_INSUFFICIENT_SIZE);
	NEED(nvmlDeviceGetUUID(h, uuid, 41));
	h2 = NULL;
	EXPECT_RC(nvmlDeviceGetHandleByUUID(uuid, &h2), NVML_SUCCESS);
	expect(h2 == h, "the handle by UUID is the device's");
	for (i = 0; uuid[i]; i++)
		up[i] = (char)toupper((unsigned char)uuid[i]);
	up[i] = '\0';
	EXPECT_RC(nvmlDeviceGetHandleByUUID(up, &h2), NVML_SUCCESS);
	EXPECT_RC(nvmlDeviceGetHandleByUUID(
			  "GPU-00000000-0000-0000-0000-000000000000", &h2),
		  NVML_ERROR_NOT_FOUND);

	NEED(nvmlDeviceGetIndex(h, &idx));
	NEED(nvmlDeviceGetMinorNumber(h, &minor));
	expect(idx == 0 && minor == 0, "index %u, minor number %u", idx, minor);
	return h;
}

static void check_pci(nvmlDevice_t h, CUdevice dev)
{
	int domain, bus, device;
	nvmlPciInfo_t pci;
	char want[64], legacy[32], other[64];
	nvmlDevice_t h2 = NULL;

	NEED(nvmlDeviceGetPciInfo(h, &pci));
	CHECK(cuDeviceGetAttribute(&domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
				   dev));
	CHECK(cuDeviceGetAttribute(&bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev));
	CHECK(cuDeviceGetAttribute(&device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
				   dev));
	snprintf(want, sizeof(want), "%08X:%02X:%02X.0", domain, bus, device);
	snprintf(legacy, sizeof(legacy), "%04X:%02X:%02X.0", domain, bus,
		 device);
	printf("# pci: %s (legacy %s)\n", pci.busId, pci.busIdLegacy);
	expect(!strcmp(pci.busId, want) && pci.domain == (unsigned int)domain &&
		       pci.bus == (unsigned int)bus &&
		       pci.device == (unsigned int)device,
	       "the PCI bus id is CUDA's address in NVML's format (%s)", want);
	expect(!strcmp(pci.busIdLegacy, legacy), "the legacy bus id is %s",
	       legacy);
	EXPECT_RC(nvmlDeviceGetHandleByPciBusId(pci.busId, &h2), NVML_SUCCESS);
	expect(h2 == h, "the handle by PCI bus id is the device's");
	snprintf(other, sizeof(other), "%02x:%02x.0", bus, device);
	if (domain == 0)
		EXPECT_RC(nvmlDeviceGetHandleByPciBusId(other, &h2),
			  NVML_SUCCESS);
	snprintf(other, sizeof(other), "%08X:%02X:%02X.0", domain, bus + 1,
		 device);
	EXPECT_RC(nvmlDeviceGetHandleByPciBusId(other, &h2),
		  NVML_ERROR_NOT_FOUND);
	EXPECT_RC(nvmlDeviceGetHandleByPciBusId("not a bus id", &h2),
		  NVML_ERROR_INVALID_ARGUMENT);
}

static void check_memory(nvmlDevice_t h, unsigned long long quota)
{
	const unsigned long long chunk = 64ull << 20;
	nvmlMemory_t m, m2;
	nvmlMemory_v2_t v2 = {.version = nvmlMemory_v2};
	CUcontext ctx, cur;
	CUdeviceptr p;
	size_t total;
	CUdevice dev;

	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDeviceTotalMem(&total, dev));
	CHECK(cuCtxGetCurrent(&cur));
	NEED(nvmlDeviceGetMemoryInfo(h, &m));
	printf("# memory: total %llu, used %llu, free %llu\n", m.total, m.used,
	       m.free);
	expect(m.total == total, "memory total is the vGPU's (%zu)", total);
	if (quota)
		expect(m.total == quota, "memory total is the quota (%llu)",
		       quota);
	expect(m.used + m.free == m.total, "used + free = total");
	CHECK(cuCtxGetCurrent(&ctx));
	expect(ctx == cur, "the thread's current context is as it was");

	NEED(nvmlDeviceGetMemoryInfo_v2(h, &v2));
	expect(v2.total == m.total && v2.reserved == 0 &&
		       v2.used + v2.free == v2.total,
	       "memory v2: the same total, nothing reserved");
	v2.version = 1;
	EXPECT_RC(nvmlDeviceGetMemoryInfo_v2(h, &v2),
		  NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

	/* an allocation shows in used, from a thread with a context too */
	ctx = prog_init(&dev);
	CHECK(cuMemAlloc(&p, chunk));
	NEED(nvmlDeviceGetMemoryInfo(h, &m2));
	expect(m2.used >= m.used + chunk && m2.used + m2.free == m2.total,
	       "64 MiB allocated show in used (%llu -> %llu)", m.used, m2.used);
	CHECK(cuCtxGetCurrent(&cur));
	expect(cur == ctx, "... and the current context is still the "
			   "program's");
	CHECK(cuMemFree(p));
	prog_fini(dev);
}

static void check_attributes(nvmlDevice_t h, CUdevice dev, const char *cc)
{
	int major = -1, minor = -1, cu_major, cu_minor, khz, mkhz;
	unsigned int clock, board = 9, count = 5;
	nvmlDeviceArchitecture_t arch;
	nvmlComputeMode_t mode;
	nvmlEnableState_t pers;
	nvmlBrandType_t brand;
	char want[16];

	NEED(nvmlDeviceGetCudaComputeCapability(h, &major, &minor));
	CHECK(cuDeviceGetAttribute(
		&cu_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
	CHECK(cuDeviceGetAttribute(
		&cu_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
	printf("# compute capability %d.%d\n", major, minor);
	expect(major == cu_major && minor == cu_minor,
	       "the compute capability is CUDA's (%d.%d)", cu_major, cu_minor);
	snprintf(want, sizeof(want), "%d.%d", major, minor);
	if (cc)
		expect(!strcmp(want, cc), "the compute capability is %s", cc);
	NEED(nvmlDeviceGetArchitecture(h, &arch));
	printf("# architecture %u\n", arch);
	if (major == 9)
		expect(arch == NVML_DEVICE_ARCH_HOPPER, "9.x is Hopper");

	CHECK(cuDeviceGetAttribute(&khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev));
	CHECK(cuDeviceGetAttribute(&mkhz, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE,
				   dev));
	if (khz > 0) {
		NEED(nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_SM, &clock));
		expect(clock == (unsigned int)khz / 1000,
		       "the SM clock is CUDA's: %u MHz", clock);
	}
	if (mkhz > 0) {
		NEED(nvmlDeviceGetClockInfo(h, NVML_CLOCK_MEM, &clock));
		expect(clock == (unsigned int)mkhz / 1000,
		       "the memory clock is CUDA's: %u MHz", clock);
	}
	EXPECT_RC(nvmlDeviceGetMaxClockInfo(h, NVML_CLOCK_VIDEO, &clock),
		  NVML_ERROR_NOT_SUPPORTED);

	NEED(nvmlDeviceGetComputeMode(h, &mode));
	NEED(nvmlDeviceGetPersistenceMode(h, &pers));
	NEED(nvmlDeviceGetBrand(h, &brand));
	NEED(nvmlDeviceGetMultiGpuBoard(h, &board));
	expect(mode == NVML_COMPUTEMODE_DEFAULT && board <= 1,
	       "compute mode DEFAULT, multi-GPU board %u, persistence %d, "
	       "brand %d",
	       board, pers, brand);
	EXPECT_RC(nvmlDeviceGetComputeRunningProcesses(h, &count, NULL),
		  NVML_SUCCESS);
	expect(count == 0, "no processes listed (%u)", count);
}

/* Handles it did not give out, NULL pointers, what it does not serve. */
static void check_errors(nvmlDevice_t h)
{
	nvmlReturn_t (*serial)(nvmlDevice_t, char *, unsigned int);
	nvmlDevice_t fake = (nvmlDevice_t)&failures;
	static const char *const names[] = {
		"nvmlInit",
		"nvmlInitWithFlags",
		"nvmlDeviceGetCount",
		"nvmlDeviceGetHandleByIndex",
		"nvmlDeviceGetHandleByPciBusId",
		"nvmlDeviceGetPciInfo",
		"nvmlDeviceGetPciInfo_v2",
		"nvmlDeviceGetComputeRunningProcesses",
		"nvmlDeviceGetComputeRunningProcesses_v2",
		"nvmlDeviceGetMemoryInfo_v2",
		"nvmlDeviceGetTemperatureV",
		"nvmlGpmSampleAlloc",
	};
	unsigned int v;
	nvmlMemory_t m;
	nvmlUtilization_t util;
	char buf[96];
	size_t i;
	int a, b;

	EXPECT_RC(nvmlDeviceGetName(fake, buf, sizeof(buf)),
		  NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetMemoryInfo(NULL, &m),
		  NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetTemperature(fake, NVML_TEMPERATURE_GPU, &v),
		  NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetCount_v2(NULL), NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetHandleByIndex_v2(0, NULL),
		  NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetName(h, NULL, 96), NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetUUID(h, NULL, 96), NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetMemoryInfo(h, NULL),
		  NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetPciInfo(h, NULL), NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetCudaComputeCapability(h, &a, NULL),
		  NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetHandleByUUID(NULL, &h),
		  NVML_ERROR_INVALID_ARGUMENT);
	EXPECT_RC(nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, NULL),
		  NVML_ERROR_INVALID_ARGUMENT);

	EXPECT_RC(nvmlDeviceGetTemperature(h, NVML_TEMPERATURE_GPU, &v),
		  NVML_ERROR_NOT_SUPPORTED);
	EXPECT_RC(nvmlDeviceGetPowerUsage(h, &v), NVML_ERROR_NOT_SUPPORTED);
	EXPECT_RC(nvmlDeviceGetUtilizationRates(h, &util),
		  NVML_ERROR_NOT_SUPPORTED);
	EXPECT_RC(nvmlDeviceGetMigMode(h, &v, &v), NVML_ERROR_NOT_SUPPORTED);
	EXPECT_RC(nvmlDeviceGetCurrPcieLinkGeneration(h, &v),
		  NVML_ERROR_NOT_SUPPORTED);
	serial = (nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned int))nvml_sym(
		"nvmlDeviceGetSerial");
	expect(serial != NULL, "nvmlDeviceGetSerial (a generated stub) exists");
	if (serial)
		EXPECT_RC(serial(h, buf, sizeof(buf)),
			  NVML_ERROR_NOT_SUPPORTED);
	for (i = 0, b = 1; i < sizeof(names) / sizeof(names[0]); i++)
		if (!nvml_sym(names[i])) {
			printf("# missing: %s\n", names[i]);
			b = 0;
		}
	expect(b, "the older and newer names are exported too");
}

/* Shutdown counts down nvmlInit's (main's, and one more here); after
 * the last, every call is UNINITIALIZED, the stubs' too; nvmlInit starts
 * again. */
static void check_shutdown(nvmlDevice_t h)
{
	nvmlReturn_t (*serial)(nvmlDevice_t, char *, unsigned int);
	unsigned int n;
	char buf[96];

	serial = (nvmlReturn_t(*)(nvmlDevice_t, char *, unsigned int))nvml_sym(
		"nvmlDeviceGetSerial");
	NEED(nvmlInit_v2());
	EXPECT_RC(nvmlShutdown(), NVML_SUCCESS);
	EXPECT_RC(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
	EXPECT_RC(nvmlShutdown(), NVML_SUCCESS);
	EXPECT_RC(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	EXPECT_RC(nvmlDeviceGetName(h, buf, sizeof(buf)),
		  NVML_ERROR_UNINITIALIZED);
	if (serial)
		EXPECT_RC(serial(h, buf, sizeof(buf)),
			  NVML_ERROR_UNINITIALIZED);
	EXPECT_RC(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
	EXPECT_RC(nvmlInit_v2(), NVML_SUCCESS);
	EXPECT_RC(nvmlDeviceGetName(h, buf, sizeof(buf)), NVML_SUCCESS);
	EXPECT_RC(nvmlShutdown(), NVML_SUCCESS);
}

int main(int argc, char **argv)
{
	const char *cc = NULL, *lib = NULL;
	unsigned long long quota = 0;
	char version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	int no_vgpu = 0, cuda_version = 0, cu_version = 0, i;
	unsigned int n;
	nvmlDevice_t h;
	CUdevice dev;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--memory") && i + 1 < argc)
			quota = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--cc") && i + 1 < argc)
			cc = argv[++i];
		else if (!strcmp(argv[i], "--lib") && i + 1 < argc)
			lib = argv[++i];
		else if (!strcmp(argv[i], "--no-vgpu"))
			no_vgpu = 1;
		else if (!strcmp(argv[i], "--no-driver"))
			no_vgpu = 2;
		else {
			fprintf(stderr, "usage: nvml_query [--memory BYTES] "
					"[--cc MAJOR.MINOR] [--lib DIR] "
					"[--no-vgpu | --no-driver]\n");
			return 2;
		}
	}

	/* before nvmlInit */
	expect(strlen(nvmlErrorString(NVML_ERROR_NOT_SUPPORTED)) > 0,
	       "nvmlErrorString needs no nvmlInit: \"%s\"",
	       nvmlErrorString(NVML_ERROR_NOT_SUPPORTED));
	EXPECT_RC(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
	EXPECT_RC(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
	if (lib)
		check_library(lib);
	if (no_vgpu) {
		check_no_vgpu(no_vgpu == 2);
		goto out;
	}

	NEED(nvmlInit_v2());
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	NEED(nvmlSystemGetDriverVersion(version, sizeof(version)));
	printf("# driver version %s\n", version);
	NEED(nvmlSystemGetCudaDriverVersion_v2(&cuda_version));
	CHECK(cuDriverGetVersion(&cu_version));
	expect(cuda_version == cu_version && version[0],
	       "the CUDA driver version is CUDA's (%d)", cu_version);
	EXPECT_RC(nvmlSystemGetDriverVersion(version, 2),
		  NVML_ERROR_INSUFFICIENT_SIZE);
	NEED(nvmlSystemGetNVMLVersion(version, sizeof(version)));
	printf("# NVML version %s\n", version);

	h = check_identity(dev);
	check_pci(h, dev);
	check_memory(h, quota);
	check_attributes(h, dev, cc);
	check_errors(h);
	check_shutdown(h);
out:
	printf("nvml_query: %s\n", failures ? "FAILED" : "OK");
	return failures != 0;
}
