/* SPDX-License-Identifier: MIT */
/*
 * sim_fmaf: a correctly rounded fused multiply-add for the C twins, so
 * they match the GPU's fmaf bit for bit without linking libm (the worker
 * links the twins with nothing but -ldl).
 *
 * The product of two floats is exact in a double. The double sum is made
 * "round to odd" (the exact error of the sum, from TwoSum, decides which
 * neighbour to take when the rounded sum is even), and rounding that to
 * float is then the correctly rounded fma: round-to-odd with 29 spare
 * bits cannot double-round.
 */
#ifndef VGPU_SIM_FMAF_H
#define VGPU_SIM_FMAF_H

#include <stdint.h>
#include <string.h>

static inline float sim_fmaf(float a, float b, float c)
{
	double p = (double)a * (double)b; /* exact */
	double s = p + (double)c;
	double t, err;
	uint64_t bits;

	if (!__builtin_isfinite(s))
		return (float)s;
	t = s - p;
	err = (p - (s - t)) + ((double)c - t); /* exact: s + err = p + c */
	memcpy(&bits, &s, sizeof(bits));
	if (err != 0.0 && (bits & 1) == 0) {
		/* step to the odd neighbour on the side of the exact sum */
		if ((err > 0.0) == (s > 0.0))
			bits++;
		else
			bits--;
		memcpy(&s, &bits, sizeof(s));
	}
	return (float)s;
}

#endif /* VGPU_SIM_FMAF_H */
