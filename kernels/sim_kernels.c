/* SPDX-License-Identifier: MIT */
/*
 * The table of C twins: one entry per kernels/<name>.cu kernel, with the
 * parameter sizes the simulator uses to lay out the parameter buffer
 * exactly as the CUDA kernel's (natural alignment, as cuKernelGetParamInfo
 * reports for these signatures).
 */
#include <string.h>

#include "sim_kernel.h"

/* The twins, one per file kernels/<name>.c. */
void sim_vecAdd(const struct sim_block *blk, void **params);
void sim_matmulTiled(const struct sim_block *blk, void **params);
void sim_saxpy(const struct sim_block *blk, void **params);
void sim_chainStep(const struct sim_block *blk, void **params);
void sim_recordSmid(const struct sim_block *blk, void **params);
void sim_spinForever(const struct sim_block *blk, void **params);
void sim_oobWrite(const struct sim_block *blk, void **params);
void sim_computeBound(const struct sim_block *blk, void **params);

#define PTR 8 /* device pointers are 64-bit */

const struct sim_kernel_desc sim_kernels[] = {
	{"vecAdd", sim_vecAdd, 4, {PTR, PTR, PTR, 4}},
	{"matmulTiled", sim_matmulTiled, 4, {PTR, PTR, PTR, 4}},
	{"saxpy", sim_saxpy, 4, {4, PTR, PTR, 4}},
	{"chainStep", sim_chainStep, 3, {PTR, 4, 8}},
	{"recordSmid", sim_recordSmid, 1, {PTR}},
	{"spinForever", sim_spinForever, 1, {PTR}},
	{"oobWrite", sim_oobWrite, 2, {PTR, 8}},
	{"computeBound", sim_computeBound, 2, {PTR, 4}},
	{NULL, NULL, 0, {0}},
};

const struct sim_kernel_desc *sim_kernel_find(const char *name)
{
	const struct sim_kernel_desc *k;

	if (!name)
		return NULL;
	for (k = sim_kernels; k->name; k++)
		if (strcmp(k->name, name) == 0)
			return k;
	return NULL;
}
