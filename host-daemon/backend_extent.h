/* SPDX-License-Identifier: MIT */
/*
 * The physical side of a vGPU's VA window, as both backends keep it: which
 * granules are mapped for the clients, and which physical chunks
 * ("extents") back them. Pure bookkeeping; the backend makes the driver
 * calls (cuda: one cuMemCreate + cuMemMap per extent) and this file says
 * which.
 *
 * Why extents: one physical allocation per granule made a cross-GPU move
 * of 8 GiB cost 4,096 cuMemCreate calls to prepare and 8,192 cuMemUnmap /
 * cuMemMap calls with the clients held. So each mem_map call gets one
 * extent per run of granules it backs anew (at most EXTENT_MAX_BYTES
 * each), and a move maps the target extent by extent.
 *
 * The driver can only unmap exactly what one cuMemMap mapped (cuda.h,
 * cuMemUnmap), and cuMemMap maps a whole allocation (offset 0). The
 * worker's sub-allocator unmaps exactly the ranges it mapped, so an
 * extent is normally unmapped whole. A caller that maps a range in one
 * call and unmaps parts of it later (a resume maps whole runs) leaves an
 * extent partly unmapped: its free granules are "kept" (still backed, not
 * mapped for anyone) until its last mapped granule goes, and a later map
 * of a kept granule takes it back without a driver call. Kept granules
 * count as backed: extent_map_check refuses to let them push the backed
 * total over the quota.
 *
 * Not thread-safe: the backend calls it under its own lock.
 */
#ifndef VGPU_BACKEND_EXTENT_H
#define VGPU_BACKEND_EXTENT_H

#include <stdbool.h>
#include <stdint.h>

/* The largest physical chunk one extent gets. */
#define EXTENT_MAX_BYTES (1ull << 30)

struct extent {
	uint64_t id;	 /* never reused while the map lives; 0: a free slot */
	uint64_t first;	 /* granule index in the window */
	uint64_t count;	 /* granules */
	uint64_t live;	 /* of them, mapped for the clients */
	uint64_t handle; /* the backend's (cuda: the allocation handle) */
};

struct extent_map {
	uint64_t ngranules;
	uint64_t *mapped; /* bit per granule: mapped for the clients */
	uint64_t *backed; /* bit per granule: inside an extent */
	uint32_t *slot;	  /* per backed granule: its extent's index */
	struct extent *ext;
	uint32_t nslots, cap; /* slots used so far, allocated */
	uint32_t free_head;   /* a free slot, or UINT32_MAX */
	uint64_t ids;	      /* the last id given */
	uint64_t nmapped;     /* granules mapped */
	uint64_t nbacked;     /* granules backed (mapped + kept) */
	uint32_t count;	      /* extents */
};

/* An empty map of ngranules granules. 0 or -ENOMEM. */
int extent_map_init(struct extent_map *em, uint64_t ngranules);
void extent_map_destroy(struct extent_map *em);

static inline bool extent_bit(const uint64_t *bits, uint64_t i)
{
	return (bits[i / 64] >> (i % 64)) & 1;
}

/* Whether every granule of [first, first + count) is mapped. */
bool extent_range_mapped(const struct extent_map *em, uint64_t first,
			 uint64_t count);

/* The extent that backs granule i, or NULL. */
struct extent *extent_at(const struct extent_map *em, uint64_t i);

/*
 * Whether [first, first + count) (inside the window) may be mapped:
 * 0, with *fresh the granules no extent backs yet; -EINVAL when one of
 * them is mapped already; -ENOMEM when limit (granules; 0: none) would
 * be exceeded by the backed total while some backed granules are kept
 * (the caller's own quota governs what is mapped).
 */
int extent_map_check(const struct extent_map *em, uint64_t first,
		     uint64_t count, uint64_t limit, uint64_t *fresh);

/*
 * The next run of granules no extent backs inside [*pos, end), at most max
 * long: 1 with it in *first, *count (and *pos past it), 0 when none is
 * left.
 */
int extent_next_gap(const struct extent_map *em, uint64_t *pos, uint64_t end,
		    uint64_t max, uint64_t *first, uint64_t *count);

/* Room for one more extent, so that the next extent_add cannot fail
 * (call it before the driver allocates). 0 or -ENOMEM. */
int extent_reserve(struct extent_map *em);

/*
 * A new extent [first, first + count) with handle, every granule mapped.
 * Needs an extent_reserve() since the last add, and granules no extent
 * backs (the caller checked). Returns it (valid until the next add).
 */
struct extent *extent_add(struct extent_map *em, uint64_t first, uint64_t count,
			  uint64_t handle);

/* Forget e wholly (the backend has freed its memory). */
void extent_remove(struct extent_map *em, struct extent *e);

/* Map the kept granules of [first, first + count) again (no driver call:
 * they are still backed). Returns how many. */
uint64_t extent_revive(struct extent_map *em, uint64_t first, uint64_t count);

/*
 * Back every gap of [first, first + count) (granules no extent backs)
 * with new extents of at most max granules, in address order: back(ctx,
 * first, count, &handle) gives each its memory (NULL: handle 0). Both
 * backends map this way. On failure the extents this call added go to
 * drop (may be NULL) and are forgotten, so nothing changed; the result is
 * -ENOMEM (no room for an extent) or back's nonzero result.
 */
int extent_fill(struct extent_map *em, uint64_t first, uint64_t count,
		uint64_t max,
		int (*back)(void *ctx, uint64_t first, uint64_t count,
			    uint64_t *handle),
		int (*drop)(void *ctx, const struct extent *e), void *ctx);

/*
 * Unmap [first, first + count) for the clients. Every granule must be
 * mapped (else -EINVAL, nothing changed). Each extent left without a
 * mapped granule goes to drop(ctx, e), which frees its memory, and is
 * forgotten; the others keep the granules (kept). When drop fails (its
 * nonzero result is returned) that extent and everything after it in the
 * range stay mapped.
 */
int extent_unmap(struct extent_map *em, uint64_t first, uint64_t count,
		 int (*drop)(void *ctx, const struct extent *e), void *ctx);

/* The extents in address order: *pos = 0 starts; NULL at the end. */
struct extent *extent_next(const struct extent_map *em, uint64_t *pos);

/*
 * The next run of set bits of bits (em->mapped or em->backed) inside
 * [*pos, end): 1 with it in *first, *count (and *pos past it), or 0.
 */
int extent_next_run(const struct extent_map *em, const uint64_t *bits,
		    uint64_t *pos, uint64_t end, uint64_t *first,
		    uint64_t *count);

#endif /* VGPU_BACKEND_EXTENT_H */
