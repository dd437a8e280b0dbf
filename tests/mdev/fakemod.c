/* SPDX-License-Identifier: MIT */
/*
 * The test's vgpu_mdev.ko (fakemod.h): answers vgpud's ioctls with the
 * module's checks and state rules, queues its events, and acts on writes
 * to the fake sysfs create/remove FIFOs.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "fakectl.h"
#include "fakemod.h"
#include "mdev_uuid.h"

#define GIB (1ull << 30)

static const struct vgpu_mdev_type_info catalogue[FM_TYPES] = {
	{0, 0, 0, 0, 8, "custom"},
	{1, 8, 4 * GIB, VGPU_MDEV_SHARED, 4, "8sm-4g"},
	{2, 16, 8 * GIB, VGPU_MDEV_SHARED, 4, "16sm-8g"},
	{3, 32, 16 * GIB, VGPU_MDEV_SHARED, 8, "32sm-16g"},
	{4, 64, 32 * GIB, VGPU_MDEV_SHARED, 8, "64sm-32g"},
	{5, 16, 8 * GIB, VGPU_MDEV_EXCLUSIVE, 4, "16sm-8g-excl"},
};

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

int fm_type_index(const struct fm *m, const char *name)
{
	int i;

	for (i = 0; i < FM_TYPES; i++)
		if (!strcmp(m->types[i].name, name))
			return i;
	return -1;
}

static void mkdirs(const char *path)
{
	char buf[512], *p;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		mkdir(buf, 0755);
		*p = '/';
	}
	mkdir(buf, 0755);
}

int fm_init(struct fm *m, const char *sock, const char *sysfs)
{
	char path[600];
	int i;

	memset(m, 0, sizeof(*m));
	m->listen = m->ev = m->io = -1;
	m->next_id = 1;
	memcpy(m->types, catalogue, sizeof(catalogue));
	for (i = 0; i < FM_TYPES; i++)
		snprintf(m->desc[i], sizeof(m->desc[i]),
			 "vgpud is not running");
	for (i = 0; i < FM_INSTS; i++)
		m->inst[i].bar2 = m->inst[i].bar2_first = -1;
	snprintf(m->sysfs, sizeof(m->sysfs), "%s", sysfs);
	for (i = 0; i < FM_TYPES; i++) {
		snprintf(path, sizeof(path),
			 "%s/class/mdev_bus/vgpu/mdev_supported_types/vgpu-%s",
			 sysfs, m->types[i].name);
		mkdirs(path);
		strcat(path, "/create");
		if (mkfifo(path, 0600) < 0 && errno != EEXIST)
			return -1;
		m->create_fifo[i] = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (m->create_fifo[i] < 0)
			return -1;
	}
	snprintf(path, sizeof(path), "%s/bus/mdev/devices", sysfs);
	mkdirs(path);
	if (strlen(sock) >= sizeof(m->sock))
		return -1;
	strcpy(m->sock, sock);
	return fm_listen(m);
}

int fm_listen(struct fm *m)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	if (strlen(m->sock) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, m->sock);
	unlink(m->sock);
	m->listen = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (m->listen < 0 ||
	    bind(m->listen, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(m->listen, 4))
		return -1;
	return 0;
}

void fm_unlisten(struct fm *m)
{
	close_fd(&m->listen);
	unlink(m->sock);
}

int fm_accept(struct fm *m, int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	int got = 0, fd;
	char role;

	while (got < 2 && now_ms() < end) {
		struct pollfd p = {.fd = m->listen, .events = POLLIN};

		if (poll(&p, 1, 100) <= 0)
			continue;
		fd = accept4(m->listen, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (recv(fd, &role, 1, 0) != 1) {
			close(fd);
			continue;
		}
		if (role == FAKECTL_EVENTS)
			m->ev = fd;
		else
			m->io = fd;
		got++;
	}
	return got == 2 ? 0 : -1;
}

/* ---- instances and events -------------------------------------------- */

static struct fm_inst *inst_by_id(struct fm *m, uint32_t id)
{
	int i;

	for (i = 0; i < FM_INSTS; i++)
		if (m->inst[i].used && m->inst[i].id == id)
			return &m->inst[i];
	return NULL;
}

struct fm_inst *fm_find_uuid(struct fm *m, const uint8_t uuid[16])
{
	int i;

	for (i = 0; i < FM_INSTS; i++)
		if (m->inst[i].used && !memcmp(m->inst[i].uuid, uuid, 16))
			return &m->inst[i];
	return NULL;
}

void fm_event(struct fm *m, uint32_t type, struct fm_inst *in, uint32_t ch,
	      uint32_t instance_override)
{
	struct vgpu_mdev_event ev = {0};

	if (m->ev < 0)
		return;
	ev.type = type;
	ev.instance = instance_override ? instance_override : in->id;
	ev.type_index = in ? in->type : 0;
	ev.channel = ch;
	if (in)
		memcpy(ev.uuid, in->uuid, 16);
	ev.is_open = type == VGPU_MDEV_EV_EXISTS && in && in->open;
	send(m->ev, &ev, sizeof(ev), MSG_NOSIGNAL);
}

static void chan_drop(struct fm_chan *c)
{
	close_fd(&c->doorbell);
	close_fd(&c->complete);
}

static void chans_fail(struct fm_inst *in, int error)
{
	int i;

	for (i = 0; i < (int)VGPU_PCI_MAX_CHANNELS; i++) {
		chan_drop(&in->chan[i]);
		if (in->chan[i].state == VGPU_CHAN_FREE)
			continue;
		in->chan[i].state = VGPU_CHAN_FAILED;
		in->chan[i].error = error;
	}
}

static void dev_path(const struct fm *m, const struct fm_inst *in, char *buf,
		     size_t len, const char *leaf)
{
	char u[MDEV_UUID_TEXT];

	mdev_uuid_format(in->uuid, u);
	snprintf(buf, len, "%s/bus/mdev/devices/%s%s", m->sysfs, u, leaf);
}

static void inst_drop(struct fm *m, struct fm_inst *in)
{
	char path[600];
	int i;

	for (i = 0; i < (int)VGPU_PCI_MAX_CHANNELS; i++)
		chan_drop(&in->chan[i]);
	close_fd(&in->bar2);
	close_fd(&in->bar2_first);
	dev_path(m, in, path, sizeof(path), "/remove");
	unlink(path);
	dev_path(m, in, path, sizeof(path), "");
	rmdir(path);
	in->used = false;
}

struct fm_inst *fm_create(struct fm *m, uint32_t type, const uint8_t uuid[16])
{
	struct fm_inst *in = NULL;
	int i;

	for (i = 0; i < FM_INSTS && !in; i++)
		if (!m->inst[i].used)
			in = &m->inst[i];
	if (!in)
		return NULL;
	memset(in, 0, sizeof(*in));
	in->used = true;
	in->id = m->next_id++;
	in->type = type;
	memcpy(in->uuid, uuid, 16);
	in->pending = true;
	in->bar2 = in->bar2_first = -1;
	for (i = 0; i < (int)VGPU_PCI_MAX_CHANNELS; i++)
		in->chan[i].doorbell = in->chan[i].complete = -1;
	fm_event(m, VGPU_MDEV_EV_CREATE, in, 0, 0);
	return in;
}

void fm_remove(struct fm *m, struct fm_inst *in)
{
	fm_event(m, VGPU_MDEV_EV_REMOVE, in, 0, 0);
	inst_drop(m, in);
}

void fm_guest_open(struct fm *m, struct fm_inst *in, uint32_t ch)
{
	struct fm_chan *c = &in->chan[ch];

	if (c->state != VGPU_CHAN_FREE || in->dev_state != VGPU_DEVICE_READY) {
		c->error = in->dev_state != VGPU_DEVICE_READY ? EAGAIN : EINVAL;
		return;
	}
	c->state = VGPU_CHAN_OPENING;
	fm_event(m, VGPU_MDEV_EV_CHANNEL_OPEN, in, ch, 0);
}

void fm_guest_close(struct fm *m, struct fm_inst *in, uint32_t ch)
{
	struct fm_chan *c = &in->chan[ch];

	if (c->state != VGPU_CHAN_OPENING && c->state != VGPU_CHAN_OPEN &&
	    c->state != VGPU_CHAN_FAILED)
		return;
	c->state = VGPU_CHAN_CLOSING;
	fm_event(m, VGPU_MDEV_EV_CHANNEL_CLOSE, in, ch, 0);
}

bool fm_vfio_open(struct fm *m, struct fm_inst *in)
{
	if (in->bar2 < 0)
		return false;
	in->open = true;
	fm_event(m, VGPU_MDEV_EV_OPEN, in, 0, 0);
	return true;
}

void fm_vfio_close(struct fm *m, struct fm_inst *in)
{
	int i;

	in->open = false;
	close_fd(&in->bar2); /* the next user gets vgpud's next memfd */
	for (i = 0; i < (int)VGPU_PCI_MAX_CHANNELS; i++)
		if (in->chan[i].state != VGPU_CHAN_FREE)
			in->chan[i].state = VGPU_CHAN_CLOSING;
	fm_event(m, VGPU_MDEV_EV_CLOSE, in, 0, 0);
}

void fm_daemon_gone(struct fm *m)
{
	int i;

	close_fd(&m->ev);
	close_fd(&m->io);
	m->hello = false;
	for (i = 0; i < FM_TYPES; i++) {
		m->avail[i] = 0;
		snprintf(m->desc[i], sizeof(m->desc[i]),
			 "vgpud is not running");
	}
	for (i = 0; i < FM_INSTS; i++) {
		struct fm_inst *in = &m->inst[i];

		if (!in->used)
			continue;
		if (in->pending) {
			inst_drop(m, in);
			continue;
		}
		in->dev_state = VGPU_DEVICE_ERROR;
		in->dev_error = ENOTCONN;
		chans_fail(in, ENOTCONN);
	}
}

/* ---- ioctls ----------------------------------------------------------- */

static int bar2_ok(const struct fm_inst *in, const struct fm *m, int fd)
{
	const int need_seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL;
	uint64_t need =
		(uint64_t)m->types[in->type].channels * VGPU_PCI_CHANNEL_STRIDE;
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS), fl = fcntl(fd, F_GETFL);

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       (uint64_t)st.st_size == need && seals >= 0 &&
	       (seals & need_seals) == need_seals &&
	       !(seals & (F_SEAL_WRITE | F_SEAL_FUTURE_WRITE)) &&
	       (fl & O_ACCMODE) == O_RDWR;
}

static bool same_file(int a, int b)
{
	struct stat x, y;

	return a >= 0 && b >= 0 && !fstat(a, &x) && !fstat(b, &y) &&
	       x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The module's rule: while a VFIO user holds the device with a memfd,
 * no other file; else fd becomes the instance's (taken from fds). */
static int bar2_install(struct fm_inst *in, int *fd)
{
	if (in->open && in->bar2 >= 0 && !same_file(in->bar2, *fd))
		return -EBUSY;
	if (in->bar2_first < 0)
		in->bar2_first = fcntl(*fd, F_DUPFD_CLOEXEC, 0);
	close_fd(&in->bar2);
	in->bar2 = *fd;
	*fd = -1;
	return 0;
}

static int ioc_set_bar2(struct fm *m, struct vgpu_mdev_bar2 *b, int *fds,
			int nfds)
{
	struct fm_inst *in = inst_by_id(m, b->instance);
	int r;

	if (!in)
		return -ENOENT;
	if (in->pending || !in->composed || nfds != 1 ||
	    !bar2_ok(in, m, fds[0]))
		return -EINVAL;
	r = bar2_install(in, &fds[0]);
	if (!r)
		in->bar2_sets++;
	return r;
}

/* GET_BAR2: a descriptor of the memfd goes back in *out_fd. */
static int ioc_get_bar2(struct fm *m, struct vgpu_mdev_bar2 *b, int *out_fd)
{
	struct fm_inst *in = inst_by_id(m, b->instance);

	if (!in)
		return -ENOENT;
	if (in->bar2 < 0)
		return -ENODATA;
	*out_fd = in->bar2;
	return 0;
}

static int ioc_create_done(struct fm *m, struct vgpu_mdev_create_done *d,
			   int *fds, int nfds)
{
	struct fm_inst *in = inst_by_id(m, d->instance);
	uint32_t iso;
	char path[600];

	if (!in)
		return -ENOENT;
	if (d->status > 0 || !memchr(d->message, 0, sizeof(d->message)))
		return -EINVAL;
	if (d->status) {
		in->status = d->status;
		snprintf(in->message, sizeof(in->message), "%s", d->message);
		if (in->pending) {
			in->pending = false;
			inst_drop(m, in); /* the sysfs create fails */
		} else {
			in->dev_state = VGPU_DEVICE_ERROR;
			in->dev_error = -d->status;
			chans_fail(in, -d->status);
		}
		return 0;
	}
	iso = m->types[in->type].isolation;
	if (nfds != 1 || !bar2_ok(in, m, fds[0]) ||
	    !memchr(d->gpu_name, 0, sizeof(d->gpu_name)) ||
	    !memchr(d->vgpu_name, 0, sizeof(d->vgpu_name)) ||
	    (d->isolation != VGPU_MDEV_SHARED &&
	     d->isolation != VGPU_MDEV_EXCLUSIVE) ||
	    (iso && d->isolation != iso))
		return -EINVAL;
	if (bar2_install(in, &fds[0]))
		return -EBUSY;
	in->comp = *d;
	in->composed = true;
	in->composes++;
	in->dev_state = VGPU_DEVICE_READY;
	in->dev_error = 0;
	in->status = 0;
	if (in->pending) {
		in->pending = false;
		dev_path(m, in, path, sizeof(path), "");
		mkdir(path, 0755);
		strcat(path, "/remove");
		mkfifo(path, 0600);
	}
	return 0;
}

static int ioc_channel_setup(struct fm *m, struct vgpu_mdev_channel_setup *s,
			     int *fds, int nfds)
{
	struct fm_inst *in = inst_by_id(m, s->instance);
	struct fm_chan *c;

	if (!in)
		return -ENOENT;
	if (s->channel >= m->types[in->type].channels || nfds != 2)
		return -EINVAL;
	c = &in->chan[s->channel];
	if (c->state != VGPU_CHAN_OPENING)
		return -EINVAL;
	chan_drop(c);
	c->doorbell = fds[0];
	c->complete = fds[1];
	fds[0] = fds[1] = -1;
	return 0;
}

static int ioc_channel_state(struct fm *m, struct vgpu_mdev_channel_state *s)
{
	struct fm_inst *in = inst_by_id(m, s->instance);
	struct fm_chan *c;

	if (!in)
		return -ENOENT;
	if (s->channel >= m->types[in->type].channels)
		goto einval;
	c = &in->chan[s->channel];
	switch (s->state) {
	case VGPU_CHAN_OPEN:
		if (c->state != VGPU_CHAN_OPENING || c->doorbell < 0)
			goto einval;
		break;
	case VGPU_CHAN_FAILED:
		if (c->state != VGPU_CHAN_OPENING && c->state != VGPU_CHAN_OPEN)
			goto einval;
		c->error = s->error;
		chan_drop(c);
		break;
	case VGPU_CHAN_FREE:
		chan_drop(c);
		break;
	default:
		goto einval;
	}
	c->state = s->state;
	return 0;
einval:
	m->chan_state_einval++;
	return -EINVAL;
}

static int ioc_device_state(struct fm *m, struct vgpu_mdev_device_state *s)
{
	struct fm_inst *in = inst_by_id(m, s->instance);

	if (!in)
		return -ENOENT;
	if (s->state > VGPU_DEVICE_ERROR || s->reserved || in->pending ||
	    (s->state == VGPU_DEVICE_READY && !in->composed))
		return -EINVAL;
	in->dev_state = s->state;
	in->dev_error = s->error;
	if (s->state == VGPU_DEVICE_ERROR)
		chans_fail(in, s->error ? s->error : EIO);
	return 0;
}

static int ioc_hello(struct fm *m, struct vgpu_mdev_hello *h)
{
	uint32_t v = h->version;
	int i;

	h->version = VGPU_MDEV_CTL_VERSION;
	h->ntypes = FM_TYPES;
	h->max_channels = VGPU_PCI_MAX_CHANNELS;
	if (v != VGPU_MDEV_CTL_VERSION || h->reserved)
		return -EPROTO;
	m->hello = true;
	for (i = 0; i < FM_INSTS; i++)
		if (m->inst[i].used && !m->inst[i].pending)
			fm_event(m, VGPU_MDEV_EV_EXISTS, &m->inst[i], 0, 0);
	return 0;
}

static int ioc(struct fm *m, uint32_t req, void *arg, int *fds, int nfds,
	       int *out_fd)
{
	if (req == VGPU_MDEV_IOC_HELLO)
		return ioc_hello(m, arg);
	if (!m->hello)
		return -EPROTO;
	switch (req) {
	case VGPU_MDEV_IOC_GET_TYPE: {
		struct vgpu_mdev_type_info *t = arg;

		if (t->index >= FM_TYPES)
			return -EINVAL;
		*t = m->types[t->index];
		m->get_types++;
		return 0;
	}
	case VGPU_MDEV_IOC_SET_AVAILABLE: {
		struct vgpu_mdev_available *a = arg;

		if (a->index >= FM_TYPES ||
		    !memchr(a->description, 0, sizeof(a->description)))
			return -EINVAL;
		m->avail[a->index] = a->available;
		memcpy(m->desc[a->index], a->description, sizeof(m->desc[0]));
		m->avail_sets++;
		return 0;
	}
	case VGPU_MDEV_IOC_CREATE_DONE:
		return ioc_create_done(m, arg, fds, nfds);
	case VGPU_MDEV_IOC_DEVICE_STATE:
		return ioc_device_state(m, arg);
	case VGPU_MDEV_IOC_CHANNEL_SETUP:
		return ioc_channel_setup(m, arg, fds, nfds);
	case VGPU_MDEV_IOC_CHANNEL_STATE:
		return ioc_channel_state(m, arg);
	case VGPU_MDEV_IOC_SET_BAR2:
		return ioc_set_bar2(m, arg, fds, nfds);
	case VGPU_MDEV_IOC_GET_BAR2:
		return ioc_get_bar2(m, arg, out_fd);
	}
	return -ENOTTY;
}

/* One ioctl from vgpud; -1 when it is gone. */
static int serve_ioctl(struct fm *m)
{
	char buf[sizeof(struct fakectl_req) + FAKECTL_ARG_MAX];
	char cbuf[CMSG_SPACE(sizeof(int) * FAKECTL_MAX_FDS)];
	struct iovec iov = {.iov_base = buf, .iov_len = sizeof(buf)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf)};
	struct fakectl_req q;
	struct fakectl_rep *r;
	char out[sizeof(*r) + FAKECTL_ARG_MAX];
	char arg[FAKECTL_ARG_MAX];
	struct cmsghdr *cm;
	int fds[FAKECTL_MAX_FDS] = {-1, -1}, nfds = 0, i, ret, out_fd = -1;
	struct iovec oiov;
	struct msghdr omsg = {.msg_iov = &oiov, .msg_iovlen = 1};
	ssize_t n;

	n = recvmsg(m->io, &msg, MSG_CMSG_CLOEXEC);
	if (n <= 0)
		return -1;
	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		int k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (i = 0; i < k && nfds < FAKECTL_MAX_FDS; i++)
			memcpy(&fds[nfds++], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
	}
	memcpy(&q, buf, sizeof(q));
	if ((size_t)n != sizeof(q) + q.size || q.size > FAKECTL_ARG_MAX)
		return -1;
	memset(arg, 0, sizeof(arg));
	memcpy(arg, buf + sizeof(q), q.size);
	ret = ioc(m, q.req, arg, fds, nfds, &out_fd);
	for (i = 0; i < nfds; i++)
		close_fd(&fds[i]);
	r = (struct fakectl_rep *)out;
	r->ret = ret;
	r->size = q.size;
	memcpy(r + 1, arg, q.size);
	oiov.iov_base = out;
	oiov.iov_len = sizeof(*r) + q.size;
	if (out_fd >= 0) { /* a descriptor for vgpud (GET_BAR2) */
		memset(cbuf, 0, sizeof(cbuf));
		omsg.msg_control = cbuf;
		omsg.msg_controllen = CMSG_SPACE(sizeof(int));
		cm = CMSG_FIRSTHDR(&omsg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &out_fd, sizeof(int));
	}
	sendmsg(m->io, &omsg, MSG_NOSIGNAL);
	return 0;
}

/* A write to a create FIFO: an instance of that type with that UUID. */
static void sysfs_create(struct fm *m, int type)
{
	char text[64];
	uint8_t uuid[16];
	ssize_t n = read(m->create_fifo[type], text, sizeof(text) - 1);

	if (n <= 0)
		return;
	text[n] = 0;
	if (n && text[n - 1] == '\n')
		text[n - 1] = 0;
	if (mdev_uuid_parse(text, uuid) || fm_find_uuid(m, uuid))
		return;
	fm_create(m, type, uuid);
}

/* The remove FIFOs of composed instances: a write removes it. */
static int remove_fds(struct fm *m, struct pollfd *p, struct fm_inst **who,
		      int max)
{
	char path[600];
	int i, n = 0, fd;

	for (i = 0; i < FM_INSTS && n < max; i++) {
		struct fm_inst *in = &m->inst[i];

		if (!in->used || !in->composed)
			continue;
		dev_path(m, in, path, sizeof(path), "/remove");
		fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0)
			continue;
		p[n] = (struct pollfd){.fd = fd, .events = POLLIN};
		who[n++] = in;
	}
	return n;
}

bool fm_wait(struct fm *m, bool (*pred)(struct fm *, void *), void *arg,
	     int timeout_ms)
{
	int64_t end = now_ms() + timeout_ms;
	struct pollfd p[2 + FM_TYPES + FM_INSTS];
	struct fm_inst *who[FM_INSTS];
	int i, n, nr;
	char b[16];

	for (;;) {
		if (pred && pred(m, arg))
			return true;
		if (now_ms() >= end)
			return false;
		n = 0;
		p[n++] = (struct pollfd){.fd = m->io, .events = POLLIN};
		for (i = 0; i < FM_TYPES; i++)
			p[n++] = (struct pollfd){.fd = m->create_fifo[i],
						 .events = POLLIN};
		nr = remove_fds(m, p + n, who, FM_INSTS);
		poll(p, n + nr, 20);
		if (m->io >= 0 && p[0].revents && serve_ioctl(m) < 0)
			fm_daemon_gone(m);
		for (i = 0; i < FM_TYPES; i++)
			if (p[1 + i].revents & POLLIN)
				sysfs_create(m, i);
		for (i = 0; i < nr; i++) {
			if ((p[n + i].revents & POLLIN) &&
			    read(p[n + i].fd, b, sizeof(b)) > 0 && who[i]->used)
				fm_remove(m, who[i]);
			close(p[n + i].fd);
		}
	}
}
