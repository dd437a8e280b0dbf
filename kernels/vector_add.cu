// SPDX-License-Identifier: MIT
/*
 * vecAdd: c[i] = a[i] + b[i], one element per thread. The smallest
 * end-to-end check of copies, parameter passing and launches.
 */
extern "C" __global__ void vecAdd(const float *a, const float *b, float *c,
				  int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}
