/* SPDX-License-Identifier: MIT */
/*
 * What the generated NOT_SUPPORTED stubs of libcuda.so.1 need (see
 * gen_cuda_stubs.py), and the one way the library says it refuses
 * something. It does not include cuda.h: the stubs are defined
 * as int name(void), which would clash with cuda.h's prototypes.
 */
#ifndef VGPU_CUDA_UNSUPPORTED_H
#define VGPU_CUDA_UNSUPPORTED_H

/*
 * CUDA_ERROR_NOT_SUPPORTED as an int (a CUresult is returned as one).
 * The first call for a given *said writes one stderr line naming call.
 */
int cuda_unsupported(const char *call, int *said);

/*
 * One line on stderr ("vgpu: " and fmt), the first time for a given
 * *said: how every refusal of the library says so without flooding the
 * program's log.
 */
void cuda_say_once(int *said, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * A driver call a vGPU cannot serve. It never reads its arguments, so
 * any caller's argument list is fine: on x86-64 (SysV) and AArch64 the
 * caller passes and removes the arguments, and the CUresult (an int-sized
 * enum) comes back in the same register as an int.
 */
#define CUDA_UNSUPPORTED(name)                                                 \
	__attribute__((visibility("default"))) int name(void);                 \
	int name(void)                                                         \
	{                                                                      \
		static int said;                                               \
		return cuda_unsupported(#name, &said);                         \
	}

#endif /* VGPU_CUDA_UNSUPPORTED_H */
