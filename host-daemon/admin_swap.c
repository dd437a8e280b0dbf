/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin's swap options (admin.h 1.4, SWAP; docs/DESIGN.md "Swap"):
 *
 *   policy --gpu N --swap on|off [--swap-idle MS] [--swap-wait MS]
 *   policy NAME --swap allowed|never|gpu
 *   create ... --swap allowed|never
 *
 * and the swap lines of show (why a swapped-out vGPU is out) and of the
 * policy view. The JSON objects are documented in docs/vgpu-admin.1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_cli.h"
#include "admin_swap.h"
#include "plan.h"

int admin_swap_option(const struct admin_ctx *ctx, const char *cmd, int argc,
		      char **argv, int *i, struct admin_swap_opts *o)
{
	static const char *const opts[] = {"--swap", "--swap-idle",
					   "--swap-wait"};
	const int nopts = sizeof(opts) / sizeof(opts[0]);
	const char *v;
	uint32_t n;
	int k;

	k = admin_opt_pick(ctx, cmd, argc, argv, i, opts, nopts, &v);
	if (k < 0)
		return k;
	if (k == nopts)
		return 0; /* not one of these */
	switch (k) {
	case 0:
		if (!strcmp(v, "on") || !strcmp(v, "allowed"))
			o->mode = VGPU_ADMIN_SWAP_ON;
		else if (!strcmp(v, "off") || !strcmp(v, "never"))
			o->mode = VGPU_ADMIN_SWAP_OFF;
		else if (!strcmp(v, "gpu"))
			o->mode = VGPU_ADMIN_SWAP_GPU;
		else
			return -usage_error(ctx, cmd,
					    "--swap is on or off (a GPU), "
					    "allowed, never or gpu (a vGPU), "
					    "not '%s'",
					    v);
		snprintf(o->mode_text, sizeof(o->mode_text), "%s", v);
		break;
	case 1:
		if (parse_uint(v, 86400000, &n) || n < 100)
			return -usage_error(ctx, cmd,
					    "--swap-idle needs milliseconds "
					    "from 100 to 86400000 (24 h), "
					    "not '%s'",
					    v);
		o->idle_ms = n;
		break;
	default:
		if (parse_uint(v, 60000, &n) || n < 100)
			return -usage_error(ctx, cmd,
					    "--swap-wait needs milliseconds "
					    "from 100 to 60000, not '%s'",
					    v);
		o->wait_ms = (uint16_t)n;
		break;
	}
	o->given = true;
	return 1;
}

static bool gpu_word(const char *s)
{
	return !strcmp(s, "on") || !strcmp(s, "off");
}

/* The request for o, checked against what it is for (a GPU or a vGPU). */
static int swap_request(const struct admin_ctx *ctx, const char *cmd,
			const struct admin_swap_opts *o, const char *name,
			uint32_t gpu, struct vgpu_admin_request *req)
{
	request_init(req, VGPU_ADMIN_SWAP);
	req->gpu = VGPU_ADMIN_GPU_ANY;
	if (name) {
		if (o->idle_ms || o->wait_ms)
			return usage_error(ctx, cmd,
					   "--swap-idle and --swap-wait are "
					   "a GPU's (policy --gpu N), not a "
					   "vGPU's");
		if (o->mode && gpu_word(o->mode_text))
			return usage_error(ctx, cmd,
					   "a vGPU's --swap is allowed, never "
					   "or gpu (on and off are a GPU's)");
		snprintf(req->name, sizeof(req->name), "%s", name);
	} else {
		if (o->mode == VGPU_ADMIN_SWAP_GPU ||
		    (o->mode && !gpu_word(o->mode_text)))
			return usage_error(ctx, cmd,
					   "a GPU's --swap is on or off "
					   "(allowed, never and gpu are a "
					   "vGPU's)");
		req->gpu = gpu;
		req->swap.idle_ms = o->idle_ms;
		req->swap.wait_ms = o->wait_ms;
	}
	req->swap.mode = (uint8_t)o->mode;
	return ADMIN_EXIT_OK;
}

static const char *gpu_mode_text(uint32_t m)
{
	return m == VGPU_ADMIN_SWAP_ON ? "on" : "off";
}

static const char *vgpu_mode_text(uint32_t m)
{
	switch (m) {
	case VGPU_ADMIN_SWAP_ON:
		return "allowed";
	case VGPU_ADMIN_SWAP_OFF:
		return "never";
	}
	return "gpu";
}

static json_t *gpu_json(const struct vgpu_admin_swap_gpu *g)
{
	return json_pack("{s:i, s:s, s:i, s:i, s:i, s:i, s:i}", "gpu",
			 (int)g->index, "swap", gpu_mode_text(g->mode),
			 "idle_ms", (int)g->idle_ms, "wait_ms", (int)g->wait_ms,
			 "swapped", (int)g->swapped, "swap_outs",
			 (int)g->swap_outs, "swap_ins", (int)g->swap_ins);
}

static json_t *vgpu_json(const struct vgpu_admin_swap_vgpu *v)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(v->name));
	json_object_set_new(o, "gpu", json_integer(v->gpu));
	json_object_set_new(o, "swap", json_string(vgpu_mode_text(v->mode)));
	json_object_set_new(o, "allowed", json_boolean(v->allowed));
	json_object_set_new(o, "swapped", json_boolean(v->swapped));
	json_object_set_new(o, "failed", json_boolean(v->failed));
	json_object_set_new(o, "idle_ms",
			    v->idle_ms == VGPU_ADMIN_NA
				    ? json_null()
				    : json_integer(v->idle_ms));
	json_object_set_new(o, "out_ms",
			    v->swapped ? json_integer(v->out_ms) : json_null());
	json_object_set_new(o, "waiting_ms",
			    v->waiting_ms ? json_integer(v->waiting_ms)
					  : json_null());
	json_object_set_new(o, "bytes", json_integer((json_int_t)v->bytes));
	json_object_set_new(o, "why",
			    v->why[0] ? json_string(v->why) : json_null());
	json_object_set_new(o, "swap_outs", json_integer(v->swap_outs));
	json_object_set_new(o, "swap_ins", json_integer(v->swap_ins));
	return o;
}

/*
 * SWAP: req sent (the first page), or every page of a query. 0 with
 * *resp (and the vGPUs collected in *vgpus, *n) or an exit code (quiet:
 * nothing printed; a vgpud before 1.4 does not know SWAP).
 */
static int swap_fetch(const struct admin_ctx *ctx, bool quiet,
		      const struct vgpu_admin_request *req0,
		      struct vgpu_admin_response *resp,
		      struct vgpu_admin_swap_vgpu **vgpus, uint32_t *n)
{
	struct vgpu_admin_request req = *req0;
	struct vgpu_admin_swap_vgpu *all = NULL, *t;
	uint32_t pages = 0, i;
	int rc;

	*n = 0;
	do {
		rc = quiet ? admin_call(ctx, &req, resp)
			   : call_ok(ctx, &req, resp);
		if (!rc && resp->status != VGPU_ADMIN_OK)
			rc = ADMIN_EXIT_REFUSED;
		if (rc) {
			free(all);
			return rc;
		}
		if (resp->count > VGPU_ADMIN_LIST_MAX)
			resp->count = VGPU_ADMIN_LIST_MAX;
		t = realloc(all, (*n + resp->count + 1) * sizeof(*all));
		if (!t) {
			free(all);
			return ADMIN_EXIT_REFUSED;
		}
		all = t;
		for (i = 0; i < resp->count; i++) {
			all[*n] = resp->swap.vgpus[i];
			all[*n].name[VGPU_NAME_MAX - 1] = '\0';
			all[*n].why[VGPU_MESSAGE_MAX - 1] = '\0';
			(*n)++;
		}
		/* the next pages only ask */
		request_init(&req, VGPU_ADMIN_SWAP);
		req.gpu = VGPU_ADMIN_GPU_ANY;
		req.first = *n;
	} while (resp->count && *n < resp->total && ++pages < 4096);
	*vgpus = all;
	return ADMIN_EXIT_OK;
}

int admin_swap_apply(const struct admin_ctx *ctx, const char *cmd,
		     const struct admin_swap_opts *o, const char *name,
		     uint32_t gpu)
{
	struct vgpu_admin_response *resp = response_alloc();
	struct vgpu_admin_swap_vgpu *vs = NULL;
	struct vgpu_admin_request req;
	json_t *obj;
	uint32_t n = 0, i;
	int rc;

	if (!resp)
		return ADMIN_EXIT_REFUSED;
	rc = swap_request(ctx, cmd, o, name, gpu, &req);
	if (!rc)
		rc = swap_fetch(ctx, false, &req, resp, &vs, &n);
	if (rc) {
		free(resp);
		return rc;
	}
	if (!ctx->json) {
		printf("%s\n", resp->message);
	} else {
		obj = json_pack("{s:s}", "message", resp->message);
		for (i = 0; name && i < n; i++)
			if (!strcmp(vs[i].name, name))
				json_object_set_new(obj, "swap",
						    vgpu_json(&vs[i]));
		if (!name && gpu < VGPU_MAX_GPUS)
			json_object_set_new(obj, "swap",
					    gpu_json(&resp->swap.gpus[gpu]));
		json_print(obj);
	}
	free(vs);
	free(resp);
	return ADMIN_EXIT_OK;
}

void admin_swap_show(const struct admin_ctx *ctx, const char *name, json_t *obj)
{
	struct vgpu_admin_response *resp = response_alloc();
	struct vgpu_admin_swap_vgpu *vs = NULL, *v = NULL;
	const struct vgpu_admin_swap_gpu *g;
	struct vgpu_admin_request req;
	char sz[32];
	uint32_t n = 0, i;

	if (!resp)
		return;
	request_init(&req, VGPU_ADMIN_SWAP);
	req.gpu = VGPU_ADMIN_GPU_ANY;
	if (swap_fetch(ctx, true, &req, resp, &vs, &n))
		goto out; /* a vgpud before 1.4: nothing to add */
	for (i = 0; i < n && !v; i++)
		if (!strcmp(vs[i].name, name))
			v = &vs[i];
	if (!v || v->gpu >= VGPU_MAX_GPUS)
		goto out;
	g = &resp->swap.gpus[v->gpu];
	if (obj) {
		json_object_set_new(obj, "swap", vgpu_json(v));
		goto out;
	}
	if (v->mode == VGPU_ADMIN_SWAP_OFF)
		printf("  swap           never\n");
	else if (v->mode == VGPU_ADMIN_SWAP_ON)
		printf("  swap           allowed: may go out after %.1f s "
		       "idle\n",
		       g->idle_ms / 1e3);
	else if (v->allowed)
		printf("  swap           as GPU %u's: on, may go out after "
		       "%.1f s idle\n",
		       v->gpu, g->idle_ms / 1e3);
	else
		printf("  swap           as GPU %u's: off\n", v->gpu);
	if (v->swapped) {
		printf("  swapped out    %.1f s ago (%s in %s/swap/%s.state)\n",
		       v->out_ms / 1e3,
		       plan_format_size(v->bytes, sz, sizeof(sz)), ctx->run_dir,
		       v->name);
		printf("  why            %s\n", v->why[0] ? v->why : "?");
		if (v->failed)
			printf("  to bring it back: vgpu-admin resume %s\n",
			       v->name);
		else if (v->waiting_ms)
			printf("  has work       for %.1f s: waits to come "
			       "back (its calls wait up to %.1f s)\n",
			       v->waiting_ms / 1e3, g->wait_ms / 1e3);
		else
			printf("  comes back     when a client has work or "
			       "connects\n");
	} else if (v->why[0]) {
		printf("  last swap      %s\n", v->why);
	}
out:
	free(vs);
	free(resp);
}

json_t *admin_swap_view(const struct admin_ctx *ctx, bool print)
{
	struct vgpu_admin_response *resp = response_alloc();
	struct vgpu_admin_swap_vgpu *vs = NULL;
	struct vgpu_admin_request req;
	json_t *o = NULL, *gpus, *vgpus;
	uint32_t n = 0, i;

	if (!resp)
		return NULL;
	request_init(&req, VGPU_ADMIN_SWAP);
	req.gpu = VGPU_ADMIN_GPU_ANY;
	if (swap_fetch(ctx, true, &req, resp, &vs, &n))
		goto out;
	if (print) {
		for (i = 0; i < VGPU_MAX_GPUS; i++) {
			const struct vgpu_admin_swap_gpu *g =
				&resp->swap.gpus[i];

			if (!g->mode)
				continue;
			printf("GPU %u: swap %s (after %.1f s idle; a call "
			       "waits up to %.1f s); %u vGPU%s out now, %u "
			       "out and %u in so far\n",
			       g->index, gpu_mode_text(g->mode),
			       g->idle_ms / 1e3, g->wait_ms / 1e3, g->swapped,
			       g->swapped == 1 ? "" : "s", g->swap_outs,
			       g->swap_ins);
		}
		for (i = 0; i < n; i++)
			if (vs[i].swapped)
				printf("  %s: swapped out %.1f s ago %s\n",
				       vs[i].name, vs[i].out_ms / 1e3,
				       vs[i].why);
		goto out;
	}
	gpus = json_array();
	vgpus = json_array();
	for (i = 0; i < VGPU_MAX_GPUS; i++)
		if (resp->swap.gpus[i].mode)
			json_array_append_new(gpus,
					      gpu_json(&resp->swap.gpus[i]));
	for (i = 0; i < n; i++)
		json_array_append_new(vgpus, vgpu_json(&vs[i]));
	o = json_pack("{s:o, s:o}", "gpus", gpus, "vgpus", vgpus);
out:
	free(vs);
	free(resp);
	return o;
}

int admin_swap_create_option(const struct admin_ctx *ctx, const char *v,
			     struct vgpu_admin_request *req)
{
	req->flags &=
		~(VGPU_ADMIN_CREATE_SWAP_ALLOW | VGPU_ADMIN_CREATE_SWAP_NEVER);
	if (v && !strcmp(v, "allowed"))
		req->flags |= VGPU_ADMIN_CREATE_SWAP_ALLOW;
	else if (v && !strcmp(v, "never"))
		req->flags |= VGPU_ADMIN_CREATE_SWAP_NEVER;
	else if (!v || strcmp(v, "gpu"))
		return usage_error(ctx, "create",
				   "--swap is allowed, never or gpu, not '%s'",
				   v ? v : "");
	return ADMIN_EXIT_OK;
}
