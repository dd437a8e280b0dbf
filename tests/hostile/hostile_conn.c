/* SPDX-License-Identifier: MIT */
/*
 * Connection and ring plumbing for the hostile test clients: connect,
 * hello, receive the ring descriptors, map the ring, submit one
 * descriptor and wait for its completion. Written from protocol.h alone,
 * like any other client library, with every wait bounded.
 */
#include <cuda.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "hostile.h"

int hostile_connect(const char *path, int type)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_sec = HOSTILE_TIMEOUT_S};
	int fd;

	if (strlen(path) >= sizeof(addr.sun_path)) {
		fprintf(stderr, "socket path too long: %s\n", path);
		return -1;
	}
	strcpy(addr.sun_path, path);
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		perror("socket");
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
		int err = errno;

		close(fd);
		if (err == EPROTOTYPE && type == SOCK_SEQPACKET)
			return hostile_connect(path, SOCK_STREAM);
		fprintf(stderr, "connect %s: %s\n", path, strerror(err));
		errno = err;
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

int hostile_send(int fd, const void *buf, size_t len)
{
	ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

	if (n < 0) {
		/* vgpud may rightly have closed on us already */
		if (errno == EPIPE || errno == ECONNRESET)
			return 0;
		perror("send");
		return -1;
	}
	return 0;
}

int hostile_recv_reply(int fd, struct vgpu_hello_reply *reply, int fds[3],
		       int *nfds)
{
	char cbuf[CMSG_SPACE(3 * sizeof(int))];
	size_t got = 0;

	*nfds = 0;
	memset(reply, 0, sizeof(*reply));
	while (got < sizeof(*reply)) {
		struct iovec iov = {(char *)reply + got, sizeof(*reply) - got};
		struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
		struct cmsghdr *c;
		ssize_t n;

		msg.msg_control = cbuf;
		msg.msg_controllen = sizeof(cbuf);
		n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == ECONNRESET)
				return 0;
			fprintf(stderr, "no hello reply within %d s: %s\n",
				HOSTILE_TIMEOUT_S, strerror(errno));
			return -1;
		}
		if (n == 0) {
			if (got == 0)
				return 0;
			fprintf(stderr,
				"hello reply cut short at %zu of %zu "
				"bytes\n",
				got, sizeof(*reply));
			return -1;
		}
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS)
				continue;
			int k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

			for (int i = 0; i < k && *nfds < 3; i++)
				memcpy(&fds[(*nfds)++],
				       CMSG_DATA(c) + i * sizeof(int),
				       sizeof(int));
		}
		got += n;
	}
	if (reply->message[VGPU_MESSAGE_MAX - 1] != '\0') {
		fprintf(stderr, "hello reply message is not NUL-terminated\n");
		return -1;
	}
	return 1;
}

void hostile_hello_init(struct vgpu_hello *h, const char *name)
{
	memset(h, 0, sizeof(*h));
	h->magic = VGPU_PROTO_MAGIC;
	h->major = VGPU_PROTO_MAJOR;
	h->minor = VGPU_PROTO_MINOR;
	snprintf(h->vgpu_name, sizeof(h->vgpu_name), "%s", name);
}

/* Checks the worker's ring header before we trust any of it. */
static int ring_header_ok(struct hostile_ring *r)
{
	const struct vgpu_ring_header *h = r->hdr;

	ring_layout_compute(&r->lay, h->sq_entries, h->cq_entries,
			    h->data_size);
	if (h->magic != VGPU_PROTO_MAGIC || h->major != VGPU_PROTO_MAJOR ||
	    !ring_is_pow2(h->sq_entries) || !ring_is_pow2(h->cq_entries) ||
	    h->sq_offset != r->lay.sq_offset ||
	    h->cq_offset != r->lay.cq_offset ||
	    h->data_offset != r->lay.data_offset ||
	    h->total_size != r->lay.total_size || h->total_size > r->size) {
		fprintf(stderr, "ring header is not what ring.h lays out\n");
		return -1;
	}
	return 0;
}

int hostile_ring_open(struct hostile_ring *r, const char *sock_path,
		      const char *name)
{
	struct vgpu_hello_reply reply;
	struct vgpu_hello h;
	int fds[3], nfds;

	memset(r, 0, sizeof(*r));
	r->ring_fd = r->submit_fd = r->complete_fd = -1;
	r->sock = hostile_connect(sock_path, SOCK_SEQPACKET);
	if (r->sock < 0)
		return -1;
	hostile_hello_init(&h, name);
	if (hostile_send(r->sock, &h, sizeof(h)) < 0 ||
	    hostile_recv_reply(r->sock, &reply, fds, &nfds) != 1)
		return -1;
	if (reply.status != VGPU_HELLO_OK || nfds != 3) {
		fprintf(stderr, "hello refused: status %d, %d fds: %s\n",
			reply.status, nfds, reply.message);
		return -1;
	}
	r->ring_fd = fds[0];
	r->submit_fd = fds[1];
	r->complete_fd = fds[2];
	r->size = reply.ring_size;
	r->base = mmap(NULL, r->size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->ring_fd, 0);
	if (r->base == MAP_FAILED) {
		perror("mmap ring");
		r->base = NULL;
		return -1;
	}
	r->hdr = r->base;
	return ring_header_ok(r);
}

void hostile_ring_close(struct hostile_ring *r)
{
	if (r->base)
		munmap(r->base, r->size);
	if (r->ring_fd >= 0)
		close(r->ring_fd);
	if (r->submit_fd >= 0)
		close(r->submit_fd);
	if (r->complete_fd >= 0)
		close(r->complete_fd);
	if (r->sock >= 0)
		close(r->sock);
	memset(r, 0, sizeof(*r));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int hostile_submit(struct hostile_ring *r, struct vgpu_sqe *sqe,
		   struct vgpu_cqe *cqe)
{
	struct vgpu_ring_header *h = r->hdr;
	uint32_t tail = h->sq_tail, head;
	uint64_t one = 1;
	double t0 = now();

	sqe->tag = ++r->next_tag;
	*ring_sqe(r->base, r->lay.sq_offset, r->lay.sq_entries, tail) = *sqe;
	ring_store_release(&h->sq_tail, tail + 1);
	if (write(r->submit_fd, &one, sizeof(one)) != sizeof(one)) {
		perror("doorbell");
		return -1;
	}
	head = h->cq_head;
	while (ring_load_acquire(&h->cq_tail) == head) {
		if (ring_load_acquire(&h->status) != VGPU_RING_OK) {
			fprintf(stderr, "ring status %u while waiting\n",
				h->status);
			return -1;
		}
		if (now() - t0 > HOSTILE_TIMEOUT_S) {
			fprintf(stderr,
				"no completion for opcode %u within "
				"%d s\n",
				sqe->opcode, HOSTILE_TIMEOUT_S);
			return -1;
		}
		usleep(100);
	}
	*cqe = *ring_cqe(r->base, r->lay.cq_offset, r->lay.cq_entries, head);
	ring_store_release(&h->cq_head, head + 1);
	if (cqe->tag != sqe->tag) {
		fprintf(stderr, "completion tag %u, expected %u\n", cqe->tag,
			sqe->tag);
		return -1;
	}
	return 0;
}

void *hostile_data(struct hostile_ring *r, uint64_t off)
{
	return (char *)r->base + r->lay.data_offset + off;
}

const char *hostile_status_name(int32_t status)
{
	switch (status) {
	case CUDA_SUCCESS:
		return "CUDA_SUCCESS";
	case CUDA_ERROR_INVALID_VALUE:
		return "CUDA_ERROR_INVALID_VALUE";
	case CUDA_ERROR_OUT_OF_MEMORY:
		return "CUDA_ERROR_OUT_OF_MEMORY";
	case CUDA_ERROR_INVALID_HANDLE:
		return "CUDA_ERROR_INVALID_HANDLE";
	case CUDA_ERROR_NOT_FOUND:
		return "CUDA_ERROR_NOT_FOUND";
	case CUDA_ERROR_NOT_READY:
		return "CUDA_ERROR_NOT_READY";
	case CUDA_ERROR_NOT_SUPPORTED:
		return "CUDA_ERROR_NOT_SUPPORTED";
	case CUDA_ERROR_INVALID_IMAGE:
		return "CUDA_ERROR_INVALID_IMAGE";
	case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
		return "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES";
	case CUDA_ERROR_ILLEGAL_ADDRESS:
		return "CUDA_ERROR_ILLEGAL_ADDRESS";
	case CUDA_ERROR_INVALID_CONTEXT:
		return "CUDA_ERROR_INVALID_CONTEXT";
	default:
		return "another CUresult";
	}
}

int hostile_wait_closed(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	double t0 = now();
	char c;

	while (now() - t0 < HOSTILE_TIMEOUT_S) {
		if (poll(&p, 1, 100) < 0)
			return 0;
		if (p.revents & (POLLHUP | POLLERR))
			return 1;
		if (p.revents & POLLIN) {
			ssize_t n = recv(fd, &c, 1, MSG_DONTWAIT);

			if (n == 0 || (n < 0 && errno == ECONNRESET))
				return 1;
		}
	}
	return 0;
}
