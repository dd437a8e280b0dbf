/* SPDX-License-Identifier: MIT */
/*
 * The CUDA debugger's entry points (cuda-gdb and debuggers built on its
 * API find them in libcuda.so.1 by name). Newer CUDA 13 toolkits list them
 * in lib64/stubs/libcuda.so, so gen_cuda_stubs.py asks for them, but they
 * are declared in cudadebugger.h, not in the driver headers, and return a
 * CUDBGResult or nothing, not a CUresult: written here by hand. A vGPU's
 * kernels run in the host's worker, out of a guest debugger's reach: the
 * calls that answer say so once and fail with CUDBG_ERROR_NOT_SUPPORTED;
 * the hooks the driver calls for a debugger to break on do nothing.
 */
#include <stdint.h>
#include <stdio.h>

#include "client_api.h"
#include "cuda_unsupported.h"

/* cudadebugger.h's CUDBGResult value for "not supported" */
#define CUDBG_ERROR_NOT_SUPPORTED 0x002e

static int debugger_unsupported(const char *call, int *said)
{
	cuda_say_once(said,
		      "%s: the CUDA debugger API is not supported on a vGPU "
		      "(CUDBG_ERROR_NOT_SUPPORTED)",
		      call);
	return CUDBG_ERROR_NOT_SUPPORTED;
}

VGPU_API int cudbgGetAPIVersion(uint32_t *major, uint32_t *minor, uint32_t *rev)
{
	static int said;

	return debugger_unsupported("cudbgGetAPIVersion", &said);
}

VGPU_API int cudbgGetAPI(uint32_t major, uint32_t minor, uint32_t rev,
			 void *api)
{
	static int said;

	return debugger_unsupported("cudbgGetAPI", &said);
}

VGPU_API int cudbgMain(int client_pid, uint32_t client_revision, int session_id,
		       int attach_state, int attach_event_initialized,
		       int write_fd, int detach_fd, int attach_stub_in_use,
		       int enable_preemption_debugging)
{
	static int said;

	return debugger_unsupported("cudbgMain", &said);
}

/* the hooks: a debugger sets breakpoints on them; nothing to do here */
VGPU_API void cudbgApiInit(uint32_t arg)
{
}

VGPU_API void cudbgApiAttach(void)
{
}

VGPU_API void cudbgApiDetach(void)
{
}

VGPU_API void cudbgReportDriverApiError(void)
{
}

VGPU_API void cudbgReportDriverInternalError(void)
{
}
