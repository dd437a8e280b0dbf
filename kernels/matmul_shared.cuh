// SPDX-License-Identifier: MIT
/*
 * matmulShared: C = A * B for n x n row-major floats, TILE x TILE blocks
 * through shared memory. One definition for the runtime test program
 * (tests/runtime/matmul_shared_rt.cu) and the benchmark
 * (bench/rt_matmul.cu); its C twin for the simulator is sim_matmulTiled
 * (kernels/matmul_tiled.c), registered by its mangled name in
 * kernels/sim_kernels.c.
 */
#ifndef VGPU_MATMUL_SHARED_CUH
#define VGPU_MATMUL_SHARED_CUH

#include "matmul_tile.cuh"

__global__ void matmulShared(const float *A, const float *B, float *C, int n)
{
	matmul_tile(A, B, C, n);
}

#endif
