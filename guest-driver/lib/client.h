/* SPDX-License-Identifier: MIT */
/*
 * The process's connection to its vGPU, made once by cuInit and shared
 * by every thread: the transport, the ring, the device description, the
 * handle registry and the allocation table.
 */
#ifndef VGPU_CLIENT_H
#define VGPU_CLIENT_H

#include <pthread.h>

#include <cuda.h>
#include <vgpu/protocol.h>

#include "client_alloc_table.h"
#include "client_order.h"
#include "client_region.h"
#include "client_registry.h"
#include "client_ring.h"
#include "client_transport.h"

struct client_ctx;

struct client {
	struct client_transport transport;
	struct client_ring ring;
	/* cached at cuInit, read again after a resize (client_info.c);
	 * info_lock guards it from then on */
	struct vgpu_device_info info;
	pthread_mutex_t info_lock;
	struct client_registry registry;
	struct client_alloc_table allocs;
	struct client_region_table regions; /* cuMemAllocHost buffers */
	/* the worker has one staging buffer per client: one image at a time */
	pthread_mutex_t stage_lock;
	/* the device's primary context */
	pthread_mutex_t primary_lock;
	struct client_ctx *primary;
	unsigned int primary_refs;
	unsigned int primary_flags;
	struct client_order order; /* the legacy stream's implicit waits */
};

/* VGPU_OP_GET_DEVICE_INFO into *info (client_core.c). */
CUresult client_fetch_info(struct client *c, struct vgpu_device_info *info);

/*
 * Before a device query: when the ring header's change_count differs from
 * the cached description's (the vGPU was resized or moved), read the
 * description again. Then lock info to read it (client_info.c).
 */
void client_info_refresh(struct client *c);
void client_info_lock(struct client *c);
void client_info_unlock(struct client *c);

/* cuInit's work, done once per process; later calls return its result. */
CUresult client_init(void);

/* The connection, or CUDA_ERROR_NOT_INITIALIZED before a successful
 * cuInit (and in a child after fork, as CUDA). */
CUresult client_get(struct client **c);

/* client_get plus a valid current context (CUDA_ERROR_INVALID_CONTEXT):
 * the entry check of every call that works in a context. */
CUresult client_enter(struct client **c);

/* Defined in cuda_context.c. */
CUresult client_ctx_require(struct client *c);

/* The worker's stream handle for a CUstream: NULL and the legacy and
 * per-thread default streams are handle 0; anything not registered is
 * CUDA_ERROR_INVALID_HANDLE. Defined in cuda_stream.c. */
CUresult client_stream_handle(struct client *c, CUstream s, uint32_t *h);

/*
 * A stream that work is submitted to, between client_stream_begin and
 * client_stream_end: begin finds the worker's handle and queues the
 * waits the legacy default stream's semantics ask for (client_order.h;
 * stages: the work copies host memory when submitted); end notes the
 * work for later waits, lets go of the stream and returns err. Defined
 * in cuda_stream.c.
 */
struct client_stream_use {
	uint32_t handle;
	int legacy;			   /* NULL or CU_STREAM_LEGACY */
	struct client_obj *obj;		   /* a created stream's reference */
	struct client_order_stream *order; /* a blocking stream's part */
};
CUresult client_stream_begin(struct client *c, CUstream s, int stages,
			     struct client_stream_use *u);
CUresult client_stream_end(struct client *c, struct client_stream_use *u,
			   CUresult err);

/* Mapped host memory works on a host (the local transport) whose worker
 * maps regions (protocol 1.5), not in a VM: the guest's memory is not
 * the worker's to map. */
static inline int client_can_map_host(const struct client *c)
{
	return c->transport.sock >= 0 &&
	       c->transport.minor >= VGPU_PROTO_MINOR_HOST_MAP;
}

/* cuLaunchKernel with a thread-block cluster shape (NULL: none), or
 * cooperative (cuLaunchCooperativeKernel; no cluster then). Defined in
 * cuda_launch.c. */
CUresult client_launch(CUfunction f, const uint32_t grid[3],
		       const uint32_t block[3], unsigned int sharedMemBytes,
		       CUstream hStream, void **kernelParams, void **extra,
		       const uint32_t *cluster, int cooperative);

/* The id of a CUstream (cuStreamGetId); per_thread: NULL is the
 * per-thread default stream. CUDA_ERROR_INVALID_HANDLE for anything not
 * registered. Defined in cuda_stream.c. */
CUresult client_stream_id(struct client *c, CUstream s, int per_thread,
			  unsigned long long *id);

/* Entry check of a call about the device (no context needed): the
 * client, device 0 (else CUDA_ERROR_INVALID_DEVICE), its description
 * read again after a resize. Defined in cuda_device.c. */
CUresult client_device_enter(CUdevice dev, struct client **c);

/* Frees the device allocation that starts at dptr (cuMemFree without
 * its context check: the pools give memory back from any thread).
 * Defined in cuda_memory.c. */
CUresult client_mem_free(struct client *c, CUdeviceptr dptr);

/* Destroys every stream, event, library, device allocation and host
 * buffer of the process (cuDevicePrimaryCtxReset); a context must be
 * current. The first error, the rest destroyed anyway. Defined in
 * cuda_reset.c. */
CUresult client_reset(struct client *c);

/* A worker handle from a completion's r0: 1 .. UINT32_MAX. */
static inline int client_handle_ok(uint64_t r0)
{
	return r0 != 0 && r0 <= UINT32_MAX;
}

#endif /* VGPU_CLIENT_H */
