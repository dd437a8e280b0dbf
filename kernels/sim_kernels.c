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
void sim_spinFor(const struct sim_block *blk, void **params);
void sim_oobWrite(const struct sim_block *blk, void **params);
void sim_computeBound(const struct sim_block *blk, void **params);
void sim_computeBoundTimed(const struct sim_block *blk, void **params);
void sim_readGlobal(const struct sim_block *blk, void **params);
void sim_resizeSeqStep(const struct sim_block *blk, void **params);
/* The runtime-API programs' kernels (tests/runtime, bench/rt_*.cu), in
 * kernels/rt_twins_*.c; C++ kernels, so their names are mangled. */
void sim_rt_vectorAdd(const struct sim_block *blk, void **params);
void sim_rt_transformChunk(const struct sim_block *blk, void **params);
void sim_rt_incrementAll(const struct sim_block *blk, void **params);
void sim_rt_doubleInto(const struct sim_block *blk, void **params);
void sim_rt_fillPattern(const struct sim_block *blk, void **params);
void sim_rt_addScalar(const struct sim_block *blk, void **params);
void sim_rt_fillValue(const struct sim_block *blk, void **params);
void sim_rt_emptyKernel(const struct sim_block *blk, void **params);
void sim_rt_staticTile(const struct sim_block *blk, void **params);
void sim_rt_reverseChunks(const struct sim_block *blk, void **params);
void sim_rt_applyWeights(const struct sim_block *blk, void **params);
void sim_rt_axpyT_float(const struct sim_block *blk, void **params);
void sim_rt_axpyT_int(const struct sim_block *blk, void **params);
void sim_rt_transformT_float(const struct sim_block *blk, void **params);
void sim_rt_transformT_int(const struct sim_block *blk, void **params);

#define PTR 8 /* device pointers are 64-bit */

const struct sim_kernel_desc sim_kernels[] = {
	{"vecAdd", sim_vecAdd, 4, {PTR, PTR, PTR, 4}},
	{"matmulTiled", sim_matmulTiled, 4, {PTR, PTR, PTR, 4}},
	{"saxpy", sim_saxpy, 4, {4, PTR, PTR, 4}},
	{"chainStep", sim_chainStep, 3, {PTR, 4, 8}},
	{"recordSmid", sim_recordSmid, 1, {PTR}},
	{"spinForever", sim_spinForever, 1, {PTR}},
	{"spinAfterTrigger", sim_spinForever, 1, {PTR}}, /* no trigger here */
	{"spinFor", sim_spinFor, 2, {PTR, 8}},
	{"oobWrite", sim_oobWrite, 2, {PTR, 8}},
	{"computeBound", sim_computeBound, 2, {PTR, 4}},
	{"computeBoundTimed", sim_computeBoundTimed, 3, {PTR, 4, PTR}},
	{"readGlobal", sim_readGlobal, 1, {PTR}},
	{"resizeSeqStep", sim_resizeSeqStep, 5, {PTR, 4, 8, PTR, PTR}},
	/* tests/runtime/<name>.cu and bench/rt_<name>.cu */
	{"_Z9vectorAddPKfS0_Pfi", sim_rt_vectorAdd, 4, {PTR, PTR, PTR, 4}},
	{"_Z12matmulSharedPKfS0_Pfi", sim_matmulTiled, 4, {PTR, PTR, PTR, 4}},
	{"_Z14transformChunkPiii", sim_rt_transformChunk, 3, {PTR, 4, 4}},
	{"_Z12incrementAllPii", sim_rt_incrementAll, 2, {PTR, 4}},
	{"_Z10doubleIntoPKiPii", sim_rt_doubleInto, 3, {PTR, PTR, 4}},
	{"_Z11fillPatternPiii", sim_rt_fillPattern, 3, {PTR, 4, 4}},
	{"_Z9addScalarPiii", sim_rt_addScalar, 3, {PTR, 4, 4}},
	{"_Z9fillValuePiii", sim_rt_fillValue, 3, {PTR, 4, 4}},
	{"_Z11emptyKernelv", sim_rt_emptyKernel, 0, {0}},
	{"_Z10staticTilePf", sim_rt_staticTile, 1, {PTR}},
	{"_Z13reverseChunksPii", sim_rt_reverseChunks, 2, {PTR, 4}},
	{"_Z12applyWeightsPKfPfi", sim_rt_applyWeights, 3, {PTR, PTR, 4}},
	{"_Z5axpyTIfEvT_PKS0_PS0_i", sim_rt_axpyT_float, 4, {4, PTR, PTR, 4}},
	{"_Z5axpyTIiEvT_PKS0_PS0_i", sim_rt_axpyT_int, 4, {4, PTR, PTR, 4}},
	{"_Z10transformTIf6AffineIfEEvPKT_PS2_iT0_",
	 sim_rt_transformT_float,
	 4,
	 {PTR, PTR, 4, 8}},
	{"_Z10transformTIi6AffineIiEEvPKT_PS2_iT0_",
	 sim_rt_transformT_int,
	 4,
	 {PTR, PTR, 4, 8}},
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
