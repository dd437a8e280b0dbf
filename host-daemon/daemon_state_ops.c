/* SPDX-License-Identifier: MIT */
/*
 * Suspend, resume, migration and save points in vgpud (admin.h: SUSPEND,
 * RESUME, MIGRATE; control.h: SAVE, RESTORE, SAVED, PROGRESS).
 *
 *   suspend: the worker writes the vGPU's state to the file vgpu-admin
 *     passed (or to a memfd vgpud makes: host memory) and frees its GPU
 *     memory; on its SAVED the vGPU gives its SM groups and memory back to
 *     the plan (it keeps its name and VA window) and is SUSPENDED. New
 *     clients are refused meanwhile (daemon_clients.c); the connected ones
 *     wait in their calls.
 *   resume: the planner places it (the GPU asked for, or the first with
 *     room), the vGPU holds that while its worker checks the file, moves
 *     its slice there and brings the memory back; SAVED keeps the new
 *     place, or gives it back (a bad file: the vGPU stays suspended as it
 *     was, and the admin gets the worker's sentence about the file).
 *   migrate: the same, for a running vGPU to another GPU: it holds both
 *     places while its worker copies and switches, then only the new.
 *     A shared vGPU's worker is an MPS client of the one MPS server that
 *     serves every GPU of the host (vgpud starts one control daemon for
 *     all), so the same process moves; from then on it is in the target
 *     GPU's shared fault domain. Refused while either GPU's shared domain
 *     restarts.
 *   save points: the worker sends its save-point memfd with the first
 *     one; vgpud keeps it, and when the worker is started again after a
 *     fault sends it back (VGPU_STATE_RECOVER) right after the config, so
 *     the recovery comes before any client.
 *
 * Refused with a sentence: no such vGPU, not running (or not suspended),
 * another operation or a resize in flight, no room on the target, a file
 * that is not a regular file or not open the right way.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cuda.h>

#include "ctl_msg.h"
#include "daemon_mdev.h"
#include "daemon_part.h"
#include "daemon_sched.h"
#include "daemon_state_ops.h"

static struct daemon_vgpu_state *vst(struct daemon_vgpu *v)
{
	if (!v->st && (v->st = calloc(1, sizeof(*v->st))))
		v->st->sp_fd = -1;
	return v->st;
}

struct daemon_vgpu_state *daemon_state_of(struct daemon_vgpu *v)
{
	return vst(v);
}

bool daemon_state_suspended(const struct daemon_vgpu *v)
{
	return v->st && v->st->suspended;
}

bool daemon_state_busy(const struct daemon_vgpu *v)
{
	return v->st && v->st->busy;
}

static const char *op_name(uint32_t op)
{
	switch (op) {
	case VGPU_STATE_SUSPEND:
		return "suspend";
	case VGPU_STATE_RESUME:
		return "resume";
	case VGPU_STATE_MIGRATE:
		return "migration";
	case VGPU_STATE_RECOVER:
		return "recovery";
	case VGPU_STATE_SAVE_POINT:
		return "save point";
	}
	return "state operation";
}

/* The worker's CUresult as an admin status. */
static int32_t admin_status(int32_t cu)
{
	switch (cu) {
	case CUDA_ERROR_INVALID_IMAGE: /* a bad state file */
	case CUDA_ERROR_INVALID_VALUE:
		return VGPU_ADMIN_BAD_REQUEST;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return VGPU_ADMIN_NO_ROOM;
	case CUDA_ERROR_NOT_READY:
	case CUDA_ERROR_ILLEGAL_STATE:
	case CUDA_ERROR_NOT_SUPPORTED:
		return VGPU_ADMIN_BUSY;
	}
	return VGPU_ADMIN_WORKER_FAILED;
}

/* A progress packet to a waiting admin; never blocks (a slow reader
 * misses some). */
static void send_progress(struct daemon_conn *c, uint32_t op, uint64_t done,
			  uint64_t total)
{
	struct vgpu_admin_response *r =
		daemon_admin_response_alloc(c->op, VGPU_ADMIN_IN_PROGRESS);

	if (!r)
		return;
	r->state.progress.op = op;
	r->state.progress.done = done;
	r->state.progress.total = total;
	ctl_send_fds(c->fd, r, sizeof(*r), NULL, 0);
	free(r);
}

/* ---- admin requests -------------------------------------------------- */

static struct daemon_vgpu *lookup(struct daemon *d, struct daemon_conn *c,
				  const struct vgpu_admin_request *req)
{
	struct daemon_vgpu *v = daemon_admin_vgpu(d, c, req);

	if (v && !vst(v)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		v = NULL;
	}
	return v;
}

/* Whether nothing else is happening to v (answers c if something is). */
static bool idle(struct daemon *d, struct daemon_conn *c, struct daemon_vgpu *v,
		 const char *what)
{
	if (v->destroying) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s is being destroyed", v->cfg.name);
		return false;
	}
	if (v->st->busy) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s: a %s is in progress; %s it when "
				   "that is done",
				   v->cfg.name, op_name(v->st->op), what);
		return false;
	}
	if (v->part && v->part->resizing) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s is being resized; %s it when that "
				   "is done",
				   v->cfg.name, what);
		return false;
	}
	return true;
}

/* Whether v runs with a worker that can take a request. */
static bool running(struct daemon *d, struct daemon_conn *c,
		    struct daemon_vgpu *v, const char *what)
{
	if (v->state != VGPU_ADMIN_STATE_RUNNING || !v->ready ||
	    v->ctl_fd < 0 || v->stop != DAEMON_STOP_NONE) {
		daemon_admin_reply(
			d, c, VGPU_ADMIN_BUSY, NULL,
			"vGPU %s is not running (%s); %s it once "
			"it runs",
			v->cfg.name,
			v->st->swap.swapped ? "swapped out"
			: v->st->suspended  ? "suspended"
			: v->state == VGPU_ADMIN_STATE_RESTARTING
				? "restarting after a fault"
			: v->state == VGPU_ADMIN_STATE_STARTING ? "starting"
			: v->state == VGPU_ADMIN_STATE_FAILED	? "failed"
								: "no worker",
			what);
		return false;
	}
	if (daemon_vgpu_shared(v) && d->domains[v->cfg.gpu].recovering) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "GPU %u is restarting its shared fault "
				   "domain; try again in a few seconds",
				   v->cfg.gpu);
		return false;
	}
	return true;
}

/*
 * A file that came with the request: a regular file, open for reading
 * and writing (suspend: the worker writes it now and reads it at the
 * resume) or for reading (resume). Answers c when not.
 */
static bool file_ok(struct daemon *d, struct daemon_conn *c, int fd, bool write)
{
	struct stat sb;
	int fl;

	if (fd < 0) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "the request says a state file comes with "
				   "it, but none came");
		return false;
	}
	if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "the state file is not a regular file");
		return false;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (write && (fl & O_ACCMODE) != O_RDWR) ||
	    (!write && (fl & O_ACCMODE) == O_WRONLY) || (fl & O_APPEND)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "the state file is not open for %s",
				   write ? "reading and writing (without "
					   "O_APPEND)"
					 : "reading");
		return false;
	}
	return true;
}

/* Remember what is in flight and park c (NULL: nobody waits: a swap)
 * until SAVED. */
static void start_op(struct daemon *d, struct daemon_conn *c,
		     struct daemon_vgpu *v, uint32_t seq, uint32_t op,
		     bool progress)
{
	struct daemon_vgpu_state *st = v->st;

	(void)d;
	st->busy = true;
	st->seq = seq;
	st->op = op;
	st->waiter = c;
	st->progress = progress;
	st->started_ms = daemon_now_ms();
	st->deadline = st->started_ms + DAEMON_STATE_TIMEOUT_MS;
	st->from_gpu = v->cfg.gpu;
	if (c)
		c->parked = true;
}

static uint32_t next_seq(struct daemon *d)
{
	static uint32_t seq;

	(void)d;
	if (!++seq)
		seq = 1;
	return seq;
}

static void admin_suspend(struct daemon *d, struct daemon_conn *c,
			  const struct vgpu_admin_request *req, int fd)
{
	struct vgpu_ctl_save q;
	struct daemon_vgpu *v = lookup(d, c, req);
	char name[VGPU_NAME_MAX + 16];
	int e;

	if (!v)
		goto out;
	if (v->st->suspended) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, v,
				   "vGPU %s is %s already", v->cfg.name,
				   v->st->swap.swapped ? "swapped out"
						       : "suspended");
		goto out;
	}
	if (!idle(d, c, v, "suspend") || !running(d, c, v, "suspend"))
		goto out;
	if (req->flags & VGPU_ADMIN_STATE_FILE) {
		if (!file_ok(d, c, fd, true))
			goto out;
	} else {
		/* host memory: a memfd the worker keeps until the resume */
		snprintf(name, sizeof(name), "vgpu-suspend-%s", v->cfg.name);
		if (fd >= 0)
			close(fd);
		fd = memfd_create(name, MFD_CLOEXEC);
		if (fd < 0) {
			daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
					   "memfd_create: %s", strerror(errno));
			goto out;
		}
	}
	memset(&q, 0, sizeof(q));
	q.seq = next_seq(d);
	q.op = VGPU_STATE_SUSPEND;
	e = ctl_send(v->ctl_fd, VGPU_CTL_SAVE, &q, sizeof(q), fd);
	if (e) {
		daemon_admin_reply(d, c, VGPU_ADMIN_WORKER_FAILED, NULL,
				   "vGPU %s: cannot reach its worker: %s",
				   v->cfg.name, strerror(-e));
		goto out;
	}
	daemon_log("suspending vGPU %s (to %s)", v->cfg.name,
		   req->flags & VGPU_ADMIN_STATE_FILE ? "a file"
						      : "host memory");
	start_op(d, c, v, q.seq, q.op, req->flags & VGPU_ADMIN_PROGRESS);
out:
	if (fd >= 0)
		close(fd);
}

/* A suspended vGPU whose worker ended: place it and start a new one. */
static void resume_fresh(struct daemon *d, struct daemon_conn *c,
			 struct daemon_vgpu *v, const struct plan_move *m)
{
	if (plan_move_hold(d->plan, m) ||
	    plan_move_finish(d->plan, v->cfg.name, m)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "the planner could not hold the place");
		return;
	}
	v->cfg.gpu = m->gpu;
	v->cfg.ngroups = m->ngroups;
	memset(v->cfg.groups, 0, sizeof(v->cfg.groups));
	memcpy(v->cfg.groups, m->groups, m->ngroups * sizeof(m->groups[0]));
	v->cfg.memory_quota = m->memory;
	v->sms = m->sms;
	v->st->suspended = false;
	v->state = VGPU_ADMIN_STATE_STARTING;
	d->state_dirty = true;
	if (daemon_vgpu_start(d, v) < 0) {
		v->state = VGPU_ADMIN_STATE_RESTARTING;
		v->retry_at = daemon_now_ms() + DAEMON_RETRY_DELAY_MS;
	}
	daemon_admin_reply(d, c, VGPU_ADMIN_OK, v,
			   "vGPU %s: its worker had ended while it was "
			   "suspended (its programs with it); a new one starts "
			   "on GPU %u, empty",
			   v->cfg.name, v->cfg.gpu);
}

/* Where a resume (req given: it may swap idle vGPUs out to make room,
 * fd its file) or a migration goes; answers c (or parks it for the
 * swap) and returns false if nowhere now. */
static bool place(struct daemon *d, struct daemon_conn *c,
		  struct daemon_vgpu *v, uint32_t gpu, uint32_t not_gpu,
		  struct plan_move *m, const struct vgpu_admin_request *req,
		  int fd)
{
	char err[VGPU_MESSAGE_MAX];

	if (gpu != VGPU_ADMIN_GPU_ANY && gpu >= d->ngpus) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "there is no GPU %u (this host has %u)", gpu,
				   d->ngpus);
		return false;
	}
	if (gpu != VGPU_ADMIN_GPU_ANY && daemon_vgpu_shared(v) &&
	    d->domains[gpu].recovering) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "GPU %u is restarting its shared fault "
				   "domain; try again in a few seconds",
				   gpu);
		return false;
	}
	if (plan_move_choose(d->plan, v->cfg.name,
			     gpu == VGPU_ADMIN_GPU_ANY ? PLAN_GPU_ANY : gpu,
			     not_gpu, daemon_sched_move_sms(d, v),
			     v->cfg.memory_quota, m, err, sizeof(err))) {
		if (req && daemon_swap_resume(d, c, v, req, fd, err))
			return false;
		daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL,
				   "vGPU %s cannot go there: %s", v->cfg.name,
				   err);
		return false;
	}
	return true;
}

static void admin_resume(struct daemon *d, struct daemon_conn *c,
			 const struct vgpu_admin_request *req, int fd)
{
	struct vgpu_ctl_restore q;
	struct daemon_vgpu *v = lookup(d, c, req);
	struct plan_move m;
	int e;

	if (!v)
		goto out;
	if (!v->st->suspended) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, v,
				   "vGPU %s is not suspended", v->cfg.name);
		goto out;
	}
	if (!idle(d, c, v, "resume"))
		goto out;
	if ((req->flags & VGPU_ADMIN_STATE_FILE) && !file_ok(d, c, fd, false))
		goto out;
	if (!place(d, c, v, req->gpu, PLAN_GPU_ANY, &m, req,
		   req->flags & VGPU_ADMIN_STATE_FILE ? fd : -1))
		goto out;
	if (!v->pid || v->ctl_fd < 0 || !v->ready) {
		resume_fresh(d, c, v, &m);
		goto out;
	}
	if (plan_move_hold(d->plan, &m)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "the planner could not hold the place");
		goto out;
	}
	memset(&q, 0, sizeof(q));
	q.seq = next_seq(d);
	q.op = VGPU_STATE_RESUME;
	q.gpu = m.gpu;
	q.ngroups = m.ngroups;
	memcpy(q.groups, m.groups, m.ngroups * sizeof(m.groups[0]));
	e = ctl_send(v->ctl_fd, VGPU_CTL_RESTORE, &q, sizeof(q),
		     req->flags & VGPU_ADMIN_STATE_FILE ? fd : -1);
	if (e) {
		plan_move_unhold(d->plan, &m);
		daemon_admin_reply(d, c, VGPU_ADMIN_WORKER_FAILED, NULL,
				   "vGPU %s: cannot reach its worker: %s",
				   v->cfg.name, strerror(-e));
		goto out;
	}
	daemon_log("resuming vGPU %s on GPU %u (%u SMs)%s", v->cfg.name, m.gpu,
		   m.sms,
		   req->flags & VGPU_ADMIN_STATE_FILE ? " from another file"
						      : "");
	start_op(d, c, v, q.seq, q.op, req->flags & VGPU_ADMIN_PROGRESS);
	v->st->holding = true;
	v->st->move = m;
out:
	if (fd >= 0)
		close(fd);
}

static void admin_migrate(struct daemon *d, struct daemon_conn *c,
			  const struct vgpu_admin_request *req, int fd)
{
	struct vgpu_ctl_restore q;
	struct daemon_vgpu *v = lookup(d, c, req);
	struct plan_move m;
	int e;

	if (fd >= 0)
		close(fd);
	if (!v)
		return;
	if (v->st->suspended) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s is suspended: resume it with "
				   "--gpu N instead",
				   v->cfg.name);
		return;
	}
	if (!idle(d, c, v, "migrate") || !running(d, c, v, "migrate"))
		return;
	if (req->gpu != VGPU_ADMIN_GPU_ANY && req->gpu == v->cfg.gpu) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "vGPU %s is on GPU %u already", v->cfg.name,
				   v->cfg.gpu);
		return;
	}
	if (!place(d, c, v, req->gpu, v->cfg.gpu, &m, NULL, -1))
		return;
	if (plan_move_hold(d->plan, &m)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "the planner could not hold the target");
		return;
	}
	memset(&q, 0, sizeof(q));
	q.seq = next_seq(d);
	q.op = VGPU_STATE_MIGRATE;
	q.gpu = m.gpu;
	q.ngroups = m.ngroups;
	memcpy(q.groups, m.groups, m.ngroups * sizeof(m.groups[0]));
	e = ctl_send(v->ctl_fd, VGPU_CTL_RESTORE, &q, sizeof(q), -1);
	if (e) {
		plan_move_unhold(d->plan, &m);
		daemon_admin_reply(d, c, VGPU_ADMIN_WORKER_FAILED, NULL,
				   "vGPU %s: cannot reach its worker: %s",
				   v->cfg.name, strerror(-e));
		return;
	}
	daemon_log("migrating vGPU %s: GPU %u -> %u (%u SMs)", v->cfg.name,
		   v->cfg.gpu, m.gpu, m.sms);
	start_op(d, c, v, q.seq, q.op, req->flags & VGPU_ADMIN_PROGRESS);
	v->st->holding = true;
	v->st->move = m;
}

int daemon_state_swap_out(struct daemon *d, struct daemon_vgpu *v, int fd,
			  uint32_t wait_ms, char *err, size_t errlen)
{
	struct daemon_vgpu_state *st = vst(v);
	struct vgpu_ctl_save q;
	int e;

	if (!st) {
		snprintf(err, errlen, "vgpud is out of memory");
		return -1;
	}
	if (st->busy || st->suspended || v->ctl_fd < 0 || !v->ready) {
		snprintf(err, errlen, "it is busy, suspended or not running");
		return -1;
	}
	memset(&q, 0, sizeof(q));
	q.seq = next_seq(d);
	q.op = VGPU_STATE_SUSPEND;
	q.wait_ms = wait_ms;
	e = ctl_send(v->ctl_fd, VGPU_CTL_SAVE, &q, sizeof(q), fd);
	if (e) {
		snprintf(err, errlen, "cannot reach its worker: %s",
			 strerror(-e));
		return -1;
	}
	start_op(d, NULL, v, q.seq, q.op, false);
	return 0;
}

int daemon_state_swap_in(struct daemon *d, struct daemon_vgpu *v,
			 const struct plan_move *m, char *err, size_t errlen)
{
	struct daemon_vgpu_state *st = vst(v);
	struct vgpu_ctl_restore q;
	int e;

	if (!st || st->busy || !st->suspended || !v->pid || v->ctl_fd < 0 ||
	    !v->ready) {
		snprintf(err, errlen,
			 "it is busy, not suspended or has no "
			 "worker");
		return -1;
	}
	if (plan_move_hold(d->plan, m)) {
		snprintf(err, errlen, "the planner could not hold the place");
		return -1;
	}
	memset(&q, 0, sizeof(q));
	q.seq = next_seq(d);
	q.op = VGPU_STATE_RESUME;
	q.gpu = m->gpu;
	q.ngroups = m->ngroups;
	memcpy(q.groups, m->groups, m->ngroups * sizeof(m->groups[0]));
	e = ctl_send(v->ctl_fd, VGPU_CTL_RESTORE, &q, sizeof(q), -1);
	if (e) {
		plan_move_unhold(d->plan, m);
		snprintf(err, errlen, "cannot reach its worker: %s",
			 strerror(-e));
		return -1;
	}
	start_op(d, NULL, v, q.seq, q.op, false);
	st->holding = true;
	st->move = *m;
	return 0;
}

void daemon_state_admin(struct daemon *d, struct daemon_conn *c,
			const struct vgpu_admin_request *req, int fd)
{
	switch (req->op) {
	case VGPU_ADMIN_SUSPEND:
		admin_suspend(d, c, req, fd);
		break;
	case VGPU_ADMIN_RESUME:
		admin_resume(d, c, req, fd);
		break;
	case VGPU_ADMIN_MIGRATE:
		admin_migrate(d, c, req, fd);
		break;
	default:
		if (fd >= 0)
			close(fd);
	}
}

bool daemon_state_create(struct daemon *d, struct daemon_conn *c,
			 struct daemon_vgpu *v,
			 const struct vgpu_admin_request *req)
{
	if (!(req->flags & VGPU_ADMIN_CREATE_RECOVERY))
		return true;
	if (req->first && (req->first < DAEMON_SAVE_INTERVAL_MIN_MS ||
			   req->first > DAEMON_SAVE_INTERVAL_MAX_MS)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "a save interval of %u ms is not between "
				   "%u ms and %u hours",
				   req->first, DAEMON_SAVE_INTERVAL_MIN_MS,
				   DAEMON_SAVE_INTERVAL_MAX_MS / 3600000);
		return false;
	}
	v->cfg.save_interval_ms = req->first;
	return true;
}

/* ---- the worker's answers --------------------------------------------- */

/* The plan, the config and the state after a successful SAVED. */
static void apply_done(struct daemon *d, struct daemon_vgpu *v,
		       const struct vgpu_ctl_saved *r)
{
	struct daemon_vgpu_state *st = v->st;
	const struct plan_move *m = &st->move;

	switch (r->op) {
	case VGPU_STATE_SUSPEND:
		plan_suspend(d->plan, v->cfg.name);
		st->suspended = true;
		v->state = VGPU_ADMIN_STATE_SUSPENDED;
		break;
	case VGPU_STATE_RESUME:
	case VGPU_STATE_MIGRATE:
		plan_move_finish(d->plan, v->cfg.name, m);
		st->holding = false;
		v->cfg.gpu = m->gpu;
		v->cfg.ngroups = m->ngroups;
		memset(v->cfg.groups, 0, sizeof(v->cfg.groups));
		memcpy(v->cfg.groups, m->groups,
		       m->ngroups * sizeof(m->groups[0]));
		v->cfg.memory_quota = m->memory;
		v->sms = m->sms;
		if (r->sm_count != m->sms || r->gpu != m->gpu)
			daemon_log("vGPU %s: warning: the worker is on GPU %u "
				   "with %u SMs, the plan says GPU %u, %u SMs",
				   v->cfg.name, r->gpu, r->sm_count, m->gpu,
				   m->sms);
		st->suspended = false;
		v->state = VGPU_ADMIN_STATE_RUNNING;
		/* an mdev instance's BAR0 follows (COMPOSITION) */
		daemon_mdev_vgpu_changed(d, v, r->change_count);
		break;
	}
	d->state_dirty = true;
}

static void reply_done(struct daemon *d, struct daemon_conn *c,
		       struct daemon_vgpu *v, const struct vgpu_ctl_saved *r)
{
	struct vgpu_admin_state_result res;
	char mib[32];

	memset(&res, 0, sizeof(res));
	res.op = r->op;
	res.from_gpu = v->st->from_gpu;
	res.to_gpu = v->cfg.gpu;
	res.peer = r->peer;
	res.bytes = r->bytes;
	res.quiesce_ns = r->quiesce_ns;
	res.prepare_ns = r->prepare_ns;
	res.copy_ns = r->copy_ns;
	res.remap_ns = r->remap_ns;
	res.blackout_ns = r->blackout_ns;
	res.total_ns = r->total_ns;
	plan_format_size(r->bytes, mib, sizeof(mib));
	switch (r->op) {
	case VGPU_STATE_SUSPEND:
		daemon_admin_reply_result(
			d, c, VGPU_ADMIN_OK, v, &res,
			"suspended vGPU %s: %s saved in %.1f ms; its SMs and "
			"memory are free, its programs wait",
			v->cfg.name, mib, r->copy_ns / 1e6);
		break;
	case VGPU_STATE_RESUME:
		daemon_admin_reply_result(
			d, c, VGPU_ADMIN_OK, v, &res,
			"resumed vGPU %s on GPU %u (%u SMs): %s back in %.1f "
			"ms",
			v->cfg.name, v->cfg.gpu, v->sms, mib,
			r->total_ns / 1e6);
		break;
	default:
		daemon_admin_reply_result(
			d, c, VGPU_ADMIN_OK, v, &res,
			"migrated vGPU %s: GPU %u -> %u (%u SMs), %s %s; "
			"its programs waited %.2f ms, %.2f ms in all",
			v->cfg.name, res.from_gpu, v->cfg.gpu, v->sms, mib,
			r->peer ? "GPU to GPU" : "through the host",
			r->blackout_ns / 1e6, r->total_ns / 1e6);
	}
}

/* A save point (seq 0), or the answer to a RECOVER. */
static void saved_unasked(struct daemon *d, struct daemon_vgpu *v,
			  struct vgpu_ctl_saved *r, int fd)
{
	struct daemon_vgpu_state *st = v->st;
	struct stat sb;

	/* the worker runs guest work: keep only what a memfd would be */
	if (fd >= 0 && (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode))) {
		daemon_log("vGPU %s: its worker sent a save point that is not "
			   "a memfd; ignored",
			   v->cfg.name);
		close(fd);
		fd = -1;
	}
	if (r->op == VGPU_STATE_SAVE_POINT && r->status == 0) {
		if (fd >= 0) {
			if (st->sp_fd >= 0)
				close(st->sp_fd);
			st->sp_fd = fd;
			daemon_log("vGPU %s: save points on (%s)", v->cfg.name,
				   r->message);
		}
		st->sp_count++;
		st->sp_last_ms = daemon_now_ms();
		st->sp_last_bytes = r->bytes;
		st->sp_last_blackout_ns = r->blackout_ns;
		return;
	}
	if (r->op == VGPU_STATE_RECOVER && st->recovering) {
		st->recovering = false;
		if (r->status == 0)
			daemon_log("vGPU %s: memory back from its save point: "
				   "%s (%.1f ms)",
				   v->cfg.name, r->message, r->total_ns / 1e6);
		else
			daemon_log("vGPU %s: nothing recovered: %s",
				   v->cfg.name, r->message);
	} else {
		daemon_log("vGPU %s: ignoring a SAVED (%s, seq %u) nobody "
			   "waits for",
			   v->cfg.name, op_name(r->op), r->seq);
	}
	if (fd >= 0)
		close(fd);
}

void daemon_state_saved(struct daemon *d, struct daemon_vgpu *v,
			struct vgpu_ctl_saved *r, int fd)
{
	struct daemon_vgpu_state *st = vst(v);
	struct daemon_conn *c;

	r->message[VGPU_MESSAGE_MAX - 1] = '\0';
	if (!st || !st->busy || !r->seq || r->seq != st->seq) {
		if (st)
			saved_unasked(d, v, r, fd);
		else if (fd >= 0)
			close(fd);
		return;
	}
	if (fd >= 0)
		close(fd);
	c = st->waiter;
	st->busy = false;
	st->waiter = NULL;
	st->deadline = 0;
	if (r->status != 0) {
		if (st->holding)
			plan_move_unhold(d->plan, &st->move);
		st->holding = false;
		daemon_log("vGPU %s: %s refused by its worker: %s (CUresult "
			   "%d)",
			   v->cfg.name, op_name(r->op), r->message, r->status);
		daemon_swap_saved(d, v, r);
		if (c)
			daemon_admin_reply(d, c, admin_status(r->status), NULL,
					   "vGPU %s: %s failed: %.200s",
					   v->cfg.name, op_name(r->op),
					   r->message);
		return;
	}
	apply_done(d, v, r);
	daemon_log("vGPU %s: %s done: %.1f MiB, clients held %.2f ms, %.2f "
		   "ms in all",
		   v->cfg.name, op_name(r->op), r->bytes / 1048576.0,
		   r->blackout_ns / 1e6, r->total_ns / 1e6);
	daemon_swap_saved(d, v, r);
	if (c)
		reply_done(d, c, v, r);
}

void daemon_state_progress(struct daemon *d, struct daemon_vgpu *v,
			   const struct vgpu_ctl_progress *p)
{
	struct daemon_vgpu_state *st = v->st;

	(void)d;
	if (!st || !st->busy || p->seq != st->seq)
		return;
	if (st->deadline)
		st->deadline = daemon_now_ms() + DAEMON_STATE_TIMEOUT_MS;
	if (st->waiter && st->progress)
		send_progress(st->waiter, p->op, p->done, p->total);
}

void daemon_state_started(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_vgpu_state *st = v->st;
	struct vgpu_ctl_restore q;

	(void)d;
	if (!st || st->sp_fd < 0 || !v->cfg.save_interval_ms)
		return;
	memset(&q, 0, sizeof(q));
	q.seq = 0; /* answered as an unasked SAVED */
	q.op = VGPU_STATE_RECOVER;
	q.gpu = v->cfg.gpu;
	if (ctl_send(v->ctl_fd, VGPU_CTL_RESTORE, &q, sizeof(q), st->sp_fd)) {
		daemon_log("vGPU %s: cannot send its save point to the new "
			   "worker",
			   v->cfg.name);
		return;
	}
	st->recovering = true;
	daemon_log("vGPU %s: its new worker gets the save point taken %.1f s "
		   "before (%llu so far)",
		   v->cfg.name,
		   st->sp_last_ms ? (daemon_now_ms() - st->sp_last_ms) / 1e3
				  : 0.0,
		   (unsigned long long)st->sp_count);
}

void daemon_state_abort(struct daemon *d, struct daemon_vgpu *v,
			const char *why)
{
	struct daemon_vgpu_state *st = v->st;
	struct daemon_conn *c;

	if (!st)
		return;
	st->recovering = false;
	if (!st->busy)
		return;
	c = st->waiter;
	st->busy = false;
	st->waiter = NULL;
	st->deadline = 0;
	if (st->holding)
		plan_move_unhold(d->plan, &st->move);
	st->holding = false;
	daemon_log("vGPU %s: %s failed: %s", v->cfg.name, op_name(st->op), why);
	daemon_swap_aborted(d, v, why);
	if (c)
		daemon_admin_reply(d, c, VGPU_ADMIN_WORKER_FAILED, NULL,
				   "vGPU %s: %s failed: %s", v->cfg.name,
				   op_name(st->op), why);
}

void daemon_state_worker_gone(struct daemon *d, struct daemon_vgpu *v)
{
	v->state = VGPU_ADMIN_STATE_SUSPENDED;
	v->retry_at = 0;
	d->state_dirty = true;
	daemon_swap_worker_gone(d, v); /* a swapped-out one is only that */
}

void daemon_state_adopted(struct daemon *d, struct daemon_vgpu *v)
{
	if (daemon_state_suspended(v))
		v->state = VGPU_ADMIN_STATE_SUSPENDED;
	daemon_swap_adopted(d, v); /* SWAPPED, when it was */
}

int64_t daemon_state_deadline(const struct daemon_vgpu *v)
{
	int64_t a = v->st && v->st->busy ? v->st->deadline : 0;
	int64_t b = daemon_swap_deadline(v);

	return a && (!b || a < b) ? a : b;
}

void daemon_state_timers(struct daemon *d, int64_t now)
{
	struct daemon_vgpu *v;
	struct daemon_vgpu_state *st;

	for (v = d->vgpus; v; v = v->next) {
		st = v->st;
		if (!st || !st->busy || !st->deadline || now < st->deadline)
			continue;
		st->deadline = 0;
		daemon_log("vGPU %s: its worker made no progress on the %s "
			   "for %d s",
			   v->cfg.name, op_name(st->op),
			   DAEMON_STATE_TIMEOUT_MS / 1000);
		if (st->waiter)
			daemon_admin_reply(d, st->waiter,
					   VGPU_ADMIN_WORKER_FAILED, NULL,
					   "vGPU %s: its worker made no "
					   "progress on the %s for %d s",
					   v->cfg.name, op_name(st->op),
					   DAEMON_STATE_TIMEOUT_MS / 1000);
		st->waiter = NULL;
		/* a swap nobody waits for must not hold its GPU's other
		 * swaps back for as long as the worker is stuck */
		daemon_swap_aborted(d, v, "its worker made no progress");
	}
	daemon_swap_timers(d, now);
}

void daemon_state_vgpu_free(struct daemon *d, struct daemon_vgpu *v)
{
	struct daemon_vgpu_state *st = v->st;

	if (!st)
		return;
	daemon_swap_vgpu_free(d, v);
	if (st->busy && st->waiter)
		daemon_admin_reply(d, st->waiter, VGPU_ADMIN_WORKER_FAILED,
				   NULL, "vGPU %s is gone", v->cfg.name);
	if (st->holding)
		plan_move_unhold(d->plan, &st->move);
	if (st->sp_fd >= 0)
		close(st->sp_fd);
	free(st);
	v->st = NULL;
}

void daemon_state_close_waiters(struct daemon *d)
{
	struct daemon_vgpu *v;

	daemon_swap_close_waiters(d);
	for (v = d->vgpus; v; v = v->next) {
		if (!v->st || !v->st->waiter)
			continue;
		daemon_admin_reply(d, v->st->waiter, VGPU_ADMIN_BUSY, NULL,
				   "vgpud is shutting down; the %s of vGPU %s "
				   "may not have happened",
				   op_name(v->st->op), v->cfg.name);
		v->st->waiter = NULL;
	}
}

/* ---- the state file ---------------------------------------------------- */

struct json_t *daemon_state_vgpu_json(const struct daemon_vgpu *v)
{
	bool susp = daemon_state_suspended(v);
	json_t *sw = daemon_swap_vgpu_json(v), *j;

	if (!susp && !v->cfg.save_interval_ms && !sw)
		return NULL;
	j = json_pack("{s:b, s:I}", "suspended", (int)susp, "save_interval_ms",
		      (json_int_t)v->cfg.save_interval_ms);
	if (j && sw && json_object_set_new(j, "swap", sw)) {
		json_decref(j);
		return NULL;
	}
	if (!j)
		json_decref(sw);
	return j;
}

bool daemon_state_json_suspended(struct json_t *st)
{
	json_t *s = st ? json_object_get(st, "suspended") : NULL;

	return s && json_is_true(s);
}

int daemon_state_vgpu_from_json(struct daemon *d, struct daemon_vgpu *v,
				struct json_t *st, char *err, size_t errlen)
{
	json_t *sw = NULL;
	json_error_t je;
	json_int_t ms;
	int susp;

	if (!st)
		return 0;
	if (json_unpack_ex(st, &je, JSON_STRICT, "{s:b, s:I, s?o}", "suspended",
			   &susp, "save_interval_ms", &ms, "swap", &sw)) {
		snprintf(err, errlen, "vGPU %s: \"state\": %s", v->cfg.name,
			 je.text);
		return -1;
	}
	if (ms < 0 || (ms && (ms < DAEMON_SAVE_INTERVAL_MIN_MS ||
			      ms > DAEMON_SAVE_INTERVAL_MAX_MS))) {
		snprintf(err, errlen,
			 "vGPU %s: \"save_interval_ms\" %lld is out of range",
			 v->cfg.name, (long long)ms);
		return -1;
	}
	v->cfg.save_interval_ms = (uint32_t)ms;
	if (susp) {
		if (!vst(v)) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		v->st->suspended = true;
	}
	if (sw && daemon_swap_vgpu_from_json(d, v, sw, err, errlen))
		return -1;
	if (sw && v->st->swap.swapped && !susp) {
		snprintf(err, errlen,
			 "vGPU %s: \"swap\" says swapped out, \"suspended\" "
			 "says not",
			 v->cfg.name);
		return -1;
	}
	return 0;
}
