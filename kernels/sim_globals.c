/* SPDX-License-Identifier: MIT */
/*
 * The module-scope variables (__device__, __constant__) of the kernels in
 * kernels/<name>.cu, for the simulator: it gives each loaded library that names
 * one (see sim_kernel.h) zeroed storage of this many bytes, which the
 * program reaches with cudaMemcpyToSymbol and friends and a twin with
 * blk->global(blk, name).
 *
 * To add one: one line {"name", bytes}, with name exactly as declared in
 * the .cu file (at namespace scope, so the name is not mangled) and bytes
 * = sizeof the variable there; keep the table sorted by name and the
 * {NULL, 0} entry last.
 */
#include <stddef.h>

#include "sim_kernel.h"

const struct sim_global_desc sim_globals[] = {
	{"c_rtWeights", 8 * sizeof(float)},    /* tests/runtime/symbols_rt.cu */
	{"d_rtHits", sizeof(unsigned int)},    /* tests/runtime/symbols_rt.cu */
	{"vgpuTestGlobal", 4 * sizeof(float)}, /* read_global.cu */
	{NULL, 0},
};
