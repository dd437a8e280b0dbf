/* SPDX-License-Identifier: MIT */
/*
 * C twins of the plain kernels of the runtime-API test programs and
 * benchmarks (tests/runtime/<name>.cu, bench/rt_<name>.cu). Those are C++
 * kernels, so the simulator knows them by their mangled names (see
 * sim_kernels.c);
 * each function here is one whole block of the kernel named above it.
 * Integer arithmetic is done in unsigned, which wraps as the GPU's does.
 */
#include "sim_kernel.h"

/* The index of thread tx of this block along x. */
static inline int rt_index(const struct sim_block *blk, uint32_t tx)
{
	return (int)(blk->block_idx.x * blk->block_dim.x + tx);
}

/* vectorAdd(const float *a, const float *b, float *c, int n) */
void sim_rt_vectorAdd(const struct sim_block *blk, void **params)
{
	const float *a = *(const float *const *)params[0];
	const float *b = *(const float *const *)params[1];
	float *c = *(float *const *)params[2];
	int n = *(const int *)params[3];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = rt_index(blk, tx);

		if (i < n)
			c[i] = a[i] + b[i];
	}
}

/* transformChunk(int *d, int n, int first): d[i] = d[i] * 3 +
 * (first + i) % 7 */
void sim_rt_transformChunk(const struct sim_block *blk, void **params)
{
	int *d = *(int *const *)params[0];
	int n = *(const int *)params[1];
	int first = *(const int *)params[2];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = rt_index(blk, tx);

		if (i < n)
			d[i] = (int)((unsigned)d[i] * 3u +
				     (unsigned)((first + i) % 7));
	}
}

/* incrementAll(int *d, int n) */
void sim_rt_incrementAll(const struct sim_block *blk, void **params)
{
	int *d = *(int *const *)params[0];
	int n = *(const int *)params[1];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = rt_index(blk, tx);

		if (i < n)
			d[i] = (int)((unsigned)d[i] + 1u);
	}
}

/* doubleInto(const int *in, int *out, int n) */
void sim_rt_doubleInto(const struct sim_block *blk, void **params)
{
	const int *in = *(const int *const *)params[0];
	int *out = *(int *const *)params[1];
	int n = *(const int *)params[2];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = rt_index(blk, tx);

		if (i < n)
			out[i] = (int)((unsigned)in[i] * 2u);
	}
}

/* fillPattern(int *d, int n, int base): d[i] = base + 2 * i */
void sim_rt_fillPattern(const struct sim_block *blk, void **params)
{
	int *d = *(int *const *)params[0];
	int n = *(const int *)params[1];
	int base = *(const int *)params[2];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = rt_index(blk, tx);

		if (i < n)
			d[i] = (int)((unsigned)base + 2u * (unsigned)i);
	}
}

/* addScalar(int *d, int n, int v) */
void sim_rt_addScalar(const struct sim_block *blk, void **params)
{
	int *d = *(int *const *)params[0];
	int n = *(const int *)params[1];
	int v = *(const int *)params[2];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = rt_index(blk, tx);

		if (i < n)
			d[i] = (int)((unsigned)d[i] + (unsigned)v);
	}
}

/* fillValue(int *d, int n, int v) */
void sim_rt_fillValue(const struct sim_block *blk, void **params)
{
	int *d = *(int *const *)params[0];
	int n = *(const int *)params[1];
	int v = *(const int *)params[2];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = rt_index(blk, tx);

		if (i < n)
			d[i] = v;
	}
}

/* emptyKernel(): the launch benchmark's kernel does nothing. */
void sim_rt_emptyKernel(const struct sim_block *blk, void **params)
{
}

/* staticTile(float *d): d[i] *= 2 (through a shared tile on the GPU) */
void sim_rt_staticTile(const struct sim_block *blk, void **params)
{
	float *d = *(float *const *)params[0];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++)
		d[rt_index(blk, tx)] *= 2.0f;
}

/* reverseChunks(int *d, int per_block): block b reverses its chunk
 * d[b * per_block, (b + 1) * per_block) (through dynamic shared memory on
 * the GPU) */
void sim_rt_reverseChunks(const struct sim_block *blk, void **params)
{
	int *d = *(int *const *)params[0];
	int per_block = *(const int *)params[1];
	int *c = d + (uint64_t)blk->block_idx.x * (uint64_t)per_block;

	for (int i = 0, j = per_block - 1; i < j; i++, j--) {
		int t = c[i];

		c[i] = c[j];
		c[j] = t;
	}
}
