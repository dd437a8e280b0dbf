/* SPDX-License-Identifier: MIT */
/*
 * The admin socket (include/vgpu/admin.h): vgpu-admin is its only client,
 * but every request is still checked (peer uid, size, magic, version,
 * op, strings, values) and a bad one gets an error response, never a
 * crash. create and destroy park the connection until the worker has
 * answered or exited; the loop keeps serving everything else meanwhile.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "daemon.h"
#include "daemon_part.h"
#include "daemon_state_ops.h"
#include "daemon_mdev.h"
#include "daemon_sched.h"
#include "daemon_swap.h"

static void admin_fill_entry(const struct daemon *d,
			     const struct daemon_vgpu *v,
			     struct vgpu_admin_entry *e)
{
	const struct vgpu_gpu_info *g = &d->gpus[v->cfg.gpu];

	memset(e, 0, sizeof(*e));
	memcpy(e->name, v->cfg.name, sizeof(e->name));
	memcpy(e->gpu_name, g->name, sizeof(e->gpu_name));
	e->gpu = v->cfg.gpu;
	e->backend = v->cfg.backend;
	e->sms = v->sms;
	e->ngroups = v->cfg.ngroups;
	memcpy(e->groups, v->cfg.groups, sizeof(e->groups));
	e->memory_quota = v->cfg.memory_quota;
	e->memory_used = v->stats.memory_used;
	e->va_base = v->cfg.va_base;
	e->clients = v->stats.clients;
	e->uid = v->cfg.client_uid;
	e->state = v->state;
	e->restarts = v->restarts;
	e->pid = v->pid;
	e->time_limit_ms = v->cfg.kernel_time_limit_ms;
	e->min_partition = g->min_partition;
	e->isolation = v->cfg.isolation;
	e->consumer_kind = v->consumer_kind;
	e->gid = v->consumer_gid;
	e->leftover = v->cfg.ngroups == 1 && v->cfg.groups[0] == g->ngroups;
	e->save_interval_ms = v->cfg.save_interval_ms;
	if (v->st) {
		e->save_points = (uint32_t)v->st->sp_count;
		e->save_last_kib = (uint32_t)(v->st->sp_last_bytes >> 10);
	}
}

struct vgpu_admin_response *daemon_admin_response_alloc(uint32_t op,
							int32_t status)
{
	struct vgpu_admin_response *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->magic = VGPU_ADMIN_MAGIC;
	r->major = VGPU_ADMIN_MAJOR;
	r->minor = VGPU_ADMIN_MINOR;
	r->op = op;
	r->status = status;
	return r;
}

/* Send r on fd without ever blocking; a peer that is gone loses it. */
static void response_send(int fd, const struct vgpu_admin_response *r)
{
	int e = ctl_send_fds(fd, r, sizeof(*r), NULL, 0);

	if (e < 0 && e != -EPIPE)
		daemon_log("admin: could not send a reply: %s", strerror(-e));
}

struct vgpu_admin_response *daemon_admin_response_new(struct daemon *d,
						      struct daemon_conn *c)
{
	struct vgpu_admin_response *r =
		daemon_admin_response_alloc(c->op, VGPU_ADMIN_OK);

	if (!r)
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
	return r;
}

void daemon_admin_response_send(struct daemon *d, struct daemon_conn *c,
				struct vgpu_admin_response *r)
{
	response_send(c->fd, r);
	free(r);
	daemon_conn_close(d, c);
}

static void vreply(struct daemon *d, struct daemon_conn *c, int32_t status,
		   const struct daemon_vgpu *v,
		   const struct vgpu_admin_state_result *res, bool save,
		   const char *fmt, va_list ap)
{
	struct vgpu_admin_response *r =
		daemon_admin_response_alloc(c->op, status);

	/* what the admin is told has happened is on disk first (but see
	 * daemon_admin_reply_unsaved) */
	if (save && d->state_dirty && !d->stopping)
		daemon_state_save(d);
	if (r) {
		vsnprintf(r->message, sizeof(r->message), fmt, ap);
		if (v) {
			admin_fill_entry(d, v, &r->entries[0]);
			r->count = 1;
			r->total = 1;
			if (v->mdev)
				memcpy(r->mdev_uuid, v->mdev_uuid,
				       sizeof(r->mdev_uuid));
		}
		if (res)
			r->state.result = *res;
		if (status != VGPU_ADMIN_OK)
			daemon_log("admin: refused: %s", r->message);
		response_send(c->fd, r);
		free(r);
	}
	daemon_conn_close(d, c);
}

void daemon_admin_reply(struct daemon *d, struct daemon_conn *c, int32_t status,
			const struct daemon_vgpu *v, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreply(d, c, status, v, NULL, true, fmt, ap);
	va_end(ap);
}

void daemon_admin_reply_unsaved(struct daemon *d, struct daemon_conn *c,
				int32_t status, const struct daemon_vgpu *v,
				const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreply(d, c, status, v, NULL, false, fmt, ap);
	va_end(ap);
}

void daemon_admin_reply_result(struct daemon *d, struct daemon_conn *c,
			       int32_t status, const struct daemon_vgpu *v,
			       const struct vgpu_admin_state_result *res,
			       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreply(d, c, status, v, res, true, fmt, ap);
	va_end(ap);
}

/*
 * Read the request, and the one descriptor a SUSPEND or RESUME may pass
 * with it (SCM_RIGHTS, into *fd; -1 when none). Anything else in the
 * control data is closed. recv's return value.
 */
static ssize_t request_recv(int sock, struct vgpu_admin_request *req, int *fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} ctl;
	struct iovec iov = {.iov_base = req, .iov_len = sizeof(*req)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = ctl.buf,
			    .msg_controllen = sizeof(ctl.buf)};
	struct cmsghdr *cm;
	ssize_t n;
	size_t i, k;
	int f;

	*fd = -1;
	n = recvmsg(sock, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return n;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < k; i++) {
			memcpy(&f, CMSG_DATA(cm) + i * sizeof(int), sizeof(f));
			if (*fd < 0)
				*fd = f;
			else
				close(f); /* one at most */
		}
	}
	return n;
}

void daemon_admin_accept(struct daemon *d)
{
	int i;

	for (i = 0; i < 16; i++) {
		struct daemon_conn *c;
		int fd = accept4(d->admin_fd, NULL, NULL,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno != EAGAIN && errno != EINTR &&
			    errno != ECONNABORTED)
				daemon_log("admin: accept: %s",
					   strerror(errno));
			return;
		}
		c = daemon_conn_new(d, fd, true);
		if (!c)
			close(fd);
		/* a peer that is not root is refused once it has asked */
	}
}

void daemon_admin_timeout(struct daemon *d, struct daemon_conn *c)
{
	daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
			   "no request within %d ms", DAEMON_ADMIN_TIMEOUT_MS);
}

bool daemon_admin_name_ok(struct daemon *d, struct daemon_conn *c,
			  const struct vgpu_admin_request *req)
{
	char err[160];

	if (!memchr(req->name, '\0', sizeof(req->name))) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "the vGPU name is not NUL-terminated");
		return false;
	}
	if (!plan_name_valid(req->name, err, sizeof(err))) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL, "%s",
				   err);
		return false;
	}
	return true;
}

struct daemon_vgpu *daemon_admin_find(struct daemon *d, struct daemon_conn *c,
				      const struct vgpu_admin_request *req)
{
	struct daemon_vgpu *v = daemon_vgpu_find(d, req->name);

	if (!v)
		daemon_admin_reply(d, c, VGPU_ADMIN_NO_SUCH_VGPU, NULL,
				   "no vGPU named '%s'", req->name);
	return v;
}

struct daemon_vgpu *daemon_admin_vgpu(struct daemon *d, struct daemon_conn *c,
				      const struct vgpu_admin_request *req)
{
	return daemon_admin_name_ok(d, c, req) ? daemon_admin_find(d, c, req)
					       : NULL;
}

/*
 * The checks CREATE and PLAN_CHECK share: every field of a hostile
 * request, then the planner. On success the grant is reserved (the
 * caller keeps or releases it) and *uid is the consumer's user;
 * otherwise c has been answered and NULL is returned.
 */
static const struct plan_grant *
create_plan(struct daemon *d, struct daemon_conn *c,
	    const struct vgpu_admin_request *req, uint32_t *uid)
{
	struct plan_request preq = {0};
	const struct plan_grant *grant;
	char err[VGPU_MESSAGE_MAX];
	uint32_t i;

	if (!daemon_admin_name_ok(d, c, req))
		return NULL;
	if (daemon_vgpu_find(d, req->name)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_EXISTS, NULL,
				   "a vGPU named '%s' already exists",
				   req->name);
		return NULL;
	}
	if (req->sms == 0 || req->memory == 0) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "a vGPU needs at least 1 SM and some "
				   "memory (asked for %u SMs, %llu bytes)",
				   req->sms, (unsigned long long)req->memory);
		return NULL;
	}
	if (req->isolation > 1) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "isolation %u is not 0 (shared) or 1 "
				   "(exclusive)",
				   req->isolation);
		return NULL;
	}
	if (req->consumer_kind > VGPU_ADMIN_CONSUMER_GROUP) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "consumer kind %u is not 0 (user) or 1 "
				   "(group)",
				   req->consumer_kind);
		return NULL;
	}
	if (req->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP &&
	    req->gid == (uint32_t)-1) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "gid %u is not a valid group", req->gid);
		return NULL;
	}
	if (req->consumer_kind == VGPU_ADMIN_CONSUMER_USER && req->gid != 0) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "gid %u given for a user consumer (must "
				   "be 0)",
				   req->gid);
		return NULL;
	}
	*uid = req->uid == VGPU_ADMIN_UID_PEER ? (uint32_t)c->uid : req->uid;
	if (req->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP)
		*uid = (uint32_t)-1; /* no single user */
	else if (*uid == (uint32_t)-1) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "uid %u is not a valid user", *uid);
		return NULL;
	}
	if (req->time_limit_ms != VGPU_ADMIN_TIME_DEFAULT &&
	    req->time_limit_ms > 7u * 86400 * 1000) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "a kernel time limit of %u ms is more than "
				   "a week",
				   req->time_limit_ms);
		return NULL;
	}
	if (req->gpu != VGPU_ADMIN_GPU_ANY && req->gpu >= d->ngpus) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "there is no GPU %u (this host has %u)",
				   req->gpu, d->ngpus);
		return NULL;
	}
	if (!daemon_swap_flags_ok(d, c, req))
		return NULL;
	if (req->gpu != VGPU_ADMIN_GPU_ANY && d->domains[req->gpu].recovering &&
	    req->isolation == 0) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "GPU %u is restarting its shared fault "
				   "domain; try again in a few seconds",
				   req->gpu);
		return NULL;
	}

	preq.name = req->name;
	preq.sms = req->sms;
	preq.memory = req->memory;
	preq.gpu = req->gpu == VGPU_ADMIN_GPU_ANY ? PLAN_GPU_ANY : req->gpu;
	for (i = 0; i < d->ngpus && req->isolation == 0; i++)
		if (d->domains[i].recovering)
			preq.gpu_exclude |= 1ull << i;
	grant = plan_reserve(d->plan, &preq, err, sizeof(err));
	/* idle vGPUs may be swapped out to make room (daemon_swap.c) */
	if (!grant && !daemon_swap_create(d, c, req, err))
		daemon_admin_reply(d, c, VGPU_ADMIN_NO_ROOM, NULL, "%s", err);
	return grant;
}

/* A daemon_vgpu for a grant, not yet in the list, not yet started. */
static void vgpu_init(struct daemon *d, struct daemon_vgpu *v,
		      const struct plan_grant *grant,
		      const struct vgpu_admin_request *req, uint32_t uid)
{
	struct daemon_vgpu_spec spec = {
		.time_limit_ms = req->time_limit_ms == VGPU_ADMIN_TIME_DEFAULT
					 ? VGPU_ADMIN_TIME_LIMIT_DEFAULT_MS
					 : req->time_limit_ms,
		.uid = uid,
		.isolation = req->isolation,
		.consumer_kind = req->consumer_kind,
		.gid = req->gid,
	};

	daemon_vgpu_init(d, v, grant, &spec);
}

static void admin_create(struct daemon *d, struct daemon_conn *c,
			 const struct vgpu_admin_request *req)
{
	const struct plan_grant *grant;
	struct daemon_vgpu *v;
	char size[32], err[VGPU_MESSAGE_MAX];
	uint8_t uuid[16];
	uint32_t uid;
	int st;

	memcpy(uuid, req->mdev_uuid, sizeof(uuid));
	if (req->flags & VGPU_ADMIN_CREATE_MDEV) {
		st = daemon_mdev_bind_check(d, uuid, err, sizeof(err));
		if (st) {
			daemon_admin_reply(d, c, st, NULL, "%s", err);
			return;
		}
	}
	grant = create_plan(d, c, req, &uid);
	if (!grant)
		return;
	v = calloc(1, sizeof(*v));
	if (!v) {
		plan_release(d->plan, req->name);
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		return;
	}
	vgpu_init(d, v, grant, req, uid);
	if (!daemon_state_create(d, c, v, req)) { /* save points */
		plan_release(d->plan, req->name);
		free(v);
		return;
	}
	if (req->flags & VGPU_ADMIN_CREATE_MDEV) {
		v->mdev = true;
		memcpy(v->mdev_uuid, uuid, sizeof(uuid));
	}
	daemon_vgpu_append(d, v);
	daemon_sched_vgpu_new(d, v, req);
	daemon_swap_vgpu_new(d, v, req);

	daemon_log(
		"creating vGPU %s: %u SMs (%u SM group%s) on GPU %u, %s, "
		"VA 0x%llx, %s %u, %s, kernel time limit %u ms",
		v->cfg.name, v->sms, v->cfg.ngroups,
		v->cfg.ngroups == 1 ? "" : "s", v->cfg.gpu,
		plan_format_size(v->cfg.memory_quota, size, sizeof(size)),
		(unsigned long long)v->cfg.va_base,
		v->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP ? "gid" : "uid",
		v->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP ? v->consumer_gid
							      : uid,
		daemon_isolation_name(v->cfg.isolation),
		v->cfg.kernel_time_limit_ms);
	c->parked = true;
	v->create_waiter = c;
	if (daemon_vgpu_start(d, v) < 0) {
		v->create_waiter = NULL;
		daemon_admin_reply(d, c, VGPU_ADMIN_WORKER_FAILED, NULL, "%s",
				   v->start_error);
		daemon_vgpu_free(d, v);
	}
}

void daemon_admin_create(struct daemon *d, struct daemon_conn *c,
			 const struct vgpu_admin_request *req)
{
	admin_create(d, c, req);
}

/* PLAN_CHECK: where CREATE would put it, without creating anything. */
static void admin_plan_check(struct daemon *d, struct daemon_conn *c,
			     const struct vgpu_admin_request *req)
{
	const struct plan_grant *grant;
	struct daemon_vgpu *v;
	uint32_t uid;

	grant = create_plan(d, c, req, &uid);
	if (!grant)
		return;
	v = calloc(1, sizeof(*v));
	if (v)
		vgpu_init(d, v, grant, req, uid);
	plan_release(d->plan, req->name);
	if (!v) {
		daemon_admin_reply(d, c, VGPU_ADMIN_INTERNAL, NULL,
				   "vgpud is out of memory");
		return;
	}
	v->state = 0;
	daemon_admin_reply(d, c, VGPU_ADMIN_OK, v, "fits: %u SMs on GPU %u",
			   v->sms, v->cfg.gpu);
	free(v);
}

static void admin_show(struct daemon *d, struct daemon_conn *c,
		       const struct vgpu_admin_request *req)
{
	struct daemon_vgpu *v;

	v = daemon_admin_vgpu(d, c, req);
	if (!v)
		return;
	daemon_admin_reply(d, c, VGPU_ADMIN_OK, v, "vGPU %s", v->cfg.name);
}

/* GPUS: every GPU, its split and what is free on it. */
static void admin_gpus(struct daemon *d, struct daemon_conn *c)
{
	struct vgpu_admin_response *r = daemon_admin_response_new(d, c);
	const struct daemon_vgpu *v;
	uint32_t i;

	if (!r)
		return; /* answered */
	for (i = 0; i < d->ngpus && i < VGPU_MAX_GPUS; i++) {
		const struct vgpu_gpu_info *info = &d->gpus[i];
		const struct plan_gpu *pg = &d->plan->gpus[i];
		struct vgpu_admin_gpu *g = &r->gpus[i];

		memcpy(g->name, info->name, sizeof(g->name));
		g->index = i;
		g->backend = info->backend;
		g->sm_count = info->sm_count;
		g->min_partition = info->min_partition;
		g->alignment = info->alignment;
		g->ngroups = pg->ngroups;
		plan_gpu_free_sms(pg, &g->groups_free);
		g->leftover_sms = pg->leftover_sms;
		g->leftover_free = plan_leftover_free(pg);
		g->cc_major = info->cc_major;
		g->cc_minor = info->cc_minor;
		g->groups_used = pg->groups_used;
		g->memory_total = pg->memory_total;
		g->memory_reserved = pg->memory_reserve;
		g->memory_used = pg->memory_used;
		g->granularity = pg->granularity;
		memcpy(g->group_sms, pg->group_sms, sizeof(g->group_sms));
		for (v = d->vgpus; v; v = v->next)
			if (v->cfg.gpu == i)
				g->vgpus++;
	}
	r->count = r->total = i;
	snprintf(r->message, sizeof(r->message), "%u GPU%s", i,
		 i == 1 ? "" : "s");
	daemon_admin_response_send(d, c, r);
}

static void admin_destroy(struct daemon *d, struct daemon_conn *c,
			  const struct vgpu_admin_request *req)
{
	struct daemon_vgpu *v;

	v = daemon_admin_vgpu(d, c, req);
	if (!v)
		return;
	if (v->destroying) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s is already being destroyed",
				   req->name);
		return;
	}
	if (daemon_mdev_inst_of(d, v)) {
		char u[MDEV_UUID_TEXT];

		mdev_uuid_format(v->mdev_uuid, u);
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vGPU %s is mdev instance %s; remove the "
				   "instance first (vgpu-admin destroy does, "
				   "or: echo 1 > /sys/bus/mdev/devices/%s/"
				   "remove)",
				   v->cfg.name, u, u);
		return;
	}
	if (daemon_vgpu_destroy(d, v, c))
		daemon_admin_reply(d, c, VGPU_ADMIN_OK, NULL,
				   "destroyed vGPU %s", req->name);
}

/* MDEVS: the vGPUs bound to an mdev UUID (name: only that one). */
static void admin_mdevs(struct daemon *d, struct daemon_conn *c,
			const struct vgpu_admin_request *req)
{
	struct vgpu_admin_response *r;
	struct daemon_vgpu *v;
	uint32_t i = 0;

	if (req->name[0] && !daemon_admin_vgpu(d, c, req))
		return;
	r = daemon_admin_response_new(d, c);
	if (!r)
		return; /* answered */
	for (v = d->vgpus; v; v = v->next) {
		if (!v->mdev || (req->name[0] && strncmp(v->cfg.name, req->name,
							 VGPU_NAME_MAX)))
			continue;
		if (i++ >= req->first && r->count < VGPU_ADMIN_LIST_MAX)
			daemon_mdev_fill(d, v, &r->mdevs[r->count++]);
	}
	r->total = i;
	snprintf(r->message, sizeof(r->message), "%u vGPU%s bound to an mdev%s",
		 i, i == 1 ? "" : "s",
		 d->mdev ? "" : " (vgpud does not serve /dev/vgpu-ctl)");
	daemon_admin_response_send(d, c, r);
}

static void admin_list(struct daemon *d, struct daemon_conn *c,
		       const struct vgpu_admin_request *req)
{
	struct vgpu_admin_response *r = daemon_admin_response_new(d, c);
	struct daemon_vgpu *v;
	uint32_t i = 0;

	if (!r)
		return; /* answered */
	for (v = d->vgpus; v; v = v->next, i++) {
		if (i >= req->first && r->count < VGPU_ADMIN_LIST_MAX)
			admin_fill_entry(d, v, &r->entries[r->count++]);
	}
	r->total = i;
	snprintf(r->message, sizeof(r->message), "%u vGPU%s", i,
		 i == 1 ? "" : "s");
	daemon_admin_response_send(d, c, r);
}

static void admin_request(struct daemon *d, struct daemon_conn *c,
			  struct vgpu_admin_request *req_in, ssize_t n, int fd);

void daemon_admin_input(struct daemon *d, struct daemon_conn *c)
{
	struct vgpu_admin_request req;
	ssize_t n;
	int fd;

	n = request_recv(c->fd, &req, &fd);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		daemon_conn_close(d, c);
		return;
	}
	/* only SUSPEND and RESUME take a descriptor; every exit below that
	 * does not hand it on closes it */
	if (fd >= 0 && (n != sizeof(req) || (req.op != VGPU_ADMIN_SUSPEND &&
					     req.op != VGPU_ADMIN_RESUME))) {
		close(fd);
		fd = -1;
	}
	admin_request(d, c, &req, n, fd);
}

/* One request read by daemon_admin_input, fd with it (or -1). */
static void admin_request(struct daemon *d, struct daemon_conn *c,
			  struct vgpu_admin_request *req_in, ssize_t n, int fd)
{
	struct vgpu_admin_request req = *req_in;

	if (fd >= 0 &&
	    (c->uid != 0 || (size_t)n != sizeof(req) ||
	     req.magic != VGPU_ADMIN_MAGIC || req.major != VGPU_ADMIN_MAJOR ||
	     d->stopping ||
	     (req.flags & ~(VGPU_ADMIN_STATE_FILE | VGPU_ADMIN_PROGRESS)))) {
		close(fd); /* refused below before it is used */
		fd = -1;
	}
	c->op = 0;
	/* the socket is 0600, but a mode can be changed */
	if (c->uid != 0) {
		daemon_admin_reply(d, c, VGPU_ADMIN_PERMISSION, NULL,
				   "the admin socket is for root only (you are "
				   "uid %d)",
				   (int)c->uid);
		return;
	}
	if ((size_t)n != sizeof(req)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "the request is %zd bytes, expected %zu "
				   "(vgpu-admin from another version?)",
				   n, sizeof(req));
		return;
	}
	if (req.magic != VGPU_ADMIN_MAGIC) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "bad magic 0x%08x: not a vgpu-admin request",
				   req.magic);
		return;
	}
	c->op = req.op;
	if (req.major != VGPU_ADMIN_MAJOR) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_VERSION, NULL,
				   "vgpu-admin speaks admin protocol %u.%u, "
				   "vgpud speaks %u.%u",
				   req.major, req.minor, VGPU_ADMIN_MAJOR,
				   VGPU_ADMIN_MINOR);
		return;
	}
	if (req.flags &
	    ~(req.op == VGPU_ADMIN_CREATE
		      ? VGPU_ADMIN_CREATE_MDEV | VGPU_ADMIN_CREATE_POLICY |
				VGPU_ADMIN_CREATE_RECOVERY |
				VGPU_ADMIN_CREATE_SWAP_ALLOW |
				VGPU_ADMIN_CREATE_SWAP_NEVER
	      : req.op == VGPU_ADMIN_PLAN_CHECK
		      ? VGPU_ADMIN_CREATE_POLICY |
				VGPU_ADMIN_CREATE_SWAP_ALLOW |
				VGPU_ADMIN_CREATE_SWAP_NEVER
	      : req.op == VGPU_ADMIN_SUSPEND || req.op == VGPU_ADMIN_RESUME
		      ? VGPU_ADMIN_STATE_FILE | VGPU_ADMIN_PROGRESS
	      : req.op == VGPU_ADMIN_MIGRATE ? VGPU_ADMIN_PROGRESS
					     : 0u)) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "request flags 0x%x are not defined for op "
				   "%u",
				   req.flags, req.op);
		return;
	}
	if (d->stopping && req.op != VGPU_ADMIN_LIST &&
	    req.op != VGPU_ADMIN_GPUS && req.op != VGPU_ADMIN_SHOW &&
	    req.op != VGPU_ADMIN_MDEVS && req.op != VGPU_ADMIN_TOP &&
	    req.op != VGPU_ADMIN_SCHED) {
		daemon_admin_reply(d, c, VGPU_ADMIN_BUSY, NULL,
				   "vgpud is shutting down");
		return;
	}
	switch (req.op) {
	case VGPU_ADMIN_CREATE:
		if (!daemon_sched_create(d, c, &req, false))
			admin_create(d, c, &req);
		break;
	case VGPU_ADMIN_DESTROY:
		admin_destroy(d, c, &req);
		break;
	case VGPU_ADMIN_LIST:
		admin_list(d, c, &req);
		break;
	case VGPU_ADMIN_GPUS:
		admin_gpus(d, c);
		break;
	case VGPU_ADMIN_SHOW:
		admin_show(d, c, &req);
		break;
	case VGPU_ADMIN_PLAN_CHECK:
		if (!daemon_sched_create(d, c, &req, true))
			admin_plan_check(d, c, &req);
		break;
	case VGPU_ADMIN_MDEVS:
		admin_mdevs(d, c, &req);
		break;
	case VGPU_ADMIN_RESIZE:
		daemon_resize_admin(d, c, &req);
		break;
	case VGPU_ADMIN_TOP:
		daemon_load_top(d, c, &req);
		break;
	case VGPU_ADMIN_POLICY:
		daemon_sched_policy_admin(d, c, &req);
		break;
	case VGPU_ADMIN_SCHED:
		daemon_sched_show_admin(d, c, &req);
		break;
	case VGPU_ADMIN_SWAP:
		daemon_swap_admin(d, c, &req);
		break;
	case VGPU_ADMIN_SUSPEND:
	case VGPU_ADMIN_RESUME:
	case VGPU_ADMIN_MIGRATE:
		daemon_state_admin(d, c, &req, fd);
		fd = -1;
		break;
	default:
		daemon_admin_reply(d, c, VGPU_ADMIN_BAD_REQUEST, NULL,
				   "unknown admin op %u", req.op);
	}
	if (fd >= 0)
		close(fd);
}
