/* SPDX-License-Identifier: MIT */
/*
 * How the library reaches its vGPU's ring. Two transports fill the same
 * struct:
 *   local - say hello to vgpud on its client socket, receive the ring
 *           memfd and the two doorbell eventfds from the vGPU's worker,
 *           and map the ring. The socket stays open: after the handshake
 *           it only tells each side whether the other is still there.
 *   pci   - inside a VM: open /dev/vgpuN (vgpu_guest.ko), map its ring;
 *           that one fd is both doorbells, and there is no socket (-1).
 */
#ifndef VGPU_CLIENT_TRANSPORT_H
#define VGPU_CLIENT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>

#include <vgpu/guest_uapi.h>
#include <vgpu/protocol.h>

#define CLIENT_DEFAULT_SOCKET	    "/run/vgpu/client.sock"
#define CLIENT_DEFAULT_DEVICE	    VGPU_GUEST_DEV_PREFIX "0"
#define CLIENT_HANDSHAKE_TIMEOUT_MS 30000
#define CLIENT_MAX_RING_BYTES	    (1ull << 32)

struct client_transport {
	int sock;
	int submit_efd;
	int complete_efd;
	void *map;
	uint64_t map_size;
	char vgpu_name[VGPU_NAME_MAX]; /* pci: the device's vGPU */
	unsigned int minor;	       /* the host's protocol minor version */
};

/*
 * The device for the pci transport, or NULL for the local one: pci when
 * VGPU_SOCKET (socket_env) is unset or empty and either VGPU_DEVICE
 * (device_env) names a device or CLIENT_DEFAULT_DEVICE exists.
 */
const char *client_transport_pick_device(const char *socket_env,
					 const char *device_env);

/*
 * Opens the device at path (one channel of the vGPU) and maps its ring.
 * name, when set, must be the device's vGPU name. Returns 0, or -1 with
 * one sentence in err. Owns nothing on failure.
 */
int client_transport_open_pci(struct client_transport *t, const char *path,
			      const char *name, char *err, size_t errlen);

/*
 * Connects to path, asks for the vGPU called name and maps its ring.
 * Returns 0, or -1 with one sentence in err saying why (unreachable
 * daemon, the daemon's refusal, a bad reply). Owns nothing on failure.
 */
int client_transport_connect(struct client_transport *t, const char *path,
			     const char *name, char *err, size_t errlen);

/* Unmaps the ring and closes every descriptor (either transport). */
void client_transport_close(struct client_transport *t);

#endif /* VGPU_CLIENT_TRANSPORT_H */
