/* SPDX-License-Identifier: MIT */
/*
 * Swapping idle vGPUs out to make room, and back in when they have work
 * (see daemon_swap.h and docs/DESIGN.md, "Swap").
 *
 *   out: a create (or a resume) the planner refused looks for vGPUs of
 *     the GPU it wants that may go out now: their settings allow it
 *     (the vGPU's own, else its GPU's), they have been idle for the
 *     GPU's idle time (the scheduler's activity edges: v->sched), and
 *     nothing else happens to them (a resize, a suspend, resume or
 *     migration, a restart of their fault domain). plan_swap_choose
 *     picks the longest idle ones that make room; each is suspended to
 *     DIR/swap/NAME.state with the GPU's wait bound for its clients'
 *     calls; the request waits (parked) until they are out, then runs
 *     again. One request makes room on a GPU at a time.
 *   in: a swapped-out vGPU has work when its worker reports a busy edge
 *     (a client thread found a descriptor: the call waits in its ring),
 *     when a load window after it went out shows a queue, or when a new
 *     client says hello (the hello waits here). It is resumed from its
 *     file where the planner finds room (its GPU first), after swapping
 *     out idle vGPUs of its GPU when it must; otherwise it tries again
 *     every SWAP_RETRY_MS while it has work. A call that waits longer
 *     than the bound fails in the worker (CUDA_ERROR_DEVICE_UNAVAILABLE);
 *     a hello gets a sentence.
 *   failure: a swap-out that fails leaves the vGPU running (the file
 *     goes); a swap-in that fails leaves the vGPU out, its file in place
 *     and the reason shown: vgpu-admin resume retries it.
 *
 * Activity edges: the scheduler asks a worker for them only under a
 * dynamic policy; for a vGPU that may be swapped out on a static GPU
 * this file asks (a VGPU_CTL_SCHED with idle_ms, no hold), again
 * whenever the scheduler has sent its own since.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "daemon.h"
#include "daemon_part.h"
#include "daemon_sched.h"
#include "daemon_state_ops.h"
#include "daemon_swap.h"
#include "plan_move.h"

/* A create or resume waiting for its victims to go out. */
struct daemon_swap_room {
	struct daemon_swap_room *next;
	struct daemon_conn *conn;
	struct vgpu_admin_request req;
	int fd; /* RESUME's file, or -1 */
	uint32_t gpu;
	uint32_t nvictims;
	char victims[PLAN_SWAP_MAX][VGPU_NAME_MAX];
	char failed[VGPU_MESSAGE_MAX]; /* a victim did not go out: why */
	int64_t deadline;
};

/* A client's hello waiting for its vGPU's swap-in. */
struct daemon_swap_hello {
	struct daemon_swap_hello *next;
	struct daemon_conn *conn;
	struct vgpu_ctl_client who;
	char vgpu[VGPU_NAME_MAX];
	int64_t deadline;
	uint32_t wait_ms; /* it waits this long */
};

/* ---- small helpers ---------------------------------------------------- */

struct daemon_swap *daemon_swap_of(struct daemon *d)
{
	uint32_t i;

	if (d->swap)
		return d->swap;
	d->swap = calloc(1, sizeof(*d->swap));
	if (!d->swap)
		return NULL;
	for (i = 0; i < VGPU_MAX_GPUS; i++) {
		d->swap->gpu[i].idle_ms = SWAP_IDLE_MS_DEFAULT;
		d->swap->gpu[i].wait_ms = SWAP_WAIT_MS_DEFAULT;
	}
	return d->swap;
}

/* v's swap part (made with its state part), or NULL without memory. */
static struct daemon_swap_vgpu *sw_of(struct daemon_vgpu *v)
{
	struct daemon_vgpu_state *st = daemon_state_of(v);

	return st ? &st->swap : NULL;
}

static const struct daemon_swap_vgpu *sw_peek(const struct daemon_vgpu *v)
{
	return v->st ? &v->st->swap : NULL;
}

bool daemon_swap_swapped(const struct daemon_vgpu *v)
{
	const struct daemon_swap_vgpu *sw = sw_peek(v);

	return sw && sw->swapped;
}

static const struct daemon_swap_gpu *gpu_of(struct daemon *d, uint32_t gpu)
{
	static const struct daemon_swap_gpu off = {
		.idle_ms = SWAP_IDLE_MS_DEFAULT,
		.wait_ms = SWAP_WAIT_MS_DEFAULT,
	};

	return d->swap && gpu < VGPU_MAX_GPUS ? &d->swap->gpu[gpu] : &off;
}

bool daemon_swap_allowed(struct daemon *d, const struct daemon_vgpu *v)
{
	const struct daemon_swap_vgpu *sw = sw_peek(v);
	uint32_t mode = sw && sw->mode ? sw->mode : VGPU_ADMIN_SWAP_GPU;

	if (mode == VGPU_ADMIN_SWAP_GPU)
		return gpu_of(d, v->cfg.gpu)->on;
	return mode == VGPU_ADMIN_SWAP_ON;
}

void daemon_swap_path(const struct daemon *d, const struct daemon_vgpu *v,
		      char *buf, size_t len)
{
	snprintf(buf, len, "%s/swap/%s.state", d->opts.run_dir, v->cfg.name);
}

static void unlink_file(struct daemon *d, struct daemon_vgpu *v)
{
	char path[PATH_MAX];

	daemon_swap_path(d, v, path, sizeof(path));
	if (unlink(path) < 0 && errno != ENOENT)
		daemon_log("swap: vGPU %s: cannot remove %s: %s", v->cfg.name,
			   path, strerror(errno));
}

static const char *size_text(uint64_t bytes, char *buf, size_t len)
{
	return plan_format_size(bytes, buf, len);
}

/* Memory free on GPU gpu now. */
static uint64_t gpu_free(const struct daemon *d, uint32_t gpu)
{
	const struct plan_gpu *g = &d->plan->gpus[gpu];

	return plan_gpu_usable(g) - g->memory_used;
}

/* Whether a swap of GPU gpu is in flight (an out, an in, a request
 * waiting for its victims): another waits for it. */
static bool gpu_busy(struct daemon *d, uint32_t gpu)
{
	const struct daemon_swap_room *r;
	const struct daemon_vgpu *v;
	const struct daemon_swap_vgpu *sw;

	for (v = d->vgpus; v; v = v->next)
		if (v->cfg.gpu == gpu && (sw = sw_peek(v)) && sw->op)
			return true;
	for (r = d->swap ? d->swap->rooms : NULL; r; r = r->next)
		if (r->gpu == gpu)
			return true;
	return false;
}

/* How many hellos wait for v (parked connections). */
static uint32_t hellos_count(struct daemon *d, const struct daemon_vgpu *v)
{
	const struct daemon_swap_hello *h;
	uint32_t n = 0;

	for (h = d->swap ? d->swap->hellos : NULL; h; h = h->next)
		if (!strcmp(h->vgpu, v->cfg.name))
			n++;
	return n;
}

static bool hellos_for(struct daemon *d, const struct daemon_vgpu *v)
{
	return hellos_count(d, v) != 0;
}

/* ---- who may go out ----------------------------------------------------- */

/*
 * Whether v may be swapped out now; else why (a few words, for the
 * sentences). *idle: how long it has been idle.
 */
static bool victim_ok(struct daemon *d, const struct daemon_vgpu *v,
		      int64_t now, uint64_t *idle, char *why, size_t len)
{
	const struct daemon_sched_vgpu *s = v->sched;
	const struct daemon_swap_vgpu *sw = sw_peek(v);
	uint32_t need = gpu_of(d, v->cfg.gpu)->idle_ms;

	*idle = 0;
	if (daemon_swap_swapped(v) || (sw && sw->op == SWAP_OP_OUT)) {
		snprintf(why, len, "swapped out already");
		return false;
	}
	if (daemon_state_suspended(v)) {
		snprintf(why, len, "suspended");
		return false;
	}
	if (!daemon_swap_allowed(d, v)) {
		snprintf(why, len,
			 sw && sw->mode == VGPU_ADMIN_SWAP_OFF
				 ? "never swaps"
				 : "swap is off on its GPU");
		return false;
	}
	if (v->destroying || v->state != VGPU_ADMIN_STATE_RUNNING ||
	    !v->ready || v->ctl_fd < 0 || v->stop != DAEMON_STOP_NONE) {
		snprintf(why, len, "not running");
		return false;
	}
	if (daemon_state_busy(v)) {
		snprintf(why, len, "being suspended, resumed or migrated");
		return false;
	}
	if ((v->part && v->part->resizing) || (s && s->resizing)) {
		snprintf(why, len, "being resized");
		return false;
	}
	if (daemon_vgpu_shared(v) && d->domains[v->cfg.gpu].recovering) {
		snprintf(why, len, "its fault domain is restarting");
		return false;
	}
	/* runnable until its worker said idle (see daemon_sched.c) */
	if (!s || s->pid != v->pid || s->runnable || !s->idle_ms) {
		snprintf(why, len, "has work");
		return false;
	}
	*idle = (uint64_t)(now - s->idle_ms);
	if (*idle < need) {
		snprintf(why, len, "idle %.1f s of %.1f s", *idle / 1e3,
			 need / 1e3);
		return false;
	}
	return true;
}

/* "a: has work; b: never swaps" for the vGPUs of GPU gpu (but skip). */
static void explain(struct daemon *d, uint32_t gpu,
		    const struct daemon_vgpu *skip, char *buf, size_t len)
{
	const struct daemon_vgpu *v;
	char why[64];
	uint64_t idle;
	size_t n = 0;
	int k = 0;

	buf[0] = '\0';
	for (v = d->vgpus; v && n < len; v = v->next) {
		if (v->cfg.gpu != gpu || v == skip ||
		    victim_ok(d, v, daemon_now_ms(), &idle, why, sizeof(why)))
			continue;
		if (k++ == 6) {
			n += (size_t)snprintf(buf + n, len - n, "; ...");
			break;
		}
		n += (size_t)snprintf(buf + n, len - n, "%s%s: %s",
				      n ? "; " : "", v->cfg.name, why);
	}
	if (!k)
		snprintf(buf, len, "it has no other vGPU");
}

/*
 * The candidates of GPU gpu (every GPU: PLAN_GPU_ANY) that are not busy
 * swapping, but skip. *n of them, in a new array with vs[] beside it.
 */
static struct plan_swap_cand *candidates(struct daemon *d, uint32_t gpu,
					 const struct daemon_vgpu *skip,
					 struct daemon_vgpu ***vs, uint32_t *n)
{
	struct plan_swap_cand *c;
	struct daemon_vgpu *v;
	uint32_t cap = 0;
	uint64_t idle;
	char why[64];
	int64_t now = daemon_now_ms();

	*n = 0;
	for (v = d->vgpus; v; v = v->next)
		cap++;
	c = calloc(cap ? cap : 1, sizeof(*c));
	*vs = calloc(cap ? cap : 1, sizeof(**vs));
	if (!c || !*vs) {
		free(c);
		free(*vs);
		*vs = NULL;
		return NULL;
	}
	for (v = d->vgpus; v; v = v->next) {
		const struct daemon_swap_vgpu *sw = sw_peek(v);

		if (v == skip || (gpu != PLAN_GPU_ANY && v->cfg.gpu != gpu) ||
		    gpu_busy(d, v->cfg.gpu) || (sw && sw->want_ms) ||
		    !victim_ok(d, v, now, &idle, why, sizeof(why)))
			continue;
		c[*n].name = v->cfg.name;
		c[*n].idle_ms = idle;
		(*vs)[*n] = v;
		(*n)++;
	}
	return c;
}

/* ---- out ----------------------------------------------------------------- */

/* DIR/swap/NAME.state, new and empty (0600), for writing and reading. */
static int open_file(struct daemon *d, struct daemon_vgpu *v, char *err,
		     size_t len)
{
	char dir[PATH_MAX], path[PATH_MAX];
	struct stat sb;
	int fd;

	snprintf(dir, sizeof(dir), "%s/swap", d->opts.run_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		snprintf(err, len, "cannot make %.160s: %s", dir,
			 strerror(errno));
		return -1;
	}
	/* vgpud's own: nobody else may put a file (or a link) there */
	if (lstat(dir, &sb) < 0 || !S_ISDIR(sb.st_mode) ||
	    sb.st_uid != geteuid() || (sb.st_mode & 0077)) {
		snprintf(err, len,
			 "%.160s is not a directory of vgpud's user with mode "
			 "0700; move it aside",
			 dir);
		return -1;
	}
	daemon_swap_path(d, v, path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		snprintf(err, len, "cannot create %.160s: %s", path,
			 strerror(errno));
	else if (fchmod(fd, 0600) < 0)
		daemon_log("swap: %s: chmod: %s", path, strerror(errno));
	return fd;
}

/* Swap v out (it may go: victim_ok); why says for whom. 0 or -1. */
static int start_out(struct daemon *d, struct daemon_vgpu *v, const char *why,
		     char *err, size_t len)
{
	struct daemon_swap_vgpu *sw = sw_of(v);
	const struct daemon_swap_gpu *g = gpu_of(d, v->cfg.gpu);
	char path[PATH_MAX], e[VGPU_MESSAGE_MAX];
	int fd;

	if (!sw) {
		snprintf(err, len, "vgpud is out of memory");
		return -1;
	}
	fd = open_file(d, v, e, sizeof(e));
	if (fd < 0) {
		snprintf(err, len, "vGPU %s: %.180s", v->cfg.name, e);
		return -1;
	}
	if (daemon_state_swap_out(d, v, fd, g->wait_ms, e, sizeof(e))) {
		close(fd);
		unlink_file(d, v);
		snprintf(err, len, "vGPU %s: %.180s", v->cfg.name, e);
		return -1;
	}
	close(fd);
	sw->op = SWAP_OP_OUT;
	sw->op_ms = daemon_now_ms();
	snprintf(sw->why, sizeof(sw->why), "%s", why);
	daemon_swap_path(d, v, path, sizeof(path));
	daemon_log("swap: swapping vGPU %s out to %s: %s", v->cfg.name, path,
		   why);
	return 0;
}

/*
 * Swap the chosen candidates out for whom ("vGPU c (1.0 GiB, 16 SMs on
 * GPU 0)"). 0 when all started, else -1 with err (those started go on).
 */
static int start_victims(struct daemon *d, struct daemon_vgpu **vs,
			 const struct plan_swap_cand *c,
			 const struct plan_swap_choice *ch, const char *whom,
			 char *err, size_t len)
{
	char why[VGPU_MESSAGE_MAX];
	uint32_t i;

	for (i = 0; i < ch->n; i++) {
		snprintf(why, sizeof(why),
			 "to make room for %s after %.1f s idle", whom,
			 c[ch->idx[i]].idle_ms / 1e3);
		if (start_out(d, vs[ch->idx[i]], why, err, len))
			return -1;
	}
	return 0;
}

/* "a (idle 12.0 s, 1.0 GiB), b (...)" */
static void victims_text(const struct daemon *d, const struct plan_swap_cand *c,
			 const struct plan_swap_choice *ch, char *buf,
			 size_t len)
{
	const struct plan_grant *g;
	char sz[32];
	size_t n = 0;
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; i < ch->n && n < len; i++) {
		g = plan_find(d->plan, c[ch->idx[i]].name);
		n += (size_t)snprintf(
			buf + n, len - n, "%s%s (idle %.1f s, %s)",
			i ? ", " : "", c[ch->idx[i]].name,
			c[ch->idx[i]].idle_ms / 1e3,
			size_text(g ? g->memory : 0, sz, sizeof(sz)));
	}
}

/* The vGPUs that may be swapped out exist at all for a request on gpu
 * (PLAN_GPU_ANY: on any GPU): if not, swap is not in play and the
 * planner's refusal stands as it was. */
static bool any_allowed(struct daemon *d, uint32_t gpu)
{
	const struct daemon_vgpu *v;

	for (v = d->vgpus; v; v = v->next)
		if ((gpu == PLAN_GPU_ANY || v->cfg.gpu == gpu) &&
		    daemon_swap_allowed(d, v) && !daemon_swap_swapped(v))
			return true;
	return false;
}

/*
 * A create (v NULL) or a resume of v that did not fit: choose victims
 * and park c, or answer c. true: c was taken over.
 */
static bool make_room(struct daemon *d, struct daemon_conn *c,
		      struct daemon_vgpu *v,
		      const struct vgpu_admin_request *req, int fd,
		      const char *err)
{
	struct daemon_swap *S = daemon_swap_of(d);
	struct plan_swap_need need = {0};
	struct plan_swap_choice ch;
	struct plan_swap_cand *cand;
	struct daemon_vgpu **vs = NULL;
	struct daemon_swap_room *room;
	char e2[VGPU_MESSAGE_MAX], whom[160], list[VGPU_MESSAGE_MAX];
	char sz[32], fr[32];
	const char *name = v ? v->cfg.name : req->name;
	uint32_t gpu = req->gpu == VGPU_ADMIN_GPU_ANY ? PLAN_GPU_ANY : req->gpu;
	uint32_t n, i, busy = 0;

	if (!S || S->retrying || !any_allowed(d, gpu))
		return false;
	need.name = name;
	need.existing = v != NULL;
	need.gpu = gpu;
	need.sms = v ? daemon_sched_move_sms(d, v) : req->sms;
	need.memory = v ? v->cfg.memory_quota : req->memory;
	for (i = 0; i < d->ngpus && i < 64; i++) {
		if ((!v ? req->isolation == 0 : daemon_vgpu_shared(v)) &&
		    d->domains[i].recovering)
			need.gpu_exclude |= 1ull << i;
		if (gpu_busy(d, i)) {
			need.gpu_exclude |= 1ull << i;
			busy++;
		}
	}
	if (gpu != PLAN_GPU_ANY && gpu < 64 &&
	    (need.gpu_exclude & (1ull << gpu)) && gpu_busy(d, gpu)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "%s; GPU %u is swapping vGPUs out or in "
				   "for another request: try again in a "
				   "moment",
				   err, gpu);
		return true;
	}
	cand = candidates(d, gpu, v, &vs, &n);
	if (!cand) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		return true;
	}
	if (plan_swap_choose(d->plan, cand, n, &need, &ch, e2, sizeof(e2))) {
		explain(d, gpu == PLAN_GPU_ANY ? (v ? v->cfg.gpu : 0) : gpu, v,
			list, sizeof(list));
		if (n)
			daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL,
					   "%s; swapping out every idle vGPU "
					   "that may go would not make room "
					   "either: %s",
					   err, e2);
		else
			daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL,
					   "%s; no vGPU may be swapped out now "
					   "(%s)%s",
					   err, list,
					   busy ? "; a GPU is busy swapping"
						: "");
		free(cand);
		free(vs);
		return true;
	}
	room = calloc(1, sizeof(*room));
	if (!room) {
		free(cand);
		free(vs);
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		return true;
	}
	room->conn = c;
	room->req = *req;
	room->req.gpu = ch.gpu;
	room->fd = -1;
	if (fd >= 0 && (room->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "cannot keep the state file: %s",
				   strerror(errno));
		free(room);
		free(cand);
		free(vs);
		return true;
	}
	room->gpu = ch.gpu;
	room->deadline = daemon_now_ms() + SWAP_ROOM_TIMEOUT_MS;
	for (i = 0; i < ch.n; i++)
		snprintf(room->victims[room->nvictims++], VGPU_NAME_MAX, "%s",
			 cand[ch.idx[i]].name);
	snprintf(whom, sizeof(whom), "vGPU %s (%s, %u SMs on GPU %u)", name,
		 size_text(need.memory, sz, sizeof(sz)), need.sms, ch.gpu);
	victims_text(d, cand, &ch, list, sizeof(list));
	daemon_log("swap: %s %s does not fit: %s free on GPU %u; swapping out "
		   "%s",
		   v ? "resuming" : "creating", whom,
		   size_text(gpu_free(d, ch.gpu), fr, sizeof(fr)), ch.gpu,
		   ch.n ? list : "nothing (it fits now)");
	if (start_victims(d, vs, cand, &ch, whom, e2, sizeof(e2))) {
		daemon_log("swap: %s", e2);
		snprintf(room->failed, sizeof(room->failed), "%s", e2);
	}
	c->parked = true;
	room->next = S->rooms;
	S->rooms = room;
	free(cand);
	free(vs);
	return true;
}

bool daemon_swap_create(struct daemon *d, struct daemon_conn *c,
			const struct vgpu_admin_request *req, const char *err)
{
	if (c->op != VGPU_ADMIN_CREATE)
		return false;
	return make_room(d, c, NULL, req, -1, err);
}

bool daemon_swap_resume(struct daemon *d, struct daemon_conn *c,
			struct daemon_vgpu *v,
			const struct vgpu_admin_request *req, int fd,
			const char *err)
{
	return make_room(d, c, v, req, fd, err);
}

/* A victim did not go out: the requests that counted on it fail. */
static void rooms_victim_failed(struct daemon *d, const char *name,
				const char *why)
{
	struct daemon_swap_room *r;
	uint32_t i;

	for (r = d->swap ? d->swap->rooms : NULL; r; r = r->next)
		for (i = 0; i < r->nvictims; i++)
			if (!strcmp(r->victims[i], name) && !r->failed[0])
				snprintf(r->failed, sizeof(r->failed),
					 "vGPU %s did not go out: %s", name,
					 why);
}

/* Parked requests: run again once their victims are out, or refused. */
static void rooms_run(struct daemon *d, int64_t now)
{
	struct daemon_swap *S = d->swap;
	struct daemon_swap_room **pp, *r;
	const struct daemon_swap_vgpu *sw;
	struct daemon_vgpu *v;
	bool pending;
	uint32_t i;

	if (!S)
		return;
	pp = &S->rooms;
	while ((r = *pp)) {
		pending = false;
		for (i = 0; i < r->nvictims && !r->failed[0]; i++) {
			v = daemon_vgpu_find(d, r->victims[i]);
			sw = v ? sw_peek(v) : NULL;
			if (sw && sw->op == SWAP_OP_OUT)
				pending = true;
			else if (v && (!sw || !sw->swapped))
				snprintf(r->failed, sizeof(r->failed),
					 "vGPU %s did not go out", v->cfg.name);
		}
		if (pending && !r->failed[0] && now < r->deadline) {
			pp = &r->next;
			continue;
		}
		*pp = r->next;
		if (r->failed[0] || pending) {
			daemon_admin_reply(
				d, r->conn, VGPU_ADMIN_NO_ROOM, NULL,
				"vGPU %s: no room on GPU %u: %s", r->req.name,
				r->gpu,
				r->failed[0] ? r->failed
					     : "its victims did not go out in "
					       "time");
			if (r->fd >= 0)
				close(r->fd);
			free(r);
			continue;
		}
		daemon_log("swap: GPU %u has room for vGPU %s now; %s it",
			   r->gpu, r->req.name,
			   r->req.op == VGPU_ADMIN_CREATE ? "creating"
							  : "resuming");
		r->conn->parked = false;
		S->retrying = true;
		if (r->req.op == VGPU_ADMIN_CREATE)
			daemon_admin_create(d, r->conn, &r->req);
		else
			daemon_state_admin(d, r->conn, &r->req, r->fd);
		S->retrying = false;
		free(r);
		pp = &S->rooms; /* that may have changed the list */
	}
}

/* ---- in ------------------------------------------------------------------ */

/* Whether swapped-out v has work seen since it went out (or since it was
 * last found idle again). */
static bool has_work(struct daemon *d, const struct daemon_vgpu *v,
		     const struct daemon_swap_vgpu *sw)
{
	const struct daemon_sched_vgpu *s = v->sched;
	const struct daemon_vgpu_part *p = v->part;
	int64_t base = sw->op_ms > sw->quiet_ms ? sw->op_ms : sw->quiet_ms;

	if (s && s->pid == v->pid && s->runnable && s->busy_ms >= base)
		return true;
	if (p && p->have_load && p->load_ms > base && p->load.queue_depth)
		return true;
	return hellos_for(d, v);
}

/* Whether v, wanted since want_ms, has gone idle again. */
static bool idle_again(struct daemon *d, const struct daemon_vgpu *v,
		       const struct daemon_swap_vgpu *sw)
{
	const struct daemon_sched_vgpu *s = v->sched;
	const struct daemon_vgpu_part *p = v->part;

	if (!s || s->runnable || s->idle_ms < sw->want_ms || hellos_for(d, v))
		return false;
	return !(p && p->have_load && p->load_ms > s->idle_ms &&
		 p->load.queue_depth);
}

static void start_in(struct daemon *d, struct daemon_vgpu *v,
		     struct daemon_swap_vgpu *sw, const struct plan_move *m,
		     int64_t now)
{
	char err[VGPU_MESSAGE_MAX], path[PATH_MAX];

	if (daemon_state_swap_in(d, v, m, err, sizeof(err))) {
		daemon_log("swap: vGPU %s cannot be swapped in: %s",
			   v->cfg.name, err);
		sw->next_try_ms = now + SWAP_RETRY_MS;
		return;
	}
	sw->op = SWAP_OP_IN;
	sw->op_ms = now;
	daemon_swap_path(d, v, path, sizeof(path));
	daemon_log("swap: vGPU %s has work (for %.1f s): swapping it back in "
		   "on GPU %u (%u SMs) from %s",
		   v->cfg.name, (now - sw->want_ms) / 1e3, m->gpu, m->sms,
		   path);
}

/* One attempt to bring swapped-out v (which has work) back. */
static void try_in(struct daemon *d, struct daemon_vgpu *v,
		   struct daemon_swap_vgpu *sw, int64_t now)
{
	uint32_t g = v->cfg.gpu, sms = daemon_sched_move_sms(d, v), n;
	char err[VGPU_MESSAGE_MAX], e2[VGPU_MESSAGE_MAX], list[200];
	char whom[160], sz[32];
	struct plan_swap_need need = {0};
	struct daemon_vgpu **vs = NULL;
	struct plan_swap_cand *cand;
	struct plan_swap_choice ch;
	struct plan_move m;

	sw->next_try_ms = now + SWAP_RETRY_MS;
	if (!v->pid || !v->ready || v->ctl_fd < 0 ||
	    v->stop != DAEMON_STOP_NONE || v->destroying ||
	    daemon_state_busy(v) || gpu_busy(d, g) ||
	    (daemon_vgpu_shared(v) && d->domains[g].recovering))
		return; /* later */
	if (!plan_move_choose(d->plan, v->cfg.name, g, PLAN_GPU_ANY, sms,
			      v->cfg.memory_quota, &m, err, sizeof(err)) ||
	    (!plan_move_choose(d->plan, v->cfg.name, PLAN_GPU_ANY, PLAN_GPU_ANY,
			       sms, v->cfg.memory_quota, &m, e2, sizeof(e2)) &&
	     !(daemon_vgpu_shared(v) && d->domains[m.gpu].recovering) &&
	     !gpu_busy(d, m.gpu))) {
		start_in(d, v, sw, &m, now);
		return;
	}
	/* no room anywhere: make some on its own GPU */
	cand = candidates(d, g, v, &vs, &n);
	need.name = v->cfg.name;
	need.existing = true;
	need.gpu = g;
	need.sms = sms;
	need.memory = v->cfg.memory_quota;
	if (cand && n &&
	    !plan_swap_choose(d->plan, cand, n, &need, &ch, e2, sizeof(e2)) &&
	    ch.n) {
		snprintf(whom, sizeof(whom),
			 "vGPU %s (%s, %u SMs on GPU %u) to come back",
			 v->cfg.name,
			 size_text(v->cfg.memory_quota, sz, sizeof(sz)), sms,
			 g);
		victims_text(d, cand, &ch, list, sizeof(list));
		daemon_log("swap: vGPU %s has work but does not fit on GPU %u "
			   "(%s); swapping out %s",
			   v->cfg.name, g, err, list);
		if (start_victims(d, vs, cand, &ch, whom, e2, sizeof(e2)))
			daemon_log("swap: %s", e2);
		sw->told_wait = false;
	} else if (!sw->told_wait) {
		explain(d, g, v, list, sizeof(list));
		daemon_log("swap: vGPU %s has work but cannot come back yet: "
			   "%s; no vGPU of GPU %u may make room (%s); it tries "
			   "again while it has work",
			   v->cfg.name, err, g, list);
		sw->told_wait = true;
	}
	free(cand);
	free(vs);
}

/* The swapped-out vGPUs: notice work, bring them in, or stop trying. */
static void swapped_run(struct daemon *d, int64_t now)
{
	struct daemon_swap_vgpu *sw;
	struct daemon_vgpu *v;
	uint32_t bound;

	for (v = d->vgpus; v; v = v->next) {
		sw = v->st ? &v->st->swap : NULL;
		if (!sw || !sw->swapped || sw->failed || sw->op)
			continue;
		if (!sw->want_ms && has_work(d, v, sw)) {
			sw->want_ms = now;
			sw->told_wait = sw->told_bound = false;
			sw->next_try_ms = now;
		}
		if (!sw->want_ms)
			continue;
		if (idle_again(d, v, sw)) {
			daemon_log("swap: vGPU %s is idle again; it stays out",
				   v->cfg.name);
			sw->want_ms = 0;
			sw->quiet_ms = now;
			continue;
		}
		bound = gpu_of(d, v->cfg.gpu)->wait_ms;
		if (!sw->told_bound && now - sw->want_ms >= bound) {
			daemon_log("swap: vGPU %s could not come back within "
				   "%.1f s; its clients' calls that wait that "
				   "long fail (CUDA_ERROR_DEVICE_UNAVAILABLE) "
				   "and new clients are refused until it can",
				   v->cfg.name, bound / 1e3);
			sw->told_bound = true;
		}
		if (now >= sw->next_try_ms)
			try_in(d, v, sw, now);
	}
}

/* ---- hellos ---------------------------------------------------------------
 * A hello that waits in vain is refused with VGPU_HELLO_UNAVAILABLE.
 */

bool daemon_swap_hello(struct daemon *d, struct daemon_conn *c,
		       struct daemon_vgpu *v, const struct vgpu_ctl_client *who)
{
	struct daemon_swap *S;
	struct daemon_swap_vgpu *sw = v->st ? &v->st->swap : NULL;
	struct daemon_swap_hello *h;
	int64_t now = daemon_now_ms();
	uint32_t wait;

	if (!sw || (!sw->swapped && sw->op != SWAP_OP_OUT))
		return false;
	if (sw->failed) {
		daemon_client_refuse(
			d, c, VGPU_HELLO_UNAVAILABLE,
			"vGPU '%s' is swapped out and could not come back "
			"(%.120s); an administrator must resume it "
			"(vgpu-admin resume %s)",
			v->cfg.name, sw->why, v->cfg.name);
		return true;
	}
	/* each parked hello keeps a connection: a client that loops on
	 * connect must not take every descriptor vgpud has */
	if (hellos_count(d, v) >= SWAP_HELLOS_MAX) {
		daemon_client_refuse(d, c, VGPU_HELLO_UNAVAILABLE,
				     "vGPU '%s' is swapped out and %u clients "
				     "already wait for it; try again",
				     v->cfg.name, SWAP_HELLOS_MAX);
		return true;
	}
	S = daemon_swap_of(d);
	h = S ? calloc(1, sizeof(*h)) : NULL;
	if (!h) {
		daemon_client_refuse(d, c, VGPU_HELLO_UNAVAILABLE,
				     "vgpud is out of memory");
		return true;
	}
	wait = gpu_of(d, v->cfg.gpu)->wait_ms;
	if (wait > SWAP_HELLO_WAIT_MAX_MS)
		wait = SWAP_HELLO_WAIT_MAX_MS;
	h->conn = c;
	h->who = *who;
	snprintf(h->vgpu, sizeof(h->vgpu), "%s", v->cfg.name);
	h->deadline = now + wait;
	h->wait_ms = wait;
	h->next = S->hellos;
	S->hellos = h;
	c->parked = true;
	daemon_log("swap: client pid %d (uid %d) of swapped-out vGPU %s waits "
		   "up to %.1f s for it to come back",
		   (int)c->pid, (int)c->uid, v->cfg.name, wait / 1e3);
	return true;
}

/* Waiting hellos: passed on once their vGPU is back, or refused. */
static void hellos_run(struct daemon *d, int64_t now)
{
	struct daemon_swap_hello **pp, *h;
	const struct daemon_swap_vgpu *sw;
	struct daemon_vgpu *v;
	int e;

	if (!d->swap)
		return;
	pp = &d->swap->hellos;
	while ((h = *pp)) {
		v = daemon_vgpu_find(d, h->vgpu);
		sw = v ? sw_peek(v) : NULL;
		if (v && sw && (sw->swapped || sw->op) && !sw->failed &&
		    now < h->deadline && !d->stopping) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		if (!v) {
			daemon_client_refuse(
				d, h->conn, VGPU_HELLO_UNAVAILABLE,
				"vGPU '%s' was destroyed while the client "
				"waited for it",
				h->vgpu);
		} else if (sw && sw->failed) {
			daemon_client_refuse(
				d, h->conn, VGPU_HELLO_UNAVAILABLE,
				"vGPU '%s' is swapped out and could not "
				"come back (%.120s); an administrator must "
				"resume it",
				h->vgpu, sw->why);
		} else if (sw && sw->swapped) {
			daemon_client_refuse(
				d, h->conn, VGPU_HELLO_UNAVAILABLE,
				"vGPU '%s' is swapped out and could not "
				"come back within %.1f s (GPU %u has no "
				"room for it now); try again later",
				h->vgpu, h->wait_ms / 1e3, v->cfg.gpu);
		} else if (v->state != VGPU_ADMIN_STATE_RUNNING ||
			   v->ctl_fd < 0 || d->stopping) {
			daemon_client_refuse(
				d, h->conn, VGPU_HELLO_UNAVAILABLE,
				"vGPU '%s' is not running (%s); try again "
				"later",
				h->vgpu,
				daemon_state_suspended(v)
					? "suspended: an administrator "
					  "must resume it"
					: "no worker");
		} else {
			e = ctl_send(v->ctl_fd, VGPU_CTL_CLIENT, &h->who,
				     sizeof(h->who), h->conn->fd);
			if (e < 0)
				daemon_client_refuse(
					d, h->conn, VGPU_HELLO_UNAVAILABLE,
					"vGPU '%s' is not answering (%s); "
					"try again shortly",
					h->vgpu, strerror(-e));
			else {
				daemon_log("client pid %d (uid %d) -> vGPU %s "
					   "(worker pid %d), back in",
					   (int)h->who.pid, (int)h->who.uid,
					   v->cfg.name, (int)v->pid);
				daemon_conn_close(d, h->conn);
			}
		}
		free(h);
	}
}

/* ---- the worker's answers ---------------------------------------------- */

void daemon_swap_saved(struct daemon *d, struct daemon_vgpu *v,
		       const struct vgpu_ctl_saved *r)
{
	struct daemon_swap_vgpu *sw = v->st ? &v->st->swap : NULL;
	uint32_t op, g = v->cfg.gpu;
	char path[PATH_MAX], sz[32], fr[32];
	int64_t now = daemon_now_ms();

	if (!sw)
		return;
	op = sw->op;
	sw->op = SWAP_OP_NONE;
	daemon_swap_path(d, v, path, sizeof(path));
	if (r->op == VGPU_STATE_SUSPEND && op == SWAP_OP_OUT) {
		if (r->status) {
			unlink_file(d, v);
			daemon_log("swap: swapping vGPU %s out failed: %s; it "
				   "runs on",
				   v->cfg.name, r->message);
			rooms_victim_failed(d, v->cfg.name, r->message);
			sw->why[0] = '\0';
		} else {
			sw->swapped = true;
			sw->failed = false;
			sw->out_ms = now;
			sw->out_unix = (int64_t)time(NULL);
			sw->bytes = r->bytes;
			sw->want_ms = sw->quiet_ms = 0;
			sw->swap_outs++;
			if (d->swap && g < VGPU_MAX_GPUS)
				d->swap->gpu[g].swap_outs++;
			v->state = VGPU_ADMIN_STATE_SWAPPED;
			d->state_dirty = true;
			daemon_log("swap: vGPU %s is out: %s written to %s in "
				   "%.1f ms (its clients' calls wait); %s free "
				   "on GPU %u now",
				   v->cfg.name,
				   size_text(r->bytes, sz, sizeof(sz)), path,
				   r->copy_ns / 1e6,
				   size_text(gpu_free(d, g), fr, sizeof(fr)),
				   g);
		}
		rooms_run(d, now);
		swapped_run(d, now); /* a hello came while it went out */
		return;
	}
	if (r->op != VGPU_STATE_RESUME || !sw->swapped)
		return;
	if (!r->status) { /* applied: it runs */
		unlink_file(d, v);
		daemon_log("swap: vGPU %s is back in on GPU %u after %.1f s "
			   "out%s: %s read in %.1f ms; %s removed",
			   v->cfg.name, v->cfg.gpu, (now - sw->out_ms) / 1e3,
			   op == SWAP_OP_IN ? "" : " (vgpu-admin resume)",
			   size_text(r->bytes, sz, sizeof(sz)),
			   r->total_ns / 1e6, path);
		sw->swapped = sw->failed = false;
		sw->want_ms = 0;
		sw->why[0] = '\0';
		sw->swap_ins++;
		if (d->swap && v->cfg.gpu < VGPU_MAX_GPUS)
			d->swap->gpu[v->cfg.gpu].swap_ins++;
		d->state_dirty = true;
		hellos_run(d, now);
		return;
	}
	if (op != SWAP_OP_IN)
		return; /* a vgpu-admin resume failed: the admin was told */
	sw->failed = true;
	snprintf(sw->why, sizeof(sw->why),
		 "its swap-in failed: %.150s; the file stays, vgpu-admin "
		 "resume retries",
		 r->message);
	v->state = VGPU_ADMIN_STATE_SWAPPED;
	d->state_dirty = true;
	daemon_log("swap: bringing vGPU %s back in failed: %s; %s stays in "
		   "place and the vGPU out; vgpu-admin resume %s retries",
		   v->cfg.name, r->message, path, v->cfg.name);
	hellos_run(d, now);
}

void daemon_swap_aborted(struct daemon *d, struct daemon_vgpu *v,
			 const char *why)
{
	struct daemon_swap_vgpu *sw = v->st ? &v->st->swap : NULL;

	if (!sw || !sw->op)
		return;
	if (sw->op == SWAP_OP_OUT && !sw->swapped) {
		unlink_file(d, v);
		rooms_victim_failed(d, v->cfg.name, why);
	}
	sw->op = SWAP_OP_NONE;
}

void daemon_swap_worker_gone(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_swap_vgpu *sw = v->st ? &v->st->swap : NULL;
	char path[PATH_MAX];

	if (!sw || !sw->swapped)
		return;
	daemon_swap_path(d, v, path, sizeof(path));
	daemon_log("swap: vGPU %s: its worker ended while it was swapped out, "
		   "and its clients with it; %s is removed; it stays "
		   "suspended (vgpu-admin resume starts a new, empty worker)",
		   v->cfg.name, path);
	unlink_file(d, v);
	sw->swapped = sw->failed = false;
	sw->want_ms = 0;
	snprintf(sw->why, sizeof(sw->why),
		 "its worker ended while it was swapped out");
	d->state_dirty = true;
	hellos_run(d, daemon_now_ms());
}

void daemon_swap_adopted(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_swap_vgpu *sw = v->st ? &v->st->swap : NULL;
	int64_t now = daemon_now_ms(), ago;

	(void)d;
	if (!sw || !sw->swapped)
		return;
	v->state = VGPU_ADMIN_STATE_SWAPPED;
	ago = (int64_t)time(NULL) - sw->out_unix;
	sw->out_ms = now - (ago > 0 ? ago * 1000 : 0);
	/* what it did before this vgpud is not known: from now on */
	sw->op_ms = sw->quiet_ms = now;
	sw->want_ms = 0;
}

void daemon_swap_vgpu_free(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_swap_vgpu *sw = v->st ? &v->st->swap : NULL;

	if (!sw)
		return;
	/* a vgpud that leaves its workers for the next keeps their files */
	if ((sw->swapped || sw->op == SWAP_OP_OUT) &&
	    !(d->stopping && d->opts.keep_workers))
		unlink_file(d, v);
	sw->swapped = false;
	sw->op = SWAP_OP_NONE;
}

/* ---- activity edges on static GPUs ------------------------------------ */

/* Ask v's worker for activity edges when only swap needs them. */
static void ensure_edges(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_sched_vgpu *s = v->sched;
	struct daemon_swap_vgpu *sw;
	struct vgpu_ctl_sched m;

	if (!d->sched || !s || !v->pid || s->pid != v->pid || !v->ready ||
	    v->ctl_fd < 0 || v->stop != DAEMON_STOP_NONE ||
	    d->sched->gpu[v->cfg.gpu].mode != POLICY_STATIC)
		return; /* the scheduler asks, or not yet */
	if (!daemon_swap_allowed(d, v) && !daemon_swap_swapped(v))
		return;
	sw = sw_of(v);
	if (!sw || (sw->edges_pid == v->pid && sw->edges_seq == s->seq))
		return;
	memset(&m, 0, sizeof(m));
	m.seq = ++d->sched->seq;
	m.hold = 0;
	m.idle_ms = SCHED_IDLE_MS;
	if (ctl_send(v->ctl_fd, VGPU_CTL_SCHED, &m, sizeof(m), -1))
		return;
	sw->edges_pid = v->pid;
	sw->edges_seq = s->seq;
}

/* ---- the loop -------------------------------------------------------------
 */

void daemon_swap_timers(struct daemon *d, int64_t now)
{
	struct daemon_vgpu *v;

	if (!d->swap || d->stopping)
		return;
	for (v = d->vgpus; v; v = v->next)
		ensure_edges(d, v);
	rooms_run(d, now);
	swapped_run(d, now);
	hellos_run(d, now);
}

int64_t daemon_swap_next_deadline(const struct daemon *d)
{
	const struct daemon_swap_room *r;
	const struct daemon_swap_hello *h;
	int64_t next = 0;

	for (r = d->swap ? d->swap->rooms : NULL; r; r = r->next)
		if (!next || r->deadline < next)
			next = r->deadline;
	for (h = d->swap ? d->swap->hellos : NULL; h; h = h->next)
		if (!next || h->deadline < next)
			next = h->deadline;
	return next;
}

int64_t daemon_swap_deadline(const struct daemon_vgpu *v)
{
	const struct daemon_swap_vgpu *sw = sw_peek(v);

	if (!sw || !sw->swapped || sw->failed || sw->op || !sw->want_ms)
		return 0;
	return sw->next_try_ms ? sw->next_try_ms : 1;
}

void daemon_swap_close_waiters(struct daemon *d)
{
	struct daemon_swap_room *r;
	struct daemon_swap_hello *h;

	if (!d->swap)
		return;
	while ((r = d->swap->rooms)) {
		d->swap->rooms = r->next;
		daemon_admin_reply(d, r->conn, VGPU_ADMIN_BUSY, NULL,
				   "vgpud is shutting down; vGPU %s was not "
				   "%s",
				   r->req.name,
				   r->req.op == VGPU_ADMIN_CREATE ? "created"
								  : "resumed");
		if (r->fd >= 0)
			close(r->fd);
		free(r);
	}
	while ((h = d->swap->hellos)) {
		d->swap->hellos = h->next;
		daemon_client_refuse(d, h->conn, VGPU_HELLO_UNAVAILABLE,
				     "vgpud is shutting down");
		free(h);
	}
}

void daemon_swap_fini(struct daemon *d)
{
	char dir[PATH_MAX];

	if (!d->swap)
		return;
	daemon_swap_close_waiters(d);
	free(d->swap);
	d->swap = NULL;
	snprintf(dir, sizeof(dir), "%s/swap", d->opts.run_dir);
	rmdir(dir); /* only when empty */
}
