/* SPDX-License-Identifier: MIT */
/*
 * /dev/vgpu-ctl (include/vgpu/mdev_ctl.h): opening it, HELLO, the type
 * catalogue, reading events and handing them to the instance and channel
 * code, and the per-turn tick that sends what waited for a worker.
 * daemon_mdev.h says how the pieces fit.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon_mdev.h"

#define MDEV_EVENTS_PER_TURN 256

int daemon_mdev_ioctl(struct daemon *d, unsigned long req, void *arg,
		      const char *what, bool quiet)
{
	int r;

	do {
		r = ioctl(d->mdev->fd, req, arg);
	} while (r < 0 && errno == EINTR);
	if (r >= 0)
		return 0;
	r = -errno;
	if (!quiet)
		daemon_log("mdev: %s: %s", what, strerror(-r));
	return r;
}

struct mdev_inst *daemon_mdev_inst(const struct daemon *d, uint32_t id)
{
	struct mdev_inst *in;

	for (in = d->mdev ? d->mdev->insts : NULL; in; in = in->next)
		if (in->id == id && !in->gone)
			return in;
	return NULL;
}

struct daemon_vgpu *daemon_mdev_vgpu(struct daemon *d,
				     const struct mdev_inst *in)
{
	return in->vgpu[0] ? daemon_vgpu_find(d, in->vgpu) : NULL;
}

void mdev_log_limited(struct mdev_ratelimit *rl, const char *fmt, ...)
{
	int64_t now = daemon_now_ms();
	char line[VGPU_MDEV_TEXT_MAX + 256];
	va_list ap;

	if (now - rl->start >= MDEV_LOG_WINDOW_MS) {
		if (rl->held)
			daemon_log("mdev: (%u more lines like the next were "
				   "not logged)",
				   rl->held);
		rl->start = now;
		rl->lines = 0;
		rl->held = 0;
	}
	if (rl->lines >= MDEV_LOG_BURST) {
		rl->held++;
		return;
	}
	rl->lines++;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	daemon_log("%s", line);
}

bool daemon_mdev_vgpu_up(const struct daemon_vgpu *v)
{
	return v->ready && v->pid > 0 && v->ctl_fd >= 0 && !v->destroying &&
	       v->state == VGPU_ADMIN_STATE_RUNNING;
}

struct mdev_inst *daemon_mdev_inst_of(const struct daemon *d,
				      const struct daemon_vgpu *v)
{
	struct mdev_inst *in;

	for (in = d->mdev ? d->mdev->insts : NULL; in; in = in->next)
		if (!in->gone && (in->created || in->pending) &&
		    !strncmp(in->vgpu, v->cfg.name, VGPU_NAME_MAX))
			return in;
	return NULL;
}

/* ---- opening the device -------------------------------------------- */

/* One catalogue entry, checked: the module is ours, but a bad entry must
 * give a sentence, not a wrong vGPU. */
static int type_read(struct daemon *d, uint32_t i, char *err, size_t errlen)
{
	struct daemon_mdev *m = d->mdev;
	struct vgpu_mdev_type_info *t = &m->types[i];
	int r;

	memset(t, 0, sizeof(*t));
	t->index = i;
	r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_GET_TYPE, t, "GET_TYPE", true);
	if (r) {
		snprintf(err, errlen, "GET_TYPE %u: %s", i, strerror(-r));
		return -1;
	}
	if (t->index != i || !memchr(t->name, '\0', sizeof(t->name)) ||
	    !t->name[0] || !t->channels ||
	    t->channels > VGPU_PCI_MAX_CHANNELS ||
	    (t->sms && (!t->memory || (t->isolation != VGPU_MDEV_SHARED &&
				       t->isolation != VGPU_MDEV_EXCLUSIVE)))) {
		snprintf(err, errlen,
			 "type %u of the catalogue is malformed (index %u, "
			 "%u SMs, %llu bytes, isolation %u, %u channels)",
			 i, t->index, t->sms, (unsigned long long)t->memory,
			 t->isolation, t->channels);
		return -1;
	}
	if (!t->sms && m->custom < 0)
		m->custom = (int)i;
	return 0;
}

/*
 * HELLO and the catalogue; with a sentence, 1 when the module will not do
 * (another version, a catalogue out of range), -1 when a call failed. An
 * older module (its
 * version from VGPU_MDEV_CTL_VERSION_MIN on) gets HELLO again in its own
 * version, and vgpud uses only what that version has.
 */
static int mdev_hello(struct daemon *d, char *err, size_t errlen)
{
	struct daemon_mdev *m = d->mdev;
	struct vgpu_mdev_hello h = {.version = VGPU_MDEV_CTL_VERSION};
	uint32_t i, theirs, said = VGPU_MDEV_CTL_VERSION;
	int r;

	r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_HELLO, &h, "HELLO", true);
	if (r == -EPROTO && h.version >= VGPU_MDEV_CTL_VERSION_MIN &&
	    h.version < VGPU_MDEV_CTL_VERSION) {
		theirs = h.version;
		memset(&h, 0, sizeof(h));
		h.version = said = theirs;
		r = daemon_mdev_ioctl(d, VGPU_MDEV_IOC_HELLO, &h, "HELLO",
				      true);
		if (!r)
			daemon_log("mdev: vgpu_mdev.ko speaks control version "
				   "%u, vgpud %u: a vGPU's BAR0 keeps the "
				   "composition of its creation (no "
				   "COMPOSITION); load the module of this "
				   "vgpu version for more",
				   theirs, VGPU_MDEV_CTL_VERSION);
		h.version = theirs;
	}
	if (r == -EPROTO && h.version != VGPU_MDEV_CTL_VERSION) {
		snprintf(err, errlen,
			 "vgpu_mdev.ko speaks control version %u, vgpud %u: "
			 "load the module of this vgpu version",
			 h.version, VGPU_MDEV_CTL_VERSION);
		return 1;
	}
	if (r) {
		snprintf(err, errlen, "HELLO: %s", strerror(-r));
		return -1;
	}
	if (!h.ntypes || h.ntypes > MDEV_MAX_TYPES ||
	    h.max_channels > VGPU_PCI_MAX_CHANNELS) {
		snprintf(err, errlen,
			 "HELLO: %u types, %u channels: out of range", h.ntypes,
			 h.max_channels);
		return 1;
	}
	/* what both speak: a newer module answers with its own */
	m->version = h.version < said ? h.version : said;
	m->ntypes = h.ntypes;
	for (i = 0; i < m->ntypes; i++)
		if (type_read(d, i, err, errlen))
			return -1;
	return 0;
}

/* What vgpud composes on: the catalogue, in its log. */
static void mdev_log_types(const struct daemon_mdev *m)
{
	uint32_t i;

	daemon_log("mdev: VM path on: %s, %u mdev types%s", MDEV_CTL_PATH,
		   m->ntypes,
		   m->custom < 0 ? " (no custom type: blueprints cannot be "
				   "bound to an instance)"
				 : "");
	for (i = 0; i < m->ntypes; i++)
		daemon_log("mdev: type %u %s: %u SMs, %llu bytes, %s, %u "
			   "channels",
			   i, m->types[i].name, m->types[i].sms,
			   (unsigned long long)m->types[i].memory,
			   !m->types[i].sms ? "custom (bound blueprints)"
			   : m->types[i].isolation == VGPU_MDEV_EXCLUSIVE
				   ? "exclusive"
				   : "shared",
			   m->types[i].channels);
}

/* The device, its instances and channels let go (the module marks every
 * instance ERROR); d->mdev is NULL afterwards. */
static void mdev_close(struct daemon *d)
{
	struct daemon_mdev *m = d->mdev;
	struct mdev_inst *in;

	if (!m)
		return;
	while ((in = m->insts)) {
		m->insts = in->next;
		mdev_chan_drop_all(d, in);
		if (in->bar2_fd >= 0)
			close(in->bar2_fd);
		free(in);
	}
	if (m->epoll >= 0)
		close(m->epoll);
	close(m->fd);
	free(m->scratch);
	free(m);
	d->mdev = NULL;
}

/*
 * Opens /dev/vgpu-ctl, says HELLO, reads the catalogue and sets up the
 * epoll descriptor: what start-up and each retry do alike (the module
 * then queues EXISTS for the instances it has, read in the loop). 0 with
 * d->mdev set; else d->mdev stays NULL, a sentence is in why, and the
 * result is -errno of the open (-ENOENT: no module), 1 when the module
 * refused (HELLO or the catalogue; *node is then its device node), or
 * -ENOMEM / -EIO for our own failures.
 */
static int mdev_attach(struct daemon *d, char *why, size_t len,
		       struct stat *node)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
	struct daemon_mdev *m;
	int fd, e;

	fd = open(MDEV_CTL_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			snprintf(why, len, "no %s (vgpu_mdev.ko is not loaded)",
				 MDEV_CTL_PATH);
		else
			snprintf(why, len, "cannot open %s: %s%s",
				 MDEV_CTL_PATH, strerror(e),
				 e == EBUSY ? " (another vgpud holds it)" : "");
		return -e;
	}
	if (fstat(fd, node) < 0)
		memset(node, 0, sizeof(*node));
	m = calloc(1, sizeof(*m));
	if (m)
		m->scratch = malloc(sizeof(*m->scratch));
	if (!m || !m->scratch) {
		free(m);
		close(fd);
		snprintf(why, len, "out of memory");
		return -ENOMEM;
	}
	m->fd = fd;
	m->custom = -1;
	m->epoll = -1;
	d->mdev = m;
	e = mdev_hello(d, why, len);
	if (e) {
		/* another version or a malformed catalogue: refused until the
		 * module is another; an ioctl that failed: tried again */
		mdev_close(d);
		return e > 0 ? 1 : -EIO;
	}
	m->epoll = epoll_create1(EPOLL_CLOEXEC);
	if (m->epoll < 0 || epoll_ctl(m->epoll, EPOLL_CTL_ADD, fd, &ev) < 0) {
		snprintf(why, len, "epoll: %s", strerror(errno));
		mdev_close(d);
		return -EIO;
	}
	return 0;
}

/* A failed try (mdev_attach's result r, its sentence why): remembered,
 * and logged when the reason is new. */
static void mdev_retry_failed(struct daemon *d, int r, const char *why,
			      const struct stat *node)
{
	struct daemon_mdev_retry *rt = d->mdev_retry;

	rt->refused = r == 1;
	rt->node_ino = node->st_ino;
	rt->node_rdev = node->st_rdev;
	if (!strcmp(rt->why, why))
		return;
	snprintf(rt->why, sizeof(rt->why), "%s", why);
	if (r == -ENOENT)
		daemon_log("mdev: %s: VM path off until it is loaded (vgpud "
			   "looks every %d s)",
			   why, MDEV_RETRY_MS / 1000);
	else if (r == 1)
		daemon_log("mdev: %s; VM path off until the module is loaded "
			   "again",
			   why);
	else
		daemon_log("mdev: %s; VM path off, trying again every %d s",
			   why, MDEV_RETRY_MS / 1000);
}

/*
 * The tick without the device, when a try is due: the device node the
 * module refused is not opened again until it changed (a module
 * reloaded); otherwise open it and set up as at start-up.
 */
static void mdev_retry_tick(struct daemon *d, int64_t now)
{
	struct daemon_mdev_retry *rt = d->mdev_retry;
	char why[sizeof(rt->why)];
	struct stat st;
	int r;

	if (!rt || d->stopping || now < rt->at)
		return;
	rt->at = now + MDEV_RETRY_MS;
	if (rt->refused) {
		if (!stat(MDEV_CTL_PATH, &st) && st.st_ino == rt->node_ino &&
		    st.st_rdev == rt->node_rdev)
			return;
		rt->refused = false;
	}
	memset(&st, 0, sizeof(st));
	r = mdev_attach(d, why, sizeof(why), &st);
	if (r) {
		mdev_retry_failed(d, r, why, &st);
		return;
	}
	daemon_log("mdev: VM path on: %s attached (%s)", MDEV_CTL_PATH,
		   rt->lost ? "again, after it was lost"
			    : "module loaded after vgpud");
	mdev_log_types(d->mdev);
	rt->why[0] = '\0';
	rt->lost = false;
	rt->attached_at = now;
}

int daemon_mdev_init(struct daemon *d, char *err, size_t errlen)
{
	const char *mode = d->opts.mdev ? d->opts.mdev : "auto";
	bool on = !strcmp(mode, "on");
	char why[VGPU_MESSAGE_MAX + 64];
	struct stat st;
	int r;

	if (!strcmp(mode, "off")) {
		daemon_log("mdev: VM path off (--mdev off)");
		return 0;
	}
	d->mdev_retry = calloc(1, sizeof(*d->mdev_retry));
	if (!d->mdev_retry)
		daemon_log("mdev: out of memory: /dev/vgpu-ctl is not opened "
			   "again once lost");
	memset(&st, 0, sizeof(st));
	r = mdev_attach(d, why, sizeof(why), &st);
	if (!r) {
		mdev_log_types(d->mdev);
		if (d->mdev_retry)
			d->mdev_retry->attached_at = daemon_now_ms();
		return 0;
	}
	if (on) {
		snprintf(err, errlen, "--mdev on: %s", why);
		return -1;
	}
	if (!d->mdev_retry) {
		daemon_log("mdev: %s; VM path off", why);
		return 0;
	}
	d->mdev_retry->at = daemon_now_ms() + MDEV_RETRY_MS;
	mdev_retry_failed(d, r, why, &st);
	return 0;
}

void daemon_mdev_fini(struct daemon *d)
{
	mdev_close(d);
	free(d->mdev_retry);
	d->mdev_retry = NULL;
}

int daemon_mdev_poll_fd(const struct daemon *d)
{
	return d->mdev ? d->mdev->epoll : -1;
}

/* ---- events ---------------------------------------------------------- */

/* Answer a channel event of an instance we do not know (or that failed
 * to be created): nothing of ours can serve it. */
static void chan_unknown(struct daemon *d, const struct vgpu_mdev_event *ev)
{
	struct vgpu_mdev_channel_state s = {
		.instance = ev->instance,
		.channel = ev->channel,
		.state = ev->type == VGPU_MDEV_EV_CHANNEL_OPEN
				 ? VGPU_CHAN_FAILED
				 : VGPU_CHAN_FREE,
		.error = ENODEV,
	};

	daemon_mdev_ioctl(d, VGPU_MDEV_IOC_CHANNEL_STATE, &s,
			  "CHANNEL_STATE (unknown instance)", true);
}

static void event_one(struct daemon *d, const struct vgpu_mdev_event *ev)
{
	struct mdev_inst *in = daemon_mdev_inst(d, ev->instance);

	switch (ev->type) {
	case VGPU_MDEV_EV_CREATE:
	case VGPU_MDEV_EV_EXISTS:
		mdev_inst_create(d, ev);
		return;
	case VGPU_MDEV_EV_REMOVE:
		if (in)
			mdev_inst_remove(d, in);
		return;
	}
	if (!in) {
		mdev_log_limited(&d->mdev->log,
				 "mdev: event %u for unknown instance %u",
				 ev->type, ev->instance);
		if (ev->type == VGPU_MDEV_EV_CHANNEL_OPEN ||
		    ev->type == VGPU_MDEV_EV_CHANNEL_CLOSE)
			chan_unknown(d, ev);
		return;
	}
	switch (ev->type) {
	case VGPU_MDEV_EV_OPEN:
		in->open = true;
		mdev_log_limited(&in->log,
				 "mdev: instance %u (vGPU %s): opened by a VM",
				 in->id, in->vgpu[0] ? in->vgpu : "-");
		break;
	case VGPU_MDEV_EV_CLOSE:
		in->open = false;
		mdev_log_limited(
			&in->log,
			"mdev: instance %u (vGPU %s): closed by its VM", in->id,
			in->vgpu[0] ? in->vgpu : "-");
		mdev_chan_close_all(d, in);
		mdev_inst_closed(d, in);
		break;
	case VGPU_MDEV_EV_RESET:
		mdev_log_limited(&in->log, "mdev: instance %u (vGPU %s): reset",
				 in->id, in->vgpu[0] ? in->vgpu : "-");
		mdev_chan_close_all(d, in);
		break;
	case VGPU_MDEV_EV_CHANNEL_OPEN:
		mdev_chan_open(d, in, ev->channel);
		break;
	case VGPU_MDEV_EV_CHANNEL_CLOSE:
		mdev_chan_close(d, in, ev->channel);
		break;
	default:
		mdev_log_limited(&in->log,
				 "mdev: unknown event type %u (instance %u) "
				 "ignored",
				 ev->type, ev->instance);
	}
}

/* Read what the module queued (whole records), a bounded batch a turn.
 * Returns -1 when the device is unusable. */
static int device_events(struct daemon *d)
{
	struct vgpu_mdev_event evs[32];
	unsigned int total = 0;
	ssize_t n;
	size_t i;

	while (total < MDEV_EVENTS_PER_TURN) {
		n = read(d->mdev->fd, evs, sizeof(evs));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (n <= 0) {
			daemon_log("mdev: reading %s: %s", MDEV_CTL_PATH,
				   n ? strerror(errno) : "end of file");
			return -1;
		}
		if (n % sizeof(evs[0]))
			daemon_log("mdev: a read of %zd bytes is not whole "
				   "events; the tail is dropped",
				   n);
		for (i = 0; i < (size_t)n / sizeof(evs[0]); i++)
			event_one(d, &evs[i]);
		total += n / sizeof(evs[0]);
	}
	return 0;
}

/* The device failed under us (a read error, a hang-up): let it go and
 * open it again from the tick. */
static void mdev_lost(struct daemon *d)
{
	struct daemon_mdev_retry *rt = d->mdev_retry;
	int64_t now = daemon_now_ms();

	mdev_close(d);
	if (!rt) {
		daemon_log("mdev: lost %s; VM path off", MDEV_CTL_PATH);
		return;
	}
	daemon_log("mdev: lost %s; VM path off until it opens again (vgpud "
		   "tries every %d s or, when it keeps being lost, less "
		   "often)",
		   MDEV_CTL_PATH, MDEV_RETRY_MS / 1000);
	rt->lost = true;
	rt->refused = false;
	rt->why[0] = '\0';
	/* lost again soon after attaching: wait longer each time, so that
	 * a device that hangs up at once does not fill the log */
	if (rt->attached_at && now - rt->attached_at < MDEV_RETRY_MAX_MS)
		rt->backoff_ms =
			rt->backoff_ms ? rt->backoff_ms * 2 : MDEV_RETRY_MS;
	else
		rt->backoff_ms = MDEV_RETRY_MS;
	if (rt->backoff_ms > MDEV_RETRY_MAX_MS)
		rt->backoff_ms = MDEV_RETRY_MAX_MS;
	rt->at = now + rt->backoff_ms;
}

void daemon_mdev_input(struct daemon *d)
{
	struct epoll_event ev[64];
	int i, n;

	if (!d->mdev)
		return;
	n = epoll_wait(d->mdev->epoll, ev, 64, 0);
	for (i = 0; i < n; i++) {
		if (ev[i].data.ptr) {
			mdev_chan_input(d, ev[i].data.ptr, ev[i].events);
			continue;
		}
		if (device_events(d) < 0 ||
		    (ev[i].events & (EPOLLERR | EPOLLHUP))) {
			mdev_lost(d);
			return;
		}
	}
}

/* ---- each turn ------------------------------------------------------- */

void daemon_mdev_tick(struct daemon *d, int64_t now)
{
	struct mdev_inst *in, **pp;

	if (!d->mdev)
		mdev_retry_tick(d, now);
	if (!d->mdev)
		return;
	for (in = d->mdev->insts; in; in = in->next) {
		if (in->gone)
			continue;
		if (in->pending)
			mdev_inst_answer(d, in, now);
		else if (in->created)
			mdev_inst_state(d, in);
		mdev_chan_timers(d, in, now);
	}
	for (pp = &d->mdev->insts; (in = *pp);) {
		if (!in->gone) {
			pp = &in->next;
			continue;
		}
		*pp = in->next;
		mdev_chan_drop_all(d, in);
		if (in->bar2_fd >= 0)
			close(in->bar2_fd);
		free(in);
	}
	mdev_avail_update(d);
}

int64_t daemon_mdev_next_deadline(const struct daemon *d)
{
	const struct mdev_inst *in;
	int64_t next = 0;
	uint32_t i;

	if (!d->mdev) /* the next try to open it, if any */
		return d->mdev_retry && !d->stopping ? d->mdev_retry->at : 0;
	for (in = d->mdev->insts; in; in = in->next) {
		if (in->pending && (!next || in->deadline < next))
			next = in->deadline;
		for (i = 0; i < in->channels; i++)
			if (in->chan[i].state == MDEV_CHAN_OPENING &&
			    (!next || in->chan[i].deadline < next))
				next = in->chan[i].deadline;
	}
	return next;
}

/* ---- vGPUs and the admin socket -------------------------------------- */

void daemon_mdev_vgpu_freed(struct daemon *d, struct daemon_vgpu *v)
{
	struct mdev_inst *in;

	for (in = d->mdev ? d->mdev->insts : NULL; in; in = in->next) {
		if (in->gone || strncmp(in->vgpu, v->cfg.name, VGPU_NAME_MAX))
			continue;
		in->vgpu[0] = '\0';
		if (in->pending)
			mdev_inst_fail(d, in, -EIO,
				       "vGPU %s could not start: %s",
				       v->cfg.name,
				       v->start_error[0] ? v->start_error
							 : "it was destroyed");
	}
}

int daemon_mdev_bind_check(struct daemon *d, uint8_t uuid[16], char *err,
			   size_t errlen)
{
	struct daemon_vgpu *v;
	char u[MDEV_UUID_TEXT];

	if (!d->mdev) {
		snprintf(err, errlen,
			 "vgpud does not serve %s (no vgpu_mdev.ko, or "
			 "--mdev off): a vGPU cannot be bound to an mdev",
			 MDEV_CTL_PATH);
		return VGPU_ADMIN_BAD_REQUEST;
	}
	if (d->mdev->custom < 0) {
		snprintf(err, errlen,
			 "vgpu_mdev.ko has no custom type to create the "
			 "instance of a bound vGPU");
		return VGPU_ADMIN_BAD_REQUEST;
	}
	if (mdev_uuid_is_zero(uuid) && mdev_uuid_random(uuid)) {
		snprintf(err, errlen, "cannot make up a UUID: %s",
			 strerror(errno));
		return VGPU_ADMIN_INTERNAL;
	}
	for (v = d->vgpus; v; v = v->next) {
		if (v->mdev && !memcmp(v->mdev_uuid, uuid, 16)) {
			mdev_uuid_format(uuid, u);
			snprintf(err, errlen, "mdev UUID %s is vGPU %s already",
				 u, v->cfg.name);
			return VGPU_ADMIN_EXISTS;
		}
	}
	return 0;
}

void daemon_mdev_fill(const struct daemon *d, const struct daemon_vgpu *v,
		      struct vgpu_admin_mdev *a)
{
	const struct daemon_mdev *m = d->mdev;
	const struct mdev_inst *in = daemon_mdev_inst_of(d, v);
	int t = -1;

	memset(a, 0, sizeof(*a));
	memcpy(a->name, v->cfg.name, sizeof(a->name));
	memcpy(a->uuid, v->mdev_uuid, sizeof(a->uuid));
	if (v->mdev_owned)
		a->flags |= VGPU_ADMIN_MDEV_OWNED;
	if (in && in->created) {
		a->flags |= VGPU_ADMIN_MDEV_CREATED;
		a->instance = in->id;
		if (in->open)
			a->flags |= VGPU_ADMIN_MDEV_OPEN;
		if (in->dev_state == VGPU_DEVICE_READY)
			a->flags |= VGPU_ADMIN_MDEV_READY;
	}
	if (in)
		t = (int)in->type_index;
	else if (m && !v->mdev_owned)
		t = m->custom;
	if (m && t >= 0 && (uint32_t)t < m->ntypes)
		snprintf(a->type, sizeof(a->type), "%s", m->types[t].name);
}
