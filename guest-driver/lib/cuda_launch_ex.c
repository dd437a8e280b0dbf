/* SPDX-License-Identifier: MIT */
/*
 * cuLaunchKernelEx: a launch configuration with attributes. The launch
 * itself is cuLaunchKernel's. Attributes that are hints, or that ask for
 * what every vGPU launch is anyway, are accepted: access policy windows,
 * synchronization and scheduling policies, priority, memory-sync domains,
 * preferred cluster shapes and carveouts. A cluster shape goes to the
 * worker with the launch (the GPU runs its blocks together; the
 * simulator checks the shape and runs them as it runs any). The events a
 * launch is to trigger are recorded after it (on the GPU a programmatic
 * event may fire earlier; later is always correct). A cooperative launch
 * is cuLaunchCooperativeKernel's (cuda_launch.c); with a cluster shape it
 * is CUDA_ERROR_NOT_SUPPORTED. An attribute cuda.h does not define is
 * CUDA_ERROR_INVALID_VALUE.
 */
#include <stdio.h>

#include "client.h"
#include "client_api.h"
#include "cuda_unsupported.h"

#define LAUNCH_EX_EVENTS 2

/* One line per kind of refusal, the first time (a program may retry in
 * a loop). */
static CUresult refuse(int *said, const char *what)
{
	cuda_say_once(said,
		      "cuLaunchKernelEx with %s is not supported on a vGPU "
		      "(CUDA_ERROR_NOT_SUPPORTED)",
		      what);
	return CUDA_ERROR_NOT_SUPPORTED;
}

static CUresult attr_check(const CUlaunchAttribute *a, CUevent *ev,
			   unsigned int *nev, uint32_t cluster[3], int *coop)
{
	static int said_node;
	const CUlaunchAttributeValue *v = &a->value;

	switch (a->id) {
	case CU_LAUNCH_ATTRIBUTE_IGNORE:
	case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW:
	case CU_LAUNCH_ATTRIBUTE_SYNCHRONIZATION_POLICY:
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION:
	case CU_LAUNCH_ATTRIBUTE_PRIORITY:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN_MAP:
	case CU_LAUNCH_ATTRIBUTE_MEM_SYNC_DOMAIN:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_CLUSTER_DIMENSION:
	case CU_LAUNCH_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
	case CU_LAUNCH_ATTRIBUTE_NVLINK_UTIL_CENTRIC_SCHEDULING:
		return CUDA_SUCCESS;
	case CU_LAUNCH_ATTRIBUTE_COOPERATIVE:
		*coop = v->cooperative != 0;
		return CUDA_SUCCESS;
	case CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION:
		cluster[0] = v->clusterDim.x;
		cluster[1] = v->clusterDim.y;
		cluster[2] = v->clusterDim.z;
		return CUDA_SUCCESS;
	case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
	case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT:
		if (*nev == LAUNCH_EX_EVENTS)
			return CUDA_ERROR_INVALID_VALUE;
		ev[(*nev)++] = a->id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
				       ? v->programmaticEvent.event
				       : v->launchCompletionEvent.event;
		return ev[*nev - 1] ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
	case CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE:
		return refuse(&said_node, "a device-updatable kernel node");
	default:
		return CUDA_ERROR_INVALID_VALUE;
	}
}

VGPU_API CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config,
					   CUfunction f, void **kernelParams,
					   void **extra)
{
	CUevent ev[LAUNCH_EX_EVENTS];
	uint32_t cluster[3] = {1, 1, 1}, grid[3], block[3];
	unsigned int nev = 0, i;
	int noc, coop = 0;
	CUresult err;

	if (!config || (config->numAttrs && !config->attrs))
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < config->numAttrs; i++) {
		err = attr_check(&config->attrs[i], ev, &nev, cluster, &coop);
		if (err != CUDA_SUCCESS)
			return err;
	}
	grid[0] = config->gridDimX;
	grid[1] = config->gridDimY;
	grid[2] = config->gridDimZ;
	block[0] = config->blockDimX;
	block[1] = config->blockDimY;
	block[2] = config->blockDimZ;
	/* a shape of ones (or 0s, as before clusters) is no cluster */
	noc = cluster[0] <= 1 && cluster[1] <= 1 && cluster[2] <= 1;
	err = client_launch(f, grid, block, config->sharedMemBytes,
			    config->hStream, kernelParams, extra,
			    noc ? NULL : cluster, coop);
	for (i = 0; err == CUDA_SUCCESS && i < nev; i++)
		err = cuEventRecord(ev[i], config->hStream);
	return err;
}
