/* SPDX-License-Identifier: MIT */
/*
 * The local transport: say hello to vgpud on its client socket, receive
 * the ring memfd and the two doorbell eventfds from the vGPU's worker,
 * and map the ring. The socket stays open: after the handshake it only
 * tells each side whether the other is still there.
 */
#ifndef VGPU_CLIENT_TRANSPORT_H
#define VGPU_CLIENT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#define CLIENT_DEFAULT_SOCKET	    "/run/vgpu/client.sock"
#define CLIENT_HANDSHAKE_TIMEOUT_MS 30000
#define CLIENT_MAX_RING_BYTES	    (1ull << 32)

struct client_transport {
	int sock;
	int submit_efd;
	int complete_efd;
	void *map;
	uint64_t map_size;
};

/*
 * Connects to path, asks for the vGPU called name and maps its ring.
 * Returns 0, or -1 with one sentence in err saying why (unreachable
 * daemon, the daemon's refusal, a bad reply). Owns nothing on failure.
 */
int client_transport_connect(struct client_transport *t, const char *path,
			     const char *name, char *err, size_t errlen);

/* Unmaps the ring and closes every descriptor. */
void client_transport_close(struct client_transport *t);

#endif /* VGPU_CLIENT_TRANSPORT_H */
