/* SPDX-License-Identifier: MIT */
/*
 * The planner's part of save, restore and migration: where a vGPU goes
 * when it resumes or migrates, and what it gives back when it suspends.
 * Bookkeeping on struct plan (plan.h), no I/O; unit-tested in
 * tests/unit/test_plan_move.c.
 *
 * Rules:
 *  - a suspended vGPU keeps its name and its VA window (its device
 *    pointers must come back unchanged) and gives back its SM groups and
 *    its memory: its grant has no groups and no memory until it resumes;
 *  - resuming or migrating places the vGPU as a create would (the same
 *    SMs and quota; lowest free groups, or the leftover slice when it
 *    fits better) on the GPU asked for, or on the first GPU with room;
 *    a migration only to another GPU;
 *  - while the worker moves, the vGPU holds both its old and its new
 *    groups and memory (plan_move_hold); plan_move_finish keeps the new.
 */
#ifndef VGPU_PLAN_MOVE_H
#define VGPU_PLAN_MOVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* Where a vGPU goes (plan_move_choose). */
struct plan_move {
	uint32_t gpu;
	uint32_t ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS]; /* ascending */
	uint32_t sms;
	uint64_t memory; /* the quota on that GPU */
	uint64_t mask;	 /* bit i: group i of gpu */
};

/*
 * A place for vGPU name with sms SMs and memory bytes on GPU gpu
 * (PLAN_GPU_ANY: the first GPU with room other than not_gpu), as a create
 * would choose it; what the vGPU itself holds does not count against
 * it. Changes nothing. 0, or -1 with a sentence in err (what is free).
 */
int plan_move_choose(const struct plan *p, const char *name, uint32_t gpu,
		     uint32_t not_gpu, uint32_t sms, uint64_t memory,
		     struct plan_move *out, char *err, size_t errlen);

/* Hold m's groups and memory besides what the vGPU holds. -1 (nothing
 * changed) when they are no longer free. */
int plan_move_hold(struct plan *p, const struct plan_move *m);
/* Give a held m back (the move failed). */
void plan_move_unhold(struct plan *p, const struct plan_move *m);
/* The vGPU holds m (held before) and gives back what it held. -1 when
 * there is no such vGPU. */
int plan_move_finish(struct plan *p, const char *name,
		     const struct plan_move *m);

/* The vGPU gives back its groups and memory, keeps its name and VA
 * window. -1 when there is no such vGPU. */
int plan_suspend(struct plan *p, const char *name);

/*
 * A suspended vGPU recorded in vgpud's state file: its name and the VA
 * window of va_base on GPU gpu, nothing else. NULL with a sentence in err
 * when the name or the window is taken or invalid.
 */
const struct plan_grant *plan_restore_suspended(struct plan *p,
						const char *name, uint32_t gpu,
						uint64_t va_base, char *err,
						size_t errlen);

#endif /* VGPU_PLAN_MOVE_H */
