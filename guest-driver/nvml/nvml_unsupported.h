/* SPDX-License-Identifier: MIT */
/*
 * How the library refuses what a vGPU cannot answer, and what the
 * generated stubs (gen_nvml_stubs.py) need. It does not include nvml.h:
 * the stubs are defined as int name(void), which would clash with
 * nvml.h's prototypes.
 */
#ifndef VGPU_NVML_UNSUPPORTED_H
#define VGPU_NVML_UNSUPPORTED_H

/*
 * NVML_ERROR_NOT_SUPPORTED as an int (NVML_ERROR_UNINITIALIZED before
 * nvmlInit). With VGPU_TRACE=1 the first call for a given *said writes
 * one stderr line naming call; without it, nothing: NOT_SUPPORTED is an
 * everyday NVML answer that monitoring tools ask for and skip.
 */
int nvml_unsupported(const char *call, int *said);

/* The line alone, for refusals that checked their arguments first. */
void nvml_say_unsupported(const char *call, int *said);

/*
 * An NVML call a vGPU does not serve. It never reads its arguments, so
 * any caller's argument list is fine: on x86-64 (SysV) and AArch64 the
 * caller passes and removes the arguments, and the nvmlReturn_t (an
 * int-sized enum) comes back in the same register as an int.
 */
#define NVML_UNSUPPORTED(name)                                                 \
	__attribute__((visibility("default"))) int name(void);                 \
	int name(void)                                                         \
	{                                                                      \
		static int said;                                               \
		return nvml_unsupported(#name, &said);                         \
	}

#endif /* VGPU_NVML_UNSUPPORTED_H */
