// SPDX-License-Identifier: MIT
/*
 * saxpy: y[i] = a * x[i] + y[i]. Its first parameter is a float passed by
 * value (4 bytes, followed by padding before the 8-byte pointer), which
 * tests that the parameter layout is carried correctly.
 */
extern "C" __global__ void saxpy(float a, const float *x, float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = fmaf(a, x[i], y[i]);
}
