/* SPDX-License-Identifier: MIT */
/*
 * cudaLaunchKernelExC (behind cuda_runtime.h's cudaLaunchKernelEx
 * template): grid, block, dynamic shared memory and stream go down the
 * same path as cudaLaunchKernel; the attributes are read one by one.
 *
 * What each attribute means on a vGPU (driver_types.h's
 * cudaLaunchAttributeID):
 *  - hints, accepted and ignored: they may change speed, never results
 *    (access policy window, synchronization policy, cluster scheduling
 *    policy, programmatic stream serialization: the kernel simply does
 *    not overlap the previous one, which cudaGridDependencySynchronize
 *    allows; priority; memory sync domains: the default domain orders
 *    more, not less; a preferred cluster dimension, which only counts
 *    with a cluster dimension; shared memory carveout; NVLink-centric
 *    scheduling);
 *  - events fired by the launch (programmatic event, launch completion
 *    event): recorded on the stream right after the kernel, so they fire
 *    once it has completed: later than a GPU may, which both attributes
 *    allow;
 *  - refused with cudaErrorNotSupported: cooperative launches and
 *    clusters larger than one block (a slice of SMs cannot promise
 *    co-residency), device-updatable graph nodes (graphs), and any
 *    attribute this file does not know.
 */
#include "cudart.h"
#include "cudart_launch.h"
#include "cudart_module.h"

/* room for the events of a launch: more than two is a caller's mistake */
#define LAUNCH_EX_MAX_EVENTS 2

/* The events to record after the kernel. */
struct launch_ex_events {
	cudaEvent_t ev[LAUNCH_EX_MAX_EVENTS];
	unsigned int n;
};

/* Checks one attribute; an event to fire goes into *evs. */
static cudaError_t attr_check(const cudaLaunchAttribute *a,
			      struct launch_ex_events *evs)
{
	const cudaLaunchAttributeValue *v = &a->val;

	switch (a->id) {
	case cudaLaunchAttributeIgnore:
	case cudaLaunchAttributeAccessPolicyWindow:
	case cudaLaunchAttributeSynchronizationPolicy:
	case cudaLaunchAttributeClusterSchedulingPolicyPreference:
	case cudaLaunchAttributeProgrammaticStreamSerialization:
	case cudaLaunchAttributePriority:
	case cudaLaunchAttributeMemSyncDomainMap:
	case cudaLaunchAttributeMemSyncDomain:
	case cudaLaunchAttributePreferredClusterDimension:
	case cudaLaunchAttributePreferredSharedMemoryCarveout:
	case cudaLaunchAttributeNvlinkUtilCentricScheduling:
		return cudaSuccess;
	case cudaLaunchAttributeCooperative:
		if (!v->cooperative)
			return cudaSuccess;
		return cudart_unsupported(
			"cudaLaunchKernelEx(cudaLaunchAttributeCooperative)");
	case cudaLaunchAttributeClusterDimension:
		/* a cluster of one block is what every launch has */
		if (v->clusterDim.x == 1 && v->clusterDim.y == 1 &&
		    v->clusterDim.z == 1)
			return cudaSuccess;
		return cudart_unsupported(
			"cudaLaunchKernelEx("
			"cudaLaunchAttributeClusterDimension)");
	case cudaLaunchAttributeProgrammaticEvent:
		if (evs->n == LAUNCH_EX_MAX_EVENTS)
			return cudaErrorInvalidValue;
		if (!v->programmaticEvent.event)
			return cudaErrorInvalidResourceHandle;
		evs->ev[evs->n++] = v->programmaticEvent.event;
		return cudaSuccess;
	case cudaLaunchAttributeLaunchCompletionEvent:
		if (evs->n == LAUNCH_EX_MAX_EVENTS)
			return cudaErrorInvalidValue;
		if (!v->launchCompletionEvent.event)
			return cudaErrorInvalidResourceHandle;
		evs->ev[evs->n++] = v->launchCompletionEvent.event;
		return cudaSuccess;
	case cudaLaunchAttributeDeviceUpdatableKernelNode:
		return cudart_unsupported(
			"cudaLaunchKernelEx("
			"cudaLaunchAttributeDeviceUpdatableKernelNode)");
	}
	return cudart_unsupported(
		"cudaLaunchKernelEx(an unknown launch attribute)");
}

/* The launch behind both names, on stream (what the caller's stream 0
 * means is the caller's business: see cudart_ptsz.c). */
cudaError_t cudart_launch_ex(const cudaLaunchConfig_t *config, const void *func,
			     void **args, cudaStream_t stream)
{
	struct launch_ex_events evs = {.n = 0};
	cudaError_t err = cudart_enter();
	unsigned int i;

	if (err != cudaSuccess)
		return cudart_ret(err);
	if (!config || (config->numAttrs && !config->attrs))
		return cudart_ret(cudaErrorInvalidValue);
	for (i = 0; i < config->numAttrs; i++) {
		err = attr_check(&config->attrs[i], &evs);
		if (err != cudaSuccess)
			return cudart_ret(err);
	}
	err = cudart_launch(cudart_func_of(func), config->gridDim,
			    config->blockDim, args, config->dynamicSmemBytes,
			    stream);
	for (i = 0; err == cudaSuccess && i < evs.n; i++)
		err = cudart_ret_cu(cuEventRecord((CUevent)evs.ev[i],
						  cudart_stream(stream)));
	return err;
}

CUDART_API cudaError_t CUDARTAPI cudaLaunchKernelExC(
	const cudaLaunchConfig_t *config, const void *func, void **args)
{
	return cudart_launch_ex(config, func, args,
				config ? config->stream : NULL);
}
