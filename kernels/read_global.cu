// SPDX-License-Identifier: MIT
/*
 * readGlobal: out[i] = vgpuTestGlobal[i] for i < 4. A module-scope variable
 * the host fills with cudaMemcpyToSymbol (or LIBRARY_GET_GLOBAL and a copy)
 * and a kernel reads: the smallest check of module variables end to end.
 */
__device__ float vgpuTestGlobal[4];

extern "C" __global__ void readGlobal(float *out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < 4)
		out[i] = vgpuTestGlobal[i];
}
