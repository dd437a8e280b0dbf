/* SPDX-License-Identifier: MIT */
/*
 * Sub-allocator of a vGPU's virtual address window.
 *
 * Choice of algorithm: address-ordered first fit. The window is tiled by
 * blocks, free or used, kept in one AVL tree keyed by address and in a
 * doubly linked list in address order. Each tree node also carries the
 * largest free block of its subtree, so "the lowest free block that fits"
 * is one O(log n) descent, and "the block that contains addr" is another.
 * Address-ordered first fit packs small allocations into the lowest,
 * already mapped granules; that matters more here than in a heap, because
 * the quota counts mapped granules, not allocated bytes (10,000 allocations
 * of 256 bytes take two 2 MiB granules). A size-class scheme would scatter
 * them over whichever granules its bins point at.
 *
 * Adjacent free blocks are always merged, so the used block nearest to any
 * block is at most two steps away in the list. That gives the granule
 * reference counts for free: a granule partly covered by an allocation is
 * in use by someone else exactly when the nearest used block on either
 * side reaches into it. Granules that an allocation covers entirely can
 * belong to no one else; they are mapped with one callback when it is
 * made and unmapped with the same range when it is freed (the CUDA driver
 * can only unmap whole ranges it mapped). Partly covered granules are
 * mapped and unmapped one at a time.
 */
#include <errno.h>
#include <stdlib.h>

#include "mem_suballoc.h"

struct sa_block {
	uint64_t start, size;
	uint64_t max_free; /* largest free block in this subtree */
	struct sa_block *left, *right;
	struct sa_block *prev, *next; /* address order */
	int height;
	uint32_t owner; /* 0 = free */
};

/* A granule-aligned range to map or unmap. */
struct sa_span {
	uint64_t va, len;
};

static inline uint64_t blk_end(const struct sa_block *b)
{
	return b->start + b->size;
}

static inline int blk_height(const struct sa_block *b)
{
	return b ? b->height : 0;
}

static inline uint64_t blk_max_free(const struct sa_block *b)
{
	return b ? b->max_free : 0;
}

static inline uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Recompute a node's height and max_free from its children. */
static void sa_fix(struct sa_block *n)
{
	int hl = blk_height(n->left), hr = blk_height(n->right);

	n->height = 1 + (hl > hr ? hl : hr);
	n->max_free =
		max_u64(n->owner ? 0 : n->size,
			max_u64(blk_max_free(n->left), blk_max_free(n->right)));
}

static struct sa_block *sa_rotate_right(struct sa_block *n)
{
	struct sa_block *l = n->left;

	n->left = l->right;
	l->right = n;
	sa_fix(n);
	sa_fix(l);
	return l;
}

static struct sa_block *sa_rotate_left(struct sa_block *n)
{
	struct sa_block *r = n->right;

	n->right = r->left;
	r->left = n;
	sa_fix(n);
	sa_fix(r);
	return r;
}

static struct sa_block *sa_balance(struct sa_block *n)
{
	int bf;

	sa_fix(n);
	bf = blk_height(n->left) - blk_height(n->right);
	if (bf > 1) {
		if (blk_height(n->left->left) < blk_height(n->left->right))
			n->left = sa_rotate_left(n->left);
		return sa_rotate_right(n);
	}
	if (bf < -1) {
		if (blk_height(n->right->right) < blk_height(n->right->left))
			n->right = sa_rotate_right(n->right);
		return sa_rotate_left(n);
	}
	return n;
}

static struct sa_block *sa_insert(struct sa_block *root, struct sa_block *n)
{
	if (!root) {
		n->left = n->right = NULL;
		sa_fix(n);
		return n;
	}
	if (n->start < root->start)
		root->left = sa_insert(root->left, n);
	else
		root->right = sa_insert(root->right, n);
	return sa_balance(root);
}

static struct sa_block *sa_remove_min(struct sa_block *n, struct sa_block **min)
{
	if (!n->left) {
		*min = n;
		return n->right;
	}
	n->left = sa_remove_min(n->left, min);
	return sa_balance(n);
}

/* Unlink the node keyed start from the tree (the node is not freed). */
static struct sa_block *sa_remove(struct sa_block *root, uint64_t start)
{
	struct sa_block *l, *r, *m;

	if (!root)
		return NULL;
	if (start < root->start) {
		root->left = sa_remove(root->left, start);
	} else if (start > root->start) {
		root->right = sa_remove(root->right, start);
	} else {
		l = root->left;
		r = root->right;
		if (!r)
			return l;
		r = sa_remove_min(r, &m);
		m->left = l;
		m->right = r;
		return sa_balance(m);
	}
	return sa_balance(root);
}

/* Recompute max_free on the path to the node keyed start (it changed). */
static void sa_refresh(struct sa_block *root, uint64_t start)
{
	if (!root)
		return;
	if (start < root->start)
		sa_refresh(root->left, start);
	else if (start > root->start)
		sa_refresh(root->right, start);
	sa_fix(root);
}

/* The block, free or used, that contains addr. */
static struct sa_block *sa_find(const struct sa_block *n, uint64_t addr)
{
	while (n) {
		if (addr < n->start)
			n = n->left;
		else if (addr - n->start >= n->size)
			n = n->right;
		else
			return (struct sa_block *)n;
	}
	return NULL;
}

/*
 * The lowest free block with room for size bytes at an align-aligned
 * start (returned in *at). Subtrees without a large enough free block are
 * skipped, so without alignment padding this is one descent.
 */
static struct sa_block *sa_first_fit(struct sa_block *n, uint64_t size,
				     uint64_t align, uint64_t *at)
{
	struct sa_block *r;
	uint64_t a;

	if (!n || n->max_free < size)
		return NULL;
	r = sa_first_fit(n->left, size, align, at);
	if (r)
		return r;
	if (!n->owner && n->size >= size) {
		a = (n->start + align - 1) & ~(align - 1);
		if (a - n->start <= n->size - size) {
			*at = a;
			return n;
		}
	}
	return sa_first_fit(n->right, size, align, at);
}

static void sa_link_after(struct sa_block *pos, struct sa_block *n)
{
	n->prev = pos;
	n->next = pos->next;
	if (pos->next)
		pos->next->prev = n;
	pos->next = n;
}

static void sa_unlink(struct suballoc *sa, struct sa_block *n)
{
	if (n->prev)
		n->prev->next = n->next;
	else
		sa->first = n->next;
	if (n->next)
		n->next->prev = n->prev;
}

/* End of the nearest used block below b (or the window's base). */
static uint64_t sa_used_end_below(const struct suballoc *sa,
				  const struct sa_block *b)
{
	const struct sa_block *p = b->prev;

	if (p && !p->owner)
		p = p->prev;
	return p ? blk_end(p) : sa->base;
}

/* Start of the nearest used block above b (or the window's end). */
static uint64_t sa_used_start_above(const struct suballoc *sa,
				    const struct sa_block *b)
{
	const struct sa_block *n = b->next;

	if (n && !n->owner)
		n = n->next;
	return n ? n->start : sa->base + sa->size;
}

/*
 * The granule spans that [a, end) needs mapped (and that freeing it
 * unmaps), given that the nearest other used blocks end at lo_end below
 * and start at hi_start above. Returns the number of spans (at most 3).
 */
static int sa_spans(const struct suballoc *sa, uint64_t a, uint64_t end,
		    uint64_t lo_end, uint64_t hi_start, struct sa_span *sp)
{
	uint64_t g = sa->granule, mask = g - 1;
	uint64_t head = a & ~mask, tail = (end - 1) & ~mask;
	uint64_t full_lo = (a + mask) & ~mask, full_hi = end & ~mask;
	int n = 0;

	if (a & mask) {
		/* partly covered first granule (maybe also the last) */
		if (!(lo_end > head || hi_start < head + g))
			sp[n++] = (struct sa_span){head, g};
	}
	if ((end & mask) && !((a & mask) && tail == head)) {
		/* partly covered last granule, not the one above */
		if (!(lo_end > tail || hi_start < tail + g))
			sp[n++] = (struct sa_span){tail, g};
	}
	if (full_hi > full_lo)
		sp[n++] = (struct sa_span){full_lo, full_hi - full_lo};
	return n;
}

static int sa_cb_error(int rc)
{
	return rc > 0 ? rc : -EIO;
}

int suballoc_init(struct suballoc *sa, uint64_t base, uint64_t size,
		  uint64_t granule, uint64_t quota, uint64_t max_allocs,
		  suballoc_map_fn map, suballoc_map_fn unmap, void *ctx)
{
	struct sa_block *b;

	if (granule < SUBALLOC_ALIGN || (granule & (granule - 1)) || !size ||
	    (base & (granule - 1)) || (size & (granule - 1)) ||
	    base + size < base || !quota || !map || !unmap)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	*sa = (struct suballoc){
		.base = base,
		.size = size,
		.granule = granule,
		.quota = quota,
		.max_allocs = max_allocs,
		.map = map,
		.unmap = unmap,
		.ctx = ctx,
	};
	b->start = base;
	b->size = size;
	sa->root = sa_insert(NULL, b);
	sa->first = b;
	return 0;
}

void suballoc_destroy(struct suballoc *sa)
{
	struct sa_block *b = sa->first, *next;

	for (; b; b = next) {
		next = b->next;
		free(b);
	}
	sa->root = sa->first = NULL;
}

/*
 * Make [a, a + size) of the free block f an allocation of owner: map the
 * granules it needs (within the quota), split f. On any error nothing
 * changed.
 */
static int sa_take(struct suballoc *sa, struct sa_block *f, uint64_t a,
		   uint64_t size, uint32_t owner)
{
	struct sa_span sp[3];
	struct sa_block *u, *t, *n1, *n2;
	uint64_t end = a + size, need = 0, pad, tail;
	int i, n, rc;

	/* f is free, so its neighbours are used (or the window's ends). */
	n = sa_spans(sa, a, end, f->prev ? blk_end(f->prev) : sa->base,
		     f->next ? f->next->start : sa->base + sa->size, sp);
	for (i = 0; i < n; i++)
		need += sp[i].len;
	if (need > sa->quota - sa->mapped)
		return -ENOMEM;

	pad = a - f->start;
	tail = blk_end(f) - end;
	n1 = pad ? calloc(1, sizeof(*n1)) : NULL;
	n2 = tail ? calloc(1, sizeof(*n2)) : NULL;
	if ((pad && !n1) || (tail && !n2)) {
		free(n1);
		free(n2);
		return -ENOMEM;
	}
	for (i = 0; i < n; i++) {
		rc = sa->map(sa->ctx, sp[i].va, sp[i].len);
		if (rc) {
			while (i-- > 0)
				sa->unmap(sa->ctx, sp[i].va, sp[i].len);
			free(n1);
			free(n2);
			return sa_cb_error(rc);
		}
	}

	/* Commit: f keeps the padding below a, or becomes the allocation. */
	if (pad) {
		f->size = pad;
		u = n1;
		u->start = a;
		sa_link_after(f, u);
	} else {
		u = f;
	}
	u->size = size;
	u->owner = owner;
	if (tail) {
		t = n2;
		t->start = end;
		t->size = tail;
		sa_link_after(u, t);
		sa->root = sa_insert(sa->root, t);
	}
	if (pad)
		sa->root = sa_insert(sa->root, u);
	sa_refresh(sa->root, f->start);

	sa->mapped += need;
	sa->used += size;
	sa->nallocs++;
	return 0;
}

int suballoc_alloc(struct suballoc *sa, uint64_t bytes, uint32_t owner,
		   uint64_t *out)
{
	struct sa_block *f;
	uint64_t size, align, a;
	int rc;

	if (!bytes || !owner)
		return -EINVAL;
	if (bytes > sa->size || bytes > sa->quota)
		return -ENOMEM;
	if (sa->max_allocs && sa->nallocs >= sa->max_allocs)
		return -ENOMEM;
	size = (bytes + SUBALLOC_ALIGN - 1) & ~(uint64_t)(SUBALLOC_ALIGN - 1);
	align = size >= sa->granule ? sa->granule : SUBALLOC_ALIGN;
	f = sa_first_fit(sa->root, size, align, &a);
	if (!f)
		return -ENOMEM;
	rc = sa_take(sa, f, a, size, owner);
	if (rc == 0)
		*out = a;
	return rc;
}

int suballoc_alloc_at(struct suballoc *sa, uint64_t addr, uint64_t bytes,
		      uint32_t owner)
{
	struct sa_block *f;
	uint64_t size;

	if (!bytes || !owner || addr % SUBALLOC_ALIGN)
		return -EINVAL;
	if (bytes > sa->size || bytes > sa->quota)
		return -ENOMEM;
	if (sa->max_allocs && sa->nallocs >= sa->max_allocs)
		return -ENOMEM;
	size = (bytes + SUBALLOC_ALIGN - 1) & ~(uint64_t)(SUBALLOC_ALIGN - 1);
	f = sa_find(sa->root, addr);
	if (!f || f->owner || size > blk_end(f) - addr)
		return -EEXIST;
	return sa_take(sa, f, addr, size, owner);
}

int suballoc_next(const struct suballoc *sa, uint64_t *pos, uint64_t *start,
		  uint64_t *size, uint32_t *owner)
{
	const struct sa_block *b;

	if (*pos < sa->base)
		*pos = sa->base;
	b = *pos - sa->base < sa->size ? sa_find(sa->root, *pos) : NULL;
	for (; b; b = b->next) {
		if (!b->owner || b->start < *pos)
			continue;
		*start = b->start;
		*size = b->size;
		*owner = b->owner;
		*pos = blk_end(b);
		return 1;
	}
	return 0;
}

/*
 * Pass the first limit spans of the used blocks to fn, in address order,
 * as if each block had been allocated after those below it (sa_spans
 * with nothing above yet): partly covered granules on their own, the
 * rest in one span per block. So a later free (sa_free_block) unmaps
 * exactly spans that were mapped, as the driver needs. Stops at fn's
 * first error when stop_on_error. Returns the spans passed (without an
 * error, when stop_on_error); *rc: the first error (0 for none).
 */
static uint64_t sa_walk_spans(const struct suballoc *sa, suballoc_map_fn fn,
			      void *ctx, uint64_t limit, int stop_on_error,
			      int *rc)
{
	const struct sa_block *b;
	struct sa_span sp[3];
	uint64_t lo_end = sa->base, done = 0;
	int i, n, e;

	*rc = 0;
	for (b = sa->first; b && done < limit; b = b->next) {
		if (!b->owner)
			continue;
		n = sa_spans(sa, b->start, blk_end(b), lo_end,
			     sa->base + sa->size, sp);
		for (i = 0; i < n && done < limit; i++) {
			e = fn(ctx, sp[i].va, sp[i].len);
			if (e && !*rc)
				*rc = e;
			if (e && stop_on_error)
				return done;
			done++;
		}
		lo_end = blk_end(b);
	}
	return done;
}

int suballoc_map_live(const struct suballoc *sa, suballoc_map_fn map,
		      suballoc_map_fn unmap, void *ctx)
{
	uint64_t mapped;
	int rc, urc;

	mapped = sa_walk_spans(sa, map, ctx, UINT64_MAX, 1, &rc);
	if (!rc)
		return 0;
	(void)sa_walk_spans(sa, unmap, ctx, mapped, 0, &urc);
	return sa_cb_error(rc);
}

int suballoc_unmap_live(const struct suballoc *sa, suballoc_map_fn unmap,
			void *ctx)
{
	int rc;

	(void)sa_walk_spans(sa, unmap, ctx, UINT64_MAX, 0, &rc);
	return rc ? sa_cb_error(rc) : 0;
}

/* Free one used block, merge it with free neighbours, unmap granules. */
static int sa_free_block(struct suballoc *sa, struct sa_block *u)
{
	struct sa_span sp[3];
	struct sa_block *p, *nx;
	int i, n, rc, err = 0;

	n = sa_spans(sa, u->start, blk_end(u), sa_used_end_below(sa, u),
		     sa_used_start_above(sa, u), sp);
	sa->used -= u->size;
	sa->nallocs--;
	u->owner = 0;

	nx = u->next;
	if (nx && !nx->owner) {
		u->size += nx->size;
		sa_unlink(sa, nx);
		sa->root = sa_remove(sa->root, nx->start);
		free(nx);
	}
	p = u->prev;
	if (p && !p->owner) {
		p->size += u->size;
		sa_unlink(sa, u);
		sa->root = sa_remove(sa->root, u->start);
		free(u);
		u = p;
	}
	sa_refresh(sa->root, u->start);

	for (i = 0; i < n; i++) {
		sa->mapped -= sp[i].len;
		rc = sa->unmap(sa->ctx, sp[i].va, sp[i].len);
		if (rc && !err)
			err = sa_cb_error(rc);
	}
	return err;
}

int suballoc_free(struct suballoc *sa, uint64_t addr, uint32_t owner)
{
	struct sa_block *u = sa_find(sa->root, addr);

	if (!u || u->start != addr || !u->owner)
		return -EINVAL;
	if (u->owner != owner)
		return -EPERM;
	return sa_free_block(sa, u);
}

int suballoc_free_owner(struct suballoc *sa, uint32_t owner)
{
	struct sa_block *b = sa->first;
	uint64_t at;
	int rc, err = 0;

	if (!owner)
		return 0;
	while (b) {
		if (b->owner == owner) {
			at = b->start;
			rc = sa_free_block(sa, b);
			if (rc && !err)
				err = rc;
			/* b may be gone: continue from the merged block */
			b = sa_find(sa->root, at);
		}
		b = b->next;
	}
	return err;
}

int suballoc_lookup(const struct suballoc *sa, uint64_t addr, uint64_t len,
		    uint32_t owner, uint64_t *start, uint64_t *size)
{
	const struct sa_block *b = sa_find(sa->root, addr);

	if (!b || !b->owner || !len || len > blk_end(b) - addr)
		return -EINVAL;
	if (b->owner != owner)
		return -EPERM;
	if (start)
		*start = b->start;
	if (size)
		*size = b->size;
	return 0;
}
