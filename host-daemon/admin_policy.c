/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin's scheduling commands (admin.h 1.3, docs/DESIGN.md
 * "Scheduling"):
 *
 *   policy                          every GPU's policy, each vGPU's share
 *   policy NAME [--weight W] [--min-sms N] [--max-sms N]
 *               [--priority low|normal|high]
 *   policy --gpu N [--mode static|fair|priority] [--quantum MS]
 *               [--dwell MS] [--reclaim-bound MS|none]
 *               [--overcommit on|off]
 *
 * and the policy's part of create (the same four vGPU options, and a
 * blueprint's fields), show and top. The JSON objects are documented in
 * docs/vgpu-admin.1 and stay stable.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_cli.h"
#include "admin_swap.h"
#include "blueprint.h"
#include "plan.h"

#define POLICY_MAX_VGPUS_SHOWN 4096

const char admin_usage_policy[] =
	"usage: vgpu-admin [--run-dir DIR] policy [--json]\n"
	"       vgpu-admin [--run-dir DIR] policy NAME [--weight W]\n"
	"                  [--min-sms N] [--max-sms N]\n"
	"                  [--priority low|normal|high] [--json]\n"
	"       vgpu-admin [--run-dir DIR] policy --gpu N\n"
	"                  [--mode static|fair|priority] [--quantum MS]\n"
	"                  [--dwell MS] [--reclaim-bound MS|none]\n"
	"                  [--overcommit on|off] [--swap on|off]\n"
	"                  [--swap-idle MS] [--swap-wait MS] [--json]\n"
	"       vgpu-admin [--run-dir DIR] policy NAME\n"
	"                  --swap allowed|never|gpu [--json]\n"
	"\n"
	"Scheduling policies. Without arguments: each GPU's policy and each\n"
	"vGPU's limits, its share, what it holds now and what it has lent\n"
	"or borrowed.\n"
	"\n"
	"A vGPU's policy (also in its blueprint, and create's options):\n"
	"  --min-sms N      the least it holds: what it never lends\n"
	"  --max-sms N      the most it may borrow up to\n"
	"  --weight W       its share against the others' (1 to 1000;\n"
	"                   default: its size in SM groups)\n"
	"  --priority P     low, normal (default) or high: under the\n"
	"                   priority mode vGPUs with work get their size in\n"
	"                   this order, and a high one never waits for a\n"
	"                   turn\n"
	"SMs are rounded up to whole SM groups; its size moves into the new\n"
	"range at once. Refused when the GPU's vGPUs would no longer fit\n"
	"their guarantees.\n"
	"\n"
	"A GPU's policy:\n"
	"  --mode M         static: every vGPU keeps its size; fair: idle\n"
	"                   vGPUs lend SMs (down to their min) to vGPUs\n"
	"                   with work, shared by weight, and take them back\n"
	"                   when they get work; priority: as fair, with\n"
	"                   vGPUs with work served to their size high\n"
	"                   priority first\n"
	"  --dwell MS       an idle vGPU lends only after MS idle, and no\n"
	"                   vGPU is moved twice within MS except to give a\n"
	"                   vGPU with work its SMs back (default 100)\n"
	"  --reclaim-bound MS  lend idle SMs only to a vGPU whose queued\n"
	"                   kernels would give them back within MS\n"
	"                   (default 20; none: to anyone)\n"
	"  --overcommit on|off  admit vGPUs whose min_sms together exceed\n"
	"                   the GPU; those with work then take turns\n"
	"  --quantum MS     a turn when they take turns (default 50)\n"
	"\n"
	"Swapping idle vGPUs out (docs/DESIGN.md \"Swap\"):\n"
	"  --gpu N --swap on|off  a create or resume on GPU N that does\n"
	"                   not fit may swap idle vGPUs of the GPU out to\n"
	"                   DIR/swap (default off); a swapped-out vGPU\n"
	"                   comes back when a client has work or connects\n"
	"  --swap-idle MS   idle this long before a vGPU may go out\n"
	"                   (default 60000)\n"
	"  --swap-wait MS   a call (or a new client) of a swapped-out vGPU\n"
	"                   waits this long for it to come back, then\n"
	"                   fails (default 10000)\n"
	"  NAME --swap allowed|never|gpu  the vGPU's own choice (default\n"
	"                   gpu: as its GPU says)\n";

/* ---- fetching ------------------------------------------------------------ */

struct sched_view {
	struct vgpu_admin_sched_gpu gpus[VGPU_MAX_GPUS];
	struct vgpu_admin_sched_vgpu *vgpus;
	uint32_t n;
};

/*
 * Every GPU's and vGPU's scheduler view (paging SCHED). 0; or an exit
 * code, printed unless quiet (a vgpud before 1.3 says nothing: quiet).
 */
static int sched_fetch(const struct admin_ctx *ctx, bool quiet,
		       struct sched_view *sv)
{
	struct vgpu_admin_response *resp = response_alloc();
	struct vgpu_admin_request req;
	uint32_t i, pages = 0;
	int rc;

	memset(sv, 0, sizeof(*sv));
	sv->vgpus = calloc(POLICY_MAX_VGPUS_SHOWN, sizeof(*sv->vgpus));
	if (!resp || !sv->vgpus) {
		free(resp);
		free(sv->vgpus);
		sv->vgpus = NULL;
		return ADMIN_EXIT_REFUSED;
	}
	do {
		request_init(&req, VGPU_ADMIN_SCHED);
		req.first = sv->n;
		rc = quiet ? admin_call(ctx, &req, resp)
			   : call_ok(ctx, &req, resp);
		if (!rc && resp->status != VGPU_ADMIN_OK)
			rc = ADMIN_EXIT_REFUSED;
		if (rc) {
			free(resp);
			free(sv->vgpus);
			sv->vgpus = NULL;
			return rc;
		}
		if (!pages)
			memcpy(sv->gpus, resp->sched.gpus, sizeof(sv->gpus));
		if (resp->count > VGPU_ADMIN_LIST_MAX)
			resp->count = VGPU_ADMIN_LIST_MAX;
		for (i = 0; i < resp->count && sv->n < POLICY_MAX_VGPUS_SHOWN;
		     i++) {
			sv->vgpus[sv->n] = resp->sched.vgpus[i];
			sv->vgpus[sv->n].name[VGPU_NAME_MAX - 1] = '\0';
			sv->n++;
		}
	} while (resp->count && sv->n < resp->total &&
		 sv->n < POLICY_MAX_VGPUS_SHOWN && ++pages < 4096);
	free(resp);
	return ADMIN_EXIT_OK;
}

static const struct vgpu_admin_sched_vgpu *
view_find(const struct sched_view *sv, const char *name)
{
	uint32_t i;

	for (i = 0; i < sv->n; i++)
		if (!strcmp(sv->vgpus[i].name, name))
			return &sv->vgpus[i];
	return NULL;
}

static const char *mode_text(uint32_t m)
{
	switch (m) {
	case VGPU_ADMIN_MODE_STATIC:
		return "static";
	case VGPU_ADMIN_MODE_FAIR:
		return "fair";
	case VGPU_ADMIN_MODE_PRIORITY:
		return "priority";
	}
	return "unknown";
}

static const char *prio_text(uint32_t p)
{
	switch (p) {
	case VGPU_ADMIN_PRIO_LOW:
		return "low";
	case VGPU_ADMIN_PRIO_NORMAL:
		return "normal";
	case VGPU_ADMIN_PRIO_HIGH:
		return "high";
	}
	return "unknown";
}

/* ---- JSON ------------------------------------------------------------------
 */

static json_t *ms_or_null(uint32_t us, bool ok)
{
	return ok ? json_real(us / 1e3) : json_null();
}

static json_t *gpu_json(const struct vgpu_admin_sched_gpu *g)
{
	return json_pack(
		"{s:i, s:s, s:i, s:i, s:o, s:b, s:i, s:i, s:i, s:b, s:i}",
		"gpu", (int)g->index, "mode", mode_text(g->mode), "quantum_ms",
		(int)g->quantum_ms, "dwell_ms", (int)g->dwell_ms,
		"reclaim_bound_ms",
		g->reclaim_bound_ms == 0xffff
			? json_null()
			: json_integer(g->reclaim_bound_ms),
		"overcommit", (int)g->overcommit, "sms", (int)g->sms,
		"guaranteed_sms", (int)g->guaranteed_sms, "runnable",
		(int)g->runnable, "timeslicing", (int)g->timeslicing, "resizes",
		(int)g->resizes);
}

static json_t *vgpu_json(const struct vgpu_admin_sched_vgpu *v)
{
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(v->name));
	json_object_set_new(o, "gpu", json_integer(v->gpu));
	json_object_set_new(o, "min_sms", json_integer(v->min_sms));
	json_object_set_new(o, "max_sms", json_integer(v->max_sms));
	json_object_set_new(o, "weight", json_integer(v->weight));
	json_object_set_new(o, "weight_default",
			    json_boolean(v->weight_default));
	json_object_set_new(o, "priority", json_string(prio_text(v->priority)));
	json_object_set_new(o, "base_sms", json_integer(v->base_sms));
	json_object_set_new(o, "sms", json_integer(v->sms));
	json_object_set_new(o, "share_sms", json_integer(v->share_sms));
	json_object_set_new(o, "target_sms", json_integer(v->target_sms));
	json_object_set_new(o, "lent_sms", json_integer(v->lent_sms));
	json_object_set_new(o, "borrowed_sms", json_integer(v->borrowed_sms));
	json_object_set_new(o, "runnable", json_boolean(v->runnable));
	json_object_set_new(o, "held", json_boolean(v->held));
	json_object_set_new(o, "burst_period_ms",
			    v->burst_period_ms
				    ? json_integer(v->burst_period_ms)
				    : json_null());
	json_object_set_new(o, "burst_due", json_boolean(v->burst_expected));
	json_object_set_new(o, "turns", json_integer(v->turns));
	json_object_set_new(o, "reclaims", json_integer(v->reclaims));
	json_object_set_new(o, "last_reclaim_ms",
			    ms_or_null(v->last_reclaim_us, v->reclaims != 0));
	json_object_set_new(o, "max_reclaim_ms",
			    ms_or_null(v->max_reclaim_us, v->reclaims != 0));
	json_object_set_new(
		o, "last_drain_ms",
		ms_or_null(v->last_drain_us, v->last_drain_us != 0));
	json_object_set_new(o, "lent_sm_s", json_real(v->lent_sm_ms / 1e3));
	json_object_set_new(o, "borrowed_sm_s",
			    json_real(v->borrowed_sm_ms / 1e3));
	return o;
}

static json_t *view_json(const struct sched_view *sv)
{
	json_t *gpus = json_array(), *vgpus = json_array();
	uint32_t i;

	for (i = 0; i < VGPU_MAX_GPUS; i++)
		if (sv->gpus[i].mode)
			json_array_append_new(gpus, gpu_json(&sv->gpus[i]));
	for (i = 0; i < sv->n; i++)
		json_array_append_new(vgpus, vgpu_json(&sv->vgpus[i]));
	return json_pack("{s:o, s:o}", "gpus", gpus, "vgpus", vgpus);
}

/* ---- text ------------------------------------------------------------------
 */

static void gpu_line(const struct vgpu_admin_sched_gpu *g)
{
	char bound[32];

	if (g->reclaim_bound_ms == 0xffff)
		snprintf(bound, sizeof(bound), "none");
	else
		snprintf(bound, sizeof(bound), "%u ms", g->reclaim_bound_ms);
	printf("GPU %u: %s policy (quantum %u ms, dwell %u ms, reclaim bound "
	       "%s, over-commit %s); %u SMs in groups, %u guaranteed; %u "
	       "vGPU%s with work%s; %u scheduler resize%s\n",
	       g->index, mode_text(g->mode), g->quantum_ms, g->dwell_ms, bound,
	       g->overcommit ? "on" : "off", g->sms, g->guaranteed_sms,
	       g->runnable, g->runnable == 1 ? "" : "s",
	       g->timeslicing ? ", taking turns" : "", g->resizes,
	       g->resizes == 1 ? "" : "s");
}

static void view_print(const struct sched_view *sv)
{
	uint32_t i;

	for (i = 0; i < VGPU_MAX_GPUS; i++)
		if (sv->gpus[i].mode)
			gpu_line(&sv->gpus[i]);
	if (!sv->n)
		return;
	printf("%-16s %3s %6s %6s %4s %4s %4s %4s %5s %4s %4s %4s %s\n", "NAME",
	       "GPU", "PRIO", "WEIGHT", "MIN", "MAX", "BASE", "SMS", "SHARE",
	       "LENT", "BORR", "WORK", "RECLAIMS (last/max ms)");
	for (i = 0; i < sv->n; i++) {
		const struct vgpu_admin_sched_vgpu *v = &sv->vgpus[i];
		char w[16], rec[48];

		snprintf(w, sizeof(w), "%u%s", v->weight,
			 v->weight_default ? "*" : "");
		if (v->reclaims)
			snprintf(rec, sizeof(rec), "%u (%.1f/%.1f)",
				 v->reclaims, v->last_reclaim_us / 1e3,
				 v->max_reclaim_us / 1e3);
		else
			snprintf(rec, sizeof(rec), "0");
		printf("%-16.16s %3u %6s %6s %4u %4u %4u %4u %5u %4u %4u %4s "
		       "%s%s\n",
		       v->name, v->gpu, prio_text(v->priority), w, v->min_sms,
		       v->max_sms, v->base_sms, v->sms, v->share_sms,
		       v->lent_sms, v->borrowed_sms,
		       v->held		   ? "held"
		       : v->runnable	   ? "yes"
		       : v->burst_expected ? "due"
					   : "no",
		       rec, v->target_sms != v->sms ? "  (moving)" : "");
	}
	printf("(* weight: its size in SM groups; SHARE: what it holds when "
	       "every vGPU is busy)\n");
}

/* ---- policy
 * ------------------------------------------------------------------ */

/* "--opt VALUE" or "--opt=VALUE" at argv[*i]; NULL when not this opt. */
static const char *opt_arg(int argc, char **argv, int *i, const char *opt,
			   bool *missing)
{
	size_t n = strlen(opt);

	*missing = false;
	if (!strncmp(argv[*i], opt, n) && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (strcmp(argv[*i], opt))
		return NULL;
	if (*i + 1 >= argc) {
		*missing = true;
		return NULL;
	}
	return argv[++*i];
}

/*
 * Which of opts[0..n) stands at argv[*i]: its index, with *value set and
 * *i past the value; n when none does; or -exit code (a usage error for
 * cmd) when it has no value. The option tables of policy, create and swap
 * all read their options this way.
 */
int admin_opt_pick(const struct admin_ctx *ctx, const char *cmd, int argc,
		   char **argv, int *i, const char *const *opts, int n,
		   const char **value)
{
	bool missing;
	int k;

	for (k = 0; k < n; k++) {
		*value = opt_arg(argc, argv, i, opts[k], &missing);
		if (missing)
			return -usage_error(ctx, cmd, "%s needs a value",
					    opts[k]);
		if (*value)
			break;
	}
	return k;
}

static int parse_prio(const char *s, uint8_t *out)
{
	if (!strcmp(s, "low"))
		*out = VGPU_ADMIN_PRIO_LOW;
	else if (!strcmp(s, "normal"))
		*out = VGPU_ADMIN_PRIO_NORMAL;
	else if (!strcmp(s, "high"))
		*out = VGPU_ADMIN_PRIO_HIGH;
	else
		return -1;
	return 0;
}

int admin_policy_option(const struct admin_ctx *ctx, const char *cmd, int argc,
			char **argv, int *i, struct vgpu_admin_request *req)
{
	static const char *const opts[] = {"--weight", "--min-sms", "--max-sms",
					   "--priority"};
	const int nopts = sizeof(opts) / sizeof(opts[0]);
	struct vgpu_admin_policy *p = &req->policy;
	const char *v;
	uint32_t n;
	int k;

	k = admin_opt_pick(ctx, cmd, argc, argv, i, opts, nopts, &v);
	if (k < 0)
		return k;
	if (k == nopts)
		return 0; /* not one of these */
	req->flags |= VGPU_ADMIN_CREATE_POLICY;
	switch (k) {
	case 0:
		if (parse_uint(v, 1000, &n) || !n)
			return -usage_error(ctx, cmd,
					    "--weight needs 1 to 1000, not "
					    "'%s'",
					    v);
		p->weight = (uint16_t)n;
		break;
	case 1:
	case 2:
		if (parse_uint(v, 1024, &n) || !n)
			return -usage_error(ctx, cmd,
					    "%s needs a number of SMs from 1 "
					    "to 1024, not '%s'",
					    opts[k], v);
		if (k == 1)
			p->min_sms = (uint16_t)n;
		else
			p->max_sms = (uint16_t)n;
		break;
	default:
		if (parse_prio(v, &p->priority))
			return -usage_error(ctx, cmd,
					    "--priority is low, normal or "
					    "high, not '%s'",
					    v);
		break;
	}
	return 1;
}

void admin_policy_from_blueprint(const struct blueprint *bp,
				 struct vgpu_admin_request *req)
{
	if (!bp->min_sms && !bp->max_sms && !bp->weight && !bp->priority)
		return;
	req->flags |= VGPU_ADMIN_CREATE_POLICY;
	req->policy.min_sms = (uint16_t)bp->min_sms;
	req->policy.max_sms = (uint16_t)bp->max_sms;
	req->policy.weight = (uint16_t)bp->weight;
	req->policy.priority = (uint8_t)bp->priority;
}

/* A GPU option: 1 consumed (filled), 0 not one, or -exit code. */
static int gpu_option(const struct admin_ctx *ctx, int argc, char **argv,
		      int *i, struct vgpu_admin_gpu_policy *g)
{
	static const char *const opts[] = {"--mode", "--quantum", "--dwell",
					   "--reclaim-bound", "--overcommit"};
	const int nopts = sizeof(opts) / sizeof(opts[0]);
	const char *v;
	uint32_t n;
	int k;

	k = admin_opt_pick(ctx, "policy", argc, argv, i, opts, nopts, &v);
	if (k < 0)
		return k;
	if (k == nopts)
		return 0; /* not one of these */
	switch (k) {
	case 0:
		if (!strcmp(v, "static"))
			g->mode = VGPU_ADMIN_MODE_STATIC;
		else if (!strcmp(v, "fair"))
			g->mode = VGPU_ADMIN_MODE_FAIR;
		else if (!strcmp(v, "priority"))
			g->mode = VGPU_ADMIN_MODE_PRIORITY;
		else
			return -usage_error(ctx, "policy",
					    "--mode is static, fair or "
					    "priority, not '%s'",
					    v);
		break;
	case 1:
	case 2:
		if (parse_uint(v, 60000, &n) || !n)
			return -usage_error(ctx, "policy",
					    "%s needs milliseconds from 1 to "
					    "60000, not '%s'",
					    opts[k], v);
		if (k == 1)
			g->quantum_ms = (uint16_t)n;
		else
			g->dwell_ms = (uint16_t)n;
		break;
	case 3:
		if (!strcmp(v, "none"))
			n = 0xffff;
		else if (parse_uint(v, 60000, &n) || !n)
			return -usage_error(ctx, "policy",
					    "--reclaim-bound needs "
					    "milliseconds from 1 to 60000, or "
					    "none, not '%s'",
					    v);
		g->reclaim_bound_ms = (uint16_t)n;
		break;
	default:
		if (!strcmp(v, "on"))
			g->overcommit = 2;
		else if (!strcmp(v, "off"))
			g->overcommit = 1;
		else
			return -usage_error(ctx, "policy",
					    "--overcommit is on or off, not "
					    "'%s'",
					    v);
		break;
	}
	return 1;
}

/* Send a POLICY and print the outcome (with the view after it). */
static int policy_send(const struct admin_ctx *ctx,
		       const struct vgpu_admin_request *req)
{
	struct vgpu_admin_response *resp = response_alloc();
	const struct vgpu_admin_sched_vgpu *mine;
	struct sched_view sv = {0};
	json_t *o;
	int rc;

	if (!resp)
		return ADMIN_EXIT_REFUSED;
	rc = call_ok(ctx, req, resp);
	if (rc) {
		free(resp);
		return rc;
	}
	if (!ctx->json) {
		printf("%s\n", resp->message);
		free(resp);
		return ADMIN_EXIT_OK;
	}
	o = json_pack("{s:s}", "message", resp->message);
	if (!sched_fetch(ctx, true, &sv)) {
		mine = req->name[0] ? view_find(&sv, req->name) : NULL;
		if (mine)
			json_object_set_new(o, "vgpu", vgpu_json(mine));
		else if (req->gpu < VGPU_MAX_GPUS)
			json_object_set_new(o, "gpu",
					    gpu_json(&sv.gpus[req->gpu]));
		free(sv.vgpus);
	}
	json_print(o);
	free(resp);
	return ADMIN_EXIT_OK;
}

int cmd_policy(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_request req, gpu_req;
	const char *name = NULL, *v;
	struct sched_view sv;
	bool have_gpu = false, vgpu_opts = false, gpu_opts = false, missing;
	struct admin_swap_opts swap = {0};
	char err[160];
	int i, r;

	request_init(&req, VGPU_ADMIN_POLICY);
	request_init(&gpu_req, VGPU_ADMIN_POLICY);
	for (i = 0; i < argc; i++) {
		v = opt_arg(argc, argv, &i, "--gpu", &missing);
		if (missing)
			return usage_error(ctx, "policy", "--gpu needs a GPU");
		if (v) {
			if (parse_uint(v, VGPU_MAX_GPUS - 1, &gpu_req.gpu))
				return usage_error(ctx, "policy",
						   "--gpu needs a GPU number "
						   "(0, 1, ...), not '%s'",
						   v);
			have_gpu = true;
			continue;
		}
		r = admin_policy_option(ctx, "policy", argc, argv, &i, &req);
		if (r < 0)
			return -r;
		if (r > 0) {
			vgpu_opts = true;
			continue;
		}
		r = gpu_option(ctx, argc, argv, &i, &gpu_req.gpu_policy);
		if (r < 0)
			return -r;
		if (r > 0) {
			gpu_opts = true;
			continue;
		}
		r = admin_swap_option(ctx, "policy", argc, argv, &i, &swap);
		if (r < 0)
			return -r;
		if (r > 0)
			continue;
		if (argv[i][0] == '-')
			return usage_error(ctx, "policy",
					   "policy: unknown option '%s'",
					   argv[i]);
		if (name)
			return usage_error(ctx, "policy",
					   "policy takes one NAME (got '%s' "
					   "too)",
					   argv[i]);
		name = argv[i];
	}
	if (name && (have_gpu || gpu_opts))
		return usage_error(ctx, "policy",
				   "policy NAME sets a vGPU's policy, policy "
				   "--gpu N a GPU's: not both at once");
	if (vgpu_opts && !name)
		return usage_error(ctx, "policy",
				   "--weight, --min-sms, --max-sms and "
				   "--priority need the vGPU's NAME");
	if (gpu_opts && !have_gpu)
		return usage_error(ctx, "policy",
				   "--mode, --quantum, --dwell, "
				   "--reclaim-bound and --overcommit need "
				   "--gpu N");
	if (swap.given && !name && !have_gpu)
		return usage_error(ctx, "policy",
				   "--swap, --swap-idle and --swap-wait need "
				   "--gpu N or the vGPU's NAME");
	if (name) {
		if (!plan_name_valid(name, err, sizeof(err)))
			return usage_error(ctx, "policy", "policy: %s", err);
		snprintf(req.name, sizeof(req.name), "%s", name);
		req.flags = 0; /* POLICY takes no flags: policy is the op */
		if (swap.given &&
		    (r = admin_swap_apply(ctx, "policy", &swap, name, 0)))
			return r;
		return swap.given && !vgpu_opts ? ADMIN_EXIT_OK
						: policy_send(ctx, &req);
	}
	if (have_gpu) {
		if (swap.given && (r = admin_swap_apply(ctx, "policy", &swap,
							NULL, gpu_req.gpu)))
			return r;
		return swap.given && !gpu_opts ? ADMIN_EXIT_OK
					       : policy_send(ctx, &gpu_req);
	}
	r = sched_fetch(ctx, false, &sv);
	if (r)
		return r;
	if (ctx->json) {
		json_t *o = view_json(&sv), *sw = admin_swap_view(ctx, false);

		if (sw)
			json_object_set_new(o, "swap", sw);
		json_print(o);
	} else {
		view_print(&sv);
		admin_swap_view(ctx, true);
	}
	free(sv.vgpus);
	return ADMIN_EXIT_OK;
}

/* ---- show and top -------------------------------------------------------- */

void admin_policy_show(const struct admin_ctx *ctx, const char *name,
		       json_t *obj)
{
	const struct vgpu_admin_sched_vgpu *v;
	const struct vgpu_admin_sched_gpu *g;
	struct sched_view sv;

	if (sched_fetch(ctx, true, &sv))
		return; /* a vgpud before 1.3: nothing to add */
	v = view_find(&sv, name);
	if (!v || v->gpu >= VGPU_MAX_GPUS) {
		free(sv.vgpus);
		return;
	}
	g = &sv.gpus[v->gpu];
	if (obj) {
		json_t *o = vgpu_json(v);

		json_object_set_new(o, "mode", json_string(mode_text(g->mode)));
		json_object_set_new(obj, "policy", o);
		free(sv.vgpus);
		return;
	}
	printf("  policy         %s (GPU %u's): %u to %u SMs, weight %u%s, "
	       "priority %s\n",
	       mode_text(g->mode), v->gpu, v->min_sms, v->max_sms, v->weight,
	       v->weight_default ? " (its size in SM groups)" : "",
	       prio_text(v->priority));
	if (g->mode == VGPU_ADMIN_MODE_STATIC) {
		printf("  share          its size, %u SMs (static: nothing is "
		       "lent)\n",
		       v->base_sms);
	} else {
		printf("  share          %u SMs when every vGPU is busy (its "
		       "size: %u); %s\n",
		       v->share_sms, v->base_sms,
		       v->held	     ? "waits for its turn"
		       : v->runnable ? "has work"
				     : "idle");
		if (v->lent_sms)
			printf("  lent           %u SMs to vGPUs with work\n",
			       v->lent_sms);
		if (v->borrowed_sms)
			printf("  borrowed       %u SMs from idle vGPUs or "
			       "free "
			       "groups\n",
			       v->borrowed_sms);
		if (v->reclaims)
			printf("  reclaims       %u: its SMs back %.1f ms "
			       "after "
			       "it got work (at most %.1f ms)\n",
			       v->reclaims, v->last_reclaim_us / 1e3,
			       v->max_reclaim_us / 1e3);
	}
	free(sv.vgpus);
}

json_t *admin_policy_top(const struct admin_ctx *ctx, bool print)
{
	struct sched_view sv;
	json_t *o = NULL;

	if (sched_fetch(ctx, true, &sv))
		return NULL;
	if (print)
		view_print(&sv);
	else
		o = view_json(&sv);
	free(sv.vgpus);
	return o;
}
