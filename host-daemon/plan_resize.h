/* SPDX-License-Identifier: MIT */
/*
 * The planner's part of a resize or a slice move: which SM groups a
 * running vGPU holds next. Bookkeeping on struct plan (plan.h), no I/O;
 * unit-tested in tests/unit/test_plan_resize.c.
 *
 * Rules (the same as at creation, plus keeping what it has):
 *  - a request for N SMs needs ceil(N / min_partition) regular groups of
 *    the vGPU's GPU; the groups it holds are kept first (growing: all of
 *    them, then the lowest free ones; shrinking: its lowest ones), so a
 *    resize moves as little as it can;
 *  - the leftover slice (group index ngroups) is held alone: it is taken
 *    when it fits and wastes fewer SMs than the groups would, and given
 *    up when the request no longer fits in it;
 *  - with an explicit set of groups (a move), exactly those: each must
 *    exist and be free or already the vGPU's;
 *  - the memory quota and the VA window stay as they are.
 * While the worker switches, the vGPU holds both its old and its new
 * groups (plan_resize_hold); plan_resize_finish keeps one set.
 */
#ifndef VGPU_PLAN_RESIZE_H
#define VGPU_PLAN_RESIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plan.h"

/* A vGPU's next slice, as plan_resize_choose picks it. */
struct plan_resize {
	uint32_t gpu;
	uint32_t ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS]; /* ascending */
	uint32_t sms;
	uint64_t add_mask;  /* groups it takes that it did not hold */
	uint64_t drop_mask; /* groups it gives back */
	uint32_t old_sms;
};

/* Whether r changes nothing (the same groups). */
static inline bool plan_resize_same(const struct plan_resize *r)
{
	return !r->add_mask && !r->drop_mask;
}

/*
 * The groups vGPU name would hold for sms SMs, or exactly the groups of
 * want_mask (bit i = group i) when it is not 0. Changes nothing. 0 with
 * *out filled, or -1 with a sentence in err (what it holds, what is free,
 * or which vGPU holds a wanted group).
 */
int plan_resize_choose(const struct plan *p, const char *name, uint32_t sms,
		       uint64_t want_mask, struct plan_resize *out, char *err,
		       size_t errlen);

/* The vGPU takes r->add_mask now, besides what it holds. -1 when one of
 * them is no longer free (nothing changed then). */
int plan_resize_hold(struct plan *p, const char *name,
		     const struct plan_resize *r);

/* ok: its grant becomes r's groups and it gives r->drop_mask back; not
 * ok: it gives r->add_mask back and keeps its groups. */
void plan_resize_finish(struct plan *p, const char *name,
			const struct plan_resize *r, bool ok);

/* "0-2,5" for a group list (messages). */
const char *plan_groups_text(const uint32_t *groups, uint32_t n, char *buf,
			     size_t len);

#endif /* VGPU_PLAN_RESIZE_H */
