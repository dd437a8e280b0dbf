/* SPDX-License-Identifier: MIT */
/*
 * nvmlSystem*: the versions. A guest has no NVIDIA kernel driver, so
 * "the driver" is vgpu's libcuda.so.1 and its version is the CUDA driver
 * API it implements (cuDriverGetVersion: 13000), written "13.0": not an
 * NVIDIA driver branch like "580.65.06", which a vGPU does not have.
 * NVML's own version is, as NVIDIA's, its API version and the driver's:
 * "13.13.0".
 */
#include <stdio.h>

#include "nvml_state.h"
#include "nvml_string.h"

/* cuDriverGetVersion's number as "major.minor", into buf. */
static nvmlReturn_t nvml_driver_version(char *buf, size_t len)
{
	const struct nvml_cuda *cu;
	nvmlReturn_t rc = nvml_enter(&cu);
	int v;

	if (rc != NVML_SUCCESS)
		return rc;
	rc = nvml_from_cuda(cu->driver_get_version(&v));
	if (rc == NVML_SUCCESS)
		snprintf(buf, len, "%d.%d", v / 1000, v % 1000 / 10);
	return rc;
}

NVML_API nvmlReturn_t nvmlSystemGetDriverVersion(char *version,
						 unsigned int length)
{
	char v[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	nvmlReturn_t rc = nvml_driver_version(v, sizeof(v));

	return rc == NVML_SUCCESS ? nvml_string_put(version, length, v) : rc;
}

NVML_API nvmlReturn_t nvmlSystemGetNVMLVersion(char *version,
					       unsigned int length)
{
	char d[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
	char v[NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE + 8];
	nvmlReturn_t rc = nvml_driver_version(d, sizeof(d));

	if (rc != NVML_SUCCESS)
		return rc;
	snprintf(v, sizeof(v), "%s.%s", NVML_API_VERSION_STR, d);
	return nvml_string_put(version, length, v);
}

/* The CUDA version the driver supports, as CUDA numbers it (13000). */
NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *cudaDriverVersion)
{
	const struct nvml_cuda *cu;
	nvmlReturn_t rc = nvml_enter(&cu);

	if (rc != NVML_SUCCESS)
		return rc;
	if (!cudaDriverVersion)
		return NVML_ERROR_INVALID_ARGUMENT;
	return nvml_from_cuda(cu->driver_get_version(cudaDriverVersion));
}

NVML_API nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *cudaDriverVersion)
{
	return nvmlSystemGetCudaDriverVersion_v2(cudaDriverVersion);
}
