// SPDX-License-Identifier: MIT
/*
 * resizeSeqStep: one link of a chain of dependent launches, for the resize
 * tests. v[i] = v[i] * 31 + k + i (each launch reads the one before: a
 * lost, repeated or reordered launch changes every element), and thread 0
 * of block 0 appends k to log: log[0] counts the launches that ran,
 * log[1 + j] is the k of the j-th one, so the order itself is on record.
 * smids[k] is the SM that ran block 0 of launch k (%smid; virtual under
 * MPS).
 */
extern "C" __global__ void resizeSeqStep(unsigned long long *v, int n,
					 unsigned long long k,
					 unsigned long long *log,
					 unsigned int *smids)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		v[i] = v[i] * 31ull + k + (unsigned long long)i;
	if (blockIdx.x == 0 && threadIdx.x == 0) {
		unsigned long long j = log[0];
		unsigned int smid;

		asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
		log[1 + j] = k;
		log[0] = j + 1;
		smids[k] = smid;
	}
}
