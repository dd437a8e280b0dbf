/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libnvidia-ml.so.1 for tests/integration/top.sh (vgpud
 * loads it through VGPU_NVML_LIBRARY): the simulator's GPUs with figures
 * that a test can predict. Each GPU draws FAKE_NVML_WATTS (default 200 W)
 * all the time, so its energy counter grows by that much per second; its
 * utilisation is 90% SMs, 20% memory (compute-bound); per-process figures
 * are "not supported", so vgpud falls back to the device's.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;

typedef struct {
	unsigned int gpu, memory;
} nvmlUtilization_t;

#define FAKE_NOT_SUPPORTED 3

static unsigned int fake_gpus(void)
{
	const char *s = getenv("VGPU_SIM_GPUS");

	return s && atoi(s) > 0 ? (unsigned)atoi(s) : 1;
}

static unsigned int fake_mw(void)
{
	const char *s = getenv("FAKE_NVML_WATTS");

	return (s && atoi(s) > 0 ? (unsigned)atoi(s) : 200) * 1000u;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

nvmlReturn_t nvmlInit_v2(void)
{
	return 0;
}

nvmlReturn_t nvmlShutdown(void)
{
	return 0;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
	*n = fake_gpus();
	return 0;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *d)
{
	if (i >= fake_gpus())
		return 2; /* NVML_ERROR_INVALID_ARGUMENT */
	*d = (nvmlDevice_t)(uintptr_t)(i + 1);
	return 0;
}

/* The simulator's UUID: "vgpu-sim", then the index big-endian. */
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *buf, unsigned int len)
{
	unsigned int i = (unsigned int)(uintptr_t)d - 1;

	snprintf(buf, len, "GPU-76677075-2d73-696d-0000-0000%08x", i);
	return 0;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *mw)
{
	*mw = fake_mw();
	return 0;
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d,
						 unsigned long long *mj)
{
	static double t0;

	if (!t0)
		t0 = now_ms();
	*mj = 1000000ull +
	      (unsigned long long)((now_ms() - t0) * fake_mw() / 1000.0);
	return 0;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t *u)
{
	u->gpu = 90;
	u->memory = 20;
	return 0;
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, void *samples,
					     unsigned int *count,
					     unsigned long long since)
{
	return FAKE_NOT_SUPPORTED;
}
