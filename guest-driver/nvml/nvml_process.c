/* SPDX-License-Identifier: MIT */
/*
 * The processes running on the device: none listed, in every version
 * (compute, graphics, MPS; v1, v2, v3).
 *
 * The guest library sees only its own process: the vGPU's other clients
 * (the VM's other processes) are known to vgpud and the worker, which
 * tell the guest nothing of them. Listing only the caller would be a
 * partial answer dressed as a whole one; an empty list is NVML's answer
 * for an idle GPU, and what callers handle first: pynvml returns [] for
 * it, PyTorch's torch.cuda.list_gpu_processes() prints "no processes
 * are running". `vgpu-admin show NAME` on the host lists the clients.
 */
#include "nvml_state.h"

/* NVML's protocol: *infoCount in, the array's size; out, the number of
 * entries. Zero entries fit any array, NULL included. */
static nvmlReturn_t nvml_no_processes(nvmlDevice_t device,
				      unsigned int *infoCount)
{
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!infoCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	*infoCount = 0;
	return NVML_SUCCESS;
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(
	nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	return nvml_no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v2(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v2_t *infos)
{
	return nvml_no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v1_t *infos)
{
	return nvml_no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(
	nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	return nvml_no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v2(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v2_t *infos)
{
	return nvml_no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v1_t *infos)
{
	return nvml_no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v3(
	nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	return nvml_no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses_v2(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v2_t *infos)
{
	return nvml_no_processes(device, infoCount);
}

NVML_API nvmlReturn_t nvmlDeviceGetMPSComputeRunningProcesses(
	nvmlDevice_t device, unsigned int *infoCount,
	nvmlProcessInfo_v1_t *infos)
{
	return nvml_no_processes(device, infoCount);
}
