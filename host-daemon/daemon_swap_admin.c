/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin's side of swapping in vgpud (admin.h 1.4, SWAP; see
 * daemon_swap.h): a GPU's settings, a vGPU's mode, the view with why each
 * swapped-out vGPU is out; CREATE's swap flags; the state file's part:
 *
 *   "swap": [{"gpu": 0, "on": true, "idle_ms": 60000, "wait_ms": 10000}]
 *	(top level: the GPUs whose settings are not the defaults)
 *   "state": {..., "swap": {"mode": "allowed", "swapped": true,
 *	"failed": false, "why": "...", "out_unix": 1700000000,
 *	"bytes": 8388608}}	(a vGPU's, with daemon_state_ops.c's)
 *
 * Every field of a request is checked; a bad one gets a sentence.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon.h"
#include "daemon_sched.h"
#include "daemon_state_ops.h"
#include "daemon_swap.h"

const char *daemon_swap_mode_name(uint32_t mode, bool gpu)
{
	switch (mode) {
	case VGPU_ADMIN_SWAP_OFF:
		return gpu ? "off" : "never";
	case VGPU_ADMIN_SWAP_ON:
		return gpu ? "on" : "allowed";
	}
	return "gpu";
}

static int mode_from_name(const char *s, uint32_t *mode)
{
	if (!strcmp(s, "never"))
		*mode = VGPU_ADMIN_SWAP_OFF;
	else if (!strcmp(s, "allowed"))
		*mode = VGPU_ADMIN_SWAP_ON;
	else if (!strcmp(s, "gpu"))
		*mode = VGPU_ADMIN_SWAP_GPU;
	else
		return -1;
	return 0;
}

bool daemon_swap_flags_ok(struct daemon *d, struct daemon_conn *c,
			  const struct vgpu_admin_request *req)
{
	if ((req->flags & VGPU_ADMIN_CREATE_SWAP_ALLOW) &&
	    (req->flags & VGPU_ADMIN_CREATE_SWAP_NEVER)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "swap allowed and swap never at once: "
				   "give one (or neither: as its GPU says)");
		return false;
	}
	return true;
}

void daemon_swap_vgpu_new(struct daemon *d, struct daemon_vgpu *v,
			  const struct vgpu_admin_request *req)
{
	struct daemon_vgpu_state *st;

	if (!(req->flags &
	      (VGPU_ADMIN_CREATE_SWAP_ALLOW | VGPU_ADMIN_CREATE_SWAP_NEVER)))
		return;
	st = daemon_state_of(v);
	if (!st) {
		daemon_log("vGPU %s: out of memory: its swap mode is the "
			   "GPU's",
			   v->cfg.name);
		return;
	}
	st->swap.mode = req->flags & VGPU_ADMIN_CREATE_SWAP_ALLOW
				? VGPU_ADMIN_SWAP_ON
				: VGPU_ADMIN_SWAP_OFF;
	daemon_log("vGPU %s: swap %s", v->cfg.name,
		   daemon_swap_mode_name(st->swap.mode, false));
	d->state_dirty = true;
}

/* ---- SWAP --------------------------------------------------------------- */

/* One vGPU's view. */
static void fill_vgpu(struct daemon *d, const struct daemon_vgpu *v,
		      struct vgpu_admin_swap_vgpu *e, int64_t now)
{
	const struct daemon_swap_vgpu *sw = v->st ? &v->st->swap : NULL;
	const struct daemon_sched_vgpu *s = v->sched;

	memset(e, 0, sizeof(*e));
	memcpy(e->name, v->cfg.name, sizeof(e->name));
	e->gpu = v->cfg.gpu;
	e->mode = sw && sw->mode ? sw->mode : VGPU_ADMIN_SWAP_GPU;
	e->allowed = daemon_swap_allowed(d, v);
	e->idle_ms = VGPU_ADMIN_NA;
	if (s && s->pid == v->pid && !s->runnable && s->idle_ms &&
	    now >= s->idle_ms)
		e->idle_ms = now - s->idle_ms > UINT32_MAX - 1
				     ? UINT32_MAX - 1
				     : (uint32_t)(now - s->idle_ms);
	if (!sw)
		return;
	e->swapped = sw->swapped;
	e->failed = sw->failed;
	if (sw->swapped) {
		e->out_ms = (uint32_t)(now - sw->out_ms);
		e->bytes = sw->bytes;
		if (sw->want_ms)
			e->waiting_ms = (uint32_t)(now - sw->want_ms);
	}
	e->swap_outs = sw->swap_outs;
	e->swap_ins = sw->swap_ins;
	if (sw->swapped || sw->op || sw->why[0])
		memcpy(e->why, sw->why, sizeof(e->why));
}

/* The answer: every GPU, and the vGPUs from first. */
static void reply_view(struct daemon *d, struct daemon_conn *c,
		       const struct vgpu_admin_request *req, const char *msg)
{
	struct vgpu_admin_response *r = daemon_admin_response_new(d, c);
	const struct daemon_vgpu *v;
	int64_t now = daemon_now_ms();
	uint32_t i, k = 0;

	if (!r)
		return; /* answered */
	snprintf(r->message, sizeof(r->message), "%s", msg);
	for (i = 0; i < d->ngpus && i < VGPU_MAX_GPUS; i++) {
		struct vgpu_admin_swap_gpu *g = &r->swap.gpus[i];
		const struct daemon_swap_gpu *s = &d->swap->gpu[i];

		g->index = i;
		g->mode = s->on ? VGPU_ADMIN_SWAP_ON : VGPU_ADMIN_SWAP_OFF;
		g->idle_ms = s->idle_ms;
		g->wait_ms = s->wait_ms;
		g->swap_outs = s->swap_outs;
		g->swap_ins = s->swap_ins;
		for (v = d->vgpus; v; v = v->next)
			g->swapped += v->cfg.gpu == i && daemon_swap_swapped(v);
	}
	for (v = d->vgpus; v; v = v->next, k++)
		if (k >= req->first && r->count < VGPU_ADMIN_LIST_MAX)
			fill_vgpu(d, v, &r->swap.vgpus[r->count++], now);
	r->total = k;
	if (d->state_dirty && !d->stopping)
		daemon_state_save(d); /* what was changed is on disk first */
	daemon_admin_response_send(d, c, r);
}

/* A GPU's settings: name empty. */
static void admin_gpu(struct daemon *d, struct daemon_conn *c,
		      const struct vgpu_admin_request *req)
{
	const struct vgpu_admin_swap *q = &req->swap;
	struct daemon_swap_gpu *g;
	char msg[VGPU_MESSAGE_MAX];

	if (req->gpu == VGPU_ADMIN_GPU_ANY) {
		if (q->mode || q->idle_ms || q->wait_ms) {
			daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
					   "swap settings need a GPU (or a "
					   "vGPU's name)");
			return;
		}
		reply_view(d, c, req, "swap settings");
		return;
	}
	if (req->gpu >= d->ngpus) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "there is no GPU %u (this host has %u)",
				   req->gpu, d->ngpus);
		return;
	}
	if (q->mode > VGPU_ADMIN_SWAP_ON) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "swap mode %u of a GPU is not 1 (off) or 2 "
				   "(on)",
				   q->mode);
		return;
	}
	if (q->idle_ms &&
	    (q->idle_ms < SWAP_IDLE_MS_MIN || q->idle_ms > SWAP_IDLE_MS_MAX)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "a swap idle time of %u ms is not between "
				   "%u ms and %u hours",
				   q->idle_ms, SWAP_IDLE_MS_MIN,
				   SWAP_IDLE_MS_MAX / 3600000);
		return;
	}
	if (q->wait_ms &&
	    (q->wait_ms < SWAP_WAIT_MS_MIN || q->wait_ms > SWAP_WAIT_MS_MAX)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "a swap wait of %u ms is not between %u ms "
				   "and %u s",
				   q->wait_ms, SWAP_WAIT_MS_MIN,
				   SWAP_WAIT_MS_MAX / 1000);
		return;
	}
	g = &d->swap->gpu[req->gpu];
	if (q->mode)
		g->on = q->mode == VGPU_ADMIN_SWAP_ON;
	if (q->idle_ms)
		g->idle_ms = q->idle_ms;
	if (q->wait_ms)
		g->wait_ms = q->wait_ms;
	snprintf(msg, sizeof(msg),
		 "GPU %u: swap %s (idle %.1f s before a vGPU may go out, its "
		 "calls wait up to %.1f s for it to come back)",
		 req->gpu, g->on ? "on" : "off", g->idle_ms / 1e3,
		 g->wait_ms / 1e3);
	if (q->mode || q->idle_ms || q->wait_ms) {
		daemon_log("swap: %s", msg);
		d->state_dirty = true;
	}
	reply_view(d, c, req, msg);
}

/* A vGPU's mode: a name. */
static void admin_vgpu(struct daemon *d, struct daemon_conn *c,
		       const struct vgpu_admin_request *req)
{
	const struct vgpu_admin_swap *q = &req->swap;
	struct daemon_vgpu_state *st;
	struct daemon_vgpu *v;
	char msg[VGPU_MESSAGE_MAX];

	/* the name first, then the fields, then whether it exists */
	if (!daemon_admin_name_ok(d, c, req))
		return;
	if (q->idle_ms || q->wait_ms) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "the swap idle time and wait are a GPU's "
				   "(policy --gpu N), not vGPU %s's",
				   req->name);
		return;
	}
	if (q->mode > VGPU_ADMIN_SWAP_GPU) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "swap mode %u of a vGPU is not 1 (never), "
				   "2 (allowed) or 3 (as its GPU)",
				   q->mode);
		return;
	}
	v = daemon_admin_find(d, c, req);
	if (!v)
		return;
	st = daemon_state_of(v);
	if (!st) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		return;
	}
	if (q->mode) {
		st->swap.mode = q->mode;
		d->state_dirty = true;
	}
	snprintf(msg, sizeof(msg), "vGPU %s: swap %s%s", v->cfg.name,
		 daemon_swap_mode_name(st->swap.mode ? st->swap.mode
						     : VGPU_ADMIN_SWAP_GPU,
				       false),
		 (!st->swap.mode || st->swap.mode == VGPU_ADMIN_SWAP_GPU)
			 ? (daemon_swap_allowed(d, v) ? " (GPU's: on)"
						      : " (GPU's: off)")
			 : "");
	if (q->mode)
		daemon_log("swap: %s", msg);
	reply_view(d, c, req, msg);
}

void daemon_swap_admin(struct daemon *d, struct daemon_conn *c,
		       const struct vgpu_admin_request *req)
{
	if (!daemon_swap_of(d)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		return;
	}
	if (req->swap.reserved) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "swap: a reserved byte is %u (must be 0)",
				   req->swap.reserved);
		return;
	}
	if (req->name[0])
		admin_vgpu(d, c, req);
	else
		admin_gpu(d, c, req);
}

/* ---- the state file --------------------------------------------------- */

json_t *daemon_swap_json(struct daemon *d)
{
	json_t *a, *o;
	uint32_t i;

	if (!d->swap)
		return NULL;
	a = json_array();
	for (i = 0; a && i < d->ngpus && i < VGPU_MAX_GPUS; i++) {
		const struct daemon_swap_gpu *g = &d->swap->gpu[i];

		if (!g->on && g->idle_ms == SWAP_IDLE_MS_DEFAULT &&
		    g->wait_ms == SWAP_WAIT_MS_DEFAULT)
			continue;
		o = json_pack("{s:I, s:b, s:I, s:I}", "gpu", (json_int_t)i,
			      "on", (int)g->on, "idle_ms",
			      (json_int_t)g->idle_ms, "wait_ms",
			      (json_int_t)g->wait_ms);
		if (!o || json_array_append_new(a, o)) {
			json_decref(a);
			return NULL;
		}
	}
	if (a && !json_array_size(a)) {
		json_decref(a);
		return NULL;
	}
	return a;
}

int daemon_swap_from_json(struct daemon *d, json_t *j, char *err, size_t errlen)
{
	json_int_t gpu, idle, wait;
	json_error_t je;
	json_t *o;
	size_t i;
	int on;

	if (!json_is_array(j) || json_array_size(j) > VGPU_MAX_GPUS) {
		snprintf(err, errlen,
			 "\"swap\" must be an array of at most %d GPUs",
			 VGPU_MAX_GPUS);
		return -1;
	}
	if (!daemon_swap_of(d)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	json_array_foreach(j, i, o)
	{
		if (json_unpack_ex(o, &je, JSON_STRICT, "{s:I, s:b, s:I, s:I}",
				   "gpu", &gpu, "on", &on, "idle_ms", &idle,
				   "wait_ms", &wait)) {
			snprintf(err, errlen, "\"swap\"[%zu]: %s", i, je.text);
			return -1;
		}
		if (gpu < 0 || gpu >= (json_int_t)d->ngpus ||
		    idle < SWAP_IDLE_MS_MIN || idle > SWAP_IDLE_MS_MAX ||
		    wait < SWAP_WAIT_MS_MIN || wait > SWAP_WAIT_MS_MAX) {
			snprintf(err, errlen,
				 "\"swap\"[%zu]: gpu %lld, idle_ms %lld or "
				 "wait_ms %lld is out of range",
				 i, (long long)gpu, (long long)idle,
				 (long long)wait);
			return -1;
		}
		d->swap->gpu[gpu].on = on;
		d->swap->gpu[gpu].idle_ms = (uint32_t)idle;
		d->swap->gpu[gpu].wait_ms = (uint32_t)wait;
	}
	return 0;
}

json_t *daemon_swap_vgpu_json(const struct daemon_vgpu *v)
{
	const struct daemon_swap_vgpu *sw = v->st ? &v->st->swap : NULL;

	if (!sw ||
	    ((!sw->mode || sw->mode == VGPU_ADMIN_SWAP_GPU) && !sw->swapped))
		return NULL;
	return json_pack("{s:s, s:b, s:b, s:s, s:I, s:I}", "mode",
			 daemon_swap_mode_name(sw->mode, false), "swapped",
			 (int)sw->swapped, "failed", (int)sw->failed, "why",
			 sw->why, "out_unix", (json_int_t)sw->out_unix, "bytes",
			 (json_int_t)sw->bytes);
}

int daemon_swap_vgpu_from_json(struct daemon *d, struct daemon_vgpu *v,
			       json_t *j, char *err, size_t errlen)
{
	struct daemon_vgpu_state *st;
	const char *mode, *why;
	json_int_t out, bytes;
	json_error_t je;
	int swapped, failed;
	uint32_t m;

	(void)d;
	if (json_unpack_ex(j, &je, JSON_STRICT,
			   "{s:s, s:b, s:b, s:s, s:I, s:I}", "mode", &mode,
			   "swapped", &swapped, "failed", &failed, "why", &why,
			   "out_unix", &out, "bytes", &bytes)) {
		snprintf(err, errlen, "vGPU %s: \"swap\": %s", v->cfg.name,
			 je.text);
		return -1;
	}
	if (mode_from_name(mode, &m) || out < 0 || bytes < 0 ||
	    (failed && !swapped)) {
		snprintf(err, errlen,
			 "vGPU %s: \"swap\": mode '%.20s', out_unix, bytes or "
			 "failed is not valid",
			 v->cfg.name, mode);
		return -1;
	}
	st = daemon_state_of(v);
	if (!st) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	st->swap.mode = m;
	st->swap.swapped = swapped;
	st->swap.failed = failed;
	snprintf(st->swap.why, sizeof(st->swap.why), "%s", why);
	st->swap.out_unix = out;
	st->swap.bytes = (uint64_t)bytes;
	return 0;
}
