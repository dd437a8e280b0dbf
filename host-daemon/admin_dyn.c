/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin's dynamic-partitioning commands (admin.h 1.2):
 *
 *   resize NAME --sms N       grow or shrink a running vGPU
 *   move NAME --slice GROUPS  move it onto exactly those SM groups
 *   top [--once] [-n N] [--interval S] [--json]
 *                             live load per vGPU, like top(1)
 *
 * The JSON objects are documented in docs/vgpu-admin.1 and stay stable.
 */
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "admin_cli.h"
#include "plan.h"

#define TOP_MAX_VGPUS 4096

const char admin_usage_resize[] =
	"usage: vgpu-admin [--run-dir DIR] resize NAME --sms N [--json]\n"
	"\n"
	"Grow or shrink the running vGPU NAME to N SMs (rounded up to whole\n"
	"SM groups, 8 SMs on an H100). Its programs go on: its worker builds\n"
	"the new slice beside them and switches their streams between two\n"
	"kernels, keeping their order. It keeps the groups it has where it\n"
	"can; it may move to other groups (or to the SMs the split leaves\n"
	"over) when they fit better. New device queries of its programs see\n"
	"the new SM count. Refused when its GPU has too few free groups, or\n"
	"while it is not running (starting, restarting after a fault).\n";

const char admin_usage_move[] =
	"usage: vgpu-admin [--run-dir DIR] move NAME --slice GROUPS [--json]\n"
	"\n"
	"Move the running vGPU NAME onto exactly the SM groups GROUPS of its\n"
	"GPU (e.g. 4,5 or 4-7; see vgpu-admin gpus), as resize does: its\n"
	"programs go on. Each group must be free or already NAME's.\n";

const char admin_usage_top[] =
	"usage: vgpu-admin [--run-dir DIR] top [--once] [-n N] "
	"[--interval S] [--json]\n"
	"\n"
	"Live load of every vGPU, refreshed every S seconds (default 1):\n"
	"SMs, busy (fraction of the last window with kernels in flight on\n"
	"its slice), kernels per second, queue depth, memory, compute- or\n"
	"memory-bound (NVML), its share of the GPU's power and energy (NVML;\n"
	"n/a without it, and on the simulator). q or Ctrl-C quits.\n"
	"\n"
	"  --once        print one table and exit (with --json: one object)\n"
	"  -n N          print N tables, then exit\n"
	"  --interval S  seconds between tables (0.1 to 3600)\n";

/* ---- resize, move ------------------------------------------------------ */

/* "4,5" or "4-7" or "0,2-3" -> mask; -1 on anything else. */
static int parse_groups(const char *s, uint64_t *mask)
{
	unsigned long a, b;
	char *end;

	*mask = 0;
	for (;;) {
		if (*s < '0' || *s > '9')
			return -1;
		errno = 0;
		a = strtoul(s, &end, 10);
		b = a;
		if (*end == '-') {
			s = end + 1;
			if (*s < '0' || *s > '9')
				return -1;
			b = strtoul(s, &end, 10);
		}
		if (errno || a > b || b >= 64)
			return -1;
		for (; a <= b; a++)
			*mask |= 1ull << a;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -1;
		s = end + 1;
	}
}

/* Send a RESIZE and print the outcome. */
static int resize_send(const struct admin_ctx *ctx,
		       const struct vgpu_admin_request *req)
{
	struct vgpu_admin_response *resp = response_alloc();
	int rc;

	if (!resp)
		return ADMIN_EXIT_REFUSED;
	rc = call_ok(ctx, req, resp);
	if (rc == ADMIN_EXIT_OK) {
		if (ctx->json)
			json_print(json_pack(
				"{s:o, s:s}", "resized",
				resp->count ? entry_json(&resp->entries[0])
					    : json_null(),
				"message", resp->message));
		else
			printf("%s\n", resp->message);
	}
	free(resp);
	return rc;
}

/* NAME and one option with a value, in any order. */
static int name_and_opt(const struct admin_ctx *ctx, const char *cmd, int argc,
			char **argv, const char *opt, const char **name,
			const char **value)
{
	char err[160];
	size_t len = strlen(opt);
	int i;

	*name = *value = NULL;
	for (i = 0; i < argc; i++) {
		if (!strncmp(argv[i], opt, len) && argv[i][len] == '=') {
			*value = argv[i] + len + 1;
		} else if (!strcmp(argv[i], opt)) {
			if (i + 1 >= argc)
				return usage_error(ctx, cmd, "%s needs a value",
						   opt);
			*value = argv[++i];
		} else if (argv[i][0] == '-') {
			return usage_error(ctx, cmd, "unknown option '%s'",
					   argv[i]);
		} else if (*name) {
			return usage_error(ctx, cmd,
					   "%s takes one NAME (got '%s' too)",
					   cmd, argv[i]);
		} else {
			*name = argv[i];
		}
	}
	if (!*name)
		return usage_error(ctx, cmd, "%s needs the vGPU's NAME", cmd);
	if (!plan_name_valid(*name, err, sizeof(err)))
		return usage_error(ctx, cmd, "%s: %s", cmd, err);
	if (!*value)
		return usage_error(ctx, cmd, "%s needs %s", cmd, opt);
	return ADMIN_EXIT_OK;
}

int cmd_resize(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_request req;
	const char *name, *value;
	uint32_t sms;
	int rc;

	rc = name_and_opt(ctx, "resize", argc, argv, "--sms", &name, &value);
	if (rc)
		return rc;
	if (parse_uint(value, 1024, &sms) || sms == 0)
		return usage_error(ctx, "resize",
				   "--sms needs a number of SMs from 1 to "
				   "1024, not '%s'",
				   value);
	request_init(&req, VGPU_ADMIN_RESIZE);
	snprintf(req.name, sizeof(req.name), "%s", name);
	req.sms = sms;
	return resize_send(ctx, &req);
}

int cmd_move(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_request req;
	const char *name, *value;
	uint64_t mask;
	int rc;

	rc = name_and_opt(ctx, "move", argc, argv, "--slice", &name, &value);
	if (rc)
		return rc;
	if (parse_groups(value, &mask) || !mask)
		return usage_error(ctx, "move",
				   "--slice needs SM group numbers below 64, "
				   "like 4,5 or 4-7, not '%s'",
				   value);
	request_init(&req, VGPU_ADMIN_RESIZE);
	snprintf(req.name, sizeof(req.name), "%s", name);
	req.slice_mask = mask;
	return resize_send(ctx, &req);
}

/* ---- top ---------------------------------------------------------------- */

/* Every vGPU's load (paging through TOP); the count, or -exit code. */
static int top_fetch(const struct admin_ctx *ctx, struct vgpu_admin_load *all)
{
	struct vgpu_admin_request req;
	struct vgpu_admin_response *resp = response_alloc();
	uint32_t n = 0, i, pages = 0;
	int rc;

	if (!resp)
		return -ADMIN_EXIT_REFUSED;
	do {
		request_init(&req, VGPU_ADMIN_TOP);
		req.first = n;
		rc = call_ok(ctx, &req, resp);
		if (rc) {
			free(resp);
			return -rc;
		}
		if (resp->count > VGPU_ADMIN_LIST_MAX)
			resp->count = VGPU_ADMIN_LIST_MAX;
		for (i = 0; i < resp->count && n < TOP_MAX_VGPUS; i++) {
			all[n] = resp->loads[i];
			all[n].name[sizeof(all[n].name) - 1] = '\0';
			n++;
		}
	} while (resp->count && n < resp->total && n < TOP_MAX_VGPUS &&
		 ++pages < TOP_MAX_VGPUS);
	free(resp);
	return (int)n;
}

static bool has_window(const struct vgpu_admin_load *l)
{
	return l->window_ns != 0;
}

static double busy_fraction(const struct vgpu_admin_load *l)
{
	if (!has_window(l) || l->busy_source == VGPU_BUSY_NONE)
		return -1;
	return (double)l->busy_ns / (double)l->window_ns;
}

static double per_second(uint64_t count, const struct vgpu_admin_load *l)
{
	return has_window(l) ? count * 1e9 / (double)l->window_ns : 0;
}

static const char *bw_text(uint32_t c)
{
	switch (c) {
	case VGPU_ADMIN_BW_IDLE:
		return "idle";
	case VGPU_ADMIN_BW_COMPUTE:
		return "compute";
	case VGPU_ADMIN_BW_MEMORY:
		return "memory";
	}
	return "n/a";
}

static const char *busy_source_text(uint32_t s)
{
	switch (s) {
	case VGPU_BUSY_BACKEND:
		return "backend";
	case VGPU_BUSY_EVENTS:
		return "events";
	}
	return "none";
}

static json_t *num_or_null(bool ok, double v)
{
	return ok ? json_real(v) : json_null();
}

/* One vGPU's load as its stable JSON object (vgpu-admin(1)). */
static json_t *load_json(const struct vgpu_admin_load *l)
{
	double busy = busy_fraction(l);
	json_t *o = json_object();

	if (!o)
		return NULL;
	json_object_set_new(o, "name", json_string(l->name));
	json_object_set_new(o, "gpu", json_integer(l->gpu));
	json_object_set_new(o, "simulated",
			    json_boolean(l->backend != VGPU_BACKEND_CUDA));
	json_object_set_new(o, "state", json_string(state_text(l->state)));
	json_object_set_new(o, "sms", json_integer(l->sms));
	json_object_set_new(o, "clients", json_integer(l->clients));
	json_object_set_new(o, "window_ms",
			    num_or_null(has_window(l), l->window_ns / 1e6));
	json_object_set_new(o, "age_ms",
			    l->age_ms == VGPU_ADMIN_NA
				    ? json_null()
				    : json_integer(l->age_ms));
	json_object_set_new(o, "busy", num_or_null(busy >= 0, busy));
	json_object_set_new(o, "busy_source",
			    json_string(busy_source_text(l->busy_source)));
	json_object_set_new(
		o, "kernels_per_s",
		num_or_null(has_window(l), per_second(l->kernels, l)));
	json_object_set_new(
		o, "copy_bytes_per_s",
		num_or_null(has_window(l), per_second(l->bytes_copied, l)));
	json_object_set_new(o, "queue_depth",
			    has_window(l) ? json_integer(l->queue_depth)
					  : json_null());
	json_object_set_new(o, "memory_used", json_integer(l->memory_used));
	json_object_set_new(o, "memory_quota",
			    json_integer((json_int_t)l->memory_quota));
	json_object_set_new(o, "bandwidth_class",
			    json_string(bw_text(l->bw_class)));
	json_object_set_new(o, "sm_util",
			    l->sm_util == VGPU_ADMIN_NA
				    ? json_null()
				    : json_integer(l->sm_util));
	json_object_set_new(o, "mem_util",
			    l->mem_util == VGPU_ADMIN_NA
				    ? json_null()
				    : json_integer(l->mem_util));
	json_object_set_new(
		o, "power_w",
		num_or_null(l->power_mw != VGPU_ADMIN_NA, l->power_mw / 1e3));
	json_object_set_new(o, "gpu_power_w",
			    num_or_null(l->gpu_power_mw != VGPU_ADMIN_NA,
					l->gpu_power_mw / 1e3));
	json_object_set_new(o, "energy_j",
			    num_or_null(l->energy_mj != VGPU_ADMIN_NA_64,
					l->energy_mj / 1e3));
	json_object_set_new(o, "change_count", json_integer(l->change_count));
	json_object_set_new(o, "resizes", json_integer(l->resizes));
	json_object_set_new(
		o, "last_switch_us",
		num_or_null(l->resizes != 0, l->last_switch_ns / 1e3));
	json_object_set_new(
		o, "last_build_ms",
		num_or_null(l->resizes != 0, l->last_build_us / 1e3));
	json_object_set_new(o, "last_waits", json_integer(l->last_waits));
	json_object_set_new(
		o, "barrier_us_per_s",
		num_or_null(has_window(l), per_second(l->barrier_ns, l) / 1e3));
	return o;
}

static void print_table(const struct vgpu_admin_load *all, int n,
			double interval)
{
	char mem[32], quota[32], busy[16], rate[24], queue[16], power[24];
	char energy[24];
	double b;
	int i;

	printf("vgpu top: %d vGPU%s, every %.3g s%s\n", n, n == 1 ? "" : "s",
	       interval,
	       n && all[0].backend == VGPU_BACKEND_SIM
		       ? " (simulated GPU: no power figures)"
		       : "");
	printf("%-16s %3s %4s %6s %10s %5s %19s %7s %8s %8s %10s\n", "NAME",
	       "GPU", "SMS", "BUSY", "KERNELS/S", "QUEUE", "MEMORY", "CLIENTS",
	       "BOUND", "POWER", "ENERGY");
	for (i = 0; i < n; i++) {
		const struct vgpu_admin_load *l = &all[i];

		b = busy_fraction(l);
		if (b >= 0)
			snprintf(busy, sizeof(busy), "%.1f%%", 100 * b);
		else
			snprintf(busy, sizeof(busy), "n/a");
		if (has_window(l)) {
			snprintf(rate, sizeof(rate), "%.0f",
				 per_second(l->kernels, l));
			snprintf(queue, sizeof(queue), "%u", l->queue_depth);
		} else {
			snprintf(rate, sizeof(rate), "-");
			snprintf(queue, sizeof(queue), "-");
		}
		if (l->power_mw != VGPU_ADMIN_NA)
			snprintf(power, sizeof(power), "%.1f W",
				 l->power_mw / 1e3);
		else
			snprintf(power, sizeof(power), "n/a");
		if (l->energy_mj != VGPU_ADMIN_NA_64)
			snprintf(energy, sizeof(energy), "%.1f J",
				 l->energy_mj / 1e3);
		else
			snprintf(energy, sizeof(energy), "n/a");
		plan_format_size(l->memory_used, mem, sizeof(mem));
		plan_format_size(l->memory_quota, quota, sizeof(quota));
		strncat(mem, "/", sizeof(mem) - strlen(mem) - 1);
		strncat(mem, quota, sizeof(mem) - strlen(mem) - 1);
		printf("%-16.16s %3u %4u %6s %10s %5s %19s %7u %8s %8s "
		       "%10s%s\n",
		       l->name, l->gpu, l->sms, busy, rate, queue, mem,
		       l->clients, bw_text(l->bw_class), power, energy,
		       l->state == VGPU_ADMIN_STATE_RUNNING ? ""
		       : l->state == VGPU_ADMIN_STATE_SWAPPED
			       ? "  (swapped out)"
			       : "  (not running)");
	}
	fflush(stdout);
}

static volatile sig_atomic_t top_stop;

static void top_on_signal(int sig)
{
	(void)sig;
	top_stop = 1;
}

/* Wait interval seconds; true when the user asked to quit (q, Ctrl-C). */
static bool top_wait(double interval, bool tty)
{
	struct pollfd p = {.fd = 0, .events = POLLIN};
	int ms = (int)(interval * 1000), r;
	char ch;

	r = poll(&p, tty ? 1 : 0, ms);
	if (top_stop)
		return true;
	if (r > 0 && read(0, &ch, 1) == 1 && (ch == 'q' || ch == 'Q'))
		return true;
	return false;
}

int cmd_top(const struct admin_ctx *ctx, int argc, char **argv)
{
	struct vgpu_admin_load *all;
	struct termios saved, raw;
	struct sigaction sa;
	double interval = 1.0;
	bool once = ctx->json, tty, live;
	uint32_t rounds = 0, done = 0;
	char *end;
	int i, n, rc = ADMIN_EXIT_OK;

	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--once")) {
			once = true;
		} else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			if (parse_uint(argv[++i], 1000000, &rounds) || !rounds)
				return usage_error(ctx, "top",
						   "-n needs a count of tables "
						   "(1 or more), not '%s'",
						   argv[i]);
		} else if (!strcmp(argv[i], "--interval") && i + 1 < argc) {
			errno = 0;
			interval = strtod(argv[++i], &end);
			if (errno || *end || !(interval >= 0.1) ||
			    interval > 3600)
				return usage_error(ctx, "top",
						   "--interval needs seconds "
						   "from 0.1 to 3600, not '%s'",
						   argv[i]);
		} else {
			return usage_error(ctx, "top", "unknown argument '%s'",
					   argv[i]);
		}
	}
	if (once)
		rounds = 1;
	all = calloc(TOP_MAX_VGPUS, sizeof(*all));
	if (!all) {
		fprintf(stderr, "vgpu-admin: out of memory\n");
		return ADMIN_EXIT_REFUSED;
	}
	live = rounds != 1;
	tty = live && isatty(0) && tcgetattr(0, &saved) == 0;
	if (live) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = top_on_signal; /* no SA_RESTART: poll ends */
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	if (tty) {
		raw = saved;
		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tcsetattr(0, TCSANOW, &raw);
	}
	for (;;) {
		n = top_fetch(ctx, all);
		if (n < 0) {
			rc = -n;
			break;
		}
		if (ctx->json) {
			json_t *list = json_array(), *o;

			for (i = 0; i < n; i++)
				json_array_append_new(list, load_json(&all[i]));
			o = json_pack("{s:o}", "vgpus", list);
			json_object_set_new(o, "sched",
					    admin_policy_top(ctx, false));
			json_print(o);
		} else {
			if (live && isatty(1))
				fputs("\033[H\033[2J", stdout);
			print_table(all, n, interval);
			admin_policy_top(ctx, true);
			fflush(stdout);
		}
		if (rounds && ++done >= rounds)
			break;
		if (top_wait(interval, tty))
			break;
	}
	if (tty)
		tcsetattr(0, TCSANOW, &saved);
	free(all);
	return rc;
}
