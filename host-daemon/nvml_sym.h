/* SPDX-License-Identifier: MIT */
/*
 * NVML (libnvidia-ml.so.1) through dlopen, read-only: vgpud reads power,
 * energy and utilisation for vgpu-admin top, and never changes a clock, a
 * limit or a mode. Without the library (the simulator, a machine without
 * the driver) everything it would give is "n/a".
 *
 * The few types are declared here from NVML's stable ABI (nvml.h is not
 * always installed); every entry point is checked by name.
 */
#ifndef VGPU_NVML_SYM_H
#define VGPU_NVML_SYM_H

#include <stddef.h>
#include <stdint.h>

typedef int nvmlReturn_t; /* NVML_SUCCESS = 0 */
typedef struct nvmlDevice_st *nvmlDevice_t;

#define NVML_SUCCESS		     0
#define NVML_ERROR_NOT_FOUND	     6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_UUID_BUFFER_SIZE	     80

typedef struct {
	unsigned int gpu;    /* % of time a kernel ran */
	unsigned int memory; /* % of time device memory was read or written */
} nvmlUtilization_t;

typedef struct {
	unsigned int pid;
	unsigned long long timeStamp; /* CPU time stamp, microseconds */
	unsigned int smUtil;
	unsigned int memUtil;
	unsigned int encUtil;
	unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

#define NVML_SYM_LIST(X)                                                       \
	X(nvmlInit_v2, nvmlReturn_t, (void))                                   \
	X(nvmlShutdown, nvmlReturn_t, (void))                                  \
	X(nvmlDeviceGetCount_v2, nvmlReturn_t, (unsigned int *))               \
	X(nvmlDeviceGetHandleByIndex_v2, nvmlReturn_t,                         \
	  (unsigned int, nvmlDevice_t *))                                      \
	X(nvmlDeviceGetUUID, nvmlReturn_t, (nvmlDevice_t, char *, unsigned))   \
	X(nvmlDeviceGetPowerUsage, nvmlReturn_t, (nvmlDevice_t, unsigned *))   \
	X(nvmlDeviceGetTotalEnergyConsumption, nvmlReturn_t,                   \
	  (nvmlDevice_t, unsigned long long *))                                \
	X(nvmlDeviceGetUtilizationRates, nvmlReturn_t,                         \
	  (nvmlDevice_t, nvmlUtilization_t *))                                 \
	X(nvmlDeviceGetProcessUtilization, nvmlReturn_t,                       \
	  (nvmlDevice_t, nvmlProcessUtilizationSample_t *, unsigned *,         \
	   unsigned long long))

struct nvml_sym {
	void *dl;
#define NVML_SYM_FIELD(name, ret, args) ret(*name) args;
	NVML_SYM_LIST(NVML_SYM_FIELD)
#undef NVML_SYM_FIELD
};

/*
 * dlopen libnvidia-ml.so.1 ($VGPU_NVML_LIBRARY instead, for tests), resolve
 * every entry point and nvmlInit. 0, or -1 with a sentence in err.
 */
int nvml_sym_load(struct nvml_sym *n, char *err, size_t errlen);
/* nvmlShutdown and dlclose. */
void nvml_sym_unload(struct nvml_sym *n);

/* The NVML device whose UUID is uuid (16 bytes, as CUDA gives it), or
 * NULL. NVML orders GPUs by PCI bus, CUDA may not: match by UUID. */
nvmlDevice_t nvml_device_by_uuid(struct nvml_sym *n, const uint8_t uuid[16]);

#endif /* VGPU_NVML_SYM_H */
