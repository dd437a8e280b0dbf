/* SPDX-License-Identifier: MIT */
/*
 * What a library image names, for the simulator: its kernels (with their
 * parameter layout) and its module-scope variables (with their size and
 * initial bytes), read from the image's cubin (an ELF file) or, without
 * one, its PTX. The image is a cubin, PTX text, or a fatbin whose entries
 * may be compressed (zstd, as CUDA 13's libraries ship them, or LZ4, as
 * cuFFT's PTX is); of a fatbin's entries a cubin before PTX, and for
 * sm_90, else the newest older one, else the first.
 *
 * The image is the client's: every offset and size in it is checked
 * before it is used. An image with nothing it can read gives no
 * sim_image; the simulator then falls back to finding names by their
 * text (backend_sim.c).
 */
#ifndef VGPU_SIM_IMAGE_H
#define VGPU_SIM_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include <vgpu/protocol.h>

struct sim_image;

/* A module-scope variable of the image. */
struct sim_image_var {
	const char *name;
	uint64_t bytes;
	const void *init; /* its initial bytes, or NULL: zeros */
};

/*
 * Read image (len bytes). 0 and *out set: its code was read; 0 and *out
 * NULL: there is none to read; -1: out of memory. *why (may be NULL) says
 * why an image that claimed code could not be read.
 */
int sim_image_open(const void *image, size_t len, struct sim_image **out,
		   const char **why);
void sim_image_free(struct sim_image *im);

/* The number of kernels, and kernel i's name (NULL past the end). */
uint32_t sim_image_kernel_count(const struct sim_image *im);
const char *sim_image_kernel_name(const struct sim_image *im, uint32_t i);

/*
 * Kernel name's parameter layout (what cuKernelGetParamInfo says) into
 * *info: 0, or -1 when the image has no such kernel or its parameter
 * records cannot be read.
 */
int sim_image_kernel_params(const struct sim_image *im, const char *name,
			    struct vgpu_kernel_info *info);

/* The memory reading im took and its variables will take: the code
 * unpacked plus the variables' bytes (the simulator's budget). */
uint64_t sim_image_bytes(const struct sim_image *im);

/* The number of variables, and variable i (NULL past the end). */
uint32_t sim_image_var_count(const struct sim_image *im);
const struct sim_image_var *sim_image_var(const struct sim_image *im,
					  uint32_t i);

#endif /* VGPU_SIM_IMAGE_H */
