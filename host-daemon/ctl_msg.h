/* SPDX-License-Identifier: MIT */
/*
 * Control messages between vgpud and vgpu-worker (include/vgpu/control.h):
 * one SOCK_SEQPACKET packet per message, struct vgpu_ctl_hdr + payload,
 * optionally one file descriptor passed with SCM_RIGHTS. Used by both
 * ends, so nothing here knows which side it runs on.
 */
#ifndef VGPU_CTL_MSG_H
#define VGPU_CTL_MSG_H

#include <stddef.h>
#include <stdint.h>

#define CTL_MAX_FDS 4

/*
 * Send len bytes from buf as one message, with nfds (<= CTL_MAX_FDS)
 * descriptors attached. Never blocks on a full peer (MSG_DONTWAIT) and
 * never raises SIGPIPE. Returns 0 or a negative errno (-EAGAIN when the
 * peer does not read). Also sends the hello reply on a client socket.
 */
int ctl_send_fds(int sock, const void *buf, size_t len, const int *fds,
		 int nfds);

/*
 * Send one control message: header {type, len} + payload, with pass_fd
 * attached when it is >= 0. Blocks until the message is queued (the
 * peer is ours); returns 0 or a negative errno.
 */
int ctl_send(int sock, uint32_t type, const void *payload, uint32_t len,
	     int pass_fd);

/* ctl_send with nfds (<= CTL_MAX_FDS) descriptors attached, in order. */
int ctl_send_n(int sock, uint32_t type, const void *payload, uint32_t len,
	       const int *fds, int nfds);

/*
 * Receive one control message. The payload (at most max bytes) goes to
 * payload and its size to *len. A passed descriptor is returned in
 * *pass_fd (close-on-exec), or -1 when none came; when pass_fd is NULL a
 * message that carries one is an error (the descriptor is closed).
 * Returns 0; -EPIPE when the peer closed the socket; -EMSGSIZE when the
 * message was longer than the header + max; -EPROTO for a malformed
 * message (short header, len not matching the packet, more than one
 * descriptor, truncated control data); other negative errnos from
 * recvmsg. On error no descriptor is left open.
 */
int ctl_recv(int sock, uint32_t *type, void *payload, uint32_t max,
	     uint32_t *len, int *pass_fd);

/*
 * ctl_recv for messages with up to maxfds (<= CTL_MAX_FDS) descriptors:
 * they land in fds[0 .. *nfds) (close-on-exec), in the order sent. More
 * than maxfds is -EPROTO (all closed). The caller checks *nfds against
 * what the message type needs and closes what it does not keep.
 */
int ctl_recv_n(int sock, uint32_t *type, void *payload, uint32_t max,
	       uint32_t *len, int *fds, int maxfds, int *nfds);

/* A short name for a message type, for logs ("CONFIG", "?"). */
const char *ctl_type_name(uint32_t type);

#endif /* VGPU_CTL_MSG_H */
