/* SPDX-License-Identifier: MIT */
/*
 * The scheduler's admin ops (admin.h 1.3) and its part of the state file.
 *
 *   POLICY  name: that vGPU's min_sms, max_sms, weight, priority (0 =
 *           unchanged); name empty: GPU gpu's mode, quantum, dwell,
 *           over-commit, reclaim bound. Refused, changing nothing, when
 *           the GPU's vGPUs would no longer be admitted (plan_policy.c),
 *           or a value is out of range. Its size follows into the new
 *           min .. max at once (the scheduler moves it).
 *   SCHED   every GPU's policy, and each vGPU's (paged like LIST).
 *
 * State file: a vGPU's "policy" {min_sms, max_sms, weight, priority,
 * base_sms} (absent: the defaults and its size), and "scheduler": one
 * {gpu, mode, quantum_ms, dwell_ms, reclaim_bound_ms, overcommit} per GPU
 * whose policy is not the default static one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_part.h"
#include "daemon_sched.h"

#define SCHED_SETTING_MAX_MS 60000

static uint32_t per_group(const struct daemon *d, uint32_t gpu)
{
	uint32_t p = d->plan->gpus[gpu].min_partition;

	return p ? p : 1;
}

/* "weight 3, 16 .. 64 SMs, priority high" for messages. */
static void policy_text(struct daemon *d, struct daemon_vgpu *v, char *buf,
			size_t len)
{
	struct daemon_sched_vgpu *s = daemon_sched_vgpu(v);
	uint32_t per = per_group(d, v->cfg.gpu);
	struct policy_vgpu p;

	daemon_sched_policy_of(d, v, &p);
	snprintf(buf, len, "min_sms %u, max_sms %u, weight %u%s, priority %s",
		 p.min * per, p.max * per, p.weight,
		 s && s->weight ? "" : " (its size in SM groups)",
		 policy_prio_name(p.prio));
}

static void gpu_text(const struct daemon *d, uint32_t gpu, char *buf,
		     size_t len)
{
	const struct daemon_sched_gpu *g = &d->sched->gpu[gpu];
	char bound[32];

	if (g->reclaim_bound_ms == POLICY_NO_BOUND)
		snprintf(bound, sizeof(bound), "none");
	else
		snprintf(bound, sizeof(bound), "%u ms", g->reclaim_bound_ms);
	snprintf(buf, len,
		 "GPU %u: %s policy; quantum %u ms, dwell %u ms, reclaim "
		 "bound %s, over-commit %s",
		 gpu, policy_mode_name(g->mode), g->quantum_ms, g->dwell_ms,
		 bound, g->overcommit ? "on" : "off");
}

/* The GPU's vGPUs, admitted with its settings g? 0 or -1 (err). */
static int admit_all(struct daemon *d, uint32_t gpu,
		     const struct daemon_sched_gpu *settings, char *err,
		     size_t errlen)
{
	struct policy_vgpu pv[POLICY_MAX_VGPUS];
	struct daemon_sched_gpu saved = d->sched->gpu[gpu];
	struct policy_gpu g;
	uint32_t n;
	int rc;

	d->sched->gpu[gpu] = *settings;
	n = daemon_sched_collect(d, gpu, pv, NULL, POLICY_MAX_VGPUS);
	daemon_sched_gpu_of(d, gpu, &g);
	g.reserve = 0;
	rc = policy_admit(&g, pv, n, per_group(d, gpu), gpu, err, errlen);
	d->sched->gpu[gpu] = saved;
	return rc;
}

static void policy_vgpu_admin(struct daemon *d, struct daemon_conn *c,
			      const struct vgpu_admin_request *req)
{
	const struct vgpu_admin_policy *pol = &req->policy;
	struct daemon_sched_vgpu *s, saved;
	struct daemon_vgpu *v;
	struct policy_vgpu p;
	char err[VGPU_MESSAGE_MAX], text[160], gt[160];
	uint32_t per;

	if (!memchr(req->name, '\0', sizeof(req->name)) ||
	    !plan_name_valid(req->name, err, sizeof(err))) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "the vGPU name is not valid");
		return;
	}
	v = daemon_admin_find(d, c, req);
	if (!v)
		return;
	if (!daemon_sched_policy_range_ok(d, c, pol))
		return;
	s = daemon_sched_vgpu(v);
	if (!s) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		return;
	}
	gpu_text(d, v->cfg.gpu, gt, sizeof(gt));
	if (!pol->min_sms && !pol->max_sms && !pol->weight && !pol->priority) {
		policy_text(d, v, text, sizeof(text));
		daemon_admin_reply(d, c, VGPU_ADMIN_OK, v, "vGPU %s: %s; %s",
				   v->cfg.name, text, gt);
		return;
	}
	if (daemon_sched_alone_on_leftover(d, v)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "vGPU %s holds the SMs the split left over, "
				   "which the scheduler never moves: a policy "
				   "would have no effect",
				   v->cfg.name);
		return;
	}
	saved = *s;
	per = per_group(d, v->cfg.gpu);
	if (pol->min_sms > d->plan->gpus[v->cfg.gpu].ngroups * per) {
		daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL,
				   "vGPU %s: min_sms %u is more than GPU %u "
				   "has in SM groups (%u)",
				   v->cfg.name, pol->min_sms, v->cfg.gpu,
				   d->plan->gpus[v->cfg.gpu].ngroups * per);
		return;
	}
	if (pol->min_sms)
		s->min_sms = pol->min_sms;
	if (pol->max_sms)
		s->max_sms = pol->max_sms;
	if (pol->weight)
		s->weight = pol->weight;
	if (pol->priority)
		s->prio = pol->priority;
	if (s->min_sms && s->max_sms && s->min_sms > s->max_sms) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "vGPU %s: min_sms %u would be above max_sms "
				   "%u",
				   v->cfg.name, s->min_sms, s->max_sms);
		*s = saved;
		return;
	}
	/* its size into the new range (daemon_sched_policy_of clamps it
	 * the same way); the scheduler moves it there */
	daemon_sched_policy_of(d, v, &p);
	s->base_sms = p.base * per;
	if (admit_all(d, v->cfg.gpu, &d->sched->gpu[v->cfg.gpu], err,
		      sizeof(err))) {
		*s = saved;
		daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL, "%s", err);
		return;
	}
	d->state_dirty = true;
	daemon_sched_kick(d);
	policy_text(d, v, text, sizeof(text));
	daemon_log("scheduler: vGPU %s: %s", v->cfg.name, text);
	daemon_admin_reply(d, c, VGPU_ADMIN_OK, v, "vGPU %s: %s; %s",
			   v->cfg.name, text, gt);
}

static void policy_gpu_admin(struct daemon *d, struct daemon_conn *c,
			     const struct vgpu_admin_request *req)
{
	const struct vgpu_admin_gpu_policy *gp = &req->gpu_policy;
	struct daemon_sched_gpu ng;
	struct daemon_vgpu *v;
	char err[VGPU_MESSAGE_MAX], text[192];
	uint32_t gpu = req->gpu;

	if (gpu >= d->ngpus) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "there is no GPU %u (this host has %u)", gpu,
				   d->ngpus);
		return;
	}
	if (gp->mode > POLICY_PRIORITY || gp->overcommit > 2 ||
	    gp->quantum_ms > SCHED_SETTING_MAX_MS ||
	    gp->dwell_ms > SCHED_SETTING_MAX_MS ||
	    (gp->reclaim_bound_ms > SCHED_SETTING_MAX_MS &&
	     gp->reclaim_bound_ms != POLICY_NO_BOUND)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "GPU policy: mode %u (1 static, 2 fair, 3 "
				   "priority), over-commit %u (1 off, 2 on), "
				   "or a time above %d ms",
				   gp->mode, gp->overcommit,
				   SCHED_SETTING_MAX_MS);
		return;
	}
	ng = d->sched->gpu[gpu];
	if (gp->mode)
		ng.mode = gp->mode;
	if (gp->overcommit)
		ng.overcommit = gp->overcommit == 2;
	if (gp->quantum_ms)
		ng.quantum_ms = gp->quantum_ms;
	if (gp->dwell_ms)
		ng.dwell_ms = gp->dwell_ms;
	if (gp->reclaim_bound_ms)
		ng.reclaim_bound_ms = gp->reclaim_bound_ms;
	if (admit_all(d, gpu, &ng, err, sizeof(err))) {
		daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL,
				   "GPU %u keeps its policy: %s", gpu, err);
		return;
	}
	if (ng.mode != d->sched->gpu[gpu].mode ||
	    ng.overcommit != d->sched->gpu[gpu].overcommit) {
		/* workers are told again whether to report edges; turns
		 * start afresh */
		for (v = d->vgpus; v; v = v->next) {
			if (v->cfg.gpu != gpu || !daemon_sched_vgpu(v))
				continue;
			v->sched->pid = 0;
			v->sched->active = false;
			v->sched->vtime = 0;
		}
	}
	d->sched->gpu[gpu] = ng;
	d->state_dirty = true;
	daemon_sched_kick(d);
	gpu_text(d, gpu, text, sizeof(text));
	daemon_log("scheduler: %s", text);
	daemon_admin_reply(d, c, VGPU_ADMIN_OK, NULL, "%s", text);
}

void daemon_sched_policy_admin(struct daemon *d, struct daemon_conn *c,
			       const struct vgpu_admin_request *req)
{
	if (req->name[0])
		policy_vgpu_admin(d, c, req);
	else
		policy_gpu_admin(d, c, req);
}

static void fill_vgpu(struct daemon *d, struct daemon_vgpu *v,
		      struct vgpu_admin_sched_vgpu *e)
{
	struct daemon_sched_vgpu *s = daemon_sched_vgpu(v);
	uint32_t per = per_group(d, v->cfg.gpu), share, cur;
	struct policy_vgpu p;

	memset(e, 0, sizeof(*e));
	memcpy(e->name, v->cfg.name, sizeof(e->name));
	e->gpu = v->cfg.gpu;
	e->state = v->state;
	e->sms = v->sms;
	if (!s)
		return;
	daemon_sched_policy_of(d, v, &p);
	e->min_sms = p.min * per;
	e->max_sms = p.max * per;
	e->weight = p.weight;
	e->weight_default = !s->weight;
	e->priority = p.prio;
	e->base_sms = s->base_sms;
	if (daemon_sched_alone_on_leftover(d, v) ||
	    d->sched->gpu[v->cfg.gpu].mode == POLICY_STATIC) {
		e->share_sms = e->target_sms = v->sms;
	} else {
		share = s->share ? s->share : p.base;
		cur = p.cur;
		e->share_sms = share * per;
		e->target_sms = (s->target ? s->target : cur) * per;
		e->lent_sms = cur < share ? (share - cur) * per : 0;
		e->borrowed_sms = cur > share ? (cur - share) * per : 0;
	}
	e->runnable = s->edges ? s->runnable : 0;
	e->held = s->hold;
	e->burst_period_ms = (uint32_t)burst_period(&s->burst);
	e->burst_expected = s->burst_due;
	e->turns = s->turns;
	e->reclaims = s->reclaims;
	e->last_reclaim_us = s->last_reclaim_us;
	e->max_reclaim_us = s->max_reclaim_us;
	e->last_drain_us = s->last_drain_us;
	e->lent_sm_ms = s->lent_sm_ms;
	e->borrowed_sm_ms = s->borrowed_sm_ms;
}

void daemon_sched_show_admin(struct daemon *d, struct daemon_conn *c,
			     const struct vgpu_admin_request *req)
{
	struct vgpu_admin_response *r = daemon_admin_response_new(d, c);
	struct policy_vgpu pv[POLICY_MAX_VGPUS];
	struct daemon_vgpu *v;
	uint32_t i = 0, gpu, n, k, per;

	if (!r)
		return; /* answered */
	for (gpu = 0; gpu < d->ngpus && gpu < VGPU_MAX_GPUS; gpu++) {
		const struct daemon_sched_gpu *g = &d->sched->gpu[gpu];
		struct vgpu_admin_sched_gpu *o = &r->sched.gpus[gpu];

		per = per_group(d, gpu);
		o->index = gpu;
		o->mode = g->mode;
		o->overcommit = g->overcommit;
		o->quantum_ms = g->quantum_ms;
		o->dwell_ms = g->dwell_ms;
		o->reclaim_bound_ms = g->reclaim_bound_ms;
		o->sms = d->plan->gpus[gpu].ngroups * per;
		o->runnable = g->runnable;
		o->timeslicing = g->timeslicing;
		o->resizes = g->resizes;
		n = daemon_sched_collect(d, gpu, pv, NULL, POLICY_MAX_VGPUS);
		for (k = 0; k < n; k++)
			o->guaranteed_sms += pv[k].min * per;
	}
	for (v = d->vgpus; v; v = v->next, i++)
		if (i >= req->first && r->count < VGPU_ADMIN_LIST_MAX)
			fill_vgpu(d, v, &r->sched.vgpus[r->count++]);
	r->total = i;
	snprintf(r->message, sizeof(r->message), "%u GPU%s, %u vGPU%s",
		 d->ngpus, d->ngpus == 1 ? "" : "s", i, i == 1 ? "" : "s");
	daemon_admin_response_send(d, c, r);
}

/* ---- the state file ---------------------------------------------------- */

json_t *daemon_sched_vgpu_json(const struct daemon_vgpu *v)
{
	const struct daemon_sched_vgpu *s = v->sched;

	if (!s || (!s->min_sms && !s->max_sms && !s->weight && !s->prio &&
		   s->base_sms == v->sms))
		return NULL;
	return json_pack("{s:I, s:I, s:I, s:I, s:I}", "min_sms",
			 (json_int_t)s->min_sms, "max_sms",
			 (json_int_t)s->max_sms, "weight",
			 (json_int_t)s->weight, "priority", (json_int_t)s->prio,
			 "base_sms", (json_int_t)s->base_sms);
}

int daemon_sched_vgpu_from_json(struct daemon *d, struct daemon_vgpu *v,
				json_t *j, char *err, size_t errlen)
{
	json_int_t mn, mx, w, pr, base;
	struct daemon_sched_vgpu *s;
	json_error_t je;

	if (json_unpack_ex(j, &je, JSON_STRICT, "{s:I, s:I, s:I, s:I, s:I}",
			   "min_sms", &mn, "max_sms", &mx, "weight", &w,
			   "priority", &pr, "base_sms", &base)) {
		snprintf(err, errlen, "vGPU %s: \"policy\": %s", v->cfg.name,
			 je.text);
		return -1;
	}
	if (mn < 0 || mn > 0xffff || mx < 0 || mx > 0xffff || w < 0 ||
	    w > POLICY_WEIGHT_MAX || pr < 0 || pr > POLICY_HIGH || base < 0 ||
	    base > 0xffff || (mn && mx && mn > mx)) {
		snprintf(err, errlen,
			 "vGPU %s: \"policy\" has a value out of range",
			 v->cfg.name);
		return -1;
	}
	s = daemon_sched_vgpu(v);
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	s->min_sms = (uint32_t)mn;
	s->max_sms = (uint32_t)mx;
	s->weight = (uint32_t)w;
	s->prio = (uint32_t)pr;
	s->base_sms = base ? (uint32_t)base : v->sms;
	(void)d;
	return 0;
}

json_t *daemon_sched_json(const struct daemon *d)
{
	json_t *list = json_array(), *o;
	uint32_t i;

	if (!list || !d->sched)
		return list;
	for (i = 0; i < d->ngpus && i < VGPU_MAX_GPUS; i++) {
		const struct daemon_sched_gpu *g = &d->sched->gpu[i];

		o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:b}", "gpu",
			      (json_int_t)i, "mode", policy_mode_name(g->mode),
			      "quantum_ms", (json_int_t)g->quantum_ms,
			      "dwell_ms", (json_int_t)g->dwell_ms,
			      "reclaim_bound_ms",
			      (json_int_t)g->reclaim_bound_ms, "overcommit",
			      (int)g->overcommit);
		if (!o || json_array_append_new(list, o)) {
			json_decref(list);
			return NULL;
		}
	}
	return list;
}

int daemon_sched_from_json(struct daemon *d, json_t *j, char *err,
			   size_t errlen)
{
	json_int_t gpu, q, dw, rb;
	const char *mode;
	json_error_t je;
	int oc;
	json_t *o;
	size_t i;

	if (!json_is_array(j) || json_array_size(j) > VGPU_MAX_GPUS) {
		snprintf(err, errlen,
			 "\"scheduler\" must be an array of at most %d GPUs",
			 VGPU_MAX_GPUS);
		return -1;
	}
	json_array_foreach(j, i, o)
	{
		struct daemon_sched_gpu *g;
		uint32_t m;

		if (json_unpack_ex(o, &je, JSON_STRICT,
				   "{s:I, s:s, s:I, s:I, s:I, s:b}", "gpu",
				   &gpu, "mode", &mode, "quantum_ms", &q,
				   "dwell_ms", &dw, "reclaim_bound_ms", &rb,
				   "overcommit", &oc)) {
			snprintf(err, errlen, "\"scheduler\": %s", je.text);
			return -1;
		}
		if (!strcmp(mode, "static"))
			m = POLICY_STATIC;
		else if (!strcmp(mode, "fair"))
			m = POLICY_FAIR;
		else if (!strcmp(mode, "priority"))
			m = POLICY_PRIORITY;
		else
			m = 0;
		if (gpu < 0 || gpu >= (json_int_t)d->ngpus || !m || q < 1 ||
		    q > SCHED_SETTING_MAX_MS || dw < 1 ||
		    dw > SCHED_SETTING_MAX_MS || rb < 1 ||
		    (rb > SCHED_SETTING_MAX_MS && rb != POLICY_NO_BOUND)) {
			snprintf(err, errlen,
				 "\"scheduler\": GPU %lld: a value is out of "
				 "range (or no such GPU here)",
				 (long long)gpu);
			return -1;
		}
		g = &d->sched->gpu[gpu];
		g->mode = m;
		g->quantum_ms = (uint32_t)q;
		g->dwell_ms = (uint32_t)dw;
		g->reclaim_bound_ms = (uint32_t)rb;
		g->overcommit = oc;
	}
	return 0;
}
