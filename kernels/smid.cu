// SPDX-License-Identifier: MIT
/*
 * recordSmid: block b (linear block index) writes the id of the SM it ran
 * on to out[b]. Shows which SMs a slice's kernels really use, so tests can
 * check that vGPUs on disjoint SM groups stay disjoint. Outside MPS the ids
 * are physical; under MPS each client sees its own SMs numbered from 0
 * (seen on an H100, driver 580), so there they prove nothing about overlap.
 */
extern "C" __global__ void recordSmid(unsigned *out)
{
	if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) {
		unsigned smid;
		unsigned b = blockIdx.x +
			     gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);

		asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
		out[b] = smid;
	}
}
