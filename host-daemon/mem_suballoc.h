/* SPDX-License-Identifier: MIT */
/*
 * The vGPU's device-memory sub-allocator: hands out 256-byte aligned ranges
 * of one virtual address window and keeps physical memory mapped in
 * granules exactly where live allocations are. Pure bookkeeping: the
 * mapping itself is done by two callbacks (the worker passes the backend's
 * mem_map/mem_unmap), so this file links and tests without any backend.
 *
 * Not thread-safe: the worker serialises calls with its own lock.
 */
#ifndef VGPU_MEM_SUBALLOC_H
#define VGPU_MEM_SUBALLOC_H

#include <stdint.h>

#define SUBALLOC_ALIGN 256u

/* Map or unmap [va, va + len) (granule aligned); 0 or a nonzero error. */
typedef int (*suballoc_map_fn)(void *ctx, uint64_t va, uint64_t len);

struct sa_block;

struct suballoc {
	uint64_t base, size; /* the window */
	uint64_t granule;    /* physical granularity, a power of two */
	uint64_t quota;	     /* most bytes of granules mapped at once */
	uint64_t used;	     /* bytes in live allocations (rounded) */
	uint64_t mapped;     /* bytes of granules mapped */
	uint64_t nallocs, max_allocs;
	struct sa_block *root;	/* every block, free or used, by address */
	struct sa_block *first; /* lowest block; blocks tile the window */
	suballoc_map_fn map, unmap;
	void *ctx;
};

/*
 * Set up an empty window. base, size and granule must be granule
 * aligned (granule a power of two >= SUBALLOC_ALIGN); max_allocs bounds
 * the host memory the bookkeeping may use (0 = no bound).
 * Returns 0, -EINVAL or -ENOMEM.
 */
int suballoc_init(struct suballoc *sa, uint64_t base, uint64_t size,
		  uint64_t granule, uint64_t quota, uint64_t max_allocs,
		  suballoc_map_fn map, suballoc_map_fn unmap, void *ctx);

/* Drop all bookkeeping. Calls no callback: free the owners first. */
void suballoc_destroy(struct suballoc *sa);

/*
 * Allocate bytes (rounded up to SUBALLOC_ALIGN) for owner (nonzero).
 * Returns 0 and the address in *out; -EINVAL for a zero size or owner;
 * -ENOMEM when the window, the quota or the allocation count is
 * exhausted; or the map callback's positive error. On any error nothing
 * changed (granules mapped on the way are unmapped again).
 */
int suballoc_alloc(struct suballoc *sa, uint64_t bytes, uint32_t owner,
		   uint64_t *out);

/*
 * Allocate exactly [addr, addr + bytes) (addr SUBALLOC_ALIGN-aligned) for
 * owner: bringing an allocation back where it was (a save point). 0;
 * -EEXIST when the range is not free; otherwise as suballoc_alloc.
 */
int suballoc_alloc_at(struct suballoc *sa, uint64_t addr, uint64_t bytes,
		      uint32_t owner);

/*
 * Walk the live allocations in address order: *pos = 0 (or the window's
 * base) starts; each call returns 1 with the next allocation at or above
 * *pos (and moves *pos past it), 0 at the end.
 */
int suballoc_next(const struct suballoc *sa, uint64_t *pos, uint64_t *start,
		  uint64_t *size, uint32_t *owner);

/*
 * Free the allocation that starts at addr. Returns 0; -EINVAL when no
 * live allocation starts there (double free, interior pointer); -EPERM
 * when it belongs to another owner (nothing is freed); or the unmap
 * callback's positive error (the allocation is freed all the same).
 */
int suballoc_free(struct suballoc *sa, uint64_t addr, uint32_t owner);

/*
 * Map every live allocation's granules again (a resume: the table is
 * kept while the memory was given back), in the spans a later free
 * unmaps, so that each unmap matches one map; with the callbacks given
 * (a suspended worker's own ones do nothing). On a map error nothing
 * stays mapped; returns 0 or the map callback's positive error (-EIO
 * for a negative one). suballoc_unmap_live undoes it (every span is
 * tried; the first error is returned). The quota's count is unchanged.
 */
int suballoc_map_live(const struct suballoc *sa, suballoc_map_fn map,
		      suballoc_map_fn unmap, void *ctx);
int suballoc_unmap_live(const struct suballoc *sa, suballoc_map_fn unmap,
			void *ctx);

/* Free every allocation of owner. Returns 0 or the first unmap error. */
int suballoc_free_owner(struct suballoc *sa, uint32_t owner);

/*
 * Check that [addr, addr + len) (len >= 1) lies inside one live
 * allocation (its size rounded up to SUBALLOC_ALIGN, as mapped) of owner.
 * Returns 0 (and the allocation's start and size when start/size are not
 * NULL), -EINVAL when it is not inside one allocation, -EPERM when that
 * allocation is another owner's.
 */
int suballoc_lookup(const struct suballoc *sa, uint64_t addr, uint64_t len,
		    uint32_t owner, uint64_t *start, uint64_t *size);

#endif /* VGPU_MEM_SUBALLOC_H */
