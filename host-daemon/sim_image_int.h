/* SPDX-License-Identifier: MIT */
/*
 * Inside sim_image: what sim_image.c (fatbins, cubins) and
 * sim_image_ptx.c (PTX text) share.
 */
#ifndef VGPU_SIM_IMAGE_INT_H
#define VGPU_SIM_IMAGE_INT_H

#include <elf.h>

#include "sim_image.h"

struct sim_image_kernel {
	const char *name;
	struct vgpu_kernel_info *ptx; /* PTX's layout; NULL: the cubin's,
					 read when asked */
};

struct sim_image {
	unsigned char *code; /* a copy, uncompressed: the cubin, or the PTX
				text with a NUL after it */
	size_t len;
	int ptx;	      /* code is PTX: the names are our own copies */
	const Elf64_Shdr *sh; /* a cubin's sections, inside code */
	uint32_t shnum;
	const char *shstr; /* their names */
	uint64_t shstr_len;
	struct sim_image_kernel *kernels;
	uint32_t nkernels, kernels_cap;
	struct sim_image_var *vars;
	uint32_t nvars, vars_cap;
	uint64_t var_bytes; /* of all vars, at most SIM_IMAGE_VARS_MAX */
};

/* What an image may declare: its variables together (the simulator
 * gives each storage in the worker), and how many kernels and variables
 * it names. A library's own are far below (cuBLAS's: 112 bytes). */
#define SIM_IMAGE_VARS_MAX  (64u << 20)
#define SIM_IMAGE_NAMES_MAX (1u << 20)

/* Room for one more element in *arr (n used of *cap, each size bytes):
 * 0, or -1 out of memory. */
int sim_image_grow(void *arr, uint32_t n, uint32_t *cap, size_t size);

/* One more variable of bytes: 0, or -2 with *why when the image would
 * declare more than it may (SIM_IMAGE_VARS_MAX, SIM_IMAGE_NAMES_MAX). */
int sim_image_var_room(struct sim_image *im, uint64_t bytes, const char **why);

/* The kernels and variables of PTX text im->code: 0, -1 out of memory,
 * -2 with *why. */
int sim_image_ptx_read(struct sim_image *im, const char **why);

#endif /* VGPU_SIM_IMAGE_INT_H */
