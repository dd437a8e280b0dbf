// SPDX-License-Identifier: MIT
/*
 * The tiled product both matmul kernels run: C = A * B for n x n
 * row-major floats, TILE x TILE blocks staged in shared memory, any n
 * (edges bounds-checked and padded with zeros), accumulated with fmaf in
 * k order so that the C twin (kernels/matmul_tiled.c) is bit-identical.
 * matmulTiled (kernels/matmul_tiled.cu, driver API, extern "C") and
 * matmulShared (kernels/matmul_shared.cuh, runtime API, a C++ name) are
 * two names for it.
 */
#ifndef VGPU_MATMUL_TILE_CUH
#define VGPU_MATMUL_TILE_CUH

#define TILE 16

static __device__ __forceinline__ void matmul_tile(const float *A,
						   const float *B, float *C,
						   int n)
{
	__shared__ float as[TILE][TILE];
	__shared__ float bs[TILE][TILE];
	int tx = threadIdx.x, ty = threadIdx.y;
	int row = blockIdx.y * TILE + ty;
	int col = blockIdx.x * TILE + tx;
	float sum = 0.0f;

	for (int t = 0; t < n; t += TILE) {
		as[ty][tx] =
			(row < n && t + tx < n) ? A[row * n + t + tx] : 0.0f;
		bs[ty][tx] =
			(t + ty < n && col < n) ? B[(t + ty) * n + col] : 0.0f;
		__syncthreads();
		for (int k = 0; k < TILE; k++)
			sum = fmaf(as[ty][k], bs[k][tx], sum);
		__syncthreads();
	}
	if (row < n && col < n)
		C[row * n + col] = sum;
}

#endif
