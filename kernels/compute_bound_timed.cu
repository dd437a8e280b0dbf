// SPDX-License-Identifier: MIT
/*
 * computeBoundTimed: computeBound (the same chain, the same results) that
 * also records, per block b, rec[4b..4b+3] = the global timer (ns) when
 * the block started and when it ended, the SM cycles in between
 * (clock64), and the SM it ran on (%smid: virtual under MPS, so only
 * good for counting the blocks that shared an SM). Where a kernel's time
 * goes: late starts (dispatch), slower blocks in cycles (the SM), or a
 * lower clock (cycles per ns).
 */
__device__ static unsigned long long global_ns(void)
{
	unsigned long long t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

extern "C" __global__ void computeBoundTimed(float *out, int iters,
					     unsigned long long *rec)
{
	unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
	float x = (float)(i & 1023u) * 0.001f;
	unsigned long long t0 = 0, c0 = 0;
	unsigned smid;

	if (threadIdx.x == 0) {
		t0 = global_ns();
		c0 = clock64();
	}
	for (int k = 0; k < iters; k++)
		x = fmaf(x, 0.999999f, 0.000001f);
	out[i] = x;
	__syncthreads();
	if (threadIdx.x == 0) {
		asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
		rec[4 * blockIdx.x + 0] = t0;
		rec[4 * blockIdx.x + 1] = global_ns();
		rec[4 * blockIdx.x + 2] = clock64() - c0;
		rec[4 * blockIdx.x + 3] = smid;
	}
}
