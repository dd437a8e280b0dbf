/* SPDX-License-Identifier: MIT */
/*
 * C twins of the template kernels of tests/runtime/templates_rt.cu, one
 * per instantiation (the simulator knows them by their mangled names):
 *   axpyT<T>(T a, const T *x, T *y, int n):       y[i] = a * x[i] + y[i]
 *   transformT<T, Affine<T>>(const T *in, T *out, int n, Affine<T> f):
 *                                                 out[i] = f.a * in[i] + f.b
 * nvcc contracts the float a * x + y into one fma, so the float twins use
 * sim_fmaf and match bit for bit.
 */
#include "sim_fmaf.h"

#include "sim_kernel.h"

/* Affine<T>: the functor, passed by value (two T, no padding). */
struct rt_affine_f {
	float a, b;
};

struct rt_affine_i {
	int a, b;
};

void sim_rt_axpyT_float(const struct sim_block *blk, void **params)
{
	float a = *(const float *)params[0];
	const float *x = *(const float *const *)params[1];
	float *y = *(float *const *)params[2];
	int n = *(const int *)params[3];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n)
			y[i] = sim_fmaf(a, x[i], y[i]);
	}
}

void sim_rt_axpyT_int(const struct sim_block *blk, void **params)
{
	int a = *(const int *)params[0];
	const int *x = *(const int *const *)params[1];
	int *y = *(int *const *)params[2];
	int n = *(const int *)params[3];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n)
			y[i] = (int)((unsigned)a * (unsigned)x[i] +
				     (unsigned)y[i]);
	}
}

void sim_rt_transformT_float(const struct sim_block *blk, void **params)
{
	const float *in = *(const float *const *)params[0];
	float *out = *(float *const *)params[1];
	int n = *(const int *)params[2];
	const struct rt_affine_f *f = params[3];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n)
			out[i] = sim_fmaf(f->a, in[i], f->b);
	}
}

void sim_rt_transformT_int(const struct sim_block *blk, void **params)
{
	const int *in = *(const int *const *)params[0];
	int *out = *(int *const *)params[1];
	int n = *(const int *)params[2];
	const struct rt_affine_i *f = params[3];

	for (uint32_t tx = 0; tx < blk->block_dim.x; tx++) {
		int i = (int)(blk->block_idx.x * blk->block_dim.x + tx);

		if (i < n)
			out[i] = (int)((unsigned)f->a * (unsigned)in[i] +
				       (unsigned)f->b);
	}
}
