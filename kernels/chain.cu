// SPDX-License-Identifier: MIT
/*
 * chainStep: v[i] = v[i] * 31 + k + i. Each step depends on the one
 * before and the result depends on the order of the k values, so a chain
 * of launches checks that work on streams (and across events) runs in
 * order.
 */
extern "C" __global__ void chainStep(unsigned long long *v, int n,
				     unsigned long long k)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] = v[i] * 31ull + k + (unsigned long long)i;
}
