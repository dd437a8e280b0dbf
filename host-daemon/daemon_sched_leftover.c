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
 * static, or for good (until vgpud restarts) when a resize that added it
 * failed: a driver that would not build a green context over a split's
 * remaining SMs and groups together is not asked again.
 */
#include "daemon.h"
#include "daemon_sched.h"

static uint64_t leftover_bit(const struct plan_gpu *g)
{
	return g->leftover_sms && g->ngroups < 64 ? 1ull << g->ngroups : 0;
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

/* Whether gpu may lend its leftover slice now. */
static bool lendable(const struct daemon *d, uint32_t gpu)
{
	const struct daemon_sched_gpu *sg = &d->sched->gpu[gpu];
	const struct daemon_sched_wait *w;

	if (sg->mode == POLICY_STATIC || sg->leftover_off ||
	    !leftover_bit(&d->plan->gpus[gpu]))
		return false;
	for (w = d->sched->waits; w; w = w->next)
		if (w->req.gpu == gpu)
			return false;
	return true;
}

/* Whether holder v keeps the slice: it may be lent, and v has work or
 * went idle less than a dwell ago. */
static bool keeps(const struct daemon *d, const struct daemon_vgpu *v,
		  int64_t now)
{
	const struct daemon_sched_vgpu *s = v->sched;

	if (!lendable(d, v->cfg.gpu) || s->hold)
		return false;
	return s->runnable ||
	       now - s->idle_ms < (int64_t)d->sched->gpu[v->cfg.gpu].dwell_ms;
}

uint64_t daemon_sched_leftover_kept(const struct daemon *d,
				    const struct daemon_vgpu *v)
{
	if (!daemon_sched_holds_leftover(d, v) || !keeps(d, v, daemon_now_ms()))
		return 0;
	return leftover_bit(&d->plan->gpus[v->cfg.gpu]);
}

void daemon_sched_leftover_failed(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_sched_gpu *sg = &d->sched->gpu[v->cfg.gpu];

	if (sg->leftover_off)
		return;
	sg->leftover_off = true;
	daemon_log("scheduler: GPU %u: lending the leftover slice to vGPU %s "
		   "failed (see its resize above); it is not lent again "
		   "until vgpud restarts",
		   v->cfg.gpu, v->cfg.name);
}

/* The busy vGPU the slice goes to, or -1. */
static int pick(const struct policy_vgpu *pv, struct daemon_vgpu **vs,
		uint32_t n)
{
	int best = -1;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (pv[i].fixed || !pv[i].runnable || pv[i].hold ||
		    pv[i].target != pv[i].cur || vs[i]->sched->resizing)
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
	uint64_t bit = leftover_bit(pg), own;
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
	b = pick(pv, vs, n);
	if (b < 0)
		return;
	own = daemon_sched_own_mask(d, vs[b]);
	daemon_log("scheduler: vGPU %s: %u -> %u SMs (the leftover slice, "
		   "lent)",
		   vs[b]->cfg.name, vs[b]->sms, vs[b]->sms + pg->leftover_sms);
	daemon_sched_resize_to(d, vs[b], own | bit);
}
