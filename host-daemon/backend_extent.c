/* SPDX-License-Identifier: MIT */
/*
 * The physical extents of a VA window (see backend_extent.h).
 *
 * Two bitmaps (mapped, backed) make runs cheap to find, 64 granules per
 * word; a per-granule slot index makes "which extent backs granule i" one
 * load. Extents live in a slot array with a free list threaded through
 * the free slots' `first` field.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "backend_extent.h"

static void bits_set(uint64_t *bits, uint64_t first, uint64_t count, bool v)
{
	uint64_t i = first, end = first + count, m;

	while (i < end) {
		if (i % 64 == 0 && end - i >= 64) {
			bits[i / 64] = v ? ~0ull : 0;
			i += 64;
			continue;
		}
		m = 1ull << (i % 64);
		if (v)
			bits[i / 64] |= m;
		else
			bits[i / 64] &= ~m;
		i++;
	}
}

/* The first granule >= pos (below end) whose bit is v, or end. */
static uint64_t bits_find(const uint64_t *bits, uint64_t pos, uint64_t end,
			  bool v)
{
	uint64_t w;

	while (pos < end) {
		w = bits[pos / 64];
		if (!v)
			w = ~w;
		w &= ~0ull << (pos % 64);
		if (w) {
			pos = pos / 64 * 64 + (uint64_t)__builtin_ctzll(w);
			return pos < end ? pos : end;
		}
		pos = (pos / 64 + 1) * 64;
	}
	return end;
}

int extent_map_init(struct extent_map *em, uint64_t ngranules)
{
	uint64_t words = (ngranules + 63) / 64;

	memset(em, 0, sizeof(*em));
	em->ngranules = ngranules;
	em->free_head = UINT32_MAX;
	if (ngranules > UINT32_MAX)
		return -ENOMEM;
	em->mapped = calloc(words ? words : 1, sizeof(uint64_t));
	em->backed = calloc(words ? words : 1, sizeof(uint64_t));
	em->slot = calloc(ngranules ? ngranules : 1, sizeof(uint32_t));
	if (!em->mapped || !em->backed || !em->slot) {
		extent_map_destroy(em);
		return -ENOMEM;
	}
	return 0;
}

void extent_map_destroy(struct extent_map *em)
{
	free(em->mapped);
	free(em->backed);
	free(em->slot);
	free(em->ext);
	memset(em, 0, sizeof(*em));
	em->free_head = UINT32_MAX;
}

bool extent_range_mapped(const struct extent_map *em, uint64_t first,
			 uint64_t count)
{
	return bits_find(em->mapped, first, first + count, false) ==
	       first + count;
}

struct extent *extent_at(const struct extent_map *em, uint64_t i)
{
	if (i >= em->ngranules || !extent_bit(em->backed, i))
		return NULL;
	return &em->ext[em->slot[i]];
}

int extent_map_check(const struct extent_map *em, uint64_t first,
		     uint64_t count, uint64_t limit, uint64_t *fresh)
{
	uint64_t end = first + count, i, j, n = 0, backed, mapped;

	if (bits_find(em->mapped, first, end, true) != end)
		return -EINVAL;
	for (i = first; i < end; i = j) {
		i = bits_find(em->backed, i, end, false);
		j = bits_find(em->backed, i, end, true);
		n += j - i;
	}
	backed = em->nbacked + n;
	mapped = em->nmapped + count;
	if (limit && backed > mapped && backed > limit)
		return -ENOMEM;
	*fresh = n;
	return 0;
}

int extent_next_gap(const struct extent_map *em, uint64_t *pos, uint64_t end,
		    uint64_t max, uint64_t *first, uint64_t *count)
{
	uint64_t i = bits_find(em->backed, *pos, end, false), j;

	if (i >= end)
		return 0;
	j = bits_find(em->backed, i, end, true);
	if (max && j - i > max)
		j = i + max;
	*first = i;
	*count = j - i;
	*pos = j;
	return 1;
}

int extent_reserve(struct extent_map *em)
{
	struct extent *t;
	uint32_t cap;

	if (em->free_head != UINT32_MAX || em->nslots < em->cap)
		return 0;
	if (em->cap >= UINT32_MAX / 2)
		return -ENOMEM;
	cap = em->cap ? em->cap * 2 : 64;
	t = realloc(em->ext, (size_t)cap * sizeof(*t));
	if (!t)
		return -ENOMEM;
	em->ext = t;
	em->cap = cap;
	return 0;
}

struct extent *extent_add(struct extent_map *em, uint64_t first, uint64_t count,
			  uint64_t handle)
{
	struct extent *e;
	uint32_t s;
	uint64_t i;

	if (em->free_head != UINT32_MAX) {
		s = em->free_head;
		em->free_head = (uint32_t)em->ext[s].first;
	} else {
		s = em->nslots++; /* extent_reserve made room */
	}
	e = &em->ext[s];
	e->id = ++em->ids;
	e->first = first;
	e->count = count;
	e->live = count;
	e->handle = handle;
	for (i = first; i < first + count; i++)
		em->slot[i] = s;
	bits_set(em->backed, first, count, true);
	bits_set(em->mapped, first, count, true);
	em->nbacked += count;
	em->nmapped += count;
	em->count++;
	return e;
}

void extent_remove(struct extent_map *em, struct extent *e)
{
	uint32_t s = (uint32_t)(e - em->ext);

	/* its mapped granules go too (a failed map undoing itself) */
	em->nmapped -= e->live;
	bits_set(em->mapped, e->first, e->count, false);
	bits_set(em->backed, e->first, e->count, false);
	em->nbacked -= e->count;
	em->count--;
	memset(e, 0, sizeof(*e));
	e->first = em->free_head;
	em->free_head = s;
}

uint64_t extent_revive(struct extent_map *em, uint64_t first, uint64_t count)
{
	uint64_t end = first + count, i, n = 0;
	struct extent *e;

	for (i = first; i < end; i++) {
		if (!extent_bit(em->backed, i) || extent_bit(em->mapped, i))
			continue;
		e = &em->ext[em->slot[i]];
		e->live++;
		em->mapped[i / 64] |= 1ull << (i % 64);
		em->nmapped++;
		n++;
	}
	return n;
}

int extent_fill(struct extent_map *em, uint64_t first, uint64_t count,
		uint64_t max,
		int (*back)(void *ctx, uint64_t first, uint64_t count,
			    uint64_t *handle),
		int (*drop)(void *ctx, const struct extent *e), void *ctx)
{
	uint64_t mark = em->ids, pos = first, g, n, handle;
	struct extent *e;
	int rc = 0;

	while (extent_next_gap(em, &pos, first + count, max, &g, &n)) {
		if (extent_reserve(em)) {
			rc = -ENOMEM;
			break;
		}
		handle = 0;
		if (back && (rc = back(ctx, g, n, &handle)))
			break;
		extent_add(em, g, n, handle);
	}
	if (!rc)
		return 0;
	/* undo: the extents this call added (ids above mark) */
	pos = first;
	while ((e = extent_next(em, &pos)) && e->first < first + count) {
		if (e->id <= mark)
			continue;
		if (drop)
			drop(ctx, e);
		extent_remove(em, e);
	}
	return rc;
}

int extent_unmap(struct extent_map *em, uint64_t first, uint64_t count,
		 int (*drop)(void *ctx, const struct extent *e), void *ctx)
{
	uint64_t end = first + count, i, j;
	struct extent *e;
	int rc;

	if (bits_find(em->mapped, first, end, false) != end)
		return -EINVAL;
	for (i = first; i < end; i = j) {
		e = &em->ext[em->slot[i]]; /* mapped, so backed */
		j = e->first + e->count < end ? e->first + e->count : end;
		if (e->live == j - i) {
			/* its last mapped granules: the memory goes */
			rc = drop ? drop(ctx, e) : 0;
			if (rc)
				return rc;
			extent_remove(em, e);
			continue;
		}
		e->live -= j - i;
		bits_set(em->mapped, i, j - i, false);
		em->nmapped -= j - i;
	}
	return 0;
}

struct extent *extent_next(const struct extent_map *em, uint64_t *pos)
{
	uint64_t i = bits_find(em->backed, *pos, em->ngranules, true);
	struct extent *e;

	if (i >= em->ngranules)
		return NULL;
	e = &em->ext[em->slot[i]];
	*pos = e->first + e->count;
	return e;
}

int extent_next_run(const struct extent_map *em, const uint64_t *bits,
		    uint64_t *pos, uint64_t end, uint64_t *first,
		    uint64_t *count)
{
	uint64_t i, j;

	if (end > em->ngranules)
		end = em->ngranules;
	i = bits_find(bits, *pos, end, true);
	if (i >= end)
		return 0;
	j = bits_find(bits, i, end, false);
	*first = i;
	*count = j - i;
	*pos = j;
	return 1;
}
