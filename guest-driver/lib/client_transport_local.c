/* SPDX-License-Identifier: MIT */
/*
 * Local transport (see client_transport.h). vgpud answers a bad hello
 * itself and closes; a good one is passed to the worker, which answers
 * with the ring and its doorbells attached (SCM_RIGHTS).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <vgpu/protocol.h>

#include "client_transport.h"

#define TRANSPORT_MAX_FDS 8 /* room to notice (and close) extra fds */

static void close_fds(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * vgpud serves SOCK_SEQPACKET; a stream socket is tried when connect()
 * says the type is wrong (EPROTOTYPE), so either kind of server works.
 */
static int transport_dial(const char *path, char *err, size_t errlen)
{
	static const int types[] = {SOCK_SEQPACKET, SOCK_STREAM};
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = -1;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		snprintf(err, errlen, "socket path %s is too long", path);
		return -1;
	}
	strcpy(sa.sun_path, path);
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		fd = socket(AF_UNIX, types[i] | SOCK_CLOEXEC, 0);
		if (fd < 0)
			break;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		fd = -1;
		if (errno != EPROTOTYPE)
			break;
	}
	snprintf(err, errlen, "cannot reach vgpud at %s: %s", path,
		 strerror(errno));
	return -1;
}

static int send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000L + t.tv_nsec / 1000000L;
}

/*
 * Reads the whole reply (a stream may deliver it in pieces) and every
 * descriptor attached to it, within the handshake timeout. Returns the
 * bytes read (short means the peer closed), or -1 with errno set.
 */
static ssize_t recv_reply(int fd, struct vgpu_hello_reply *reply, int *fds,
			  int *nfds, int *truncated)
{
	char *p = (char *)reply;
	size_t got = 0;
	long deadline = now_ms() + CLIENT_HANDSHAKE_TIMEOUT_MS;

	*nfds = 0;
	*truncated = 0;
	while (got < sizeof(*reply)) {
		union {
			char buf[CMSG_SPACE(TRANSPORT_MAX_FDS * sizeof(int))];
			struct cmsghdr align;
		} ctl;
		struct iovec iov = {p + got, sizeof(*reply) - got};
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
			.msg_controllen = sizeof(ctl.buf),
		};
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		long left = deadline - now_ms();
		struct cmsghdr *c;
		ssize_t n;
		int r;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0)
			continue; /* the deadline check reports it */
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (msg.msg_flags & MSG_CTRUNC)
			*truncated = 1;
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			size_t k, cnt;

			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (k = 0; k < cnt; k++) {
				int d;

				memcpy(&d, CMSG_DATA(c) + k * sizeof(int),
				       sizeof(d));
				if (*nfds < TRANSPORT_MAX_FDS)
					fds[(*nfds)++] = d;
				else
					close(d);
			}
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static const char *hello_status_text(int32_t status)
{
	switch (status) {
	case VGPU_HELLO_BAD_MESSAGE:
		return "vgpud rejected the hello message";
	case VGPU_HELLO_BAD_VERSION:
		return "vgpud speaks another protocol version";
	case VGPU_HELLO_NO_SUCH_VGPU:
		return "no such vGPU";
	case VGPU_HELLO_PERMISSION:
		return "this user may not use the vGPU";
	case VGPU_HELLO_UNAVAILABLE:
		return "the vGPU is unavailable";
	case VGPU_HELLO_RESOURCES:
		return "the vGPU has no room for another client";
	default:
		return "vgpud refused the connection";
	}
}

/* Maps the ring memfd after checking that it is as large as announced. */
static int map_ring(struct client_transport *t, int memfd, uint64_t size,
		    char *err, size_t errlen)
{
	struct stat st;
	void *map;

	if (size < 4096 || size > CLIENT_MAX_RING_BYTES) {
		snprintf(err, errlen, "worker announced a ring of %llu bytes",
			 (unsigned long long)size);
		return -1;
	}
	if (fstat(memfd, &st) || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size < size) {
		snprintf(err, errlen,
			 "worker's ring memory is not a file of "
			 "%llu bytes",
			 (unsigned long long)size);
		return -1;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd, 0);
	if (map == MAP_FAILED) {
		snprintf(err, errlen, "cannot map the ring: %s",
			 strerror(errno));
		return -1;
	}
	t->map = map;
	t->map_size = size;
	return 0;
}

int client_transport_connect(struct client_transport *t, const char *path,
			     const char *name, char *err, size_t errlen)
{
	struct vgpu_hello hello;
	struct vgpu_hello_reply reply;
	int fds[TRANSPORT_MAX_FDS];
	int nfds = 0, truncated = 0;
	ssize_t got;

	memset(t, 0, sizeof(*t));
	t->sock = t->submit_efd = t->complete_efd = -1;
	if (strlen(name) >= VGPU_NAME_MAX) {
		snprintf(err, errlen,
			 "VGPU name '%.*s...' is longer than %d "
			 "bytes",
			 16, name, VGPU_NAME_MAX - 1);
		return -1;
	}
	t->sock = transport_dial(path, err, errlen);
	if (t->sock < 0)
		return -1;

	memset(&hello, 0, sizeof(hello));
	hello.magic = VGPU_PROTO_MAGIC;
	hello.major = VGPU_PROTO_MAJOR;
	hello.minor = VGPU_PROTO_MINOR;
	strcpy(hello.vgpu_name, name);
	if (send_all(t->sock, &hello, sizeof(hello))) {
		snprintf(err, errlen, "cannot talk to vgpud at %s: %s", path,
			 strerror(errno));
		goto fail;
	}

	memset(&reply, 0, sizeof(reply));
	got = recv_reply(t->sock, &reply, fds, &nfds, &truncated);
	if (got < 0) {
		if (errno == ETIMEDOUT)
			snprintf(err, errlen,
				 "no answer from vgpud at %s "
				 "within %d s",
				 path, CLIENT_HANDSHAKE_TIMEOUT_MS / 1000);
		else
			snprintf(err, errlen,
				 "handshake with vgpud at %s "
				 "failed: %s",
				 path, strerror(errno));
		goto fail_fds;
	}
	if ((size_t)got < sizeof(reply)) {
		snprintf(err, errlen,
			 "vgpud at %s closed the connection "
			 "during the handshake",
			 path);
		goto fail_fds;
	}
	if (reply.magic != VGPU_PROTO_MAGIC) {
		snprintf(err, errlen,
			 "vgpud at %s answered with a bad "
			 "message (magic 0x%x)",
			 path, reply.magic);
		goto fail_fds;
	}
	if (reply.status != VGPU_HELLO_OK) {
		reply.message[VGPU_MESSAGE_MAX - 1] = '\0';
		if (reply.message[0])
			snprintf(err, errlen, "%s", reply.message);
		else
			snprintf(err, errlen, "vGPU '%s': %s", name,
				 hello_status_text(reply.status));
		goto fail_fds;
	}
	if (reply.major != VGPU_PROTO_MAJOR) {
		snprintf(err, errlen,
			 "vgpud speaks protocol %u.%u, this "
			 "library %u.%u",
			 reply.major, reply.minor, VGPU_PROTO_MAJOR,
			 VGPU_PROTO_MINOR);
		goto fail_fds;
	}
	if (truncated || nfds != 3) {
		snprintf(err, errlen,
			 "worker sent %d descriptors with the "
			 "ring (want 3)",
			 nfds);
		goto fail_fds;
	}
	if (map_ring(t, fds[0], reply.ring_size, err, errlen))
		goto fail_fds;
	t->minor = reply.minor;
	close(fds[0]); /* the mapping keeps the memory */
	t->submit_efd = fds[1];
	t->complete_efd = fds[2];
	return 0;

fail_fds:
	close_fds(fds, nfds);
fail:
	close(t->sock);
	t->sock = -1;
	return -1;
}

void client_transport_close(struct client_transport *t)
{
	if (t->map)
		munmap(t->map, t->map_size);
	if (t->sock >= 0)
		close(t->sock);
	if (t->submit_efd >= 0)
		close(t->submit_efd);
	/* pci: one fd is both doorbells */
	if (t->complete_efd >= 0 && t->complete_efd != t->submit_efd)
		close(t->complete_efd);
	memset(t, 0, sizeof(*t));
	t->sock = t->submit_efd = t->complete_efd = -1;
}
