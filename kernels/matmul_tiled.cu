// SPDX-License-Identifier: MIT
/*
 * matmulTiled: C = A * B for n x n row-major matrices, with 16x16 tiles
 * staged in shared memory. Launch with 16x16 blocks and a grid of
 * ceil(n / 16) x ceil(n / 16); any n works (edges are bounds-checked and
 * padded with zeros). The products are accumulated with fmaf in k order,
 * so the C twin gets bit-identical results.
 */
#include "matmul_tile.cuh"

extern "C" __global__ void matmulTiled(const float *A, const float *B, float *C,
				       int n)
{
	matmul_tile(A, B, C, n);
}
