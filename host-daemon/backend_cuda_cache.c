/* SPDX-License-Identifier: MIT */
/*
 * A few idle green contexts, kept after a resize instead of destroyed.
 *
 * A resize or slice move spends most of its time building the new green
 * context (split, descriptor, cuGreenCtxCreate, marker stream: about
 * 1.8 ms on an H200 under MPS), not switching to it (about 10 us). A
 * scheduler that lends and takes back SMs, or moves a vGPU between two
 * slices, asks for the same few group sets again and again. So when a
 * retired context has drained (resize_reclaim), its fences and events
 * are freed but the context, its marker stream and its streams are kept
 * here, keyed by device and group set; the next resize to that set takes
 * it instead of building one.
 *
 * A migration leaves one on the GPU it left, too, and takes one for the
 * GPU and groups it goes to: the first context a process makes on a GPU
 * costs about 80 ms (H200: the driver sets up the process's state there),
 * later ones about 2 ms, and a kept one nothing. So a vGPU moved away and
 * back pays that once.
 *
 * Its drained streams are kept with it too (up to CUDA_SLICE_SPARES_MAX),
 * and the next switch or migration to it takes them instead of making
 * new ones (a vGPU that lends and takes back its groups every burst
 * would make and destroy its streams, hardware queues, each time):
 * making ready a kept slice ("new context" in the worker's log) took
 * 0.011-0.020 ms on an H200 instead of 0.03-0.05 (sched-bench, fair,
 * lc's resizes). While the vGPU's streams stay the same, each gets the
 * one it had there; nothing depends on that (they are all alike). Those
 * the switch does not take are destroyed after it.
 *
 * Each kept context (and its streams) costs device memory outside the
 * vGPU's quota and counts as a context of the MPS client, so there are
 * few:
 * CUDA_SLICE_CACHE_DEFAULT, or VGPU_CUDA_SLICE_CACHE (0 to
 * CUDA_SLICE_CACHE_MAX; 0 turns the cache off). The oldest goes first.
 * Main thread only (resize and reclaim), like b->retired.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend_cuda_int.h"

/* The group set as a mask; 0 (not kept) when a group index does not
 * fit (the leftover slice of a GPU with 64 groups). */
uint64_t cuda_groups_mask(const uint32_t *groups, uint32_t ngroups)
{
	uint64_t mask = 0;
	uint32_t i;

	for (i = 0; i < ngroups; i++) {
		if (groups[i] >= 64)
			return 0;
		mask |= 1ull << groups[i];
	}
	return mask;
}

/* How many idle contexts to keep: the environment's word, if sane. */
uint32_t cuda_cache_size_from_env(void)
{
	const char *s = getenv("VGPU_CUDA_SLICE_CACHE");
	char *end;
	long v;

	if (!s || !*s)
		return CUDA_SLICE_CACHE_DEFAULT;
	v = strtol(s, &end, 10);
	if (*end || v < 0 || v > CUDA_SLICE_CACHE_MAX)
		return CUDA_SLICE_CACHE_DEFAULT;
	return (uint32_t)v;
}

/* A kept context for this device and group set, taken out of the cache;
 * NULL when there is none. */
struct cuda_slice *cuda_cache_take(struct backend *b, CUdevice dev,
				   uint64_t mask)
{
	uint32_t i;

	for (i = 0; mask && i < b->ncache; i++) {
		struct cuda_slice *sl = b->cache[i];

		if (sl->dev != dev || sl->mask != mask)
			continue;
		memmove(&b->cache[i], &b->cache[i + 1],
			(b->ncache - i - 1) * sizeof(b->cache[0]));
		b->ncache--;
		return sl;
	}
	return NULL;
}

CUresult cuda_slice_stream(struct backend *b, struct cuda_slice *sl,
			   CUstream *out)
{
	if (sl->spare_next < sl->nspare) {
		*out = sl->spare[sl->spare_next++];
		return CUDA_SUCCESS;
	}
	return b->cu.cuGreenCtxStreamCreate(out, sl->green,
					    CU_STREAM_NON_BLOCKING, 0);
}

void cuda_slice_free_spares(struct backend *b, struct cuda_slice *sl)
{
	while (sl->spare_next < sl->nspare)
		b->cu.cuStreamDestroy_v2(sl->spare[sl->spare_next++]);
	free(sl->spare);
	sl->spare = NULL;
	sl->nspare = sl->spare_next = 0;
}

/* The old streams of drained slice sl become its spares, in the order
 * the switch listed them (the default stream first), at most
 * CUDA_SLICE_SPARES_MAX: the rest are destroyed. */
static void keep_streams(struct backend *b, struct cuda_slice *sl)
{
	uint32_t i;

	cuda_slice_free_spares(b, sl);
	sl->spare = sl->old; /* moved: the leftovers are freed without it */
	sl->old = NULL;
	for (i = 0; i < sl->nold; i++) {
		if (!sl->spare[i])
			continue;
		if (sl->nspare < CUDA_SLICE_SPARES_MAX)
			sl->spare[sl->nspare++] = sl->spare[i];
		else
			b->cu.cuStreamDestroy_v2(sl->spare[i]);
	}
	sl->nold = 0;
}

/*
 * A drained retired slice: keep its old streams as spares, free the rest
 * of what the switch away from it left (fences and "passed" events),
 * keep the context and marker (the newest at the end; the oldest is
 * destroyed when full). With the cache off it is destroyed.
 */
void cuda_cache_put(struct backend *b, struct cuda_slice *sl)
{
	uint32_t i;

	if (!sl->mask || !b->cache_max) {
		cuda_slice_free(b, sl);
		return;
	}
	keep_streams(b, sl);
	cuda_slice_free_leftovers(b, sl);
	sl->next = NULL; /* events and users are 0: reclaim checked */
	/* one per group set, and one on any GPU but the vGPU's own (it
	 * only saves a move back there): an older one goes */
	for (i = 0; i < b->ncache; i++)
		if (b->cache[i]->dev == sl->dev &&
		    (b->cache[i]->mask == sl->mask || sl->dev != b->dev))
			break;
	if (i == b->ncache && b->ncache == b->cache_max)
		i = 0;
	if (i < b->ncache) {
		cuda_slice_free(b, b->cache[i]);
		memmove(&b->cache[i], &b->cache[i + 1],
			(b->ncache - i - 1) * sizeof(b->cache[0]));
		b->ncache--;
	}
	b->cache[b->ncache++] = sl;
}

/* Destroy every kept context (close, or a build that failed: perhaps
 * for want of what they hold). */
void cuda_cache_drop(struct backend *b)
{
	while (b->ncache)
		cuda_slice_free(b, b->cache[--b->ncache]);
}

/* A new slice, built; NULL with a sentence in err. */
static struct cuda_slice *slice_new(struct backend *b, CUdevice dev,
				    const uint32_t *groups, uint32_t ngroups,
				    int *rc, char *err, size_t errlen)
{
	struct cuda_slice *sl = calloc(1, sizeof(*sl));

	if (!sl) {
		snprintf(err, errlen, "cuda: out of memory");
		*rc = CUDA_ERROR_OUT_OF_MEMORY;
		return NULL;
	}
	*rc = cuda_slice_build(b, dev, groups, ngroups, sl, err, errlen);
	if (*rc) {
		cuda_slice_free(b, sl);
		return NULL;
	}
	return sl;
}

int cuda_slice_get(struct backend *b, CUdevice dev, const uint32_t *groups,
		   uint32_t ngroups, struct cuda_slice **out, char *err,
		   size_t errlen)
{
	int rc;

	*out = cuda_cache_take(b, dev, cuda_groups_mask(groups, ngroups));
	if (*out)
		return CUDA_SUCCESS;
	*out = slice_new(b, dev, groups, ngroups, &rc, err, errlen);
	if (!*out && b->ncache) {
		/* the kept contexts hold device memory and MPS client
		 * contexts: without them it may work */
		cuda_cache_drop(b);
		*out = slice_new(b, dev, groups, ngroups, &rc, err, errlen);
	}
	return *out ? CUDA_SUCCESS : rc;
}
