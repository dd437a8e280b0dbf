/* SPDX-License-Identifier: MIT */
/*
 * vgpud's scheduler (docs/DESIGN.md, "Scheduling"):
 *
 *   daemon_sched.c        per GPU a policy (static, fair, priority), per
 *                         vGPU its min/max/weight/priority; the workers'
 *                         activity edges (VGPU_CTL_ACTIVITY) say who has
 *                         work; plan_policy.c says who holds how many SM
 *                         groups; resizes (daemon_resize.c) and holds
 *                         (VGPU_CTL_SCHED) make it so. Admission of a
 *                         create, waiting for lent SMs to come back.
 *   daemon_sched_admin.c  vgpu-admin policy (POLICY) and the scheduler's
 *                         view (SCHED); the state file's policy objects.
 *
 * It runs in vgpud's loop: an event (an edge, a resize done, a change of
 * policy) marks it dirty and it runs at the end of that turn; otherwise
 * it runs every SCHED_TICK_MS while a GPU has a dynamic policy.
 */
#ifndef VGPU_DAEMON_SCHED_H
#define VGPU_DAEMON_SCHED_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"
#include "plan_burst.h"
#include "plan_policy.h"

/* SCHED_BURST_LEAD_MS: a steady vGPU's SMs come back at least this long
 * before its next burst (longer when the borrowers take longer to drain:
 * burst_lead in daemon_sched.c) */
#define SCHED_DWELL_MS	       100 /* defaults of a GPU's policy */
#define SCHED_QUANTUM_MS       50
#define SCHED_RECLAIM_BOUND_MS 20
#define SCHED_IDLE_MS	       5  /* no work this long: idle */
#define SCHED_TICK_MS	       20 /* its period, while it matters */
#define SCHED_BURST_LEAD_MS    15
#define SCHED_SHRINK_MEMORY_MS 10000 /* a slow shrink counts this long */
#define SCHED_CREATE_WAIT_MS   10000 /* a create waits for lent SMs */
#define SCHED_HOLD_MAX_MS      5000  /* a hold not renewed ends then */

/* One vGPU's policy and the scheduler's view of it (v->sched). */
struct daemon_sched_vgpu {
	/* policy, in SMs as given; 0 = the default */
	uint32_t min_sms, max_sms, weight, prio;
	uint32_t base_sms; /* its size: create, blueprint, resize */
	/* its worker */
	pid_t pid;	 /* the worker configured for edges; 0: none yet */
	uint32_t seq;	 /* of the last SCHED sent */
	bool edges;	 /* it reports activity edges */
	bool runnable;	 /* has work */
	int64_t idle_ms; /* went idle then */
	int64_t busy_ms; /* went busy then */
	bool edge_plan;	 /* no plan since that busy edge */
	bool hold;	 /* asked to hold */
	int64_t hold_sent_ms;
	bool held, drained;    /* what it said */
	uint32_t queue;	       /* its last queue depth */
	uint32_t drain_est_ms; /* from its load: kernels on the GPU x mean */
	/* its last scheduler shrink: how long the worker took to switch
	 * (it reaches a kernel boundary first), and when that was */
	uint32_t shrink_ms;
	int64_t shrink_seen_ms, resize_start_ms;
	bool resize_shrinks;
	uint32_t resize_target; /* groups, of the resize in flight */
	bool resize_adds_leftover;
	uint32_t last_drain_us;
	/* the policy's */
	int64_t changed_ms;
	bool active;
	int64_t turn_ms;
	uint64_t vtime;
	uint32_t target, share, ideal, why; /* groups */
	bool resizing; /* the resize in flight is the scheduler's */
	uint64_t home; /* its groups when last at its base (policy_mask) */
	/* reclaims: from a busy edge until it is back at its guarantee */
	int64_t reclaim_ms;
	uint32_t reclaims, last_reclaim_us, max_reclaim_us, turns;
	/* what it lent and borrowed (SMs x ms), counted at each run */
	int64_t acct_ms;
	uint64_t lent_sm_ms, borrowed_sm_ms;
	/* its busy edges: a steady period lets its SMs come back ahead of
	 * its next burst (plan_burst.h) */
	struct plan_burst burst;
	bool burst_due;	      /* at the last plan */
	int64_t due_until;    /* due until then, once due (latched) */
	int64_t last_busy_ms; /* how long its last burst was busy */
};

/* A create waiting for lent SMs to come back. */
struct daemon_sched_wait {
	struct daemon_sched_wait *next;
	struct daemon_conn *conn;
	struct vgpu_admin_request req;
	uint32_t groups; /* it needs free */
	int64_t deadline;
};

struct daemon_sched_gpu {
	uint32_t mode; /* enum policy_mode */
	uint32_t quantum_ms, dwell_ms, reclaim_bound_ms;
	bool overcommit;
	uint32_t resizes;
	uint32_t runnable;
	bool timeslicing;
	bool leftover_off; /* lending the leftover slice kept failing */
	uint32_t leftover_failures; /* in a row */
};

struct daemon_sched {
	struct daemon_sched_gpu gpu[VGPU_MAX_GPUS];
	struct daemon_sched_wait *waits;
	bool dirty;	 /* run at the end of this turn */
	int64_t next_ms; /* and at the latest then; 0: not needed */
	uint32_t seq;
};

/* ---- daemon_sched.c ---- */
/* A policy's weight, priority and reserved byte in range; else answers
 * c with a sentence (create's fields and POLICY's). */
bool daemon_sched_policy_range_ok(struct daemon *d, struct daemon_conn *c,
				  const struct vgpu_admin_policy *pol);
/* After the probe: every GPU gets opts.policy (default static). */
int daemon_sched_init(struct daemon *d, char *err, size_t errlen);
void daemon_sched_fini(struct daemon *d);
/* v's scheduler state, made on first use with the defaults. */
struct daemon_sched_vgpu *daemon_sched_vgpu(struct daemon_vgpu *v);
void daemon_sched_vgpu_free(struct daemon *d, struct daemon_vgpu *v);
/* A vGPU just created by admin_create (req: its CREATE). */
void daemon_sched_vgpu_new(struct daemon *d, struct daemon_vgpu *v,
			   const struct vgpu_admin_request *req);
/* VGPU_CTL_ACTIVITY from v's worker. */
void daemon_sched_activity(struct daemon *d, struct daemon_vgpu *v,
			   const struct vgpu_ctl_activity *a);
/* A load window arrived (daemon_load.c). */
void daemon_sched_load(struct daemon *d, struct daemon_vgpu *v);
/* A resize of v ended (ok: it holds the new groups). */
void daemon_sched_resized(struct daemon *d, struct daemon_vgpu *v, bool ok);
/* The loop: run when due; the next time it wants to run (0: none). */
void daemon_sched_timers(struct daemon *d, int64_t now);
int64_t daemon_sched_deadline(struct daemon *d);
/* vgpud shuts down: answer the creates that wait. */
void daemon_sched_close_waiters(struct daemon *d);
/*
 * CREATE and PLAN_CHECK: the policy fields and the GPU's admission.
 * Returns true when it answered (or parked) c; false to go on with the
 * plain create, whose gpu it may have chosen in *req.
 */
bool daemon_sched_create(struct daemon *d, struct daemon_conn *c,
			 struct vgpu_admin_request *req, bool check_only);
/* RESIZE within min_sms .. max_sms (and admitted); answers c if not. */
bool daemon_sched_resize_ok(struct daemon *d, struct daemon_conn *c,
			    struct daemon_vgpu *v,
			    const struct vgpu_admin_request *req);

/* The policy in groups, as plan_policy.h wants it (the GPU's view). */
void daemon_sched_policy_of(struct daemon *d, struct daemon_vgpu *v,
			    struct policy_vgpu *out);
void daemon_sched_gpu_of(struct daemon *d, uint32_t gpu,
			 struct policy_gpu *out);
/* Every vGPU of gpu on regular groups, as policy_vgpus (max n). */
uint32_t daemon_sched_collect(struct daemon *d, uint32_t gpu,
			      struct policy_vgpu *pv, struct daemon_vgpu **vs,
			      uint32_t n);
/* Mark the scheduler to run at the end of this turn. */
void daemon_sched_kick(struct daemon *d);
/* v's regular groups as a mask (not the leftover slice). */
uint64_t daemon_sched_own_mask(const struct daemon *d,
			       const struct daemon_vgpu *v);
/* Start a scheduler resize of v to the groups in mask; 0 when started. */
int daemon_sched_resize_to(struct daemon *d, struct daemon_vgpu *v,
			   uint64_t mask);

/* ---- daemon_sched_leftover.c: the leftover slice, lent ---- */
/* Whether v sits on the leftover slice alone (an operator put it there:
 * nobody's to move). */
bool daemon_sched_alone_on_leftover(const struct daemon *d,
				    const struct daemon_vgpu *v);
/* Whether v holds the leftover slice on top of groups (lent to it). */
bool daemon_sched_holds_leftover(const struct daemon *d,
				 const struct daemon_vgpu *v);
/* The leftover slice's bit when v holds it and keeps it with target_sms
 * SMs of groups (within its max_sms), else 0 (a scheduler resize of v
 * keeps what this says). */
uint64_t daemon_sched_leftover_kept(const struct daemon *d,
				    const struct daemon_vgpu *v,
				    uint32_t target_sms);
/* A resize that added it ended (ok or not: three failures in a row and
 * that GPU lends it no more). */
void daemon_sched_leftover_done(struct daemon *d, struct daemon_vgpu *v,
				bool ok);
/* v's SMs without the leftover slice lent to it. */
uint32_t daemon_sched_own_sms(const struct daemon *d,
			      const struct daemon_vgpu *v);
/* What a migration, resume or swap-in of v asks for: its own SMs, but no
 * more than its size (groups it borrowed stay behind: the target's
 * scheduler lends it what is idle there; one that lent some asks for what
 * it holds and takes the rest back there as anywhere). */
uint32_t daemon_sched_move_sms(const struct daemon *d,
			       const struct daemon_vgpu *v);
/* After a plan of gpu: lend the slice, move it, or take it back. */
void daemon_sched_leftover_run(struct daemon *d, uint32_t gpu,
			       const struct policy_vgpu *pv,
			       struct daemon_vgpu **vs, uint32_t n,
			       bool shrinking, int64_t now);

/* ---- daemon_sched_admin.c ---- */
void daemon_sched_policy_admin(struct daemon *d, struct daemon_conn *c,
			       const struct vgpu_admin_request *req);
void daemon_sched_show_admin(struct daemon *d, struct daemon_conn *c,
			     const struct vgpu_admin_request *req);
/* The state file: a vGPU's "policy" object (NULL: all defaults), and
 * the "scheduler" array of the GPUs' policies. */
json_t *daemon_sched_vgpu_json(const struct daemon_vgpu *v);
int daemon_sched_vgpu_from_json(struct daemon *d, struct daemon_vgpu *v,
				json_t *j, char *err, size_t errlen);
json_t *daemon_sched_json(const struct daemon *d);
int daemon_sched_from_json(struct daemon *d, json_t *j, char *err,
			   size_t errlen);

#endif /* VGPU_DAEMON_SCHED_H */
