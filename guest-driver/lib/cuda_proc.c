/* SPDX-License-Identifier: MIT */
/*
 * cuGetProcAddress: our function for a driver symbol's base name, the
 * variant NVIDIA's driver gives for the caller's cudaVersion and flags.
 * The answers come from the generated table (cuda_proc_table.c, from
 * procmap-cuda13.txt: what NVIDIA's driver answered, measured), so each
 * request gets the variant whose ABI the caller was compiled for
 * (cuCtxCreate at 11040 is cuCtxCreate_v3, at 13000 cuCtxCreate_v4).
 */
#include <string.h>

#include "client_api.h"
#include "client_trace.h"
#include "cuda_proc.h"

/* name, then per_thread: the order of proc_steps. */
static int step_cmp(const struct proc_step *s, const char *name, int per_thread)
{
	int c = strcmp(s->name, name);

	return c ? c : s->per_thread - per_thread;
}

/* The first step of (name, per_thread), or NULL; *end is one past its last. */
static const struct proc_step *steps_of(const char *name, int per_thread,
					const struct proc_step **end)
{
	unsigned int lo = 0, hi = proc_step_count, first;

	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (step_cmp(&proc_steps[mid], name, per_thread) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == proc_step_count ||
	    step_cmp(&proc_steps[lo], name, per_thread) != 0)
		return NULL;
	first = lo;
	while (lo < proc_step_count &&
	       step_cmp(&proc_steps[lo], name, per_thread) == 0)
		lo++;
	*end = &proc_steps[lo];
	return &proc_steps[first];
}

/*
 * Works before cuInit, as cudart needs. The answer is the last step not
 * newer than cudaVersion (a version above every step gets the newest
 * variant). No function there: CUDA_SUCCESS with *pfn NULL, as cuda.h
 * documents and NVIDIA's driver answered the runtime's request for ""
 * (tests/trace/inventory-cuda13.txt), and symbolStatus says why, as
 * cuda.h defines the two: VERSION_NOT_SUFFICIENT when a
 * later step of the same name and flags has a function (the caller asked
 * for a version older than the call), else SYMBOL_NOT_FOUND (a name
 * NVIDIA's driver never hands out, like cudbgMain, or one it does not
 * know). Flags: 0 and CU_GET_PROC_ADDRESS_LEGACY_STREAM ask for the
 * legacy variants, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM for the
 * per-thread ones (which NVIDIA's driver lacks before CUDA 7.0); other
 * bits are CUDA_ERROR_INVALID_VALUE.
 */
VGPU_API CUresult CUDAAPI cuGetProcAddress_v2(
	const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
	CUdriverProcAddressQueryResult *symbolStatus)
{
	const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM |
				 CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
	int per_thread =
		(flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
	const struct proc_step *s, *end = NULL, *best = NULL;
	CUdriverProcAddressQueryResult st =
		CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;

	if (pfn)
		*pfn = NULL;
	/* a version above the driver's is refused, the status untouched, as
	 * NVIDIA's driver does (measured: 13010 with a 13000 driver) */
	if (!symbol || !pfn || (flags & ~known) || cudaVersion > CUDA_VERSION)
		return CUDA_ERROR_INVALID_VALUE;
	s = steps_of(symbol, per_thread, &end);
	for (; s && s < end; s++) {
		if (s->version <= cudaVersion)
			best = s;
		else if (s->fn)
			st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
	}
	if (best && best->fn) {
		*pfn = (void *)best->fn;
		st = CU_GET_PROC_ADDRESS_SUCCESS;
	}
	if (symbolStatus)
		*symbolStatus = st;
	if (client_trace_on())
		client_trace("proc %s %d %llu -> %d status %d\n", symbol,
			     cudaVersion, (unsigned long long)flags,
			     CUDA_SUCCESS, (int)st);
	return CUDA_SUCCESS;
}
