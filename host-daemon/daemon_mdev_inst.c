/* SPDX-License-Identifier: MIT */
/*
 * mdev instances: which vGPU each one is, the answer to its CREATE (or,
 * after a vgpud restart, its EXISTS), its BAR2 memfd, and its device
 * state while it lives.
 *
 * An instance of a catalogue type (sms != 0) gets a vGPU composed for it,
 * "mdev-<first 8 hex digits of the UUID>" ("owned" by the instance).
 * An instance of the custom type is the vGPU vgpu-admin composed from a
 * blueprint and bound to that UUID beforehand. Either way the instance
 * is the vGPU: removing the instance destroys it.
 *
 * CREATE_DONE waits for the vGPU's worker to be READY: the tick asks
 * again each turn (mdev_inst_answer), so the loop never blocks on it.
 *
 * BAR0 follows the vGPU's composition: the resize, state and migration
 * code tell us each change with the worker's change_count
 * (daemon_mdev_vgpu_changed), and the tick sends what changed otherwise
 * (a new worker placed elsewhere); COMPOSITION either way.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_mdev.h"
#include "daemon_part.h"

#define BAR2_NAME_PREFIX "vgpu-bar2-"

static struct daemon_vgpu *vgpu_by_uuid(struct daemon *d,
					const uint8_t uuid[16])
{
	struct daemon_vgpu *v;

	for (v = d->vgpus; v; v = v->next)
		if (v->mdev && !memcmp(v->mdev_uuid, uuid, 16))
			return v;
	return NULL;
}

/* A vGPU composed for the instance goes with it (a failed create). */
static void drop_owned(struct daemon *d, struct mdev_inst *in)
{
	struct daemon_vgpu *v = daemon_mdev_vgpu(d, in);

	in->vgpu[0] = '\0';
	if (v && v->mdev_owned && !v->destroying)
		daemon_vgpu_destroy(d, v, NULL);
}

void mdev_inst_fail(struct daemon *d, struct mdev_inst *in, int status,
		    const char *fmt, ...)
{
	struct vgpu_mdev_create_done cd;
	char u[MDEV_UUID_TEXT];
	va_list ap;

	memset(&cd, 0, sizeof(cd));
	cd.instance = in->id;
	cd.status = status;
	cd.bar2_fd = -1;
	va_start(ap, fmt);
	vsnprintf(cd.message, sizeof(cd.message), fmt, ap);
	va_end(ap);
	mdev_uuid_format(in->uuid, u);
	daemon_log("mdev: instance %u (%s): %s: %s", in->id, u,
		   in->replay ? "not re-attached" : "not created", cd.message);
	daemon_mdev_ioctl(d, VGPU_MDEV_IOC_CREATE_DONE, &cd,
			  "CREATE_DONE (failure)", status == -ENOENT);
	in->pending = false;
	drop_owned(d, in);
	/* a failed create is gone from the module; a failed EXISTS stays
	 * (in ERROR) and may be bound again later */
	if (!in->replay)
		in->gone = true;
}

/* ---- the vGPU of an instance ---------------------------------------- */

/* Compose a vGPU of type t for the instance (catalogue types). */
static struct daemon_vgpu *compose(struct daemon *d, struct mdev_inst *in,
				   const struct vgpu_mdev_type_info *t)
{
	bool shared = t->isolation != VGPU_MDEV_EXCLUSIVE;
	struct daemon_vgpu_spec spec = {
		.time_limit_ms = VGPU_ADMIN_TIME_LIMIT_DEFAULT_MS,
		.uid = 0, /* no host user: only root and the VM */
		.isolation = !shared,
		.consumer_kind = VGPU_ADMIN_CONSUMER_USER,
	};
	struct plan_request preq = {0};
	const struct plan_grant *grant;
	char name[VGPU_NAME_MAX], err[VGPU_MESSAGE_MAX], size[32];
	char u[MDEV_UUID_TEXT];
	struct daemon_vgpu *v;
	uint32_t g;

	mdev_uuid_format(in->uuid, u);
	snprintf(name, sizeof(name), "mdev-%.8s", u);
	if (d->stopping) {
		mdev_inst_fail(d, in, -ESHUTDOWN, "vgpud is shutting down");
		return NULL;
	}
	if (daemon_vgpu_find(d, name)) {
		mdev_inst_fail(d, in, -EEXIST,
			       "a vGPU named %s exists already (UUIDs that "
			       "start alike?)",
			       name);
		return NULL;
	}
	preq.name = name;
	preq.sms = t->sms;
	preq.memory = t->memory;
	preq.gpu = PLAN_GPU_ANY;
	for (g = 0; g < d->ngpus && shared; g++)
		if (d->domains[g].recovering)
			preq.gpu_exclude |= 1ull << g;
	grant = plan_reserve(d->plan, &preq, err, sizeof(err));
	if (!grant) {
		mdev_inst_fail(d, in, -ENOSPC, "%s", err);
		return NULL;
	}
	v = calloc(1, sizeof(*v));
	if (!v) {
		plan_release(d->plan, name);
		mdev_inst_fail(d, in, -ENOMEM, "vgpud is out of memory");
		return NULL;
	}
	daemon_vgpu_init(d, v, grant, &spec);
	v->mdev = true;
	v->mdev_owned = true;
	memcpy(v->mdev_uuid, in->uuid, 16);
	daemon_vgpu_append(d, v);
	daemon_log("mdev: composing vGPU %s for instance %u (type %s): %u SMs "
		   "on GPU %u, %s, %s",
		   name, in->id, t->name, v->sms, v->cfg.gpu,
		   plan_format_size(v->cfg.memory_quota, size, sizeof(size)),
		   daemon_isolation_name(v->cfg.isolation));
	if (daemon_vgpu_start(d, v) < 0) {
		mdev_inst_fail(d, in, -EIO, "vGPU %s: %s", name,
			       v->start_error);
		daemon_vgpu_free(d, v);
		return NULL;
	}
	return v;
}

void mdev_inst_create(struct daemon *d, const struct vgpu_mdev_event *ev)
{
	struct daemon_mdev *m = d->mdev;
	bool exists = ev->type == VGPU_MDEV_EV_EXISTS;
	const struct vgpu_mdev_type_info *t;
	struct mdev_inst *in, **tail;
	struct daemon_vgpu *v;
	char u[MDEV_UUID_TEXT];
	uint32_t i;

	mdev_uuid_format(ev->uuid, u);
	if (daemon_mdev_inst(d, ev->instance)) {
		daemon_log("mdev: %s of instance %u (%s), which vgpud has "
			   "already; ignored",
			   exists ? "EXISTS" : "CREATE", ev->instance, u);
		return;
	}
	in = calloc(1, sizeof(*in));
	if (!in) {
		struct vgpu_mdev_create_done cd = {.instance = ev->instance,
						   .status = -ENOMEM,
						   .bar2_fd = -1};

		daemon_log("mdev: instance %u: out of memory", ev->instance);
		daemon_mdev_ioctl(d, VGPU_MDEV_IOC_CREATE_DONE, &cd,
				  "CREATE_DONE (failure)", false);
		return;
	}
	in->id = ev->instance;
	memcpy(in->uuid, ev->uuid, 16);
	in->type_index = ev->type_index;
	in->replay = exists;
	in->open = exists && ev->is_open;
	in->bar2_fd = -1;
	in->pending = true;
	in->deadline = daemon_now_ms() + MDEV_CREATE_ANSWER_MS;
	for (i = 0; i < VGPU_PCI_MAX_CHANNELS; i++) {
		in->chan[i].inst = in;
		in->chan[i].index = i;
		in->chan[i].sock = -1;
	}
	for (tail = &m->insts; *tail; tail = &(*tail)->next)
		;
	*tail = in;

	if (ev->type_index >= m->ntypes) {
		mdev_inst_fail(d, in, -EINVAL,
			       "type %u is not in the catalogue",
			       ev->type_index);
		return;
	}
	t = &m->types[ev->type_index];
	in->channels = t->channels;
	v = vgpu_by_uuid(d, ev->uuid);
	if (v && (daemon_mdev_inst_of(d, v) || v->destroying)) {
		mdev_inst_fail(d, in, -EBUSY, "vGPU %s (mdev %s) is %s",
			       v->cfg.name, u,
			       v->destroying ? "being destroyed"
					     : "another instance already");
		return;
	}
	if (v && !t->sms != !v->mdev_owned) {
		mdev_inst_fail(d, in, -EINVAL,
			       "mdev %s is vGPU %s, which is not of type %s", u,
			       v->cfg.name, t->name);
		return;
	}
	if (!v && !t->sms) {
		mdev_inst_fail(d, in, -ENOENT,
			       "no vGPU is bound to mdev %s: compose one first "
			       "(vgpu-admin create -f BLUEPRINT --mdev %s)",
			       u, u);
		return;
	}
	if (!v)
		v = compose(d, in, t);
	if (!v)
		return;
	snprintf(in->vgpu, sizeof(in->vgpu), "%s", v->cfg.name);
	daemon_log("mdev: instance %u (%s, type %s)%s: vGPU %s%s", in->id, u,
		   t->name, exists ? " is still there" : "", v->cfg.name,
		   daemon_mdev_vgpu_up(v)
			   ? ""
			   : "; answering once its worker is ready");
}

void mdev_inst_remove(struct daemon *d, struct mdev_inst *in)
{
	struct daemon_vgpu *v = daemon_mdev_vgpu(d, in);
	char u[MDEV_UUID_TEXT];

	mdev_uuid_format(in->uuid, u);
	daemon_log("mdev: instance %u (%s) removed%s%s%s", in->id, u,
		   v ? "; vGPU " : "", v ? v->cfg.name : "",
		   v ? " goes with it" : "");
	in->gone = true;
	in->pending = false;
	in->vgpu[0] = '\0';
	mdev_chan_drop_all(d, in);
	if (v && !v->destroying)
		daemon_vgpu_destroy(d, v, NULL);
}

/* ---- BAR0's composition ---------------------------------------------- */

/* v's composition as BAR0 shows it; change_count 0. */
static void comp_of(const struct daemon *d, const struct daemon_vgpu *v,
		    struct vgpu_mdev_composition *c)
{
	memset(c, 0, sizeof(*c));
	c->sm_count = v->sms;
	c->gpu_index = v->cfg.gpu;
	c->memory = v->cfg.memory_quota;
	c->slice_id = v->cfg.groups[0] << 16 | v->cfg.ngroups;
	c->isolation =
		v->cfg.isolation ? VGPU_MDEV_EXCLUSIVE : VGPU_MDEV_SHARED;
	snprintf(c->gpu_name, sizeof(c->gpu_name), "%s",
		 d->gpus[v->cfg.gpu].name);
}

static bool comp_same(const struct vgpu_mdev_composition *a,
		      const struct vgpu_mdev_composition *b)
{
	return a->sm_count == b->sm_count && a->gpu_index == b->gpu_index &&
	       a->memory == b->memory && a->slice_id == b->slice_id &&
	       a->isolation == b->isolation &&
	       !strncmp(a->gpu_name, b->gpu_name, sizeof(a->gpu_name));
}

/* The worker's change_count as vgpud last heard it (LOAD, RESIZED). */
static uint32_t worker_count(const struct daemon_vgpu *v)
{
	return v->part ? v->part->change_count : 0;
}

/*
 * Sends COMPOSITION when v's composition (or the worker's count) is not
 * what the instance's BAR0 shows. The count is the worker's, or one past
 * BAR0's when that is not more (a restarted worker counts from 0; BAR0
 * never goes back). ESTALE: BAR0 shows a count vgpud did not know (it
 * restarted): once more past that one.
 */
static void comp_send(struct daemon *d, struct mdev_inst *in,
		      const struct daemon_vgpu *v, uint32_t count)
{
	struct daemon_mdev *m = d->mdev;
	struct vgpu_mdev_composition c;
	char groups[96];
	int r;

	if (m->version < 3 || !in->created || in->gone || in->pending)
		return;
	comp_of(d, v, &c);
	c.instance = in->id;
	if (comp_same(&c, &in->comp) && count <= in->comp.change_count)
		return;
	c.change_count = count > in->comp.change_count
				 ? count
				 : in->comp.change_count + 1;
	r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_COMPOSITION, &c, "COMPOSITION",
			      true);
	if (r == -ESTALE) {
		/* the module wrote its count back into c */
		c.change_count =
			count > c.change_count ? count : c.change_count + 1;
		r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_COMPOSITION, &c,
				      "COMPOSITION", true);
	}
	if (r == -ENOTTY) {
		daemon_log("mdev: vgpu_mdev.ko has no COMPOSITION: BAR0 keeps "
			   "each vGPU's composition of its creation");
		m->version = 2;
		return;
	}
	if (r == -ENOENT)
		return; /* removed: REMOVE follows */
	if (r) {
		mdev_log_limited(&in->log,
				 "mdev: instance %u (vGPU %s): COMPOSITION: %s",
				 in->id, v->cfg.name, strerror(-r));
		return;
	}
	in->comp = c;
	mdev_log_limited(
		&in->log,
		"mdev: instance %u (vGPU %s): BAR0 shows %u SMs (groups %s) on "
		"GPU %u, change %u",
		in->id, v->cfg.name, c.sm_count,
		plan_groups_text(v->cfg.groups, v->cfg.ngroups, groups,
				 sizeof(groups)),
		c.gpu_index, c.change_count);
}

void daemon_mdev_vgpu_changed(struct daemon *d, struct daemon_vgpu *v,
			      uint32_t change_count)
{
	struct mdev_inst *in = daemon_mdev_inst_of(d, v);

	if (in)
		comp_send(d, in, v, change_count);
}

/* ---- CREATE_DONE ------------------------------------------------------ */

/* A fresh BAR2 memfd: sparse, channels * VGPU_PCI_CHANNEL_STRIDE bytes,
 * sealed against resizing and further seals (mdev_ctl.h). -errno. */
static int bar2_new(const struct mdev_inst *in)
{
	uint64_t size = (uint64_t)in->channels * VGPU_PCI_CHANNEL_STRIDE;
	char name[64], u[MDEV_UUID_TEXT];
	int fd, e;

	mdev_uuid_format(in->uuid, u);
	snprintf(name, sizeof(name), BAR2_NAME_PREFIX "%s", u);
	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
		    0) {
		e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

/*
 * The BAR2 memfd for a CREATE_DONE. After a vgpud restart (EXISTS) it is
 * the module's own (GET_BAR2: the file a running VM has mapped, which the
 * worker must serve the rings in); a new one when the module holds none.
 * -errno on failure.
 */
static int bar2_get(struct daemon *d, struct mdev_inst *in)
{
	struct vgpu_mdev_bar2 b = {.instance = in->id, .fd = -1};
	struct stat st;
	int r;

	if (!in->replay)
		return bar2_new(in);
	r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_GET_BAR2, &b, "GET_BAR2", true);
	if (!r && b.fd >= 0 && fstat(b.fd, &st) == 0 &&
	    (uint64_t)st.st_size ==
		    (uint64_t)in->channels * VGPU_PCI_CHANNEL_STRIDE) {
		daemon_log("mdev: instance %u: BAR2 is the memfd the module "
			   "holds",
			   in->id);
		return b.fd;
	}
	if (!r && b.fd >= 0) {
		daemon_log("mdev: instance %u: the module's BAR2 memfd is not "
			   "of %u channels; a new one",
			   in->id, in->channels);
		close(b.fd);
	} else if (r && r != -ENODATA) {
		daemon_log("mdev: instance %u: GET_BAR2: %s; a new BAR2 memfd",
			   in->id, strerror(-r));
	}
	return bar2_new(in);
}

/* A fresh memfd to the module for the next VFIO session (SET_BAR2). */
static void bar2_supply(struct daemon *d, struct mdev_inst *in)
{
	struct vgpu_mdev_bar2 b = {.instance = in->id};
	int r;

	b.fd = bar2_new(in);
	r = b.fd < 0 ? b.fd
		     : daemon_mdev_ioctl(d, VGPU_MDEV_IOC_SET_BAR2, &b,
					 "SET_BAR2", true);
	if (!r) {
		in->bar2_fd = b.fd;
		return;
	}
	if (b.fd >= 0)
		close(b.fd);
	if (r == -EBUSY) {
		/* a VFIO user holds it with a memfd already: that one */
		b.fd = -1;
		r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_GET_BAR2, &b, "GET_BAR2",
				      true);
		if (!r) {
			in->bar2_fd = b.fd;
			return;
		}
	}
	in->bar2_retry = daemon_now_ms() + MDEV_BAR2_RETRY_MS;
	if (r != -ENOENT) /* removed: REMOVE follows */
		mdev_log_limited(
			&in->log,
			"mdev: instance %u: no fresh BAR2 memfd for its next "
			"VM (%s); trying again",
			in->id, strerror(-r));
}

void mdev_inst_closed(struct daemon *d, struct mdev_inst *in)
{
	if (in->bar2_fd >= 0)
		close(in->bar2_fd);
	in->bar2_fd = -1;
	if (in->created)
		bar2_supply(d, in);
}

static void create_done(struct daemon *d, struct mdev_inst *in,
			struct daemon_vgpu *v)
{
	struct vgpu_mdev_composition c;
	struct vgpu_mdev_create_done cd;
	char u[MDEV_UUID_TEXT];
	int r;

	if (in->bar2_fd < 0) {
		r = bar2_get(d, in);
		if (r < 0) {
			mdev_inst_fail(d, in, r,
				       "cannot make its BAR2 memfd: %s",
				       strerror(-r));
			return;
		}
		in->bar2_fd = r;
	}
	comp_of(d, v, &c);
	c.instance = in->id;
	c.change_count = worker_count(v);
	memset(&cd, 0, sizeof(cd));
	cd.instance = in->id;
	cd.version = VGPU_PROTO_MAJOR << 16 | VGPU_PROTO_MINOR;
	cd.features = VGPU_FEATURE_NONE;
	cd.sm_count = c.sm_count;
	cd.gpu_index = c.gpu_index;
	cd.memory = c.memory;
	cd.slice_id = c.slice_id;
	cd.isolation = c.isolation;
	cd.change_count = c.change_count;
	cd.bar2_fd = in->bar2_fd;
	memcpy(cd.gpu_name, c.gpu_name, sizeof(cd.gpu_name));
	snprintf(cd.vgpu_name, sizeof(cd.vgpu_name), "%s", v->cfg.name);
	r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_CREATE_DONE, &cd, "CREATE_DONE",
			      true);
	if (r == -ESTALE) {
		/* its VM closed it since GET_BAR2: ask again next turn */
		close(in->bar2_fd);
		in->bar2_fd = -1;
		return;
	}
	if (r == -ENOENT) {
		daemon_log("mdev: instance %u is gone before vgpud answered "
			   "(its create timed out?)",
			   in->id);
		in->gone = true;
		in->pending = false;
		drop_owned(d, in);
		return;
	}
	if (r) {
		mdev_inst_fail(d, in, -EIO,
			       "vgpu_mdev.ko refused vgpud's CREATE_DONE (%s)",
			       strerror(-r));
		return;
	}
	in->pending = false;
	in->created = true;
	in->comp = c;
	in->dev_state = VGPU_DEVICE_READY;
	mdev_uuid_format(in->uuid, u);
	daemon_log("mdev: instance %u (%s) %s: vGPU %s, %u SMs, %u channels",
		   in->id, u, in->replay ? "re-attached" : "created",
		   v->cfg.name, v->sms, in->channels);
}

void mdev_inst_answer(struct daemon *d, struct mdev_inst *in, int64_t now)
{
	struct daemon_vgpu *v = daemon_mdev_vgpu(d, in);

	if (!v) {
		mdev_inst_fail(d, in, -EIO, "its vGPU is gone");
		return;
	}
	if (v->state == VGPU_ADMIN_STATE_FAILED) {
		mdev_inst_fail(d, in, -EIO, "vGPU %s failed: %s", v->cfg.name,
			       v->start_error[0] ? v->start_error
						 : "see vgpud's log");
		return;
	}
	if (daemon_mdev_vgpu_up(v)) {
		create_done(d, in, v);
		return;
	}
	if (now >= in->deadline)
		mdev_inst_fail(d, in, -ETIMEDOUT,
			       "vGPU %s did not become ready within %d s",
			       v->cfg.name, MDEV_CREATE_ANSWER_MS / 1000);
}

/* An instance left without a vGPU (a failed EXISTS): a vGPU bound to its
 * UUID since (vgpu-admin create --mdev UUID) makes it whole again. */
static void rebind(struct daemon *d, struct mdev_inst *in)
{
	struct daemon_vgpu *v = vgpu_by_uuid(d, in->uuid);

	if (!v || v->mdev_owned || daemon_mdev_inst_of(d, v) || v->destroying ||
	    in->type_index != (uint32_t)d->mdev->custom)
		return;
	snprintf(in->vgpu, sizeof(in->vgpu), "%s", v->cfg.name);
	in->pending = true;
	in->deadline = daemon_now_ms() + MDEV_CREATE_ANSWER_MS;
	daemon_log("mdev: instance %u: vGPU %s is now bound to it", in->id,
		   v->cfg.name);
}

void mdev_inst_state(struct daemon *d, struct mdev_inst *in)
{
	struct vgpu_mdev_device_state s;
	struct daemon_vgpu *v;
	uint32_t want;

	if (!in->created) {
		rebind(d, in);
		return;
	}
	if (in->bar2_fd < 0 && daemon_now_ms() >= in->bar2_retry)
		bar2_supply(d, in);
	v = daemon_mdev_vgpu(d, in);
	if (v && daemon_mdev_vgpu_up(v))
		comp_send(d, in, v, worker_count(v)); /* before READY */
	want = v && daemon_mdev_vgpu_up(v) ? VGPU_DEVICE_READY
					   : VGPU_DEVICE_ERROR;
	if (want == in->dev_state)
		return;
	memset(&s, 0, sizeof(s));
	s.instance = in->id;
	s.state = want;
	s.error = want == VGPU_DEVICE_READY ? 0 : v ? EIO : ENODEV;
	daemon_log("mdev: instance %u (vGPU %s): device %s", in->id,
		   v ? v->cfg.name : "gone",
		   want == VGPU_DEVICE_READY ? "READY again"
					     : "ERROR (its worker is down)");
	daemon_mdev_ioctl(d, VGPU_MDEV_IOC_DEVICE_STATE, &s, "DEVICE_STATE",
			  false);
	in->dev_state = want;
}
