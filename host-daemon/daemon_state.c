/* SPDX-License-Identifier: MIT */
/*
 * vgpud's state file (default DIR/state.json, --state FILE): what a
 * restarted vgpud needs to take its running workers back, so that their
 * clients never notice the restart.
 *
 *   {"format": "vgpud-state", "version": 1, "backend": "sim",
 *    "mps_started": false,
 *    "vgpus": [{"name": ..., "gpu": 0, "groups": [0, 1], "sms": 16,
 *               "memory": 1073741824, "va_base": ..., "va_size": ...,
 *               "consumer": {"kind": "user", "id": 0},
 *               "isolation": "shared", "time_limit_ms": 10000,
 *               "ctl_path": "DIR/workers/NAME.sock", "pid": 1234,
 *               "restarts": 0,
 *               "mdev": {"uuid": "...", "owned": false}}, ...]}
 *
 * "mdev" (optional) is the mdev UUID the vGPU is bound to (the VM path,
 * daemon_mdev.c); owned: it was composed for that instance.
 * "state" (optional, daemon_state_ops.c): {"suspended": bool,
 * "save_interval_ms": N, "swap": {...} (optional, daemon_swap_admin.c)};
 * a suspended vGPU holds only its name and VA window ("groups", "sms"
 * and "memory" say where it was). "policy" (optional) is a vGPU's
 * scheduling policy and "scheduler" (optional) every GPU's
 * (daemon_sched_admin.c); "swap" (optional) the GPUs' swap settings.
 *
 * Written after every change (temp file in the same directory, fsync,
 * rename, fsync of the directory), so a crash leaves the old or the new
 * file, never half of one. Read at start: every field is checked and the
 * planner replays every grant before anything is applied; any problem
 * and vgpud refuses to start, saying which line and what.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl_msg.h"
#include "daemon.h"
#include "daemon_sched.h"
#include "daemon_state_ops.h"
#include "plan_resize.h"
#include "daemon_swap.h"
#include "mdev_uuid.h"

#define STATE_FORMAT  "vgpud-state"
#define STATE_VERSION 1

static const char *backend_name(uint32_t b)
{
	return b == VGPU_BACKEND_CUDA ? "cuda" : "sim";
}

/* ---- saving ----------------------------------------------------------- */

static json_t *vgpu_json(const struct daemon_vgpu *v)
{
	json_t *groups = json_array(), *j, *st;
	char u[MDEV_UUID_TEXT];
	uint32_t i;

	if (!groups)
		return NULL;
	for (i = 0; i < v->cfg.ngroups; i++)
		json_array_append_new(groups, json_integer(v->cfg.groups[i]));
	j = json_pack(
		"{s:s, s:I, s:o, s:I, s:I, s:I, s:I, s:{s:s, s:I}, s:s, s:I, "
		"s:s, s:I, s:I}",
		"name", v->cfg.name, "gpu", (json_int_t)v->cfg.gpu, "groups",
		groups, "sms", (json_int_t)v->sms, "memory",
		(json_int_t)v->cfg.memory_quota, "va_base",
		(json_int_t)v->cfg.va_base, "va_size",
		(json_int_t)v->cfg.va_size, "consumer", "kind",
		v->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP ? "group"
							      : "user",
		"id",
		(json_int_t)(v->consumer_kind == VGPU_ADMIN_CONSUMER_GROUP
				     ? v->consumer_gid
				     : v->cfg.client_uid),
		"isolation", daemon_isolation_name(v->cfg.isolation),
		"time_limit_ms", (json_int_t)v->cfg.kernel_time_limit_ms,
		"ctl_path", v->cfg.ctl_path, "pid", (json_int_t)v->pid,
		"restarts", (json_int_t)v->restarts);
	if (j && (st = daemon_sched_vgpu_json(v)) &&
	    json_object_set_new(j, "policy", st)) {
		json_decref(j);
		return NULL;
	}
	if (j && (st = daemon_state_vgpu_json(v)) &&
	    json_object_set_new(j, "state", st)) {
		json_decref(j);
		return NULL;
	}
	if (j && v->mdev) {
		mdev_uuid_format(v->mdev_uuid, u);
		if (json_object_set_new(j, "mdev",
					json_pack("{s:s, s:b}", "uuid", u,
						  "owned",
						  (int)v->mdev_owned))) {
			json_decref(j);
			return NULL;
		}
	}
	return j;
}

int daemon_state_save(struct daemon *d)
{
	char tmp[PATH_MAX + 8], dir[PATH_MAX], *slash;
	struct daemon_vgpu *v;
	json_t *root, *list;
	int fd, r = -1;

	d->state_dirty = false;
	list = json_array();
	root = json_pack("{s:s, s:i, s:s, s:b, s:o}", "format", STATE_FORMAT,
			 "version", STATE_VERSION, "backend",
			 backend_name(d->backend), "mps_started",
			 (int)d->mps.started, "vgpus", list);
	if (!root)
		goto oom;
	if (d->sched &&
	    json_object_set_new(root, "scheduler", daemon_sched_json(d)))
		goto oom;
	if (d->swap) { /* daemon_swap_admin.c; NULL: all defaults */
		json_t *sw = daemon_swap_json(d);

		if (sw && json_object_set_new(root, "swap", sw))
			goto oom;
	}
	for (v = d->vgpus; v; v = v->next) {
		json_t *j;

		/* a create still waiting for its worker is not there yet */
		if (!v->ever_ready && !v->adopted)
			continue;
		j = vgpu_json(v);
		if (!j || json_array_append_new(list, j))
			goto oom;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", d->state_path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0 || json_dumpfd(root, fd, JSON_INDENT(2)) < 0 ||
	    write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
		daemon_log("state: cannot write %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		unlink(tmp);
		goto out;
	}
	close(fd);
	if (rename(tmp, d->state_path) < 0) {
		daemon_log("state: cannot rename %s to %s: %s", tmp,
			   d->state_path, strerror(errno));
		unlink(tmp);
		goto out;
	}
	snprintf(dir, sizeof(dir), "%s", d->state_path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, sizeof(dir), ".");
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	r = 0;
	goto out;
oom:
	daemon_log("state: out of memory; %s not written", d->state_path);
out:
	json_decref(root);
	return r;
}

void daemon_state_remove(struct daemon *d)
{
	if (unlink(d->state_path) < 0 && errno != ENOENT)
		daemon_log("state: cannot remove %s: %s", d->state_path,
			   strerror(errno));
}

/* ---- loading ---------------------------------------------------------- */

/*
 * The line where element idx of the top-level "vgpus" array starts in
 * text (1 when it cannot be found): jansson does not keep positions of
 * decoded values, so errors found after parsing are placed this way.
 */
static int vgpu_line(const char *text, size_t idx)
{
	const char *p = strstr(text, "\"vgpus\"");
	int line = 1, depth = 0;
	size_t n = 0;
	bool in_str = false;

	if (!p)
		return 1;
	for (const char *q = text; q < p; q++)
		if (*q == '\n')
			line++;
	for (; *p; p++) {
		if (*p == '\n')
			line++;
		if (in_str) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_str = false;
			continue;
		}
		if (*p == '"') {
			in_str = true;
		} else if (*p == '[' || *p == '{') {
			if (depth == 1 && *p == '{' && n++ == idx)
				return line;
			depth++;
		} else if (*p == ']' || *p == '}') {
			if (--depth <= 0)
				break;
		}
	}
	return 1;
}

struct state_bind {
	uint8_t uuid[16];
	bool owned;
};

/* A vGPU's "mdev" object, checked (duplicates: daemon_state_load). */
static int state_mdev(const char *name, json_t *j, struct state_bind *b,
		      char *err, size_t errlen)
{
	const char *uuid;
	json_error_t je;
	int owned = 0;

	if (json_unpack_ex(j, &je, JSON_STRICT, "{s:s, s:b}", "uuid", &uuid,
			   "owned", &owned)) {
		snprintf(err, errlen, "vGPU %s: \"mdev\": %s", name, je.text);
		return -1;
	}
	if (mdev_uuid_parse(uuid, b->uuid) || mdev_uuid_is_zero(b->uuid)) {
		snprintf(err, errlen,
			 "vGPU %s: \"mdev\": '%.40s' is not a UUID", name,
			 uuid);
		return -1;
	}
	b->owned = owned;
	return 0;
}

/* One vGPU from the state file, checked, into a new daemon_vgpu. */
static struct daemon_vgpu *vgpu_from_json(struct daemon *d, json_t *j,
					  char *err, size_t errlen)
{
	json_int_t gpu, sms, memory, va_base, va_size, cid, tl, pid, restarts;
	const char *name, *ckind, *iso, *ctl_path;
	json_t *groups, *g, *mdev = NULL, *policy = NULL, *state = NULL;
	json_error_t je;
	struct daemon_vgpu *v;
	const struct plan_grant *grant;
	struct state_bind bind;
	uint32_t gr[VGPU_MAX_SM_GROUPS];
	char want_path[PATH_MAX + 80];
	size_t i, n;

	if (json_unpack_ex(j, &je, JSON_STRICT,
			   "{s:s, s:I, s:o, s:I, s:I, s:I, s:I, s:{s:s, s:I}, "
			   "s:s, s:I, s:s, s:I, s:I, s?o, s?o, s?o}",
			   "name", &name, "gpu", &gpu, "groups", &groups, "sms",
			   &sms, "memory", &memory, "va_base", &va_base,
			   "va_size", &va_size, "consumer", "kind", &ckind,
			   "id", &cid, "isolation", &iso, "time_limit_ms", &tl,
			   "ctl_path", &ctl_path, "pid", &pid, "restarts",
			   &restarts, "mdev", &mdev, "policy", &policy, "state",
			   &state)) {
		snprintf(err, errlen, "a vGPU entry: %s", je.text);
		return NULL;
	}
	if (!plan_name_valid(name, err, errlen))
		return NULL;
	if (!json_is_array(groups) || json_array_size(groups) == 0 ||
	    json_array_size(groups) > VGPU_MAX_SM_GROUPS) {
		snprintf(err, errlen,
			 "vGPU %s: \"groups\" must be an array of 1 to %d "
			 "group numbers",
			 name, VGPU_MAX_SM_GROUPS);
		return NULL;
	}
	n = json_array_size(groups);
	json_array_foreach(groups, i, g)
	{
		if (!json_is_integer(g) || json_integer_value(g) < 0 ||
		    json_integer_value(g) >= VGPU_MAX_SM_GROUPS) {
			snprintf(err, errlen,
				 "vGPU %s: group %zu is not a group number "
				 "0-%d",
				 name, i, VGPU_MAX_SM_GROUPS - 1);
			return NULL;
		}
		gr[i] = (uint32_t)json_integer_value(g);
	}
	if (gpu < 0 || gpu >= (json_int_t)d->ngpus) {
		snprintf(err, errlen,
			 "vGPU %s: \"gpu\" %lld is not a GPU of this host "
			 "(it has %u)",
			 name, (long long)gpu, d->ngpus);
		return NULL;
	}
	if (memory <= 0 || va_base <= 0 ||
	    va_size != (json_int_t)PLAN_VA_WINDOW) {
		snprintf(err, errlen,
			 "vGPU %s: \"memory\", \"va_base\" or \"va_size\" is "
			 "out of range (va_size must be %llu)",
			 name, (unsigned long long)PLAN_VA_WINDOW);
		return NULL;
	}
	if (strcmp(ckind, "user") && strcmp(ckind, "group")) {
		snprintf(err, errlen,
			 "vGPU %s: consumer kind '%s' is not user or group",
			 name, ckind);
		return NULL;
	}
	if (cid < 0 || cid >= (json_int_t)UINT32_MAX) {
		snprintf(err, errlen,
			 "vGPU %s: consumer id %lld is out of "
			 "range",
			 name, (long long)cid);
		return NULL;
	}
	if (strcmp(iso, "shared") && strcmp(iso, "exclusive")) {
		snprintf(err, errlen,
			 "vGPU %s: isolation '%s' is not shared or exclusive",
			 name, iso);
		return NULL;
	}
	if (tl < 0 || tl > (json_int_t)UINT32_MAX - 1 || pid < 0 ||
	    pid > 0x3fffffff || restarts < 0 ||
	    restarts > (json_int_t)UINT32_MAX) {
		snprintf(err, errlen,
			 "vGPU %s: \"time_limit_ms\", \"pid\" or \"restarts\" "
			 "is out of range",
			 name);
		return NULL;
	}
	snprintf(want_path, sizeof(want_path), "%s/%s.sock", d->workers_dir,
		 name);
	if (strcmp(ctl_path, want_path)) {
		snprintf(err, errlen,
			 "vGPU %s: ctl_path '%.120s' is not %.120s (another "
			 "run directory?)",
			 name, ctl_path, want_path);
		return NULL;
	}
	if (mdev && state_mdev(name, mdev, &bind, err, errlen))
		return NULL;
	/* a suspended vGPU holds only its name and VA window */
	if (daemon_state_json_suspended(state))
		grant = plan_restore_suspended(d->plan, name, (uint32_t)gpu,
					       (uint64_t)va_base, err, errlen);
	else
		grant = plan_restore(d->plan, name, (uint32_t)gpu, (uint32_t)n,
				     gr, (uint64_t)memory, (uint64_t)va_base,
				     err, errlen);
	if (!grant)
		return NULL;
	if (grant->ngroups && grant->sms != (uint64_t)sms) {
		snprintf(err, errlen,
			 "vGPU %s: \"sms\" is %lld, but its groups hold %u "
			 "SMs on this GPU",
			 name, (long long)sms, grant->sms);
		plan_release(d->plan, name);
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		plan_release(d->plan, name);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	memcpy(v->cfg.name, grant->name, sizeof(v->cfg.name));
	v->cfg.backend = d->backend;
	v->cfg.gpu = grant->gpu;
	v->cfg.ngroups = grant->ngroups;
	memcpy(v->cfg.groups, grant->groups, sizeof(v->cfg.groups));
	v->cfg.va_base = grant->va_base;
	v->cfg.va_size = grant->va_size;
	v->cfg.memory_quota = grant->memory;
	if (!grant->ngroups) { /* suspended: where it was, as recorded */
		v->cfg.ngroups = (uint32_t)n;
		memcpy(v->cfg.groups, gr, n * sizeof(gr[0]));
		v->cfg.memory_quota = (uint64_t)memory;
	}
	v->cfg.kernel_time_limit_ms = (uint32_t)tl;
	v->cfg.max_clients = DAEMON_MAX_CLIENTS;
	v->cfg.isolation = strcmp(iso, "exclusive") == 0;
	if (!strcmp(ckind, "group")) {
		v->consumer_kind = VGPU_ADMIN_CONSUMER_GROUP;
		v->consumer_gid = (uint32_t)cid;
		v->cfg.client_uid = (uint32_t)-1;
	} else {
		v->consumer_kind = VGPU_ADMIN_CONSUMER_USER;
		v->cfg.client_uid = (uint32_t)cid;
	}
	daemon_vgpu_ctl_path(d, v);
	v->sms = grant->ngroups ? grant->sms : (uint32_t)sms;
	v->pid = (pid_t)pid;
	v->restarts = (uint32_t)restarts;
	v->state = VGPU_ADMIN_STATE_STARTING;
	v->ever_ready = true;
	v->ctl_fd = -1;
	v->pidfd = -1;
	if (mdev) {
		v->mdev = true;
		v->mdev_owned = bind.owned;
		memcpy(v->mdev_uuid, bind.uuid, sizeof(v->mdev_uuid));
	}
	if (daemon_state_vgpu_from_json(d, v, state, err, errlen)) {
		plan_release(d->plan, name);
		free(v->st);
		free(v);
		return NULL;
	}
	if (policy && daemon_sched_vgpu_from_json(d, v, policy, err, errlen)) {
		plan_release(d->plan, name);
		free(v->sched);
		free(v->st);
		free(v);
		return NULL;
	}
	return v;
}

/* Free what a failed load built, giving the plan back. */
static void drop_loaded(struct daemon *d, struct daemon_vgpu *list)
{
	while (list) {
		struct daemon_vgpu *next = list->next;

		plan_release(d->plan, list->cfg.name);
		free(list->sched);
		free(list->st);
		free(list);
		list = next;
	}
}

int daemon_state_load(struct daemon *d, bool *mps_started, char *err,
		      size_t errlen)
{
	struct daemon_vgpu *head = NULL, **tail = &head;
	const char *format, *backend;
	char what[VGPU_MESSAGE_MAX + 64];
	json_t *root = NULL, *list, *j, *sched = NULL, *swap = NULL;
	json_int_t version;
	json_error_t je;
	char *text = NULL;
	int mps = 0, r = -1;
	size_t i, len = 0;
	FILE *f;

	*mps_started = false;
	f = fopen(d->state_path, "re");
	if (!f) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: cannot read it: %s", d->state_path,
			 strerror(errno));
		return -1;
	}
	/* the text too, to say on which line a vGPU's problem is */
	if (getdelim(&text, &len, '\0', f) < 0) {
		free(text);
		text = strdup("");
	}
	fclose(f);
	if (!text) {
		snprintf(err, errlen, "%s: out of memory", d->state_path);
		return -1;
	}
	root = json_loads(text, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		snprintf(err, errlen,
			 "%s: line %d: %s; move it aside to start "
			 "empty",
			 d->state_path, je.line, je.text);
		goto out;
	}
	if (json_unpack_ex(root, &je, JSON_STRICT,
			   "{s:s, s:I, s:s, s:b, s:o, s?o, s?o}", "format",
			   &format, "version", &version, "backend", &backend,
			   "mps_started", &mps, "vgpus", &list, "scheduler",
			   &sched, "swap", &swap)) {
		snprintf(err, errlen,
			 "%s: line 1: not a vgpud state file (%s); move it "
			 "aside to start empty",
			 d->state_path, je.text);
		goto out;
	}
	if (strcmp(format, STATE_FORMAT) || version != STATE_VERSION) {
		snprintf(err, errlen,
			 "%s: line 1: format '%s' version %lld, this vgpud "
			 "reads '%s' version %d; move it aside to start empty",
			 d->state_path, format, (long long)version,
			 STATE_FORMAT, STATE_VERSION);
		goto out;
	}
	if (strcmp(backend, backend_name(d->backend))) {
		snprintf(err, errlen,
			 "%s: line 1: its vGPUs ran on the %s backend, this "
			 "vgpud uses %s; move it aside to start empty",
			 d->state_path, backend, backend_name(d->backend));
		goto out;
	}
	if (sched && daemon_sched_from_json(d, sched, what, sizeof(what))) {
		snprintf(err, errlen,
			 "%s: line 1: %s; move it aside to start empty",
			 d->state_path, what);
		goto out;
	}
	if (swap && daemon_swap_from_json(d, swap, what, sizeof(what))) {
		snprintf(err, errlen,
			 "%s: line 1: %s; move it aside to start empty",
			 d->state_path, what);
		goto out;
	}
	if (!json_is_array(list) || json_array_size(list) > PLAN_MAX_SLOTS) {
		snprintf(err, errlen,
			 "%s: line %d: \"vgpus\" must be an array of at most "
			 "%d vGPUs; move it aside to start empty",
			 d->state_path, vgpu_line(text, 0), PLAN_MAX_SLOTS);
		goto out;
	}
	json_array_foreach(list, i, j)
	{
		struct daemon_vgpu *v = vgpu_from_json(d, j, what,
						       sizeof(what)),
				   *o;

		for (o = head; v && v->mdev && o; o = o->next) {
			if (o->mdev &&
			    !memcmp(o->mdev_uuid, v->mdev_uuid, 16)) {
				snprintf(what, sizeof(what),
					 "vGPU %s: its mdev UUID is vGPU %s's "
					 "already",
					 v->cfg.name, o->cfg.name);
				plan_release(d->plan, v->cfg.name);
				free(v->sched);
				free(v->st);
				free(v);
				v = NULL;
				break;
			}
		}
		if (!v) {
			snprintf(err, errlen,
				 "%s: line %d: %s; move it aside to start "
				 "empty",
				 d->state_path, vgpu_line(text, i), what);
			goto out;
		}
		*tail = v;
		tail = &v->next;
	}
	/* all good: now, and only now, it becomes vgpud's */
	*tail = d->vgpus;
	d->vgpus = head;
	head = NULL;
	*mps_started = mps;
	r = 0;
out:
	drop_loaded(d, head);
	json_decref(root);
	free(text);
	return r;
}

/* ---- adopting ----------------------------------------------------------- */

/*
 * Connect to v's worker at its ctl_path and read its ADOPTED (2 s at
 * most). Returns the connected fd with *msg filled, or -1 with a reason.
 */
static int adopt_connect(const struct daemon_vgpu *v,
			 struct vgpu_ctl_adopted *msg, char *why, size_t len)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	int64_t deadline = daemon_now_ms() + DAEMON_ADOPT_TIMEOUT_MS;
	uint32_t type, n;
	int fd, r;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", v->cfg.ctl_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(why, len, "socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		snprintf(why, len, "nobody listens on %s (%s)", v->cfg.ctl_path,
			 strerror(errno));
		close(fd);
		return -1;
	}
	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		int64_t left = deadline - daemon_now_ms();

		if (left <= 0) {
			snprintf(why, len, "no ADOPTED within %d ms",
				 DAEMON_ADOPT_TIMEOUT_MS);
			break;
		}
		if (poll(&pfd, 1, (int)left) <= 0)
			continue;
		r = ctl_recv(fd, &type, msg, sizeof(*msg), &n, NULL);
		if (r == -EAGAIN || r == -EINTR)
			continue;
		if (r < 0) {
			snprintf(why, len, "the connection failed (%s)",
				 strerror(-r));
			break;
		}
		if (type != VGPU_CTL_ADOPTED || n != sizeof(*msg)) {
			snprintf(why, len,
				 "it sent %s (%u bytes) instead of ADOPTED",
				 ctl_type_name(type), n);
			break;
		}
		return fd;
	}
	close(fd);
	return -1;
}

/*
 * A worker on other groups of its GPU than the state names: a resize that
 * was answered before vgpud wrote the state down (resizes are: see
 * daemon_admin_reply_unsaved; the scheduler's too, at the end of the
 * loop's turn). The worker is right about where it runs, so when those
 * groups are free in the plan its grant moves there. false when they are
 * not (then it is not adopted).
 */
static bool adopt_groups(struct daemon *d, struct daemon_vgpu *v,
			 const struct vgpu_worker_config *c)
{
	char err[VGPU_MESSAGE_MAX], was[96], now[96];
	struct plan_resize r;
	uint64_t mask = 0;
	uint32_t i;

	if (!c->ngroups || c->ngroups > VGPU_MAX_SM_GROUPS)
		return false;
	for (i = 0; i < c->ngroups; i++) {
		if (c->groups[i] >= 64)
			return false;
		mask |= 1ull << c->groups[i];
	}
	if (plan_resize_choose(d->plan, v->cfg.name, 0, mask, &r, err,
			       sizeof(err)) ||
	    plan_resize_hold(d->plan, v->cfg.name, &r))
		return false;
	plan_resize_finish(d->plan, v->cfg.name, &r, true);
	plan_groups_text(v->cfg.groups, v->cfg.ngroups, was, sizeof(was));
	v->cfg.ngroups = r.ngroups;
	memset(v->cfg.groups, 0, sizeof(v->cfg.groups));
	memcpy(v->cfg.groups, r.groups, r.ngroups * sizeof(r.groups[0]));
	v->sms = r.sms;
	daemon_log("vGPU %s: its worker runs on groups %s, the state said %s "
		   "(a resize not yet written down): adopted there",
		   v->cfg.name,
		   plan_groups_text(r.groups, r.ngroups, now, sizeof(now)),
		   was);
	return true;
}

/* Whether the worker's own idea of its vGPU is the one recorded (its
 * groups may have moved: adopt_groups). */
static bool adopt_matches(struct daemon *d, struct daemon_vgpu *v,
			  const struct vgpu_ctl_adopted *m, char *why,
			  size_t len)
{
	const struct vgpu_worker_config *c = &m->cfg;
	bool same_groups = c->ngroups == v->cfg.ngroups &&
			   c->ngroups <= VGPU_MAX_SM_GROUPS &&
			   !memcmp(c->groups, v->cfg.groups,
				   c->ngroups * sizeof(c->groups[0]));

	if (strncmp(c->name, v->cfg.name, VGPU_NAME_MAX) ||
	    c->gpu != v->cfg.gpu || c->va_base != v->cfg.va_base ||
	    c->memory_quota != v->cfg.memory_quota ||
	    (!same_groups &&
	     (m->pid != v->pid || !v->cfg.ngroups || !adopt_groups(d, v, c)))) {
		snprintf(why, len,
			 "its config (gpu %u, %u groups, VA 0x%llx, quota "
			 "%llu) is not the recorded one",
			 c->gpu, c->ngroups, (unsigned long long)c->va_base,
			 (unsigned long long)c->memory_quota);
		return false;
	}
	if (m->pid != v->pid) {
		snprintf(why, len, "it is pid %d, the state says %d", m->pid,
			 (int)v->pid);
		return false;
	}
	return true;
}

void daemon_state_adopt(struct daemon *d)
{
	struct daemon_vgpu *v, *next;
	struct vgpu_ctl_adopted msg;
	char why[VGPU_MESSAGE_MAX];
	unsigned adopted = 0, gone = 0;
	int fd, pidfd;

	for (v = d->vgpus; v; v = next) {
		next = v->next;
		if (v->ctl_fd >= 0 || v->adopted)
			continue;
		fd = v->pid > 0 ? adopt_connect(v, &msg, why, sizeof(why)) : -1;
		if (v->pid <= 0)
			snprintf(why, sizeof(why), "it had no worker");
		if (fd >= 0 && !adopt_matches(d, v, &msg, why, sizeof(why))) {
			/* not ours to keep: ask it to go */
			ctl_send(fd, VGPU_CTL_SHUTDOWN, NULL, 0, -1);
			close(fd);
			fd = -1;
		}
		pidfd = fd >= 0 ? (int)syscall(SYS_pidfd_open, v->pid, 0) : -1;
		/* without pidfds (old kernels, valgrind) its ctl connection
		 * closing is its exit */
		if (fd >= 0 && pidfd < 0 && errno == ENOSYS)
			daemon_log(
				"vGPU %s: no pidfd_open here; watching worker "
				"pid %d through its ctl connection",
				v->cfg.name, (int)v->pid);
		else if (fd >= 0 && pidfd < 0) {
			snprintf(why, sizeof(why), "pidfd_open(%d): %s",
				 (int)v->pid, strerror(errno));
			close(fd);
			fd = -1;
		}
		if (fd < 0) {
			daemon_log("vGPU %s: cannot adopt worker pid %d: %s; "
				   "starting it again",
				   v->cfg.name, (int)v->pid, why);
			gone++;
			v->pid = 0; /* never signal a pid we could not check */
			v->state = VGPU_ADMIN_STATE_RESTARTING;
			continue;
		}
		v->ctl_fd = fd;
		v->pidfd = pidfd;
		v->adopted = true;
		v->ready = true;
		v->state = VGPU_ADMIN_STATE_RUNNING;
		daemon_state_adopted(d, v); /* suspended, if it was */
		v->stats = msg.stats;
		adopted++;
		daemon_log("vGPU %s: adopted worker pid %d (%u clients)",
			   v->cfg.name, (int)v->pid, msg.stats.clients);
	}
	/* then restart them (a shared one takes its domain down first) */
	for (v = d->vgpus; v; v = next) {
		next = v->next;
		if (!v->pid && daemon_state_suspended(v))
			daemon_state_worker_gone(d, v); /* resume starts it */
		else if (!v->pid && v->state == VGPU_ADMIN_STATE_RESTARTING &&
			 !v->retry_at)
			daemon_vgpu_gone(d, v);
	}
	if (adopted || gone)
		daemon_log("state: adopted %u worker%s, restarting %u vGPU%s",
			   adopted, adopted == 1 ? "" : "s", gone,
			   gone == 1 ? "" : "s");
	d->state_dirty = true;
}
