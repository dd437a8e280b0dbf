/* SPDX-License-Identifier: MIT */
/*
 * One request on vgpud's admin socket, for the benchmarks that drive
 * vgpud while a client runs (resize_stall, migrate). Header-only.
 */
#ifndef VGPU_BENCH_ADMIN_H
#define VGPU_BENCH_ADMIN_H

#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vgpu/admin.h>

/* Sends req to RUN_DIR/admin.sock and waits up to wait_ms for the one
 * answer packet (no VGPU_ADMIN_PROGRESS). 0, or -1 (printed). */
static inline int bench_admin(const char *run_dir,
			      const struct vgpu_admin_request *req,
			      struct vgpu_admin_response *resp, int wait_ms)
{
	struct sockaddr_un addr = {.sun_family = AF_UNIX};
	struct pollfd p;
	int fd;

	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/admin.sock",
		 run_dir);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		perror(addr.sun_path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	p.fd = fd;
	p.events = POLLIN;
	if (send(fd, req, sizeof(*req), MSG_NOSIGNAL) != sizeof(*req) ||
	    poll(&p, 1, wait_ms) != 1 ||
	    recv(fd, resp, sizeof(*resp), 0) != sizeof(*resp)) {
		fprintf(stderr, "no answer from vgpud\n");
		close(fd);
		return -1;
	}
	close(fd);
	resp->message[sizeof(resp->message) - 1] = '\0';
	return 0;
}

/* A request for op on the vGPU name, everything else 0. */
static inline void bench_admin_request(struct vgpu_admin_request *q,
				       uint32_t op, const char *name)
{
	memset(q, 0, sizeof(*q));
	q->magic = VGPU_ADMIN_MAGIC;
	q->major = VGPU_ADMIN_MAJOR;
	q->minor = VGPU_ADMIN_MINOR;
	q->op = op;
	snprintf(q->name, sizeof(q->name), "%s", name);
}

#endif /* VGPU_BENCH_ADMIN_H */
