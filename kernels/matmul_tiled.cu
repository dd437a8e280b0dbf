// SPDX-License-Identifier: MIT
/*
 * matmulTiled: C = A * B for n x n row-major matrices, with 16x16 tiles
 * staged in shared memory. Launch with 16x16 blocks and a grid of
 * ceil(n / 16) x ceil(n / 16); any n works (edges are bounds-checked and
 * padded with zeros). The products are accumulated with fmaf in k order,
 * so the C twin gets bit-identical results.
 */
#define TILE 16

extern "C" __global__ void matmulTiled(const float *A, const float *B, float *C,
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
