/* SPDX-License-Identifier: MIT */
/*
 * The planner's part of swapping (docs/DESIGN.md, "Swap"): which idle
 * vGPUs to swap out so that a create or a resume fits. Bookkeeping on a
 * copy of struct plan (plan.h, plan_move.h), no I/O; unit-tested in
 * tests/unit/test_plan_swap.c.
 *
 * Rules:
 *  - only the candidates the caller gives (vgpud checked that each may go
 *    out now: idle long enough, allowed, nothing else happening to it);
 *  - what needs room is placed as a create (plan_reserve) or, for a
 *    suspended vGPU, as a resume (plan_move_choose) would place it, on
 *    its GPU or the first GPU where swapping makes room;
 *  - candidates go out longest idle first (ties: the larger quota, then
 *    the name) until it fits; then each chosen one, shortest idle first,
 *    is kept in when it fits without it: no vGPU goes out for nothing.
 */
#ifndef VGPU_PLAN_SWAP_H
#define VGPU_PLAN_SWAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

#define PLAN_SWAP_MAX 64 /* victims of one choice */

/* A vGPU that may be swapped out (it is in the plan, not suspended). */
struct plan_swap_cand {
	const char *name;
	uint64_t idle_ms; /* idle this long */
};

/* What needs room. */
struct plan_swap_need {
	const char *name;
	bool existing;	      /* a suspended vGPU in the plan: a resume */
	uint32_t gpu;	      /* ordinal or PLAN_GPU_ANY */
	uint64_t gpu_exclude; /* bit g: GPU g may not be chosen by ANY */
	uint32_t sms;
	uint64_t memory;
};

struct plan_swap_choice {
	uint32_t gpu;		     /* where it fits then */
	uint32_t n;		     /* victims; 0: it fits as it is */
	uint32_t idx[PLAN_SWAP_MAX]; /* into the candidates, longest idle
					first */
	uint64_t bytes;		     /* quota they give back */
};

/*
 * Victims among c[0 .. n) that make room for need. 0 with out filled
 * (out->n 0: no swap needed); -1 with a sentence in err saying why not
 * even swapping out every candidate would do (the planner's, for the
 * last GPU tried), or that there is no candidate.
 */
int plan_swap_choose(const struct plan *p, const struct plan_swap_cand *c,
		     uint32_t n, const struct plan_swap_need *need,
		     struct plan_swap_choice *out, char *err, size_t errlen);

#endif /* VGPU_PLAN_SWAP_H */
