/* SPDX-License-Identifier: MIT */
/*
 * cuGetProcAddress's table, generated from procmap-cuda13.txt by
 * gen_proc_table.py. No cuda.h here: the generated file declares every
 * function it names as void (void), which would clash with cuda.h.
 */
#ifndef VGPU_CUDA_PROC_H
#define VGPU_CUDA_PROC_H

#include <stddef.h>

/*
 * From CUDA version `version` on, the base name `name` asked with
 * (per_thread) or without the per-thread-default-stream flag is `fn`;
 * NULL: not found from that version on.
 */
struct proc_step {
	const char *name;
	int per_thread;
	int version;
	void (*fn)(void);
};

/* Sorted by name (strcmp), then per_thread, then version. */
extern const struct proc_step proc_steps[];
extern const unsigned int proc_step_count;

#endif /* VGPU_CUDA_PROC_H */
