/* SPDX-License-Identifier: MIT */
/*
 * Scheduling policies as pure logic (docs/DESIGN.md, "Scheduling"): given
 * the vGPUs of one GPU (their policy, what they hold, who has work), how
 * many SM groups each should hold next, who waits for a turn, and whether
 * a new vGPU or a new setting is admitted. No I/O, no clock: the caller
 * passes the time. vgpud's scheduler (daemon_sched.c) turns the targets
 * into resizes and holds; tests/unit/test_plan_policy.c checks the rules.
 *
 * Everything is counted in regular SM groups (8 SMs on an H100); the
 * leftover slice is nobody's to move. Modes:
 *
 *   static    every vGPU holds its base size (blueprint, create, resize).
 *   fair      weighted max-min shares: each vGPU holds at least its min;
 *             the vGPUs with work share the rest by weight, up to their
 *             max; idle vGPUs keep their groups until someone with work
 *             needs them (then they lend down to their min).
 *   priority  as fair, but first every vGPU with work is raised to its
 *             base size, high priority before normal before low.
 *
 * Moves, and what bounds them:
 *   - a vGPU with work below its guarantee (the lesser of its share when
 *     every vGPU is busy and what it should hold now) takes groups back
 *     at once, from any vGPU above what it should hold: a reclaim;
 *   - everything else (lending, borrowing, rebalancing) waits for the
 *     dwell: an idle vGPU lends only after dwell_ms idle and dwell_ms
 *     since its groups last changed; a vGPU gives to a rebalance only
 *     dwell_ms after its last change. So no vGPU is moved twice within a
 *     dwell except by a reclaim, which only its owner's work triggers;
 *   - an idle vGPU's groups go only to a vGPU whose drain estimate (how
 *     long its queued kernels would keep them) is within the reclaim
 *     bound, so a lent group comes back in about that time;
 *   - a vGPU never goes below its min (except while it waits for a turn
 *     on an over-committed GPU: then it keeps one group) or above its max.
 *
 * Time-slicing: when the over-committed GPU cannot give every vGPU with
 * work its min at once, some take turns: high priority always runs; the
 * others run in order of weighted service (stride scheduling: a turn of
 * quantum_ms adds quantum / weight), as many as fit; the rest hold (take
 * no work) on one group until their turn.
 */
#ifndef VGPU_PLAN_POLICY_H
#define VGPU_PLAN_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define POLICY_MAX_VGPUS  128	  /* per GPU */
#define POLICY_NO_BOUND	  0xffffu /* reclaim_bound_ms: lend to anyone */
#define POLICY_WEIGHT_MAX 1000

enum policy_mode {
	POLICY_STATIC = 1,
	POLICY_FAIR = 2,
	POLICY_PRIORITY = 3,
};

enum policy_prio {
	POLICY_LOW = 1,
	POLICY_NORMAL = 2,
	POLICY_HIGH = 3,
};

/* Why a vGPU's target differs from what it holds (logs, tests). */
enum policy_why {
	POLICY_KEEP = 0,
	POLICY_RECLAIM,	  /* grows back to its guarantee */
	POLICY_BORROW,	  /* grows into idle or free groups */
	POLICY_LEND,	  /* idle: gives groups to a vGPU with work */
	POLICY_GIVE_BACK, /* has work, holds more than it should now */
	POLICY_TURN_OUT,  /* waits for its turn on one group */
	POLICY_BASE,	  /* static: back to its base size */
	POLICY_FLOOR,	  /* below its min: grows to it */
};

/* One GPU's settings. */
struct policy_gpu {
	uint32_t mode;	   /* enum policy_mode */
	uint32_t capacity; /* regular SM groups of the GPU */
	uint32_t reserve;  /* groups to keep free (a create waits) */
	uint32_t dwell_ms;
	uint32_t quantum_ms;
	uint32_t reclaim_bound_ms; /* POLICY_NO_BOUND: none */
	bool overcommit;
};

/* One vGPU: its policy and state in, its next target out. */
struct policy_vgpu {
	const char *name; /* for messages (the caller's) */
	/* settings, in groups: 1 <= min <= base <= max; weight >= 1 */
	uint32_t min, max, base, weight, prio;
	/* state */
	uint32_t cur;	    /* regular groups it holds now */
	bool fixed;	    /* keeps cur (being resized, not running, ...) */
	bool runnable;	    /* has work */
	int64_t changed_ms; /* its groups last changed (0: long ago) */
	int64_t idle_ms;    /* went idle then (meaningful when !runnable) */
	bool gap_known;	    /* idle, and its next burst is predicted a dwell
			     * or more past the lead that takes its groups
			     * back: they may be lent before its dwell */
	uint32_t drain_ms;  /* estimated time to give groups back */
	/* time-slicing, kept by the caller between calls */
	bool active;	 /* has a turn */
	int64_t turn_ms; /* its turn started then */
	uint64_t vtime;	 /* weighted service */
	/* results */
	uint32_t target; /* groups it should hold next */
	uint32_t ideal;	 /* what it should hold with every move done */
	uint32_t share;	 /* what it holds when every vGPU is busy */
	bool hold;	 /* in: held by the last plan; out: wait for a turn */
	uint32_t why;	 /* enum policy_why */
};

/*
 * Fill target, ideal, share, hold and why of v[0..n) (and the
 * time-slicing fields) for the time now_ms. 0, or -1 when n is too large.
 */
int policy_plan(const struct policy_gpu *g, struct policy_vgpu *v, uint32_t n,
		int64_t now_ms);

/*
 * Whether the vGPUs v[0..n) may be on g together (admission; also a
 * change of mode or of a vGPU's policy). 0, or -1 with a sentence in err
 * that counts SMs (sms_per_group SMs a group).
 */
int policy_admit(const struct policy_gpu *g, const struct policy_vgpu *v,
		 uint32_t n, uint32_t sms_per_group, uint32_t gpu, char *err,
		 size_t errlen);

/*
 * Groups that are free now, and how many more the policy could take back
 * from v[0..n) for a new vGPU (down to their mins; none under static).
 */
void policy_room(const struct policy_gpu *g, const struct policy_vgpu *v,
		 uint32_t n, uint32_t *free_groups, uint32_t *reclaimable);

/*
 * The groups a vGPU holding own (a mask of regular groups below ngroups)
 * holds with target groups: those outside home (its groups at its base
 * size) dropped first, highest first; free home groups added first, then
 * the lowest groups no one holds (used). Coming back to the same sets
 * lets a worker reuse the green contexts it kept for them (a new one
 * took 2-70 ms on an H200 running the vGPU's kernels: sched-bench,
 * 2026-11-23). 0 when that many are not free.
 */
uint64_t policy_mask(uint64_t own, uint64_t used, uint32_t ngroups,
		     uint32_t target, uint64_t home);

const char *policy_mode_name(uint32_t mode);
const char *policy_prio_name(uint32_t prio);
const char *policy_why_name(uint32_t why);

#endif /* VGPU_PLAN_POLICY_H */
