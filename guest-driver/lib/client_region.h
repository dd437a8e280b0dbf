/* SPDX-License-Identifier: MIT */
/*
 * Host regions (protocol 1.2): page-locked host memory that the client
 * and the worker both map, handed out by cuMemAllocHost/cuMemHostAlloc.
 * A copy from or to a region is one descriptor, with no bounce through
 * the ring's data area.
 *
 * The table records every host buffer cuMemAllocHost handed out: regions
 * (handle != 0) and the plain page-aligned allocations used when the
 * worker has no regions (handle 0), so cuMemFreeHost knows how to free
 * each and refuses anything else.
 */
#ifndef VGPU_CLIENT_REGION_H
#define VGPU_CLIENT_REGION_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#include "client_ring.h"

struct client_region {
	uint64_t base;	 /* host address of the mapping */
	uint64_t size;	 /* bytes mapped (the worker's r1) */
	uint32_t handle; /* the worker's region, 0 = plain host memory */
	uint64_t id;	 /* CU_POINTER_ATTRIBUTE_BUFFER_ID (set by add) */
	int mapped; /* kernels reach it at base (client_region_map_device) */
	unsigned int flags; /* CU_MEMHOSTALLOC_* it was allocated with */
};

struct client_region_table {
	pthread_mutex_t lock;
	struct client_region *v; /* sorted by base, disjoint */
	size_t n, cap;
	int unsupported; /* the worker answered CREATE with NOT_SUPPORTED */
	uint64_t ids;	 /* the last buffer id handed out */
};

void client_region_table_init(struct client_region_table *t);
/* Forgets the entries; the memory stays mapped (the process is ending). */
void client_region_table_fini(struct client_region_table *t);

/* Records one buffer; 0, or -1 (size 0, wraps, overlaps one, no memory). */
int client_region_add(struct client_region_table *t,
		      const struct client_region *reg);
/* Forgets the buffer that starts at base (*out gets it); 0, or -1. */
int client_region_remove(struct client_region_table *t, uint64_t base,
			 struct client_region *out);
/*
 * True (and *out set, if given) when [ptr, ptr + len) lies entirely
 * inside one buffer; len 0 asks about the byte at ptr.
 */
int client_region_find(struct client_region_table *t, uint64_t ptr,
		       uint64_t len, struct client_region *out);
/* A copy of every buffer at this moment (*out, the caller frees it; NULL
 * when there are none): the count, or -1 without memory. */
long client_region_snapshot(struct client_region_table *t,
			    struct client_region **out);

/*
 * Creates a region of at least bytes on the worker, receives its memfd
 * from the client socket and maps it. *out gets address, size, handle.
 * Returns the worker's status as it came (CUDA_ERROR_NOT_SUPPORTED from
 * a worker without regions), the dead error, or CUDA_ERROR_OUT_OF_MEMORY
 * when the worker's packet was not what the protocol says (the region
 * is destroyed again and whatever came is closed).
 */
CUresult client_region_create(struct client_ring *r, uint64_t bytes,
			      struct client_region *out);
/*
 * Maps a region just created into the device (mapped host memory): asks
 * the worker where kernels find it and moves this process's mapping
 * there, so that its host and device addresses are one, as CUDA's
 * unified addressing promises. CUDA_ERROR_NOT_SUPPORTED when the worker
 * cannot, or when that address is taken in this process; the mapping is
 * then left where it was.
 */
CUresult client_region_map_device(struct client_ring *r,
				  struct client_region *reg);
/* Destroys the worker's region and unmaps it (unmapped whatever the
 * worker answers). */
CUresult client_region_destroy(struct client_ring *r,
			       const struct client_region *reg);

#endif /* VGPU_CLIENT_REGION_H */
