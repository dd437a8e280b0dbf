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

#define TILE 16

__global__ void matmulShared(const float *A, const float *B, float *C, int n)
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
