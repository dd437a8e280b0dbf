// SPDX-License-Identifier: MIT
/*
 * oobWrite: thread 0 of block 0 writes p[offset], an address chosen far
 * outside the vGPU's memory. A deliberate fault, to test that a wild write
 * kills only its own fault domain and that vgpud recovers.
 */
extern "C" __global__ void oobWrite(float *p, unsigned long long offset)
{
	if (blockIdx.x == 0 && threadIdx.x == 0)
		p[offset] = 1.0f;
}
