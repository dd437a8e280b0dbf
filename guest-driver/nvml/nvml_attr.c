/* SPDX-License-Identifier: MIT */
/*
 * What NVML says of the device that CUDA's device attributes already
 * say (the physical GPU's, as the worker reads them, with the slice's SM
 * count): compute capability, architecture, clocks, multi-GPU board;
 * and the modes a vGPU has by construction (compute mode, persistence,
 * brand).
 */
#include "nvml_state.h"

/* One attribute of the device into *v. */
static nvmlReturn_t nvml_attr(nvmlDevice_t device, CUdevice_attribute attr,
			      int *v)
{
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	return nvml_from_cuda(cu->device_get_attribute(v, attr, dev));
}

NVML_API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device,
							 int *major, int *minor)
{
	int maj, min;
	nvmlReturn_t rc = nvml_attr(
		device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, &maj);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!major || !minor)
		return NVML_ERROR_INVALID_ARGUMENT;
	rc = nvml_attr(device, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
		       &min);
	if (rc != NVML_SUCCESS)
		return rc;
	*major = maj;
	*minor = min;
	return NVML_SUCCESS;
}

/* NVIDIA's architecture of a compute capability. */
static nvmlDeviceArchitecture_t nvml_arch_of(int major, int minor)
{
	switch (major) {
	case 3:
		return NVML_DEVICE_ARCH_KEPLER;
	case 5:
		return NVML_DEVICE_ARCH_MAXWELL;
	case 6:
		return NVML_DEVICE_ARCH_PASCAL;
	case 7:
		return minor >= 5 ? NVML_DEVICE_ARCH_TURING
				  : NVML_DEVICE_ARCH_VOLTA;
	case 8:
		return minor == 9 ? NVML_DEVICE_ARCH_ADA
				  : NVML_DEVICE_ARCH_AMPERE;
	case 9:
		return NVML_DEVICE_ARCH_HOPPER;
	case 10:
	case 11:
	case 12:
		return NVML_DEVICE_ARCH_BLACKWELL;
	default:
		return NVML_DEVICE_ARCH_UNKNOWN;
	}
}

NVML_API nvmlReturn_t nvmlDeviceGetArchitecture(nvmlDevice_t device,
						nvmlDeviceArchitecture_t *arch)
{
	int major, minor;
	nvmlReturn_t rc =
		nvmlDeviceGetCudaComputeCapability(device, &major, &minor);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!arch)
		return NVML_ERROR_INVALID_ARGUMENT;
	*arch = nvml_arch_of(major, minor);
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMultiGpuBoard(nvmlDevice_t device,
						 unsigned int *multiGpuBool)
{
	int v;
	nvmlReturn_t rc =
		nvml_attr(device, CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, &v);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!multiGpuBool)
		return NVML_ERROR_INVALID_ARGUMENT;
	*multiGpuBool = v != 0;
	return NVML_SUCCESS;
}

/*
 * The GPU's rated clocks, in MHz, as CUDA gives them (CLOCK_RATE for the
 * SMs, MEMORY_CLOCK_RATE for memory, both in kHz). There is no live
 * reading: the physical GPU's current clocks are shared by every vGPU on
 * it, so nvmlDeviceGetClockInfo answers the same rated figure. The video
 * clock CUDA does not state: NOT_SUPPORTED.
 */
static nvmlReturn_t nvml_clock(nvmlDevice_t device, nvmlClockType_t type,
			       unsigned int *clock)
{
	const struct nvml_cuda *cu;
	CUdevice_attribute attr;
	CUdevice dev;
	int khz;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!clock || (unsigned int)type >= NVML_CLOCK_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (type == NVML_CLOCK_VIDEO)
		return NVML_ERROR_NOT_SUPPORTED;
	attr = type == NVML_CLOCK_MEM ? CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE
				      : CU_DEVICE_ATTRIBUTE_CLOCK_RATE;
	rc = nvml_from_cuda(cu->device_get_attribute(&khz, attr, dev));
	if (rc != NVML_SUCCESS)
		return rc;
	if (khz <= 0)
		return NVML_ERROR_NOT_SUPPORTED;
	*clock = (unsigned int)khz / 1000;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device,
						nvmlClockType_t type,
						unsigned int *clock)
{
	return nvml_clock(device, type, clock);
}

NVML_API nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device,
					     nvmlClockType_t type,
					     unsigned int *clock)
{
	return nvml_clock(device, type, clock);
}

/* An answer the same for every vGPU: the device checked, value into
 * *out (an enum of NVML's, int-sized). */
static nvmlReturn_t fixed_answer(nvmlDevice_t device, int *out, int value)
{
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	*out = value;
	return NVML_SUCCESS;
}

/*
 * A vGPU serves every process of its VM (or its user, on a host) at
 * once: the default compute mode, whatever the physical GPU is set to
 * for vgpud's workers.
 */
NVML_API nvmlReturn_t nvmlDeviceGetComputeMode(nvmlDevice_t device,
					       nvmlComputeMode_t *mode)
{
	return fixed_answer(device, (int *)mode, NVML_COMPUTEMODE_DEFAULT);
}

/* A vGPU's state lives in its worker, which outlasts every client:
 * the persistence NVIDIA's persistence mode gives a GPU. */
NVML_API nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device,
						   nvmlEnableState_t *mode)
{
	return fixed_answer(device, (int *)mode, NVML_FEATURE_ENABLED);
}

/* The brand NVIDIA's data-centre GPUs report ("NVIDIA"); not one of
 * NVIDIA's own vGPU brands (VCS, VWS, ...), which this is not. */
NVML_API nvmlReturn_t nvmlDeviceGetBrand(nvmlDevice_t device,
					 nvmlBrandType_t *type)
{
	return fixed_answer(device, (int *)type, NVML_BRAND_NVIDIA);
}
