// SPDX-License-Identifier: MIT
/*
 * computeBound: each thread runs a dependent chain of iters FMAs on a
 * value derived from its index and writes the result. No memory traffic in
 * the loop, so run time scales with the SMs a slice has: the kernel for
 * slice-fidelity measurements. The C twin does the same float operations
 * and gets bit-identical results.
 */
extern "C" __global__ void computeBound(float *out, int iters)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	float x = (float)(i & 1023u) * 0.001f;

	for (int k = 0; k < iters; k++)
		x = fmaf(x, 0.999999f, 0.000001f);
	out[i] = x;
}
