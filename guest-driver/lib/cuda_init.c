/* SPDX-License-Identifier: MIT */
/*
 * cuInit, cuDriverGetVersion and the library's marker.
 */
#include "client.h"
#include "client_api.h"

#define VGPU_CLIENT_VERSION "0.1"

/* The cuda backend refuses to dlopen a libcuda.so.1 that has this. */
VGPU_API const char vgpu_client_library[] =
	"vgpu guest library " VGPU_CLIENT_VERSION;

/*
 * Connects to the vGPU named by $VGPU through $VGPU_SOCKET, once per
 * process; every later call returns the first one's result. Without a
 * vGPU, or when it cannot be reached, CUDA_ERROR_NO_DEVICE, and one line
 * on stderr says why.
 */
VGPU_API CUresult CUDAAPI cuInit(unsigned int Flags)
{
	if (Flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return client_init();
}

/* Works before cuInit, as in CUDA: the version of the API this library
 * implements, or the vGPU's driver version once known, if older. */
VGPU_API CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	struct client *c;

	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = CUDA_VERSION;
	if (client_get(&c) == CUDA_SUCCESS && c->info.driver_version > 0 &&
	    c->info.driver_version < CUDA_VERSION)
		*driverVersion = (int)c->info.driver_version;
	return CUDA_SUCCESS;
}
