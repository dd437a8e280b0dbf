/* SPDX-License-Identifier: MIT */
/*
 * Shared pieces of the hostile test clients: they speak the raw protocol
 * (include/vgpu/protocol.h, ring.h, admin.h), build messages a real
 * library never would, and check that vgpud and the worker answer with an
 * error instead of crashing, hanging or accepting them.
 */
#ifndef VGPU_HOSTILE_H
#define VGPU_HOSTILE_H

#include <stddef.h>
#include <stdint.h>

#include <vgpu/protocol.h>
#include <vgpu/ring.h>

#define HOSTILE_TIMEOUT_S 10 /* every wait is bounded by this */

/* A connection to a worker after a successful handshake. */
struct hostile_ring {
	int sock;
	int ring_fd, submit_fd, complete_fd;
	void *base;
	uint64_t size;
	struct vgpu_ring_header *hdr;
	struct ring_layout lay; /* our copy, checked against the header */
	uint32_t next_tag;
};

/* Connects to a Unix socket of either type (vgpud's choice). */
int hostile_connect(const char *path, int type);

/* Sends len bytes as one message; -1 on error. */
int hostile_send(int fd, const void *buf, size_t len);

/*
 * Waits for a hello reply: 1 with *reply filled (and up to 3 fds in fds[],
 * *nfds set), 0 when vgpud closed the connection without one, -1 on error
 * or timeout (with a message printed).
 */
int hostile_recv_reply(int fd, struct vgpu_hello_reply *reply, int fds[3],
		       int *nfds);

/* A valid hello for name. */
void hostile_hello_init(struct vgpu_hello *h, const char *name);

/* Connects, says hello and maps the ring; -1 with a message on failure. */
int hostile_ring_open(struct hostile_ring *r, const char *sock_path,
		      const char *name);
void hostile_ring_close(struct hostile_ring *r);

/* Puts one sqe on the ring (tag filled in), rings the doorbell, and waits
 * for its completion. Returns 0 with *cqe filled, -1 on timeout. */
int hostile_submit(struct hostile_ring *r, struct vgpu_sqe *sqe,
		   struct vgpu_cqe *cqe);

/* A pointer into the data area at offset off. */
void *hostile_data(struct hostile_ring *r, uint64_t off);

/* "CUDA_ERROR_INVALID_VALUE" etc. for the codes a worker may send. */
const char *hostile_status_name(int32_t status);

/* Waits up to HOSTILE_TIMEOUT_S for the peer to close fd: 1 closed. */
int hostile_wait_closed(int fd);

#endif /* VGPU_HOSTILE_H */
