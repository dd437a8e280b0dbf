/* SPDX-License-Identifier: MIT */
/*
 * Control-message transport shared by vgpud and vgpu-worker: framing,
 * SCM_RIGHTS descriptor passing and the checks every received message
 * goes through before anyone looks at its payload.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <vgpu/control.h>

#include "ctl_msg.h"

/*
 * sendmsg with up to CTL_MAX_FDS descriptors, retried on EINTR. Returns
 * 0 when all of the iovecs went out, else a negative errno.
 */
static int ctl_sendmsg(int sock, struct iovec *iov, int iovcnt, const int *fds,
		       int nfds, int flags)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * CTL_MAX_FDS)];
	} cbuf;
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = iovcnt};
	struct cmsghdr *cm;
	size_t total = 0;
	ssize_t n;
	int i;

	if (nfds < 0 || nfds > CTL_MAX_FDS)
		return -EINVAL;
	for (i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (nfds) {
		memset(&cbuf, 0, sizeof(cbuf));
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	}
	do {
		n = sendmsg(sock, &msg, flags | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	/* a stream socket may take part of it: that is an error here */
	return (size_t)n == total ? 0 : -EIO;
}

int ctl_send_fds(int sock, const void *buf, size_t len, const int *fds,
		 int nfds)
{
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};

	return ctl_sendmsg(sock, &iov, 1, fds, nfds, MSG_DONTWAIT);
}

int ctl_send_n(int sock, uint32_t type, const void *payload, uint32_t len,
	       const int *fds, int nfds)
{
	struct vgpu_ctl_hdr hdr = {.type = type, .len = len};
	struct iovec iov[2] = {
		{.iov_base = &hdr, .iov_len = sizeof(hdr)},
		{.iov_base = (void *)payload, .iov_len = len},
	};

	if (len && !payload)
		return -EINVAL;
	return ctl_sendmsg(sock, iov, len ? 2 : 1, fds, nfds, 0);
}

int ctl_send(int sock, uint32_t type, const void *payload, uint32_t len,
	     int pass_fd)
{
	return ctl_send_n(sock, type, payload, len, &pass_fd, pass_fd >= 0);
}

/* Close every descriptor an SCM_RIGHTS message brought. */
static void ctl_close_fds(struct msghdr *msg)
{
	struct cmsghdr *cm;
	size_t i, nfds;
	int fd;

	for (cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR(msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfds; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(fd));
			close(fd);
		}
	}
}

/*
 * Count the descriptors of one SCM_RIGHTS block into *nfds and copy those
 * that still fit into fds[] (the caller closes them all when too many
 * came: ctl_close_fds walks the message itself).
 */
static void ctl_take_fds(struct cmsghdr *cm, int *fds, int maxfds, int *nfds)
{
	size_t i, k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

	for (i = 0; i < k; i++, (*nfds)++)
		if (*nfds < maxfds)
			memcpy(&fds[*nfds], CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
}

int ctl_recv(int sock, uint32_t *type, void *payload, uint32_t max,
	     uint32_t *len, int *pass_fd)
{
	int nfds;

	return ctl_recv_n(sock, type, payload, max, len, pass_fd,
			  pass_fd ? 1 : 0, &nfds);
}

int ctl_recv_n(int sock, uint32_t *type, void *payload, uint32_t max,
	       uint32_t *len, int *fds, int maxfds, int *nfds_out)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * CTL_MAX_FDS)];
	} cbuf;
	struct vgpu_ctl_hdr hdr;
	struct iovec iov[2] = {
		{.iov_base = &hdr, .iov_len = sizeof(hdr)},
		{.iov_base = payload, .iov_len = max},
	};
	struct msghdr msg = {
		.msg_iov = iov,
		.msg_iovlen = max ? 2 : 1,
		.msg_control = cbuf.buf,
		.msg_controllen = sizeof(cbuf.buf),
	};
	struct cmsghdr *cm;
	int nfds = 0, rc = 0, i;
	ssize_t n;

	*nfds_out = 0;
	if ((max && !payload) || maxfds < 0 || maxfds > CTL_MAX_FDS ||
	    (maxfds && !fds))
		return -EINVAL;
	for (i = 0; i < maxfds; i++)
		fds[i] = -1;
	do {
		n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == ECONNRESET ? -EPIPE : -errno;
	if (n == 0)
		return -EPIPE;

	for (cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		ctl_take_fds(cm, fds, maxfds, &nfds);
	}
	if (msg.msg_flags & MSG_TRUNC)
		rc = -EMSGSIZE;
	else if ((msg.msg_flags & MSG_CTRUNC) || nfds > maxfds)
		rc = -EPROTO;
	else if ((size_t)n < sizeof(hdr) || hdr.len != n - sizeof(hdr))
		rc = -EPROTO;
	if (rc) {
		ctl_close_fds(&msg);
		for (i = 0; i < maxfds; i++)
			fds[i] = -1;
		return rc;
	}
	*type = hdr.type;
	*len = hdr.len;
	*nfds_out = nfds;
	return 0;
}

const char *ctl_type_name(uint32_t type)
{
	switch (type) {
	case VGPU_CTL_CONFIG:
		return "CONFIG";
	case VGPU_CTL_CLIENT:
		return "CLIENT";
	case VGPU_CTL_SHUTDOWN:
		return "SHUTDOWN";
	case VGPU_CTL_CHANNEL:
		return "CHANNEL";
	case VGPU_CTL_READY:
		return "READY";
	case VGPU_CTL_STATS:
		return "STATS";
	case VGPU_CTL_FAULT:
		return "FAULT";
	case VGPU_CTL_GPU_INFO:
		return "GPU_INFO";
	case VGPU_CTL_ADOPTED:
		return "ADOPTED";
	case VGPU_CTL_RESIZE:
		return "RESIZE";
	case VGPU_CTL_RESIZED:
		return "RESIZED";
	case VGPU_CTL_LOAD:
		return "LOAD";
	case VGPU_CTL_SCHED:
		return "SCHED";
	case VGPU_CTL_ACTIVITY:
		return "ACTIVITY";
	}
	return "?";
}
