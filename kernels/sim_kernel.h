/* SPDX-License-Identifier: MIT */
/*
 * C twins of the CUDA kernels in kernels/<name>.cu, for the simulator backend.
 *
 * The simulator finds a kernel by its name: a library image (cubin, PTX or
 * uncompressed fatbin) "contains" a twin when the twin's name appears in it
 * as a NUL- or '('-terminated string. Kernels are declared extern "C" in
 * the .cu files, so the names are plain.
 *
 * A twin runs one whole thread block per call (so __syncthreads-style
 * tiling becomes plain loops); the simulator spreads the blocks of a grid
 * over the slice's SM threads. params[i] points at parameter i, exactly
 * as cuLaunchKernel's kernelParams.
 */
#ifndef VGPU_SIM_KERNEL_H
#define VGPU_SIM_KERNEL_H

#include <stdint.h>

struct sim_dim3 {
	uint32_t x, y, z;
};

struct sim_block {
	struct sim_dim3 block_idx;
	struct sim_dim3 block_dim;
	struct sim_dim3 grid_dim;
	uint32_t smid; /* the (simulated) SM that runs this block */
	/* set by the simulator when the watchdog or teardown wants the
	 * block to stop; endless twins poll it */
	const volatile int *stop;
	/* The storage of a module-scope variable (__device__/__constant__)
	 * of the library this kernel came from, by name; NULL if the
	 * library has none of that name. */
	void *(*global)(const struct sim_block *blk, const char *name);
	const void *library; /* for global(): the simulator's own */
};

typedef void (*sim_kernel_fn)(const struct sim_block *blk, void **params);

#define SIM_MAX_PARAMS 16

struct sim_kernel_desc {
	const char *name;
	sim_kernel_fn fn;
	uint32_t nparams;
	uint32_t param_sizes[SIM_MAX_PARAMS]; /* bytes; offsets follow
						 natural alignment */
};

/* The table of every twin, terminated by an entry with name == NULL. */
extern const struct sim_kernel_desc sim_kernels[];

/* Module-scope variables the twins use (__device__, __constant__): a
 * library image "contains" one when its name appears in it as for kernels.
 * Terminated by an entry with name == NULL. */
struct sim_global_desc {
	const char *name;
	uint32_t bytes;
};
extern const struct sim_global_desc sim_globals[];

/* The twin called name, or NULL. */
const struct sim_kernel_desc *sim_kernel_find(const char *name);

#endif /* VGPU_SIM_KERNEL_H */
