/* SPDX-License-Identifier: MIT */
/*
 * Allocator for the ring's data area: the bytes that descriptors point
 * into (copy chunks, kernel parameter buffers, names, device info).
 *
 * A region is handed out when a descriptor is built and given back once
 * the descriptor's completion has been reaped (and read, where it carries
 * output), so the worker never sees a region reused while a descriptor
 * that refers to it is in flight. The allocator itself knows nothing of
 * descriptors; client_ring ties regions to them.
 *
 * Not thread-safe: the ring lock guards it.
 */
#ifndef VGPU_CLIENT_DATA_H
#define VGPU_CLIENT_DATA_H

#include <stddef.h>
#include <stdint.h>

#define CLIENT_DATA_ALIGN 64u /* every region starts on a cache line */
/* Requests below this come from the top of the area, larger ones from
 * the bottom, so small parameter buffers do not split copy chunks. */
#define CLIENT_DATA_SMALL (64u << 10)

struct client_data_extent {
	uint64_t off;
	uint64_t len;
};

struct client_data {
	uint64_t size;
	uint64_t free_bytes;
	uint32_t live;	/* regions handed out */
	uint32_t nfree; /* free extents, sorted by offset, coalesced */
	uint32_t cap;
	struct client_data_extent *free;
};

/* An area of size bytes (a multiple of CLIENT_DATA_ALIGN), all free. */
int client_data_init(struct client_data *d, uint64_t size);
void client_data_fini(struct client_data *d);

/* The size a request of len bytes really takes. */
static inline uint64_t client_data_round(uint64_t len)
{
	return (len + CLIENT_DATA_ALIGN - 1) &
	       ~(uint64_t)(CLIENT_DATA_ALIGN - 1);
}

/*
 * Hands out len bytes (len > 0) at *off. Returns 0, or -1 when no free
 * extent is large enough (or memory for the bookkeeping ran out); the
 * caller then waits for regions to come back.
 */
int client_data_alloc(struct client_data *d, uint64_t len, uint64_t *off);

/* Gives back a region from client_data_alloc, with the same len. */
void client_data_free(struct client_data *d, uint64_t off, uint64_t len);

#endif /* VGPU_CLIENT_DATA_H */
