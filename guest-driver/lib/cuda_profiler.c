/* SPDX-License-Identifier: MIT */
/*
 * cuProfilerStart/Stop (cudaProfiler.h): they mark where a profiler
 * attached to the process should collect. No profiler reaches a vGPU's
 * kernels from the guest (they run in the host's worker), so there is
 * nothing to start: each succeeds in a valid context, as with no
 * profiler attached.
 */
#include <cudaProfiler.h>

#include "client.h"
#include "client_api.h"

VGPU_API CUresult CUDAAPI cuProfilerStart(void)
{
	struct client *c;

	return client_enter(&c);
}

VGPU_API CUresult CUDAAPI cuProfilerStop(void)
{
	struct client *c;

	return client_enter(&c);
}
