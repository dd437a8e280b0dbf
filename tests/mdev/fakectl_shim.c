/* SPDX-License-Identifier: MIT */
/*
 * LD_PRELOAD shim for vgpud (fakectl.h): /dev/vgpu-ctl becomes the test
 * program. Only vgpud loads it (its workers start with a clean
 * environment); every other open, ioctl and close goes to libc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vgpu/mdev_ctl.h>

#include "fakectl.h"

#define DEV "/dev/" VGPU_MDEV_CTL_NAME

static int ev_fd = -1, io_fd = -1;

static int connect_to(const char *path, char role, int flags)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd, e;

	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    send(fd, &role, 1, MSG_NOSIGNAL) != 1) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	if (flags & O_NONBLOCK)
		fcntl(fd, F_SETFL, O_NONBLOCK);
	return fd;
}

static int fake_open(int flags)
{
	const char *path = getenv(FAKECTL_ENV);

	if (!path) {
		errno = ENOENT;
		return -1;
	}
	if (ev_fd >= 0) {
		errno = EBUSY;
		return -1;
	}
	ev_fd = connect_to(path, FAKECTL_EVENTS, flags);
	/* no test listening: as the device node of an unloaded module */
	if (ev_fd < 0 && (errno == ENOENT || errno == ECONNREFUSED)) {
		errno = ENOENT;
		return -1;
	}
	io_fd = ev_fd < 0 ? -1 : connect_to(path, FAKECTL_IOCTLS, 0);
	if (io_fd < 0) {
		if (ev_fd >= 0)
			close(ev_fd);
		ev_fd = -1;
		errno = ENODEV;
		return -1;
	}
	return ev_fd;
}

static int real_open(const char *name, const char *path, int flags, mode_t mode)
{
	int (*fn)(const char *, int, ...) =
		(int (*)(const char *, int, ...))dlsym(RTLD_NEXT, name);

	return fn(path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (!strcmp(path, DEV))
		return fake_open(flags);
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return real_open("open", path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (!strcmp(path, DEV))
		return fake_open(flags);
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return real_open("open64", path, flags, mode);
}

/* The descriptors an ioctl passes by number (they travel as fds). */
static int ioctl_fds(unsigned long req, const void *arg, int fds[2])
{
	if (req == VGPU_MDEV_IOC_CREATE_DONE) {
		const struct vgpu_mdev_create_done *c = arg;

		if (c->status || c->bar2_fd < 0)
			return 0;
		fds[0] = c->bar2_fd;
		return 1;
	}
	if (req == VGPU_MDEV_IOC_SET_BAR2) {
		fds[0] = ((const struct vgpu_mdev_bar2 *)arg)->fd;
		return 1;
	}
	if (req == VGPU_MDEV_IOC_CHANNEL_SETUP) {
		const struct vgpu_mdev_channel_setup *s = arg;

		fds[0] = s->doorbell_fd;
		fds[1] = s->complete_fd;
		return 2;
	}
	return 0;
}

static int fake_ioctl(unsigned long req, void *arg)
{
	char buf[sizeof(struct fakectl_req) + FAKECTL_ARG_MAX];
	char cbuf[CMSG_SPACE(sizeof(int) * FAKECTL_MAX_FDS)];
	struct fakectl_req *q = (struct fakectl_req *)buf;
	struct fakectl_rep *r = (struct fakectl_rep *)buf;
	struct iovec iov = {.iov_base = buf};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	uint32_t size = _IOC_SIZE(req);
	struct cmsghdr *cm;
	int fds[2], nfds, got = -1;
	ssize_t n;

	if (size > FAKECTL_ARG_MAX) {
		errno = EINVAL;
		return -1;
	}
	q->req = (uint32_t)req;
	q->size = size;
	memcpy(q + 1, arg, size);
	iov.iov_len = sizeof(*q) + size;
	nfds = ioctl_fds(req, arg, fds);
	if (nfds) {
		memset(cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	if (sendmsg(io_fd, &msg, MSG_NOSIGNAL) < 0) {
		errno = EIO;
		return -1;
	}
	/* the answer, with a descriptor for GET_BAR2 */
	iov.iov_len = sizeof(buf);
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	n = recvmsg(io_fd, &msg, MSG_CMSG_CLOEXEC);
	if (n < (ssize_t)sizeof(*r)) {
		errno = EIO;
		return -1;
	}
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len >= CMSG_LEN(sizeof(int)))
		memcpy(&got, CMSG_DATA(cm), sizeof(int));
	if ((_IOC_DIR(req) & _IOC_READ) && r->size == size &&
	    (size_t)n == sizeof(*r) + size)
		memcpy(arg, r + 1, size);
	if (req == VGPU_MDEV_IOC_GET_BAR2 && r->ret == 0)
		((struct vgpu_mdev_bar2 *)arg)->fd = got;
	else if (got >= 0)
		close(got);
	if (r->ret < 0) {
		errno = -r->ret;
		return -1;
	}
	return r->ret;
}

int ioctl(int fd, unsigned long req, ...)
{
	static int (*real)(int, unsigned long, void *);
	void *arg;
	va_list ap;

	va_start(ap, req);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (fd >= 0 && fd == ev_fd)
		return fake_ioctl(req, arg);
	if (!real)
		real = (int (*)(int, unsigned long, void *))dlsym(RTLD_NEXT,
								  "ioctl");
	return real(fd, req, arg);
}

int close(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "close");
	if (fd >= 0 && fd == ev_fd) {
		real(io_fd);
		ev_fd = io_fd = -1;
	}
	return real(fd);
}
