/* SPDX-License-Identifier: MIT */
/*
 * vfio_user ctl TYPE4 TYPE8: the module's side of /dev/vgpu-ctl with this
 * program in vgpud's place (vgpud must not run), so that it can answer
 * wrongly, late or not at all: CREATE_DONE checks (memfd size and seals,
 * kernel-internal status codes), the BAR2 memfd per VFIO session
 * (SET_BAR2, GET_BAR2, the open that waits for a fresh one, EBUSY for
 * another memfd while open, the past user's mapping), mremap of BAR2,
 * the event queue's share per instance, a removal's ERROR that a
 * READY does not undo, HELLO's version range, and COMPOSITION (hostile
 * input refused with nothing changed; a good one changes BAR0 at once and
 * interrupts the VFIO user; CHANGE_COUNT never goes back). TYPE4 and
 * TYPE8 are catalogue types (sysfs names) of 4 and 8 channels.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vfio_dev.h"
#include "vgpu/mdev_ctl.h"

#define PAGE	 4096
#define OBJECTS	 "/sys/kernel/debug/vgpu_mdev/objects"
#define MDEV_BUS "/sys/bus/mdev/devices"

struct inst {
	char uuid[40];
	uint32_t id;
	uint64_t bar2_size;
	int bar2; /* our memfd, or -1 */
};

static int ctl = -1;

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void new_uuid(char out[40])
{
	FILE *f = fopen("/proc/sys/kernel/random/uuid", "r");

	out[0] = '\0';
	if (f && fgets(out, 40, f))
		out[strcspn(out, "\n")] = '\0';
	if (f)
		fclose(f);
}

/* ioctl on the control device: 0, or -errno. */
static int cioctl(unsigned long req, void *arg)
{
	return ioctl(ctl, req, arg) < 0 ? -errno : 0;
}

/* One event within timeout_ms: 1, 0 on timeout, -1 on error. */
static int next_event(struct vgpu_mdev_event *ev, int timeout_ms)
{
	struct pollfd p = {.fd = ctl, .events = POLLIN};

	if (poll(&p, 1, timeout_ms) <= 0)
		return 0;
	return read(ctl, ev, sizeof(*ev)) == sizeof(*ev) ? 1 : -1;
}

/* Waits for an event of type for instance id (others are skipped). */
static int wait_event(uint32_t type, uint32_t id, struct vgpu_mdev_event *ev)
{
	long end = now_ms() + 10000;
	struct vgpu_mdev_event e;

	while (now_ms() < end) {
		if (next_event(&e, 100) <= 0)
			continue;
		if (e.type == type && (!id || e.instance == id)) {
			if (ev)
				*ev = e;
			return 0;
		}
	}
	diag("no event %u of instance %u in 10 s", type, id);
	return -1;
}

/* Reads every queued event; returns how many, and whether the last one of
 * instance id had type last_type (when last is not NULL). */
static int drain(uint32_t id, uint32_t *last)
{
	struct vgpu_mdev_event e;
	int n = 0;

	while (next_event(&e, 50) > 0) {
		n++;
		if (last && e.instance == id)
			*last = e.type;
	}
	return n;
}

/* A BAR2 memfd of size bytes with these seals. */
static int memfd_bar2(uint64_t size, int seals)
{
	int fd = memfd_create("vfio-ctl-bar2", MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0 || ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, seals) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static bool same_file(int a, int b)
{
	struct stat x, y;

	return a >= 0 && b >= 0 && !fstat(a, &x) && !fstat(b, &y) &&
	       x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The number after "events" in the module's debugfs counters. */
static int events_unread(void)
{
	char line[64];
	FILE *f = fopen(OBJECTS, "r");
	int n = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "events %d", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/*
 * A sysfs write in a child (it blocks until the module is answered). The
 * child drops the descriptors it inherited: a VFIO device fd of ours in
 * it would keep the device in use, and a removal would wait for itself.
 */
static pid_t write_child(const char *path, const char *text)
{
	pid_t pid = fork();
	int fd;

	if (pid)
		return pid;
	if (close_range(3, ~0u, 0) < 0)
		for (fd = 3; fd < 1024; fd++)
			close(fd);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		_exit(errno);
	_exit(write(fd, text, strlen(text)) < 0 ? errno : 0);
}

/* The child's result: 0, its errno, or -1 when it did not end in 10 s. */
static int child_result(pid_t pid)
{
	long end = now_ms() + 10000;
	int st;

	while (now_ms() < end) {
		if (waitpid(pid, &st, WNOHANG) == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
		usleep(20000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

static void create_path(const char *type, char *path, size_t len)
{
	snprintf(path, len,
		 "/sys/class/mdev_bus/vgpu/mdev_supported_types/%s/create",
		 type);
}

static int create_done(struct inst *in, int status, int fd)
{
	struct vgpu_mdev_create_done cd;

	memset(&cd, 0, sizeof(cd));
	cd.instance = in->id;
	cd.status = status;
	snprintf(cd.message, sizeof(cd.message), "vfio_ctl says %d", status);
	cd.version = (uint32_t)VGPU_PROTO_MAJOR << 16 | VGPU_PROTO_MINOR;
	cd.sm_count = 8;
	cd.memory = 1ull << 30;
	cd.isolation = VGPU_MDEV_SHARED;
	cd.bar2_fd = fd;
	snprintf(cd.gpu_name, sizeof(cd.gpu_name), "no GPU (vfio_ctl)");
	snprintf(cd.vgpu_name, sizeof(cd.vgpu_name), "vfio-ctl");
	return cioctl(VGPU_MDEV_IOC_CREATE_DONE, &cd);
}

static int set_bar2(struct inst *in, int fd)
{
	struct vgpu_mdev_bar2 b = {.instance = in->id, .fd = fd};

	return cioctl(VGPU_MDEV_IOC_SET_BAR2, &b);
}

/* Creates an instance of type, answered with a good memfd: 0 or -1. */
static int make_inst(struct inst *in, const char *type, uint32_t channels)
{
	struct vgpu_mdev_event ev;
	char path[256];
	pid_t pid;

	new_uuid(in->uuid);
	in->bar2_size = (uint64_t)channels * VGPU_PCI_CHANNEL_STRIDE;
	in->bar2 = memfd_bar2(in->bar2_size, ALL_SEALS);
	create_path(type, path, sizeof(path));
	pid = write_child(path, in->uuid);
	if (wait_event(VGPU_MDEV_EV_CREATE, 0, &ev) < 0) {
		child_result(pid);
		return -1;
	}
	in->id = ev.instance;
	if (create_done(in, 0, in->bar2) < 0) {
		child_result(pid);
		return -1;
	}
	return child_result(pid) == 0 ? 0 : -1;
}

/* A COMPOSITION for in: 16 SMs, groups 1-2, GPU 1, 2 GiB, shared. */
static void comp_init(struct vgpu_mdev_composition *c, const struct inst *in,
		      uint32_t count)
{
	memset(c, 0, sizeof(*c));
	c->instance = in->id;
	c->change_count = count;
	c->sm_count = 16;
	c->gpu_index = 1;
	c->memory = 2ull << 30;
	c->slice_id = 1u << 16 | 2;
	c->isolation = VGPU_MDEV_SHARED;
	snprintf(c->gpu_name, sizeof(c->gpu_name), "vfio_ctl's other GPU");
}

/* COMPOSITION before the instance's CREATE_DONE: EINVAL. */
static void test_composition_pending(struct inst *x)
{
	struct vgpu_mdev_composition c;

	comp_init(&c, x, 1);
	tap(cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) == -EINVAL,
	    "COMPOSITION while the create waits for CREATE_DONE: EINVAL");
}

/* CREATE_DONE: the memfd's size and seals, and its status's range. */
static void test_create_done(const char *type4, struct inst *y,
			     const char *type8)
{
	struct vgpu_mdev_event ev;
	struct inst x;
	char path[256];
	int fd, r, rc;
	pid_t pid;

	new_uuid(x.uuid);
	create_path(type4, path, sizeof(path));
	pid = write_child(path, x.uuid);
	if (wait_event(VGPU_MDEV_EV_CREATE, 0, &ev) == 0) {
		x.id = ev.instance;
		test_composition_pending(&x);
		r = create_done(&x, -513 /* ERESTARTNOINTR */, -1);
		rc = child_result(pid);
		tap(r == 0 && rc == EIO,
		    "a create answered with status -513 (ERESTARTNOINTR, "
		    "kernel-internal) fails with EIO (got %d: %s)",
		    rc, rc > 0 ? strerror(rc) : "no exit");
	} else {
		child_result(pid);
		tap(0, "CREATE event for a sysfs create");
	}

	new_uuid(y->uuid);
	y->bar2_size = 8ull * VGPU_PCI_CHANNEL_STRIDE;
	create_path(type8, path, sizeof(path));
	pid = write_child(path, y->uuid);
	if (wait_event(VGPU_MDEV_EV_CREATE, 0, &ev) < 0) {
		child_result(pid);
		tap(0, "CREATE event for a sysfs create");
		return;
	}
	y->id = ev.instance;
	fd = memfd_bar2(y->bar2_size + PAGE, ALL_SEALS);
	r = create_done(y, 0, fd);
	close(fd);
	tap(r == -EINVAL, "CREATE_DONE with a memfd larger than BAR2: EINVAL");
	fd = memfd_bar2(y->bar2_size, F_SEAL_SHRINK | F_SEAL_GROW);
	r = create_done(y, 0, fd);
	close(fd);
	tap(r == -EINVAL, "CREATE_DONE with a memfd without F_SEAL_SEAL: "
			  "EINVAL");
	fd = memfd_bar2(y->bar2_size, F_SEAL_SHRINK | F_SEAL_SEAL);
	r = create_done(y, 0, fd);
	close(fd);
	tap(r == -EINVAL, "CREATE_DONE with a memfd without F_SEAL_GROW: "
			  "EINVAL");
	y->bar2 = memfd_bar2(y->bar2_size, ALL_SEALS);
	r = create_done(y, 0, y->bar2);
	rc = child_result(pid);
	tap(r == 0 && rc == 0,
	    "CREATE_DONE with an exact, sealed memfd creates it");
}

/* GET_BAR2, and another memfd while a VFIO user holds the device. */
static void test_bar2_while_open(struct inst *y, struct vfio_dev *d)
{
	struct vgpu_mdev_bar2 b = {.instance = y->id, .fd = -1};
	int r, other, flags;

	r = cioctl(VGPU_MDEV_IOC_GET_BAR2, &b);
	flags = r ? 0 : fcntl(b.fd, F_GETFD);
	tap(r == 0 && same_file(b.fd, y->bar2) && (flags & FD_CLOEXEC),
	    "GET_BAR2: a new close-on-exec descriptor of the memfd it holds");
	if (!r)
		close(b.fd);
	b.instance = 999999;
	tap(cioctl(VGPU_MDEV_IOC_GET_BAR2, &b) == -ENOENT,
	    "GET_BAR2 of an unknown instance: ENOENT");

	if (!tap(vfio_dev_open(d, y->uuid) == 0 &&
			 wait_event(VGPU_MDEV_EV_OPEN, y->id, NULL) == 0,
		 "a VFIO user opens it (OPEN)"))
		return;
	other = memfd_bar2(y->bar2_size, ALL_SEALS);
	tap(set_bar2(y, other) == -EBUSY,
	    "SET_BAR2 of another memfd while open: EBUSY");
	tap(create_done(y, 0, other) == -EBUSY,
	    "CREATE_DONE with another memfd while open: EBUSY");
	close(other);
	tap(set_bar2(y, y->bar2) == 0, "SET_BAR2 of the same memfd: 0");
}

/* BAR0's composition registers and whether the device interrupt came. */
struct comp_seen {
	uint32_t sms, slice, gpu, change, status;
	uint64_t memory;
	int irq;
};

static void comp_look(struct vfio_dev *d, struct comp_seen *c, int wait_ms)
{
	c->irq = wait_eventfd(d->msi_fd, wait_ms) == 1;
	c->status = reg_read(d, VGPU_REG_IRQ_STATUS);
	reg_write(d, VGPU_REG_IRQ_STATUS, c->status);
	c->sms = reg_read(d, VGPU_REG_SM_COUNT);
	c->slice = reg_read(d, VGPU_REG_SLICE_ID);
	c->gpu = reg_read(d, VGPU_REG_GPU_INDEX);
	c->memory = reg_read(d, VGPU_REG_MEMORY_LO) |
		    (uint64_t)reg_read(d, VGPU_REG_MEMORY_HI) << 32;
	c->change = reg_read(d, VGPU_REG_CHANGE_COUNT);
}

/* Nothing moved in BAR0 and no device interrupt since *was. */
static bool comp_unchanged(struct vfio_dev *d, const struct comp_seen *was)
{
	struct comp_seen now;

	comp_look(d, &now, 0);
	return !now.irq && !(now.status & VGPU_IRQ_DEVICE) &&
	       now.sms == was->sms && now.slice == was->slice &&
	       now.gpu == was->gpu && now.memory == was->memory &&
	       now.change == was->change;
}

/*
 * COMPOSITION from a hostile (or confused) daemon: each bad one refused
 * with its errno and nothing changed, no interrupt; a good one changes
 * BAR0 and interrupts the VFIO user (MSI); CHANGE_COUNT never goes back,
 * not even through a CREATE_DONE again. d holds y open.
 */
static void test_composition(struct inst *y, struct vfio_dev *d)
{
	unsigned long small = _IOC(_IOC_READ | _IOC_WRITE, VGPU_MDEV_IOC_MAGIC,
				   9, sizeof(struct vgpu_mdev_composition) - 8);
	unsigned long big = _IOC(_IOC_READ | _IOC_WRITE, VGPU_MDEV_IOC_MAGIC, 9,
				 sizeof(struct vgpu_mdev_composition) + 8);
	char buf[sizeof(struct vgpu_mdev_composition) + 8];
	struct vgpu_mdev_composition c;
	struct comp_seen was, now;
	int bad = 0, r;

	if (!tap(vfio_msi_enable(d) == 0, "the VFIO user turns MSI on"))
		return;
	comp_look(d, &was, 0);
	diag("BAR0 before: %u SMs, slice 0x%08x, GPU %u, change %u", was.sms,
	     was.slice, was.gpu, was.change);

	comp_init(&c, y, was.change + 1);
	c.instance = 999999;
	tap(cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) == -ENOENT,
	    "COMPOSITION of an unknown instance: ENOENT");
	comp_init(&c, y, was.change + 1);
	c.reserved[1] = 1;
	bad += cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) != -EINVAL;
	comp_init(&c, y, was.change + 1);
	c.sm_count = 0;
	bad += cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) != -EINVAL;
	comp_init(&c, y, was.change + 1);
	c.isolation = 7;
	bad += cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) != -EINVAL;
	comp_init(&c, y, was.change + 1);
	c.isolation = VGPU_MDEV_EXCLUSIVE;
	bad += cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) != -EINVAL;
	tap(!bad,
	    "COMPOSITION with reserved bits, 0 SMs, isolation 7, or another "
	    "isolation than the instance's: EINVAL (%d wrong)",
	    bad);
	comp_init(&c, y, was.change + 1);
	memset(c.gpu_name, 'A', sizeof(c.gpu_name));
	tap(cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) == -EINVAL,
	    "COMPOSITION with an unterminated gpu_name: EINVAL");
	comp_init(&c, y, was.change + 1);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &c, sizeof(c));
	tap(cioctl(small, buf) == -ENOTTY && cioctl(big, buf) == -ENOTTY,
	    "COMPOSITION's number with a size 8 bytes short or long: ENOTTY");
	tap(cioctl(VGPU_MDEV_IOC_COMPOSITION, NULL) == -EFAULT,
	    "COMPOSITION from a NULL pointer: EFAULT");
	comp_init(&c, y, was.change);
	r = cioctl(VGPU_MDEV_IOC_COMPOSITION, &c);
	tap(r == -ESTALE && c.change_count == was.change,
	    "COMPOSITION with other values but BAR0's change count: ESTALE, "
	    "BAR0's count (%u) written back",
	    c.change_count);
	tap(comp_unchanged(d, &was),
	    "after all of them BAR0 is as before and no interrupt came");

	comp_init(&c, y, was.change + 5);
	r = cioctl(VGPU_MDEV_IOC_COMPOSITION, &c);
	comp_look(d, &now, 2000);
	tap(r == 0 && now.irq && (now.status & VGPU_IRQ_DEVICE),
	    "a good COMPOSITION: 0, and the VFIO user gets the device "
	    "interrupt (MSI, IRQ_STATUS 0x%08x)",
	    now.status);
	tap(now.sms == 16 && now.slice == (1u << 16 | 2) && now.gpu == 1 &&
		    now.memory == 2ull << 30 && now.change == was.change + 5,
	    "BAR0 shows it: %u SMs, slice 0x%08x, GPU %u, %llu bytes, change "
	    "%u",
	    now.sms, now.slice, now.gpu, (unsigned long long)now.memory,
	    now.change);
	was = now;
	comp_init(&c, y, was.change - 1);
	c.sm_count = 24;
	r = cioctl(VGPU_MDEV_IOC_COMPOSITION, &c);
	tap(r == -ESTALE && c.change_count == was.change &&
		    comp_unchanged(d, &was),
	    "a lower change count (going back): ESTALE, BAR0's count (%u) "
	    "back, nothing changed",
	    c.change_count);
	comp_init(&c, y, was.change);
	tap(cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) == 0 &&
		    comp_unchanged(d, &was),
	    "the same COMPOSITION again: 0, nothing changes, no interrupt");

	/* CREATE_DONE again (a restarted vgpud re-attaches) with count 0 */
	r = create_done(y, 0, y->bar2);
	comp_look(d, &now, 2000);
	tap(r == 0 && now.sms == 8 && now.change == was.change + 1,
	    "CREATE_DONE again with change count 0 and other values: BAR0 "
	    "takes them with change %u (was %u: it never goes back)",
	    now.change, was.change);
	vfio_set_eventfd(d, VFIO_PCI_MSI_IRQ_INDEX, -1);
	close(d->msi_fd);
	d->msi_fd = -1;
}

/* HELLO takes the versions from VGPU_MDEV_CTL_VERSION_MIN to its own. */
static int test_hello(void)
{
	struct vgpu_mdev_hello h = {.version = VGPU_MDEV_CTL_VERSION_MIN - 1};
	struct vgpu_mdev_composition c;
	int r;

	r = cioctl(VGPU_MDEV_IOC_HELLO, &h);
	tap(r == -EPROTO && h.version == VGPU_MDEV_CTL_VERSION,
	    "HELLO with version %u: EPROTO, the module's version (%u) back",
	    VGPU_MDEV_CTL_VERSION_MIN - 1, h.version);
	memset(&h, 0, sizeof(h));
	h.version = VGPU_MDEV_CTL_VERSION + 1;
	tap(cioctl(VGPU_MDEV_IOC_HELLO, &h) == -EPROTO,
	    "HELLO with version %u (newer than the module's): EPROTO",
	    VGPU_MDEV_CTL_VERSION + 1);
	memset(&h, 0, sizeof(h));
	h.version = VGPU_MDEV_CTL_VERSION_MIN;
	memset(&c, 0, sizeof(c));
	tap(cioctl(VGPU_MDEV_IOC_HELLO, &h) == 0 &&
		    h.version == VGPU_MDEV_CTL_VERSION &&
		    cioctl(VGPU_MDEV_IOC_COMPOSITION, &c) == -ENOTTY,
	    "HELLO with version %u (an older vgpud): 0; COMPOSITION (newer) "
	    "then: ENOTTY",
	    VGPU_MDEV_CTL_VERSION_MIN);
	memset(&h, 0, sizeof(h));
	h.version = VGPU_MDEV_CTL_VERSION;
	r = cioctl(VGPU_MDEV_IOC_HELLO, &h);
	drain(0, NULL); /* EXISTS of instances left by others, if any */
	return r;
}

/*
 * The VFIO user's BAR2 ends with its session: its mapping cannot grow,
 * the module lets go of the memfd at close, the next open waits for a
 * fresh one, and the past user's mapping does not reach it.
 */
static void test_bar2_sessions(struct inst *y, struct vfio_dev *d)
{
	struct vgpu_mdev_bar2 b = {.instance = y->id, .fd = -1};
	uint64_t off = d->region[VFIO_PCI_BAR2_REGION_INDEX].offset;
	uint8_t *old, *cur, page[PAGE];
	void *grown;
	long t0;
	int r, i, zero;

	old = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, d->device,
		   (off_t)off);
	if (!tap(old != MAP_FAILED, "BAR2's first page maps"))
		return;
	grown = mremap(old, PAGE, 2 * PAGE, MREMAP_MAYMOVE);
	tap(grown == MAP_FAILED, "mremap cannot grow a BAR2 mapping (%s)",
	    grown == MAP_FAILED ? strerror(errno) : "it grew");
	if (grown != MAP_FAILED)
		old = grown;
	memset(old, 0xa5, PAGE);
	vfio_dev_close(d);
	tap(wait_event(VGPU_MDEV_EV_CLOSE, y->id, NULL) == 0,
	    "VFIO close (mapping kept): CLOSE");
	r = cioctl(VGPU_MDEV_IOC_GET_BAR2, &b);
	tap(r == -ENODATA, "after the close the module holds no memfd "
			   "(GET_BAR2: ENODATA)");
	if (!r)
		close(b.fd);
	tap(set_bar2(y, y->bar2) == -ESTALE &&
		    create_done(y, 0, y->bar2) == -ESTALE,
	    "the past user's memfd is refused back (SET_BAR2, CREATE_DONE: "
	    "ESTALE)");

	t0 = now_ms();
	r = vfio_dev_open(d, y->uuid);
	tap(r < 0 && errno == EAGAIN && now_ms() - t0 >= 4500,
	    "an open with no fresh memfd since the close fails after %ld ms "
	    "(EAGAIN)",
	    now_ms() - t0);
	if (!r)
		vfio_dev_close(d);

	close(y->bar2);
	y->bar2 = memfd_bar2(y->bar2_size, ALL_SEALS);
	tap(set_bar2(y, y->bar2) == 0, "SET_BAR2 of a fresh memfd");
	if (!tap(vfio_dev_open(d, y->uuid) == 0, "now the next user opens it"))
		goto out;
	wait_event(VGPU_MDEV_EV_OPEN, y->id, NULL);
	cur = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, d->device,
		   (off_t)off);
	if (cur == MAP_FAILED) {
		tap(0, "the next user maps BAR2");
		goto out;
	}
	zero = 1;
	for (i = 0; i < PAGE; i++)
		zero &= cur[i] == 0;
	memset(old, 0x3c, PAGE);
	tap(zero && cur[0] == 0 &&
		    vfio_region_read(d, VFIO_PCI_BAR2_REGION_INDEX, 0, page,
				     PAGE) == PAGE &&
		    page[0] == 0,
	    "the next user's BAR2 is fresh: the past user's bytes are not "
	    "there, and its old mapping does not reach it");
	munmap(cur, PAGE);
out:
	munmap(old, PAGE);
	vfio_dev_close(d);
	wait_event(VGPU_MDEV_EV_CLOSE, y->id, NULL);
}

/*
 * vgpud reads nothing: one instance's resets coalesce, its own operations
 * fail past its share, another instance goes on, and its close still
 * reaches the daemon.
 */
static void test_queue(struct inst *y, struct vfio_dev *d, struct inst *z,
		       struct vfio_dev *dz)
{
	uint32_t ch, last = 0, nch;
	int i, r, fails = 0, n0, ok_resets = 0;

	n0 = events_unread();
	for (i = 0; i < 1000; i++)
		ok_resets += ioctl(d->device, VFIO_DEVICE_RESET) == 0;
	tap(ok_resets == 1000 && events_unread() == n0 + 1,
	    "1000 VFIO_DEVICE_RESETs while nothing is read: all succeed, one "
	    "event queued (%d unread, were %d)",
	    events_unread(), n0);
	nch = reg_read(d, VGPU_REG_NUM_CHANNELS);
	for (ch = 0; ch < nch; ch++)
		reg_write(d, VGPU_REG_CHANNEL(ch) + VGPU_CHAN_CTRL,
			  VGPU_CHAN_CMD_OPEN);
	for (ch = 0; ch < nch; ch++)
		reg_write(d, VGPU_REG_CHANNEL(ch) + VGPU_CHAN_CTRL,
			  VGPU_CHAN_CMD_CLOSE);
	for (ch = 0; ch < nch; ch++)
		fails += reg_read(d, VGPU_REG_CHANNEL(ch) + VGPU_CHAN_ERROR) ==
			 ENOSPC;
	errno = 0;
	r = ioctl(d->device, VFIO_DEVICE_RESET) < 0 ? errno : 0;
	tap(fails > 0 && r == ENOSPC,
	    "past 16 unread events its own operations fail: %d channel "
	    "commands with ENOSPC, VFIO_DEVICE_RESET: %s",
	    fails, strerror(r));

	tap(vfio_dev_open(dz, z->uuid) == 0 &&
		    reg_write(dz, VGPU_REG_CHANNEL(0) + VGPU_CHAN_CTRL,
			      VGPU_CHAN_CMD_OPEN) == 0 &&
		    reg_read(dz, VGPU_REG_CHANNEL(0) + VGPU_CHAN_STATE) ==
			    VGPU_CHAN_OPENING,
	    "another instance is unaffected: its open and a channel OPEN are "
	    "queued");
	vfio_dev_close(d);
	drain(y->id, &last);
	tap(last == VGPU_MDEV_EV_CLOSE,
	    "a VFIO close past the share still reaches the daemon (CLOSE is "
	    "the last event of the instance: %u)",
	    last);
}

/* A removal's ERROR (the .request) stays, whatever vgpud says after. */
static void test_removing(struct inst *z, struct vfio_dev *dz)
{
	struct vgpu_mdev_device_state s = {.instance = z->id,
					   .state = VGPU_DEVICE_READY};
	char path[256];
	uint32_t st = 0;
	pid_t pid;
	int i, rc;

	snprintf(path, sizeof(path), MDEV_BUS "/%s/remove", z->uuid);
	pid = write_child(path, "1");
	for (i = 0; i < 100; i++) {
		st = reg_read(dz, VGPU_REG_DEVICE_STATE);
		if (st == VGPU_DEVICE_ERROR)
			break;
		usleep(50000);
	}
	if (!tap(st == VGPU_DEVICE_ERROR,
		 "a removal while open: DEVICE_STATE ERROR (%u)", st)) {
		vfio_dev_close(dz);
		child_result(pid);
		return;
	}
	cioctl(VGPU_MDEV_IOC_DEVICE_STATE, &s);
	create_done(z, 0, z->bar2);
	st = reg_read(dz, VGPU_REG_DEVICE_STATE);
	tap(st == VGPU_DEVICE_ERROR &&
		    reg_read(dz, VGPU_REG_DEVICE_ERROR) == ENODEV,
	    "DEVICE_STATE READY and CREATE_DONE after it leave it ERROR "
	    "(ENODEV) (state %u)",
	    st);
	vfio_dev_close(dz);
	rc = child_result(pid);
	tap(rc == 0 && wait_event(VGPU_MDEV_EV_REMOVE, z->id, NULL) == 0,
	    "the removal ends when the user closes it (REMOVE)");
}

int ctl_run(const char *type4, const char *type8)
{
	struct vgpu_mdev_hello h = {.version = VGPU_MDEV_CTL_VERSION};
	struct inst y = {.bar2 = -1}, z = {.bar2 = -1};
	struct vfio_dev d, dz;
	char path[256];

	ctl = open("/dev/" VGPU_MDEV_CTL_NAME, O_RDWR | O_CLOEXEC | O_NONBLOCK);
	if (!tap(ctl >= 0 && cioctl(VGPU_MDEV_IOC_HELLO, &h) == 0,
		 "/dev/vgpu-ctl opens and says HELLO (vgpud is not running)"))
		return 1;
	if (!tap(test_hello() == 0, "HELLO with its own version again"))
		return 1;
	test_create_done(type4, &y, type8);
	tap(make_inst(&z, type4, 4) == 0, "a second instance (%s)", type4);
	test_bar2_while_open(&y, &d);
	test_composition(&y, &d);
	test_bar2_sessions(&y, &d);
	close(y.bar2);
	y.bar2 = memfd_bar2(y.bar2_size, ALL_SEALS);
	set_bar2(&y, y.bar2);
	if (vfio_dev_open(&d, y.uuid) == 0) {
		drain(0, NULL);
		test_queue(&y, &d, &z, &dz);
		test_removing(&z, &dz);
	} else {
		tap(0, "the instance opens for the queue tests");
	}
	snprintf(path, sizeof(path), MDEV_BUS "/%s/remove", y.uuid);
	child_result(write_child(path, "1"));
	close(ctl);
	if (y.bar2 >= 0)
		close(y.bar2);
	if (z.bar2 >= 0)
		close(z.bar2);
	return 0;
}
