/* SPDX-License-Identifier: MIT */
/*
 * vgpud's scheduler (see daemon_sched.h and docs/DESIGN.md,
 * "Scheduling"): from the workers' activity edges to resizes and holds.
 *
 * Each run, per GPU: the vGPUs on its regular SM groups are described
 * to plan_policy.c (their policy in groups; who has work; whether they
 * can be moved now: running, not being resized); it returns a target
 * per vGPU and who must hold. Then:
 *   - holds and releases go out at once (VGPU_CTL_SCHED);
 *   - every vGPU above its target is shrunk (its highest groups go);
 *   - once no shrink of this GPU is in flight, every vGPU below its
 *     target grows into the lowest free groups (so a reclaim is two
 *     steps: the borrower shrinks, then the owner grows).
 * A resize done, an edge or a change of policy runs it again at the end
 * of the loop's turn; dwell and turns need a clock, so while a GPU has
 * a dynamic policy it also runs every SCHED_TICK_MS.
 *
 * Runnable: the worker's last edge (busy: a descriptor waiting, taken
 * or a launch in flight; idle: none of that for SCHED_IDLE_MS). Until a
 * worker has sent edges, from its load window (queue or busy); a vGPU
 * nothing is known about yet (its worker has not answered its first
 * SCHED) keeps what it has.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_msg.h"
#include "daemon_part.h"
#include "daemon_sched.h"
#include "daemon_state_ops.h"

#define SCHED_LOAD_BUSY 0.05 /* a load window this busy: runnable */

static uint32_t per_group(const struct daemon *d, uint32_t gpu)
{
	uint32_t p =
		gpu < d->plan->ngpus ? d->plan->gpus[gpu].min_partition : 0;

	return p ? p : 1;
}

static uint32_t groups_for(uint32_t sms, uint32_t per)
{
	return (uint32_t)(((uint64_t)sms + per - 1) / per);
}

static bool dynamic(const struct daemon_sched_gpu *g)
{
	return g->mode != POLICY_STATIC;
}

void daemon_sched_kick(struct daemon *d)
{
	if (d->sched)
		d->sched->dirty = true;
}

static int mode_from_name(const char *s, uint32_t *mode)
{
	if (!s || !strcmp(s, "static"))
		*mode = POLICY_STATIC;
	else if (!strcmp(s, "fair"))
		*mode = POLICY_FAIR;
	else if (!strcmp(s, "priority"))
		*mode = POLICY_PRIORITY;
	else
		return -1;
	return 0;
}

int daemon_sched_init(struct daemon *d, char *err, size_t errlen)
{
	uint32_t mode, i;

	if (mode_from_name(d->opts.policy, &mode)) {
		snprintf(err, errlen,
			 "--policy: '%.40s' is not static, fair or priority",
			 d->opts.policy);
		return -1;
	}
	d->sched = calloc(1, sizeof(*d->sched));
	if (!d->sched) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; i < VGPU_MAX_GPUS; i++) {
		struct daemon_sched_gpu *g = &d->sched->gpu[i];

		g->mode = mode;
		g->quantum_ms = SCHED_QUANTUM_MS;
		g->dwell_ms = SCHED_DWELL_MS;
		g->reclaim_bound_ms = SCHED_RECLAIM_BOUND_MS;
	}
	if (mode != POLICY_STATIC)
		daemon_log("scheduler: %s policy on every GPU",
			   policy_mode_name(mode));
	return 0;
}

void daemon_sched_fini(struct daemon *d)
{
	struct daemon_sched_wait *w;

	if (!d->sched)
		return;
	while ((w = d->sched->waits)) {
		d->sched->waits = w->next;
		free(w);
	}
	free(d->sched);
	d->sched = NULL;
}

struct daemon_sched_vgpu *daemon_sched_vgpu(struct daemon_vgpu *v)
{
	struct daemon_sched_vgpu *s = v->sched;

	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->base_sms = v->sms;
	s->runnable = true; /* nothing known: it keeps what it has */
	v->sched = s;
	return s;
}

void daemon_sched_vgpu_free(struct daemon *d, struct daemon_vgpu *v)
{
	free(v->sched);
	v->sched = NULL;
	daemon_sched_kick(d); /* its groups are free for the others */
}

void daemon_sched_vgpu_new(struct daemon *d, struct daemon_vgpu *v,
			   const struct vgpu_admin_request *req)
{
	struct daemon_sched_vgpu *s = daemon_sched_vgpu(v);

	if (!s)
		return;
	s->base_sms = v->sms;
	if (req->flags & VGPU_ADMIN_CREATE_POLICY) {
		s->min_sms = req->policy.min_sms;
		s->max_sms = req->policy.max_sms;
		s->weight = req->policy.weight;
		s->prio = req->policy.priority;
	}
	daemon_sched_kick(d);
}

/* Its regular groups as a mask. */
uint64_t daemon_sched_own_mask(const struct daemon *d,
			       const struct daemon_vgpu *v)
{
	uint32_t ng = d->plan->gpus[v->cfg.gpu].ngroups, i;
	uint64_t m = 0;

	for (i = 0; i < v->cfg.ngroups; i++)
		if (v->cfg.groups[i] < ng && v->cfg.groups[i] < 64)
			m |= 1ull << v->cfg.groups[i];
	return m;
}

/* Whether the scheduler may resize or hold v now: not while a save,
 * suspend, migration or save point of it is in flight (the worker is
 * frozen, or its groups are about to change under the plan). */
static bool movable(const struct daemon *d, const struct daemon_vgpu *v)
{
	return !v->destroying && v->state == VGPU_ADMIN_STATE_RUNNING &&
	       v->ready && v->ctl_fd >= 0 && v->stop == DAEMON_STOP_NONE &&
	       !(daemon_vgpu_shared(v) && d->domains[v->cfg.gpu].recovering) &&
	       !(v->part && v->part->resizing) && !daemon_state_busy(v);
}

void daemon_sched_gpu_of(struct daemon *d, uint32_t gpu, struct policy_gpu *out)
{
	const struct daemon_sched_gpu *g = &d->sched->gpu[gpu];
	const struct daemon_sched_wait *w;

	memset(out, 0, sizeof(*out));
	out->mode = g->mode;
	out->capacity = d->plan->gpus[gpu].ngroups;
	out->dwell_ms = g->dwell_ms;
	out->quantum_ms = g->quantum_ms;
	out->reclaim_bound_ms = g->reclaim_bound_ms;
	out->overcommit = g->overcommit;
	for (w = d->sched->waits; w; w = w->next)
		if (w->req.gpu == gpu)
			out->reserve += w->groups;
}

/*
 * How long v would take to give lent groups back: its drain estimate
 * (kernels on the GPU x its mean kernel) plus how long its last shrink
 * took to reach a kernel boundary, while that is recent. The estimate
 * alone missed a flood: with 48 streams each with a kernel in flight a
 * shrink waited 44 ms (sched-bench, 2026-11-23), so the owner's burst
 * found its groups still lent. Seen once, a slow shrink stops further
 * borrowing past the reclaim bound for SCHED_SHRINK_MEMORY_MS.
 */
static uint32_t reclaim_est_ms(const struct daemon_sched_vgpu *s, int64_t now)
{
	uint64_t ms = s->drain_est_ms;

	if (s->shrink_seen_ms &&
	    now - s->shrink_seen_ms < SCHED_SHRINK_MEMORY_MS)
		ms += s->shrink_ms;
	return ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
}

void daemon_sched_policy_of(struct daemon *d, struct daemon_vgpu *v,
			    struct policy_vgpu *out)
{
	struct daemon_sched_vgpu *s = daemon_sched_vgpu(v);
	const struct plan_gpu *g = &d->plan->gpus[v->cfg.gpu];
	uint32_t per = per_group(d, v->cfg.gpu), cap = g->ngroups;

	memset(out, 0, sizeof(*out));
	out->name = v->cfg.name;
	out->cur = (uint32_t)__builtin_popcountll(daemon_sched_own_mask(d, v));
	out->min = s && s->min_sms ? groups_for(s->min_sms, per) : 1;
	out->max = s && s->max_sms ? groups_for(s->max_sms, per) : cap;
	if (out->max > cap)
		out->max = cap;
	if (out->min > out->max)
		out->min = out->max;
	if (!out->min)
		out->min = 1;
	out->base = groups_for(s ? s->base_sms : v->sms, per);
	if (out->base < out->min)
		out->base = out->min;
	if (out->base > out->max)
		out->base = out->max;
	out->weight = s && s->weight ? s->weight : out->base;
	out->prio = s && s->prio ? s->prio : POLICY_NORMAL;
	if (!s)
		return;
	/* a shrink of ours in flight: plan with the size it is going to,
	 * or the groups it is giving back would be taken a second time
	 * from another vGPU (which then grows back: two more resizes); a
	 * grow still waits for the groups to be free (run_gpu) */
	if (s->resizing && s->resize_shrinks && s->resize_target < out->cur)
		out->cur = s->resize_target;
	out->changed_ms = s->changed_ms;
	out->idle_ms = s->idle_ms;
	out->drain_ms = reclaim_est_ms(s, daemon_now_ms());
	out->active = s->active;
	out->turn_ms = s->turn_ms;
	out->vtime = s->vtime;
	out->hold = s->hold; /* turns() tells waiting from coming back */
}

/* Whether its worker has said anything about its load yet. */
static bool known(const struct daemon_vgpu *v)
{
	return v->sched->edges || (v->part && v->part->have_load);
}

/* Has v work? (see top) */
static bool runnable(const struct daemon_vgpu *v,
		     const struct daemon_sched_vgpu *s)
{
	const struct daemon_vgpu_part *p = v->part;

	if (s->edges)
		return s->runnable;
	if (!p || !p->have_load || !p->load.window_ns)
		return true;
	return p->load.queue_depth > 0 ||
	       (p->load.busy_source != VGPU_BUSY_NONE &&
		p->load.busy_ns > SCHED_LOAD_BUSY * p->load.window_ns);
}

/*
 * How far ahead of v's next burst its SMs come back (burst_lead_ms): long
 * enough for any other vGPU on its GPU that could have borrowed them to
 * drain its kernels from the lent groups, and for the two resizes, each
 * about as long as v's last one (not those past the reclaim bound: they
 * borrow no idle groups). Not only the vGPUs borrowing now: the
 * lead must not shrink once the reclaim it started has shrunk them, or
 * the burst would stop being due and the groups be lent again.
 */
static int64_t burst_lead(struct daemon *d, struct daemon_vgpu *v)
{
	uint32_t bound = d->sched->gpu[v->cfg.gpu].reclaim_bound_ms;
	uint32_t drain = 0, resize_ms = 2, est;
	int64_t now = daemon_now_ms();
	struct daemon_vgpu *o;

	for (o = d->vgpus; o; o = o->next) {
		const struct daemon_sched_vgpu *s = o->sched;

		if (o == v || o->cfg.gpu != v->cfg.gpu || !s)
			continue;
		est = reclaim_est_ms(s, now);
		/* past the bound it is lent no idle groups (plan_policy.c's
		 * donor), so it has none of v's to give back, unless it
		 * borrowed them before it got there */
		if (bound != POLICY_NO_BOUND && est > bound &&
		    (uint32_t)__builtin_popcountll(
			    daemon_sched_own_mask(d, o)) <= s->share)
			continue;
		if (est > drain)
			drain = est;
	}
	if (v->part && v->part->last_build_us / 1000 + 1 > resize_ms)
		resize_ms = v->part->last_build_us / 1000 + 1;
	return burst_lead_ms(&v->sched->burst, SCHED_BURST_LEAD_MS, drain,
			     resize_ms, v->sched->last_busy_ms);
}

/*
 * Whether v's next burst is due (its SMs come back now). Latched: once
 * due it stays due until the burst comes or is no longer expected, even
 * if the lead shrinks meanwhile (the borrowers' drain estimates change
 * as they shrink), so the groups are not lent again just before it.
 */
static bool burst_due(struct daemon_vgpu *v, int64_t now, int64_t lead)
{
	struct daemon_sched_vgpu *s = v->sched;

	if (burst_expected(&s->burst, now, lead))
		s->due_until = burst_due_end(&s->burst);
	return now < s->due_until;
}

/*
 * Whether idle v's groups may be lent before its dwell has passed: its
 * bursts are regular and the next one's lead (when they come back) is a
 * dwell or more away, so they stay lent at least that long. The dwell
 * guards against lending groups that come back at once; a predicted gap
 * tells that already, and waiting it out cost a quarter of each gap
 * (sched-bench, 2026-11-23: 44 % of lc's idle SM time lent).
 */
static bool gap_known(struct daemon *d, struct daemon_vgpu *v, int64_t now,
		      int64_t lead)
{
	int64_t at = burst_next_lead(&v->sched->burst, now, lead);

	return at && at - now >= (int64_t)d->sched->gpu[v->cfg.gpu].dwell_ms;
}

uint32_t daemon_sched_collect(struct daemon *d, uint32_t gpu,
			      struct policy_vgpu *pv, struct daemon_vgpu **vs,
			      uint32_t n)
{
	struct daemon_vgpu *v;
	int64_t now = daemon_now_ms();
	uint32_t k = 0;

	for (v = d->vgpus; v && k < n; v = v->next) {
		/* a suspended or swapped-out vGPU holds no groups, whatever
		 * its config still names (another may hold them now) */
		if (v->cfg.gpu != gpu || daemon_sched_alone_on_leftover(d, v) ||
		    !daemon_sched_vgpu(v) ||
		    v->state == VGPU_ADMIN_STATE_SUSPENDED ||
		    v->state == VGPU_ADMIN_STATE_SWAPPED)
			continue;
		daemon_sched_policy_of(d, v, &pv[k]);
		/* a vGPU nothing is known about yet (its worker has not
		 * answered) keeps what it has: neither lends nor grabs */
		pv[k].fixed = !movable(d, v) ||
			      (dynamic(&d->sched->gpu[gpu]) && !known(v));
		pv[k].runnable = runnable(v, v->sched);
		/* at its base, what it holds is home: where a shrink
		 * goes back to and a grow starts from */
		if (pv[k].cur == pv[k].base && !v->sched->resizing)
			v->sched->home = daemon_sched_own_mask(d, v);
		/* idle with regular bursts: its next burst is due (its SMs
		 * come back now, so that the burst finds them free of
		 * borrowed kernels), or the gap before it is known long */
		v->sched->burst_due = false;
		if (!pv[k].runnable && v->sched->edges &&
		    dynamic(&d->sched->gpu[gpu])) {
			int64_t lead = burst_lead(d, v);

			v->sched->burst_due = burst_due(v, now, lead);
			pv[k].gap_known = !v->sched->burst_due &&
					  gap_known(d, v, now, lead);
		}
		pv[k].runnable |= v->sched->burst_due;
		if (vs)
			vs[k] = v;
		k++;
	}
	return k;
}

/* Send v's worker the scheduler's orders (hold, edges). */
static int send_sched(struct daemon *d, struct daemon_vgpu *v, bool hold,
		      int64_t now)
{
	struct daemon_sched_vgpu *s = v->sched;
	struct vgpu_ctl_sched m;
	int e;

	memset(&m, 0, sizeof(m));
	m.seq = ++d->sched->seq;
	m.hold = hold;
	m.hold_max_ms = SCHED_HOLD_MAX_MS;
	m.idle_ms = dynamic(&d->sched->gpu[v->cfg.gpu]) ? SCHED_IDLE_MS : 0;
	e = ctl_send(v->ctl_fd, VGPU_CTL_SCHED, &m, sizeof(m), -1);
	if (e) {
		daemon_log("vGPU %s: cannot reach its worker for the "
			   "scheduler: %s",
			   v->cfg.name, strerror(-e));
		return -1;
	}
	if (hold != s->hold)
		daemon_log("vGPU %s: %s", v->cfg.name,
			   hold ? "holds: waits for its turn"
				: "released: its turn");
	s->seq = m.seq;
	s->hold = hold;
	s->hold_sent_ms = now;
	if (hold)
		s->held = s->drained = false;
	else
		s->held = false;
	return 0;
}

/*
 * A worker seen for the first time (created, restarted, adopted) is told
 * whether to report edges; until its first edge it counts as runnable.
 */
static void configure(struct daemon *d, struct daemon_vgpu *v, int64_t now)
{
	struct daemon_sched_vgpu *s = daemon_sched_vgpu(v);

	if (!s || !v->pid || !v->ready || v->ctl_fd < 0 || s->pid == v->pid)
		return;
	s->pid = v->pid;
	s->edges = false;
	s->runnable = true;
	s->hold = s->held = s->drained = false;
	s->active = false;
	send_sched(d, v, false, now);
}

void daemon_sched_activity(struct daemon *d, struct daemon_vgpu *v,
			   const struct vgpu_ctl_activity *a)
{
	struct daemon_sched_vgpu *s = daemon_sched_vgpu(v);
	int64_t now = daemon_now_ms();
	bool was;

	if (!s)
		return;
	if (a->busy > 1 || a->held > 1 || a->drained > 1) {
		daemon_log("vGPU %s: worker pid %d sent an ACTIVITY with bad "
			   "flags; dropped",
			   v->cfg.name, (int)v->pid);
		return;
	}
	if (a->seq && a->seq == s->seq) {
		s->held = a->held;
		s->drained = a->drained;
		if (a->drained)
			s->last_drain_us =
				a->drain_ns / 1000 > UINT32_MAX
					? UINT32_MAX
					: (uint32_t)(a->drain_ns / 1000);
	}
	s->queue = a->queue_depth;
	s->edges = dynamic(&d->sched->gpu[v->cfg.gpu]);
	was = s->runnable;
	s->runnable = a->busy;
	if (a->busy && !was) {
		s->busy_ms = now;
		s->edge_plan = true;
		burst_busy_edge(&s->burst, now);
	}
	if (!a->busy && was) {
		s->idle_ms = now;
		s->last_busy_ms = now - s->busy_ms;
	}
	if (was != s->runnable)
		daemon_sched_kick(d);
}

void daemon_sched_load(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_sched_vgpu *s = daemon_sched_vgpu(v);
	const struct vgpu_ctl_load *l;
	uint64_t mean;

	if (!s || !v->part || !v->part->have_load)
		return;
	l = &v->part->load;
	/* how long it would keep lent groups: its mean kernel (if kernels
	 * ran one after another) times what it has launched on the GPU,
	 * plus one. Descriptors still in its rings do not count: after a
	 * shrink they go to its new groups. */
	if (l->kernels && l->busy_source != VGPU_BUSY_NONE) {
		mean = l->busy_ns / l->kernels;
		mean = mean * ((uint64_t)l->gpu_inflight + 1) / 1000000u;
		s->drain_est_ms =
			mean > UINT32_MAX ? UINT32_MAX : (uint32_t)mean;
	} else {
		s->drain_est_ms = 0;
	}
	if (!s->edges)
		daemon_sched_kick(d);
}

void daemon_sched_resized(struct daemon *d, struct daemon_vgpu *v, bool ok)
{
	struct daemon_sched_vgpu *s = v->sched;

	daemon_sched_kick(d);
	if (!s)
		return;
	if (s->resizing) {
		s->resizing = false;
		if (s->resize_adds_leftover)
			daemon_sched_leftover_done(d, v, ok);
		if (ok && s->resize_shrinks) {
			int64_t now = daemon_now_ms(), took;

			took = now - s->resize_start_ms;
			if (took < 0)
				took = 0;
			if (took > 60000) /* a minute: past any bound */
				took = 60000;
			s->shrink_ms = (uint32_t)took;
			s->shrink_seen_ms = now;
		}
	} else if (ok) {
		/* vgpu-admin resize or move: that is its size now */
		s->base_sms = v->sms;
		d->state_dirty = true;
	}
	if (ok)
		s->changed_ms = daemon_now_ms();
}

/* Start moving v to the groups in mask (a scheduler resize); 0 when
 * started. */
int daemon_sched_resize_to(struct daemon *d, struct daemon_vgpu *v,
			   uint64_t mask)
{
	const struct plan_gpu *g = &d->plan->gpus[v->cfg.gpu];
	uint64_t left = plan_leftover_bit(g);
	uint32_t target = (uint32_t)__builtin_popcountll(mask & ~left);
	char err[VGPU_MESSAGE_MAX];
	struct plan_resize r;
	int32_t status;

	if (plan_resize_choose(d->plan, v->cfg.name, 0, mask, &r, err,
			       sizeof(err))) {
		daemon_log("scheduler: vGPU %s: %s", v->cfg.name, err);
		return -1;
	}
	if (plan_resize_same(&r))
		return -1;
	if (daemon_resize_start(d, v, &r, NULL, &status, err, sizeof(err))) {
		daemon_log("scheduler: vGPU %s: %s", v->cfg.name, err);
		return -1;
	}
	v->sched->resizing = true;
	v->sched->resize_start_ms = daemon_now_ms();
	v->sched->resize_shrinks =
		target <
		(uint32_t)__builtin_popcountll(daemon_sched_own_mask(d, v));
	v->sched->resize_target = target;
	v->sched->resize_adds_leftover =
		(mask & left) && !daemon_sched_holds_leftover(d, v);
	d->sched->gpu[v->cfg.gpu].resizes++;
	return 0;
}

/* Start moving v to target regular groups (and the leftover slice it
 * holds, while it may keep it); 0 when started. */
static int start_resize(struct daemon *d, struct daemon_vgpu *v,
			uint32_t target)
{
	const struct plan_gpu *g = &d->plan->gpus[v->cfg.gpu];
	uint64_t mask;

	mask = policy_mask(daemon_sched_own_mask(d, v), g->groups_used,
			   g->ngroups, target, v->sched->home);
	if (!mask)
		return -1;
	return daemon_sched_resize_to(
		d, v,
		mask | daemon_sched_leftover_kept(
			       d, v, target * per_group(d, v->cfg.gpu)));
}

static uint32_t free_groups(const struct plan_gpu *g)
{
	uint64_t regular = g->ngroups >= 64 ? ~0ull : (1ull << g->ngroups) - 1;

	return (uint32_t)__builtin_popcountll(regular & ~g->groups_used);
}

/* Reclaims: from a busy edge that needed its SMs back until it has them. */
static void reclaim_note(struct daemon_sched_vgpu *s,
			 const struct policy_vgpu *p, int64_t now)
{
	uint32_t guarantee = p->share < p->ideal ? p->share : p->ideal;
	uint64_t us;

	/* timed from the busy edge when that is what needs the SMs back,
	 * else from the plan that first asked for them */
	if (p->why == POLICY_RECLAIM && !s->reclaim_ms)
		s->reclaim_ms = s->edge_plan && s->busy_ms ? s->busy_ms : now;
	s->edge_plan = false;
	if (!s->reclaim_ms || p->cur < guarantee || !p->runnable) {
		if (!p->runnable)
			s->reclaim_ms = 0;
		return;
	}
	us = (uint64_t)(now - s->reclaim_ms) * 1000u;
	s->last_reclaim_us = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
	if (s->last_reclaim_us > s->max_reclaim_us)
		s->max_reclaim_us = s->last_reclaim_us;
	s->reclaims++;
	s->reclaim_ms = 0;
}

/* Lent and borrowed SM time since the last run (what it held meanwhile
 * against its share then). */
static void account(struct daemon_sched_vgpu *s, const struct policy_vgpu *p,
		    uint32_t per, int64_t now)
{
	int64_t dt = s->acct_ms ? now - s->acct_ms : 0;

	s->acct_ms = now;
	if (dt <= 0 || !s->share)
		return;
	if (p->cur < s->share)
		s->lent_sm_ms += (uint64_t)(s->share - p->cur) * per * dt;
	else
		s->borrowed_sm_ms += (uint64_t)(p->cur - s->share) * per * dt;
}

/* One GPU: plan, then holds, shrinks, and grows once nothing shrinks. */
static void run_gpu(struct daemon *d, uint32_t gpu, int64_t now)
{
	struct policy_vgpu pv[POLICY_MAX_VGPUS];
	struct daemon_vgpu *vs[POLICY_MAX_VGPUS];
	struct daemon_sched_gpu *sg = &d->sched->gpu[gpu];
	const struct plan_gpu *pg = &d->plan->gpus[gpu];
	struct policy_gpu g;
	uint32_t n, i, grow, free_;
	bool shrinking = false;

	n = daemon_sched_collect(d, gpu, pv, vs, POLICY_MAX_VGPUS);
	if (!n)
		return;
	daemon_sched_gpu_of(d, gpu, &g);
	if (policy_plan(&g, pv, n, now))
		return;
	sg->runnable = 0;
	sg->timeslicing = false;
	for (i = 0; i < n; i++) {
		struct daemon_sched_vgpu *s = vs[i]->sched;

		account(s, &pv[i], per_group(d, gpu), now);
		sg->runnable += pv[i].runnable;
		s->share = pv[i].share;
		s->ideal = pv[i].ideal;
		if (pv[i].fixed)
			continue;
		if (pv[i].active && !s->active && pv[i].runnable)
			s->turns++;
		s->active = pv[i].active;
		s->turn_ms = pv[i].turn_ms;
		s->vtime = pv[i].vtime;
		s->target = pv[i].target;
		s->why = pv[i].why;
		sg->timeslicing |= pv[i].hold;
		reclaim_note(s, &pv[i], now);
		/* holds and releases at once; a hold is renewed before the
		 * worker would end it by itself */
		if (pv[i].hold != s->hold ||
		    (s->hold && now - s->hold_sent_ms > SCHED_HOLD_MAX_MS / 2))
			send_sched(d, vs[i], pv[i].hold, now);
		if (pv[i].target < pv[i].cur) {
			daemon_log("scheduler: vGPU %s: %u -> %u SMs (%s)",
				   vs[i]->cfg.name, vs[i]->sms,
				   pv[i].target * per_group(d, gpu),
				   policy_why_name(pv[i].why));
			if (!start_resize(d, vs[i], pv[i].target))
				shrinking = true;
		}
	}
	for (i = 0; i < n; i++) /* a shrink of ours still in flight */
		if (pv[i].fixed && vs[i]->sched->resizing && vs[i]->part &&
		    vs[i]->part->plan.drop_mask)
			shrinking = true;
	for (i = 0; i < n && !shrinking; i++) {
		if (pv[i].fixed || pv[i].target <= pv[i].cur)
			continue;
		free_ = free_groups(pg);
		if (!free_)
			break;
		grow = pv[i].target - pv[i].cur;
		grow = pv[i].cur + (grow < free_ ? grow : free_);
		daemon_log("scheduler: vGPU %s: %u -> %u SMs (%s; drains "
			   "in about %u ms)",
			   vs[i]->cfg.name, vs[i]->sms,
			   grow * per_group(d, gpu), policy_why_name(pv[i].why),
			   pv[i].drain_ms);
		start_resize(d, vs[i], grow);
	}
	daemon_sched_leftover_run(d, gpu, pv, vs, n, shrinking, now);
}

/* Parked creates: launched once their groups are free, or refused. */
static void waits_run(struct daemon *d, int64_t now)
{
	struct daemon_sched_wait **pp = &d->sched->waits, *w;

	while ((w = *pp)) {
		const struct plan_gpu *g = &d->plan->gpus[w->req.gpu];

		if (free_groups(g) >= w->groups) {
			*pp = w->next;
			daemon_log("scheduler: vGPU %s: %u SM groups free on "
				   "GPU %u now; creating it",
				   w->req.name, w->groups, w->req.gpu);
			w->conn->parked = false;
			daemon_admin_create(d, w->conn, &w->req);
			free(w);
			continue;
		}
		if (now >= w->deadline) {
			*pp = w->next;
			daemon_admin_reply(
				d, w->conn, VGPU_ADMIN_NO_ROOM, NULL,
				"vGPU %s: GPU %u did not get %u SM groups "
				"back from its vGPUs within %d s (their "
				"resizes failed or are slow); try again",
				w->req.name, w->req.gpu, w->groups,
				SCHED_CREATE_WAIT_MS / 1000);
			free(w);
			daemon_sched_kick(d);
			continue;
		}
		pp = &w->next;
	}
}

/*
 * When v's next dwell ends (its groups may move again, or, idle, be
 * lent), or 0 when none is running: a run then, not up to a tick later.
 */
static int64_t dwell_end(struct daemon *d, struct daemon_vgpu *v, int64_t now)
{
	const struct daemon_sched_vgpu *s = v->sched;
	int64_t dwell = d->sched->gpu[v->cfg.gpu].dwell_ms, at = 0;

	if (!dynamic(&d->sched->gpu[v->cfg.gpu]))
		return 0;
	if (s->changed_ms && s->changed_ms + dwell > now)
		at = s->changed_ms + dwell;
	if (!s->runnable && s->idle_ms + dwell > now &&
	    (!at || s->idle_ms + dwell < at))
		at = s->idle_ms + dwell;
	return at;
}

void daemon_sched_timers(struct daemon *d, int64_t now)
{
	struct daemon_sched *S = d->sched;
	struct daemon_vgpu *v;
	bool any = false;
	uint32_t i;

	if (!S || d->stopping)
		return;
	for (v = d->vgpus; v; v = v->next)
		configure(d, v, now);
	if (S->waits)
		waits_run(d, now);
	for (i = 0; i < d->ngpus && i < VGPU_MAX_GPUS; i++)
		any |= dynamic(&S->gpu[i]);
	if (!S->dirty && !(S->next_ms && now >= S->next_ms))
		return;
	S->dirty = false;
	for (i = 0; i < d->ngpus && i < VGPU_MAX_GPUS; i++)
		run_gpu(d, i, now);
	S->next_ms = any || S->waits ? now + SCHED_TICK_MS : 0;
	for (v = d->vgpus; v && any; v = v->next) { /* something sooner */
		int64_t at;

		if (!daemon_sched_vgpu(v))
			continue;
		at = dwell_end(d, v, now);
		if (at && at < S->next_ms)
			S->next_ms = at;
		if (!v->sched->edges)
			continue;
		at = burst_next_lead(&v->sched->burst, now, burst_lead(d, v));
		if (at && at < S->next_ms)
			S->next_ms = at;
	}
	if (S->waits) /* the resizes started may have freed enough */
		waits_run(d, now);
}

int64_t daemon_sched_deadline(struct daemon *d)
{
	struct daemon_sched *S = d->sched;

	if (!S)
		return 0;
	if (S->dirty)
		return daemon_now_ms();
	return S->next_ms;
}

void daemon_sched_close_waiters(struct daemon *d)
{
	struct daemon_sched_wait *w;

	if (!d->sched)
		return;
	while ((w = d->sched->waits)) {
		d->sched->waits = w->next;
		daemon_admin_reply(d, w->conn, VGPU_ADMIN_BUSY, NULL,
				   "vgpud is shutting down; vGPU %s was not "
				   "created",
				   w->req.name);
		free(w);
	}
}

/* ---- admission ------------------------------------------------------- */

bool daemon_sched_policy_range_ok(struct daemon *d, struct daemon_conn *c,
				  const struct vgpu_admin_policy *pol)
{
	if (pol->weight > POLICY_WEIGHT_MAX || pol->priority > POLICY_HIGH ||
	    pol->reserved) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "policy: weight %u (1 to %d), priority %u "
				   "(1 low, 2 normal, 3 high) or a reserved "
				   "byte is out of range",
				   pol->weight, POLICY_WEIGHT_MAX,
				   pol->priority);
		return false;
	}
	return true;
}

/* The request's policy fields, checked; answers c when they are bad. */
static bool policy_fields_ok(struct daemon *d, struct daemon_conn *c,
			     const struct vgpu_admin_request *req,
			     struct vgpu_admin_policy *pol)
{
	memset(pol, 0, sizeof(*pol));
	if (!(req->flags & VGPU_ADMIN_CREATE_POLICY))
		return true;
	*pol = req->policy;
	if (!daemon_sched_policy_range_ok(d, c, pol))
		return false;
	if (pol->min_sms && pol->max_sms && pol->min_sms > pol->max_sms) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "vGPU %s: min_sms %u is above max_sms %u",
				   req->name, pol->min_sms, pol->max_sms);
		return false;
	}
	if (pol->min_sms && req->sms < pol->min_sms) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "vGPU %s: asked for %u SMs, below its "
				   "min_sms %u",
				   req->name, req->sms, pol->min_sms);
		return false;
	}
	if (pol->max_sms && req->sms > pol->max_sms) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "vGPU %s: asked for %u SMs, above its "
				   "max_sms %u",
				   req->name, req->sms, pol->max_sms);
		return false;
	}
	return true;
}

/* Whether the planner would place req on GPU gpu now (tried, undone). */
static bool planner_fits(struct daemon *d, uint32_t gpu,
			 const struct vgpu_admin_request *req)
{
	struct plan_request pr = {
		.name = req->name,
		.sms = req->sms,
		.memory = req->memory,
		.gpu = gpu,
	};
	char err[VGPU_MESSAGE_MAX];

	if (!plan_reserve(d->plan, &pr, err, sizeof(err)))
		return false;
	plan_release(d->plan, req->name);
	return true;
}

/* Whether the quota fits GPU gpu's memory (as plan_reserve checks it). */
static bool memory_fits(const struct daemon *d, uint32_t gpu, uint64_t mem)
{
	const struct plan_gpu *g = &d->plan->gpus[gpu];
	uint64_t gran = g->granularity ? g->granularity : 1, q;

	q = mem % gran ? mem + (gran - mem % gran) : mem;
	return q >= mem && q <= plan_gpu_usable(g) - g->memory_used;
}

bool daemon_sched_create(struct daemon *d, struct daemon_conn *c,
			 struct vgpu_admin_request *req, bool check_only)
{
	struct policy_vgpu pv[POLICY_MAX_VGPUS + 1];
	struct vgpu_admin_policy pol;
	struct daemon_sched_wait *w;
	char err[VGPU_MESSAGE_MAX] = "", e2[VGPU_MESSAGE_MAX];
	uint32_t gpu, first, last, n, per, need, free_, back;
	struct policy_gpu g;
	bool any_dynamic = false;

	if (!d->sched)
		return false;
	if (!policy_fields_ok(d, c, req, &pol))
		return true;
	if (!memchr(req->name, '\0', sizeof(req->name)) || !req->sms ||
	    (req->gpu != VGPU_ADMIN_GPU_ANY && req->gpu >= d->ngpus) ||
	    daemon_vgpu_find(d, req->name))
		return false; /* create_plan says what is wrong */
	first = req->gpu == VGPU_ADMIN_GPU_ANY ? 0 : req->gpu;
	last = req->gpu == VGPU_ADMIN_GPU_ANY ? d->ngpus : req->gpu + 1;
	for (gpu = first; gpu < last; gpu++)
		any_dynamic |= dynamic(&d->sched->gpu[gpu]);
	if (!any_dynamic)
		return false; /* static: free groups decide (the planner) */
	for (gpu = first; gpu < last; gpu++) {
		const struct plan_gpu *pg = &d->plan->gpus[gpu];

		if (req->isolation == 0 && d->domains[gpu].recovering)
			continue;
		per = per_group(d, gpu);
		n = daemon_sched_collect(d, gpu, pv, NULL, POLICY_MAX_VGPUS);
		daemon_sched_gpu_of(d, gpu, &g);
		need = groups_for(req->sms, per);
		if (!dynamic(&d->sched->gpu[gpu])) {
			if (planner_fits(d, gpu, req))
				break;
			continue;
		}
		memset(&pv[n], 0, sizeof(pv[n]));
		pv[n].name = req->name;
		pv[n].min = pol.min_sms ? groups_for(pol.min_sms, per) : 1;
		pv[n].max = pol.max_sms ? groups_for(pol.max_sms, per)
					: pg->ngroups;
		pv[n].base = need;
		pv[n].weight = pol.weight ? pol.weight : need;
		pv[n].prio = pol.priority ? pol.priority : POLICY_NORMAL;
		if (need > pg->ngroups ||
		    policy_admit(&g, pv, n + 1, per, gpu, e2, sizeof(e2))) {
			if (need > pg->ngroups)
				snprintf(e2, sizeof(e2),
					 "asked for %u SMs, GPU %u has %u SMs "
					 "in SM groups",
					 req->sms, gpu, pg->ngroups * per);
			if (!err[0])
				snprintf(err, sizeof(err), "%s", e2);
			continue;
		}
		if (!memory_fits(d, gpu, req->memory))
			continue; /* the planner says so, below */
		policy_room(&g, pv, n, &free_, &back);
		if (need <= free_groups(pg) && need <= free_)
			break;
		if (need <= free_ + back)
			goto wait;
		if (!err[0])
			snprintf(err, sizeof(err),
				 "asked for %u SMs; GPU %u can give a new vGPU "
				 "at most %u SMs now (%u free, %u more that "
				 "its vGPUs hold above their min_sms)",
				 req->sms, gpu, (free_ + back) * per,
				 free_ * per, back * per);
	}
	if (gpu < last) {
		req->gpu = gpu;
		return false;
	}
	if (!err[0])
		return false; /* memory or nothing: the planner explains */
	daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL, "%s", err);
	return true;
wait:
	if (check_only) {
		daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL,
				   "not now: %u SMs are free on GPU %u; a "
				   "create takes %u more back from vGPUs above "
				   "their min_sms (%s policy), waiting up to "
				   "%d s",
				   free_ * per, gpu, (need - free_) * per,
				   policy_mode_name(g.mode),
				   SCHED_CREATE_WAIT_MS / 1000);
		return true;
	}
	w = calloc(1, sizeof(*w));
	if (!w) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		return true;
	}
	w->conn = c;
	w->req = *req;
	w->req.gpu = gpu;
	w->groups = need;
	w->deadline = daemon_now_ms() + SCHED_CREATE_WAIT_MS;
	w->next = d->sched->waits;
	d->sched->waits = w;
	c->parked = true;
	daemon_log("scheduler: vGPU %s waits for %u SMs on GPU %u (%u free); "
		   "taking back what its vGPUs hold above their min_sms",
		   req->name, need * per, gpu,
		   free_groups(&d->plan->gpus[gpu]) * per);
	daemon_sched_kick(d);
	return true;
}

bool daemon_sched_resize_ok(struct daemon *d, struct daemon_conn *c,
			    struct daemon_vgpu *v,
			    const struct vgpu_admin_request *req)
{
	struct policy_vgpu pv[POLICY_MAX_VGPUS];
	struct daemon_vgpu *vs[POLICY_MAX_VGPUS];
	const struct plan_gpu *pg = &d->plan->gpus[v->cfg.gpu];
	uint32_t per = per_group(d, v->cfg.gpu), want, sms, n, i;
	uint64_t regular =
		pg->ngroups >= 64 ? ~0ull : (1ull << pg->ngroups) - 1;
	struct policy_vgpu me;
	char err[VGPU_MESSAGE_MAX];
	struct policy_gpu g;

	if (!d->sched || !daemon_sched_vgpu(v))
		return true;
	daemon_sched_policy_of(d, v, &me);
	/* in SMs as asked (a resize may land on the leftover slice, which
	 * has fewer SMs than a group count says), in groups for a move */
	if (req->slice_mask) {
		want = (uint32_t)__builtin_popcountll(req->slice_mask &
						      regular);
		sms = (req->slice_mask & ~regular)
			      ? d->plan->gpus[v->cfg.gpu].leftover_sms
			      : want * per;
	} else {
		want = groups_for(req->sms, per);
		sms = req->sms;
	}
	/* only limits someone set: the defaults (one group, the whole GPU)
	 * are the planner's to explain */
	if ((v->sched->min_sms && sms < me.min * per) ||
	    (v->sched->max_sms && want > me.max)) {
		bool below = v->sched->min_sms && sms < me.min * per;

		daemon_admin_reply(
			d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
			"vGPU %s: %u SMs is %s its %s %u (vgpu-admin policy "
			"%s --%s N changes it)",
			v->cfg.name, sms, below ? "below" : "above",
			below ? "min_sms" : "max_sms",
			(below ? me.min : me.max) * per, v->cfg.name,
			below ? "min-sms" : "max-sms");
		return false;
	}
	if (!want)
		return true; /* the leftover slice: nobody's to schedule */
	if (!dynamic(&d->sched->gpu[v->cfg.gpu]))
		return true;
	n = daemon_sched_collect(d, v->cfg.gpu, pv, vs, POLICY_MAX_VGPUS);
	for (i = 0; i < n; i++)
		if (vs[i] == v)
			pv[i].base = want;
	daemon_sched_gpu_of(d, v->cfg.gpu, &g);
	if (policy_admit(&g, pv, n, per, v->cfg.gpu, err, sizeof(err))) {
		daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL, "%s", err);
		return false;
	}
	return true;
}
