/* SPDX-License-Identifier: MIT */
/*
 * The leftover slice under a dynamic policy (docs/DESIGN.md,
 * "Scheduling"). The split leaves some SMs after the last whole group
 * (12 on an H100 or H200): a slice of their own, group index ngroups,
 * which no vGPU's share counts. While no vGPU sits on it, fair and
 * priority lend it on top of one busy vGPU's groups, as they lend an idle
 * vGPU's groups: on the mixed workload it was a ninth of the SMs the
 * batch vGPUs had, unused in every configuration.
 *
 * It goes to the busy vGPU with the most weight (then the most groups),
 * one at a time, and comes back when its holder has been idle for the
 * dwell, when a create waits for room, when the GPU's policy turns
 * static, or for good (until vgpud restarts) when resizes that added it
 * failed three times in a row: a driver that would not build a green
 * context over a split's remaining SMs and groups together is not asked
 * again.
 */
#include "daemon.h"
#include "daemon_sched.h"

/* failed lends in a row before a GPU stops lending it: a driver that
 * will not build the context, not a worker that happened to exit */
#define LEFTOVER_TRIES 3

bool daemon_sched_alone_on_leftover(const struct daemon *d,
				    const struct daemon_vgpu *v)
{
	return v->cfg.ngroups == 1 &&
	       v->cfg.groups[0] == d->plan->gpus[v->cfg.gpu].ngroups;
}

bool daemon_sched_holds_leftover(const struct daemon *d,
				 const struct daemon_vgpu *v)
{
	uint32_t ng = d->plan->gpus[v->cfg.gpu].ngroups, i;

	if (v->cfg.ngroups < 2) /* alone on it is another thing */
		return false;
	for (i = 0; i < v->cfg.ngroups; i++)
		if (v->cfg.groups[i] == ng)
			return true;
	return false;
}

/* Whether gpu may lend its leftover slice now (not while its vGPUs take
 * turns: it would move with every turn). */
static bool lendable(const struct daemon *d, uint32_t gpu)
{
	const struct daemon_sched_gpu *sg = &d->sched->gpu[gpu];
	const struct daemon_sched_wait *w;

	if (sg->mode == POLICY_STATIC || sg->leftover_off || sg->timeslicing ||
	    !plan_leftover_bit(&d->plan->gpus[gpu]))
		return false;
	for (w = d->sched->waits; w; w = w->next)
		if (w->req.gpu == gpu)
			return false;
	return true;
}

/* Whether v's max_sms leaves room for the slice on top of regular_sms. */
static bool room(const struct daemon *d, const struct daemon_vgpu *v,
		 uint32_t regular_sms)
{
	uint32_t max = v->sched->max_sms;

	return !max ||
	       regular_sms + d->plan->gpus[v->cfg.gpu].leftover_sms <= max;
}

/* Whether holder v keeps the slice: it may be lent, fits v's max_sms,
 * and v has work or went idle less than a dwell ago. */
static bool keeps(const struct daemon *d, const struct daemon_vgpu *v,
		  int64_t now)
{
	const struct daemon_sched_vgpu *s = v->sched;

	if (!lendable(d, v->cfg.gpu) || s->hold ||
	    !room(d, v, daemon_sched_own_sms(d, v)))
		return false;
	return s->runnable ||
	       now - s->idle_ms < (int64_t)d->sched->gpu[v->cfg.gpu].dwell_ms;
}

uint64_t daemon_sched_leftover_kept(const struct daemon *d,
				    const struct daemon_vgpu *v,
				    uint32_t target_sms)
{
	if (!daemon_sched_holds_leftover(d, v) ||
	    !keeps(d, v, daemon_now_ms()) || !room(d, v, target_sms))
		return 0;
	return plan_leftover_bit(&d->plan->gpus[v->cfg.gpu]);
}

uint32_t daemon_sched_own_sms(const struct daemon *d,
			      const struct daemon_vgpu *v)
{
	uint32_t extra = d->plan->gpus[v->cfg.gpu].leftover_sms;

	if (!daemon_sched_holds_leftover(d, v) || v->sms <= extra)
		return v->sms ? v->sms : 1;
	return v->sms - extra;
}

uint32_t daemon_sched_move_sms(const struct daemon *d,
			       const struct daemon_vgpu *v)
{
	uint32_t own = daemon_sched_own_sms(d, v);
	const struct daemon_sched_vgpu *s = v->sched;

	return s && s->base_sms && s->base_sms < own ? s->base_sms : own;
}

void daemon_sched_leftover_done(struct daemon *d, struct daemon_vgpu *v,
				bool ok)
{
	struct daemon_sched_gpu *sg = &d->sched->gpu[v->cfg.gpu];

	if (ok) {
		sg->leftover_failures = 0;
		return;
	}
	if (sg->leftover_off || ++sg->leftover_failures < LEFTOVER_TRIES)
		return;
	sg->leftover_off = true;
	daemon_log("scheduler: GPU %u: lending the leftover slice failed %d "
		   "times in a row (last to vGPU %s, see its resize above); "
		   "it is not lent again until vgpud restarts",
		   v->cfg.gpu, LEFTOVER_TRIES, v->cfg.name);
}

/*
 * The busy vGPU the slice goes to, or -1: one with work of its own (not
 * only a burst due: it would give the slice back at the next run), not
 * being resized, whose max_sms leaves room for it.
 */
static int pick(const struct daemon *d, const struct policy_vgpu *pv,
		struct daemon_vgpu **vs, uint32_t n)
{
	int best = -1;
	uint32_t i;

	for (i = 0; i < n; i++) {
		const struct daemon_sched_vgpu *s = vs[i]->sched;

		if (pv[i].fixed || !s->edges || !s->runnable || pv[i].hold ||
		    pv[i].target != pv[i].cur || s->resizing ||
		    !room(d, vs[i], vs[i]->sms))
			continue;
		if (best < 0 || pv[i].weight > pv[best].weight ||
		    (pv[i].weight == pv[best].weight &&
		     pv[i].cur > pv[best].cur))
			best = (int)i;
	}
	return best;
}

void daemon_sched_leftover_run(struct daemon *d, uint32_t gpu,
			       const struct policy_vgpu *pv,
			       struct daemon_vgpu **vs, uint32_t n,
			       bool shrinking, int64_t now)
{
	const struct plan_gpu *pg = &d->plan->gpus[gpu];
	uint64_t bit = plan_leftover_bit(pg), own;
	int h = -1, b;
	uint32_t i;

	if (!bit)
		return;
	for (i = 0; i < n && h < 0; i++)
		if (daemon_sched_holds_leftover(d, vs[i]))
			h = (int)i;
	if (h >= 0) {
		if (keeps(d, vs[h], now) || pv[h].fixed ||
		    vs[h]->sched->resizing)
			return;
		own = daemon_sched_own_mask(d, vs[h]);
		daemon_log("scheduler: vGPU %s: %u -> %u SMs (the leftover "
			   "slice back)",
			   vs[h]->cfg.name, vs[h]->sms,
			   vs[h]->sms - pg->leftover_sms);
		daemon_sched_resize_to(d, vs[h], own);
		return;
	}
	/* someone sits on it, or groups are still on their way back */
	if ((pg->groups_used & bit) || shrinking || !lendable(d, gpu))
		return;
	b = pick(d, pv, vs, n);
	if (b < 0)
		return;
	own = daemon_sched_own_mask(d, vs[b]);
	daemon_log("scheduler: vGPU %s: %u -> %u SMs (the leftover slice, "
		   "lent)",
		   vs[b]->cfg.name, vs[b]->sms, vs[b]->sms + pg->leftover_sms);
	daemon_sched_resize_to(d, vs[b], own | bit);
}
