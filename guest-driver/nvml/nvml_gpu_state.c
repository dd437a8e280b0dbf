/* SPDX-License-Identifier: MIT */
/*
 * The physical GPU's live state, refused: temperature, power and energy,
 * fans, utilisation, PCIe link, peer-to-peer and topology, NVLink, MIG,
 * core count. A vGPU is a slice of a GPU that other vGPUs share: its
 * temperature, power draw, fan and links are the whole GPU's, which is
 * vgpud's to read on the host (vgpu-admin top shows power, energy and
 * each vGPU's own utilisation), not a guest's. A guest has one device,
 * so it has no peers and no topology between devices.
 *
 * Each checks its arguments as NVML does (UNINITIALIZED, a handle this
 * library did not give out, a NULL pointer: INVALID_ARGUMENT) before
 * saying NVML_ERROR_NOT_SUPPORTED, so a caller sees the same errors for
 * the same mistakes as from any other call. The rest of NVML is refused
 * by the generated stubs, which read no argument.
 */
#include "nvml_state.h"
#include "nvml_unsupported.h"

/* The device and one out-pointer checked, then refused, naming call. */
static nvmlReturn_t nvml_refuse(nvmlDevice_t device, const void *out,
				const char *call, int *said)
{
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!out)
		return NVML_ERROR_INVALID_ARGUMENT;
	nvml_say_unsupported(call, said);
	return NVML_ERROR_NOT_SUPPORTED;
}

/* A query of one device and one result, refused. */
#define NVML_REFUSE(device, out)                                               \
	do {                                                                   \
		static int said;                                               \
		return nvml_refuse(device, out, __func__, &said);              \
	} while (0)

NVML_API nvmlReturn_t nvmlDeviceGetTemperature(
	nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
	unsigned int *temp)
{
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	if ((unsigned int)sensorType >= NVML_TEMPERATURE_COUNT)
		return NVML_ERROR_INVALID_ARGUMENT;
	NVML_REFUSE(device, temp);
}

NVML_API nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device,
					      unsigned int *power)
{
	NVML_REFUSE(device, power);
}

NVML_API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(
	nvmlDevice_t device, unsigned long long *energy)
{
	NVML_REFUSE(device, energy);
}

NVML_API nvmlReturn_t nvmlDeviceGetFanSpeed(nvmlDevice_t device,
					    unsigned int *speed)
{
	NVML_REFUSE(device, speed);
}

/* The vGPU's own busy time is vgpud's (vgpu-admin top); the ring has no
 * request for it, so a guest cannot ask. */
NVML_API nvmlReturn_t nvmlDeviceGetUtilizationRates(
	nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	NVML_REFUSE(device, utilization);
}

NVML_API nvmlReturn_t nvmlDeviceGetNumGpuCores(nvmlDevice_t device,
					       unsigned int *numCores)
{
	NVML_REFUSE(device, numCores);
}

NVML_API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(
	nvmlDevice_t device, unsigned int *currLinkGen)
{
	NVML_REFUSE(device, currLinkGen);
}

NVML_API nvmlReturn_t
nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *currLinkWidth)
{
	NVML_REFUSE(device, currLinkWidth);
}

NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(
	nvmlDevice_t device, unsigned int *maxLinkGen)
{
	NVML_REFUSE(device, maxLinkGen);
}

NVML_API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
						    unsigned int *maxLinkWidth)
{
	NVML_REFUSE(device, maxLinkWidth);
}

NVML_API nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device,
					       unsigned int link,
					       nvmlEnableState_t *isActive)
{
	NVML_REFUSE(device, isActive);
}

NVML_API nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device,
					   unsigned int *currentMode,
					   unsigned int *pendingMode)
{
	NVML_REFUSE(device, currentMode && pendingMode ? currentMode : NULL);
}

/* Two devices: both must be handles this library gave out. */
static nvmlReturn_t nvml_refuse_pair(nvmlDevice_t device1, nvmlDevice_t device2,
				     const void *out, const char *call,
				     int *said)
{
	const struct nvml_cuda *cu;
	CUdevice dev;
	nvmlReturn_t rc = nvml_device_enter(device2, &cu, &dev);

	if (rc != NVML_SUCCESS)
		return rc;
	return nvml_refuse(device1, out, call, said);
}

NVML_API nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t device1,
					     nvmlDevice_t device2,
					     nvmlGpuP2PCapsIndex_t p2pIndex,
					     nvmlGpuP2PStatus_t *p2pStatus)
{
	static int said;

	return nvml_refuse_pair(device1, device2, p2pStatus, __func__, &said);
}

NVML_API nvmlReturn_t
nvmlDeviceGetTopologyCommonAncestor(nvmlDevice_t device1, nvmlDevice_t device2,
				    nvmlGpuTopologyLevel_t *pathInfo)
{
	static int said;

	return nvml_refuse_pair(device1, device2, pathInfo, __func__, &said);
}
