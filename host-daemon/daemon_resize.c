/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin resize / move in vgpud (admin.h: VGPU_ADMIN_RESIZE).
 *
 * The planner picks the new groups (plan_resize.c); the vGPU holds them
 * besides its old ones while its worker switches (VGPU_CTL_RESIZE); the
 * worker's VGPU_CTL_RESIZED keeps one set: the new one (config, plan and
 * state file follow, the admin gets the new entry) or the old one (the
 * admin gets the worker's reason). A worker that exits meanwhile fails
 * the resize and comes back, as it would anyway, on its old groups.
 *
 * Refused with a sentence: no such vGPU, 0 SMs, more than its GPU has
 * free, a vGPU that is not running (starting, restarting after a fault,
 * failed, being destroyed), one resize at a time per vGPU.
 *
 * A vGPU bound to an mdev instance gets its new composition into BAR0
 * (COMPOSITION, with the worker's change_count) when the resize is done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "ctl_msg.h"
#include "daemon_mdev.h"
#include "daemon_part.h"
#include "daemon_state_ops.h"
#include "daemon_sched.h"

static const char *state_name(uint32_t state)
{
	switch (state) {
	case VGPU_ADMIN_STATE_STARTING:
		return "starting";
	case VGPU_ADMIN_STATE_RESTARTING:
		return "restarting after a fault";
	case VGPU_ADMIN_STATE_FAILED:
		return "failed";
	case VGPU_ADMIN_STATE_STOPPING:
		return "being destroyed";
	}
	return "not running";
}

/* Whether v can be resized now; answers c (BUSY) if not. */
static bool resizable(struct daemon *d, struct daemon_conn *c,
		      struct daemon_vgpu *v)
{
	const struct daemon_vgpu_part *p = v->part;

	if (v->destroying || v->state != VGPU_ADMIN_STATE_RUNNING ||
	    !v->ready || v->ctl_fd < 0 || v->stop != DAEMON_STOP_NONE) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s is %s; resize it once it runs",
				   v->cfg.name,
				   v->destroying ? "being destroyed"
						 : state_name(v->state));
		return false;
	}
	if (daemon_vgpu_shared(v) && d->domains[v->cfg.gpu].recovering) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "GPU %u is restarting its shared fault "
				   "domain; try again in a few seconds",
				   v->cfg.gpu);
		return false;
	}
	if (p && p->resizing) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s is being resized already; try "
				   "again when that is done",
				   v->cfg.name);
		return false;
	}
	if (daemon_state_busy(v)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s is being migrated or resumed; try "
				   "again when that is done",
				   v->cfg.name);
		return false;
	}
	return true;
}

int daemon_resize_start(struct daemon *d, struct daemon_vgpu *v,
			const struct plan_resize *r, struct daemon_conn *waiter,
			int32_t *status, char *err, size_t errlen)
{
	struct vgpu_ctl_resize msg;
	struct daemon_vgpu_part *p;
	char groups[96];
	int e;

	p = daemon_vgpu_part(v);
	if (!p || (!d->part && !(d->part = calloc(1, sizeof(*d->part))))) {
		*status = VGPU_ADMIN_INTERNAL;
		snprintf(err, errlen, "vgpud is out of memory");
		return -1;
	}
	if (plan_resize_hold(d->plan, v->cfg.name, r)) {
		*status = VGPU_ADMIN_INTERNAL;
		snprintf(err, errlen,
			 "the planner could not hold the new groups");
		return -1;
	}
	memset(&msg, 0, sizeof(msg));
	msg.seq = ++d->part->resize_seq;
	msg.ngroups = r->ngroups;
	memcpy(msg.groups, r->groups, r->ngroups * sizeof(r->groups[0]));
	e = ctl_send(v->ctl_fd, VGPU_CTL_RESIZE, &msg, sizeof(msg), -1);
	if (e) {
		plan_resize_finish(d->plan, v->cfg.name, r, false);
		*status = VGPU_ADMIN_WORKER_FAILED;
		snprintf(err, errlen, "vGPU %s: cannot reach its worker: %s",
			 v->cfg.name, strerror(-e));
		return -1;
	}
	if (waiter) /* the scheduler logs its own moves */
		daemon_log("resizing vGPU %s: %u -> %u SMs (groups %s)",
			   v->cfg.name, v->sms, r->sms,
			   plan_groups_text(r->groups, r->ngroups, groups,
					    sizeof(groups)));
	p->resizing = true;
	p->seq = msg.seq;
	p->plan = *r;
	p->waiter = waiter;
	p->deadline = daemon_now_ms() + DAEMON_RESIZE_TIMEOUT_MS;
	if (waiter)
		waiter->parked = true;
	return 0;
}

/* Whether an explicit set of groups (a move) puts the leftover slice
 * together with regular groups: only the scheduler does that, as a loan
 * (daemon_sched_leftover.c); a vGPU an operator puts there holds it
 * alone. */
static bool mixes_leftover(const struct daemon *d, const struct daemon_vgpu *v,
			   uint64_t mask)
{
	uint64_t left = plan_leftover_bit(&d->plan->gpus[v->cfg.gpu]);

	return left && (mask & left) && mask != left;
}

void daemon_resize_admin(struct daemon *d, struct daemon_conn *c,
			 const struct vgpu_admin_request *req)
{
	struct daemon_vgpu *v;
	struct plan_resize r;
	char err[VGPU_MESSAGE_MAX], groups[96];
	int32_t status;

	v = daemon_admin_vgpu(d, c, req);
	if (!v)
		return;
	if (!req->slice_mask && req->sms == 0) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "a vGPU needs at least 1 SM (asked for 0); "
				   "to free all of it, destroy it");
		return;
	}
	if (!resizable(d, c, v))
		return;
	if (mixes_leftover(d, v, req->slice_mask)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "the leftover slice (group %u) is held "
				   "alone; only the scheduler lends it on top "
				   "of groups",
				   d->plan->gpus[v->cfg.gpu].ngroups);
		return;
	}
	if (!daemon_sched_resize_ok(d, c, v, req))
		return;
	if (plan_resize_choose(d->plan, v->cfg.name, req->sms, req->slice_mask,
			       &r, err, sizeof(err))) {
		daemon_admin_reply(d, c,
				   req->slice_mask ? VGPU_ADMIN_BAD_REQUEST
						   : VGPU_ADMIN_NO_ROOM,
				   NULL, "%s", err);
		return;
	}
	if (plan_resize_same(&r)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_OK, v,
				   "vGPU %s already has %u SMs (group%s %s)",
				   v->cfg.name, v->sms,
				   r.ngroups == 1 ? "" : "s",
				   plan_groups_text(r.groups, r.ngroups, groups,
						    sizeof(groups)));
		return;
	}
	if (daemon_resize_start(d, v, &r, c, &status, err, sizeof(err)))
		daemon_admin_reply(d, c, status, NULL, "%s", err);
}

/* "the worker could not resize it" as an admin status. */
static int32_t admin_status_of(int32_t cu)
{
	switch (cu) {
	case CUDA_ERROR_NOT_READY:
	case CUDA_ERROR_NOT_SUPPORTED:
	case CUDA_ERROR_ILLEGAL_STATE:
		return VGPU_ADMIN_BUSY;
	case CUDA_ERROR_INVALID_VALUE:
		return VGPU_ADMIN_INTERNAL; /* the plan and the GPU disagree */
	}
	return VGPU_ADMIN_WORKER_FAILED;
}

void daemon_resize_done(struct daemon *d, struct daemon_vgpu *v,
			struct vgpu_ctl_resized *r)
{
	struct daemon_vgpu_part *p = v->part;
	struct daemon_conn *c;
	char groups[96], streams[48] = "";
	uint32_t old_sms = v->sms;

	r->message[VGPU_MESSAGE_MAX - 1] = '\0';
	if (!p || !p->resizing || r->seq != p->seq) {
		daemon_log("vGPU %s: ignoring a RESIZED (seq %u) nobody waits "
			   "for",
			   v->cfg.name, r->seq);
		return;
	}
	c = p->waiter;
	p->resizing = false;
	p->waiter = NULL;
	p->deadline = 0;
	if (r->status != 0) {
		plan_resize_finish(d->plan, v->cfg.name, &p->plan, false);
		/* a vGPU failing or not ready says nothing of the leftover */
		if (v->sched && (r->status == CUDA_ERROR_ILLEGAL_STATE ||
				 r->status == CUDA_ERROR_NOT_READY))
			v->sched->resize_adds_leftover = false;
		daemon_sched_resized(d, v, false);
		daemon_log("vGPU %s: resize refused by its worker: %s "
			   "(CUresult %d)",
			   v->cfg.name, r->message, r->status);
		if (c)
			daemon_admin_reply(d, c, admin_status_of(r->status),
					   NULL,
					   "vGPU %s: the worker could not "
					   "resize it: %.180s (CUresult %d)",
					   v->cfg.name, r->message, r->status);
		return;
	}
	plan_resize_finish(d->plan, v->cfg.name, &p->plan, true);
	v->cfg.ngroups = p->plan.ngroups;
	memset(v->cfg.groups, 0, sizeof(v->cfg.groups));
	memcpy(v->cfg.groups, p->plan.groups,
	       p->plan.ngroups * sizeof(p->plan.groups[0]));
	v->sms = p->plan.sms;
	if (r->sm_count != p->plan.sms)
		daemon_log("vGPU %s: warning: the worker's new context has %u "
			   "SMs, the plan gave it %u",
			   v->cfg.name, r->sm_count, p->plan.sms);
	p->change_count = r->change_count;
	p->resizes++;
	p->last_switch_ns =
		r->switch_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)r->switch_ns;
	p->last_build_us = (uint32_t)(r->build_ns / 1000);
	p->last_waits = r->waits;
	d->state_dirty = true;
	daemon_mdev_vgpu_changed(d, v, r->change_count);
	daemon_sched_resized(d, v, true);
	plan_groups_text(p->plan.groups, p->plan.ngroups, groups,
			 sizeof(groups));
	daemon_log("vGPU %s: resized %u -> %u SMs (groups %s): new context "
		   "%.3f ms, switch %.1f us, %u of %u streams waited, budget "
		   "delay %.1f ms",
		   v->cfg.name, old_sms, v->sms, groups, r->build_ns / 1e6,
		   r->switch_ns / 1e3, r->waits, r->streams, r->delay_ns / 1e6);
	if (!c)
		return;
	if (r->streams)
		snprintf(streams, sizeof(streams), ", %u of %u streams waited",
			 r->waits, r->streams);
	daemon_admin_reply_unsaved(
		d, c, VGPU_ADMIN_OK, v,
		"resized vGPU %s: %u -> %u SMs (group%s %s); "
		"switch %.1f us%s",
		v->cfg.name, old_sms, v->sms, p->plan.ngroups == 1 ? "" : "s",
		groups, r->switch_ns / 1e3, streams);
}

void daemon_resize_abort(struct daemon *d, struct daemon_vgpu *v,
			 const char *why)
{
	struct daemon_vgpu_part *p = v->part;
	struct daemon_conn *c;

	if (!p)
		return;
	p->have_load = false; /* the next worker starts a new window */
	if (!p->resizing)
		return;
	c = p->waiter;
	p->resizing = false;
	p->waiter = NULL;
	p->deadline = 0;
	/* it comes back on its config: the old groups */
	plan_resize_finish(d->plan, v->cfg.name, &p->plan, false);
	/* a worker stopped on purpose says nothing of the leftover; one
	 * that died building the context over it counts as a failure */
	if (v->sched &&
	    (v->destroying || v->stop != DAEMON_STOP_NONE || d->stopping))
		v->sched->resize_adds_leftover = false;
	daemon_sched_resized(d, v, false);
	daemon_log("vGPU %s: resize failed: %s", v->cfg.name, why);
	if (c)
		daemon_admin_reply(d, c, VGPU_ADMIN_WORKER_FAILED, NULL,
				   "vGPU %s: resize failed: %s", v->cfg.name,
				   why);
}

int64_t daemon_resize_deadline(const struct daemon_vgpu *v)
{
	return v->part && v->part->resizing ? v->part->deadline : 0;
}

/*
 * A worker that does not answer in time: the admin is told; the vGPU
 * keeps both sets of groups until the worker answers after all (the
 * answer then counts) or exits (the old set counts).
 */
void daemon_resize_timers(struct daemon *d, int64_t now)
{
	struct daemon_vgpu *v;
	struct daemon_vgpu_part *p;

	for (v = d->vgpus; v; v = v->next) {
		p = v->part;
		if (!p || !p->resizing || !p->deadline || now < p->deadline)
			continue;
		p->deadline = 0;
		daemon_log("vGPU %s: its worker did not answer the resize "
			   "within %d s",
			   v->cfg.name, DAEMON_RESIZE_TIMEOUT_MS / 1000);
		if (p->waiter)
			daemon_admin_reply(
				d, p->waiter, VGPU_ADMIN_WORKER_FAILED, NULL,
				"vGPU %s: its worker did not answer "
				"the resize within %d s",
				v->cfg.name, DAEMON_RESIZE_TIMEOUT_MS / 1000);
		p->waiter = NULL;
	}
}

void daemon_resize_close_waiters(struct daemon *d)
{
	struct daemon_vgpu *v;

	daemon_sched_close_waiters(d);
	for (v = d->vgpus; v; v = v->next) {
		if (!v->part || !v->part->waiter)
			continue;
		daemon_admin_reply(d, v->part->waiter, VGPU_ADMIN_BUSY, NULL,
				   "vgpud is shutting down; the resize of "
				   "vGPU %s may not have happened",
				   v->cfg.name);
		v->part->waiter = NULL;
	}
}
