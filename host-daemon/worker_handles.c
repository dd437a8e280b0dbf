/* SPDX-License-Identifier: MIT */
/*
 * Handle tables (see worker_handles.h for the numbering scheme) and the
 * per-client list of module-scope variable ranges.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "worker_handles.h"

/* Free slots are reused only when at least this many are waiting. */
#define HANDLE_REUSE_MIN 16u
#define HANDLE_FIRST_CAP 16u

void handle_table_init(struct handle_table *t, uint32_t max)
{
	memset(t, 0, sizeof(*t));
	t->max = max && max < HANDLE_MAX_SLOTS ? max : HANDLE_MAX_SLOTS;
}

void handle_table_fini(struct handle_table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->live = t->nfree = 0;
	t->free_head = t->free_tail = 0;
}

static inline uint32_t handle_make(uint32_t idx, uint32_t gen)
{
	return gen << 16 | (idx + 1);
}

/* The lowest never-used slot: every slot below live + nfree was used. */
static uint32_t handle_fresh_slot(struct handle_table *t)
{
	uint32_t idx = t->live + t->nfree;

	t->slots[idx].gen = 1;
	return idx;
}

int handle_table_add(struct handle_table *t, void *obj, uint32_t *handle)
{
	struct handle_slot *s;
	uint32_t idx, used = t->live + t->nfree, ncap;

	if (!obj)
		return -EINVAL;
	if (t->live >= t->max)
		return -ENOSPC;
	if (used < t->cap) {
		idx = handle_fresh_slot(t);
	} else if (t->nfree >= HANDLE_REUSE_MIN ||
		   (t->cap == HANDLE_MAX_SLOTS && t->nfree)) {
		idx = t->free_head - 1;
		t->free_head = t->slots[idx].next_free;
		if (!t->free_head)
			t->free_tail = 0;
		t->nfree--;
	} else if (t->cap < HANDLE_MAX_SLOTS) {
		ncap = t->cap ? t->cap * 2 : HANDLE_FIRST_CAP;
		if (ncap > HANDLE_MAX_SLOTS)
			ncap = HANDLE_MAX_SLOTS;
		s = realloc(t->slots, ncap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		memset(s + t->cap, 0, (ncap - t->cap) * sizeof(*s));
		t->slots = s;
		t->cap = ncap;
		idx = handle_fresh_slot(t);
	} else {
		return -ENOSPC;
	}
	t->slots[idx].obj = obj;
	t->slots[idx].next_free = 0;
	t->live++;
	*handle = handle_make(idx, t->slots[idx].gen);
	return 0;
}

/* The slot index of a live handle, or -1. */
static int64_t handle_slot(const struct handle_table *t, uint32_t handle)
{
	uint32_t idx = (handle & 0xffff) - 1, gen = handle >> 16;

	if (!(handle & 0xffff) || idx >= t->live + t->nfree)
		return -1;
	if (!t->slots[idx].obj || t->slots[idx].gen != gen)
		return -1;
	return idx;
}

void *handle_table_get(const struct handle_table *t, uint32_t handle)
{
	int64_t idx = handle_slot(t, handle);

	return idx < 0 ? NULL : t->slots[idx].obj;
}

void *handle_table_remove(struct handle_table *t, uint32_t handle)
{
	int64_t idx = handle_slot(t, handle);
	struct handle_slot *s;
	void *obj;

	if (idx < 0)
		return NULL;
	s = &t->slots[idx];
	obj = s->obj;
	s->obj = NULL;
	s->gen = s->gen >= 0xffff ? 1 : s->gen + 1;
	s->next_free = 0;
	if (t->free_tail)
		t->slots[t->free_tail - 1].next_free = idx + 1;
	else
		t->free_head = idx + 1;
	t->free_tail = idx + 1;
	t->nfree++;
	t->live--;
	return obj;
}

void *handle_table_next(const struct handle_table *t, uint32_t *pos,
			uint32_t *handle)
{
	uint32_t used = t->live + t->nfree;

	for (; *pos < used; (*pos)++) {
		if (t->slots[*pos].obj) {
			*handle = handle_make(*pos, t->slots[*pos].gen);
			return t->slots[(*pos)++].obj;
		}
	}
	return NULL;
}

/* ---- module-scope variables ------------------------------------------ */

int worker_globals_add(struct worker_globals *g, uint32_t library,
		       uint64_t addr, uint64_t bytes)
{
	struct worker_global *v;
	uint32_t i, ncap;

	if (!bytes || addr + bytes < addr)
		return -EINVAL;
	for (i = 0; i < g->n; i++)
		if (g->v[i].library == library && g->v[i].addr == addr &&
		    g->v[i].bytes == bytes)
			return 0;
	if (g->n >= WORKER_MAX_GLOBALS)
		return -ENOSPC;
	if (g->n == g->cap) {
		ncap = g->cap ? g->cap * 2 : 8;
		if (ncap > WORKER_MAX_GLOBALS)
			ncap = WORKER_MAX_GLOBALS;
		v = realloc(g->v, ncap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		g->v = v;
		g->cap = ncap;
	}
	g->v[g->n++] = (struct worker_global){addr, bytes, library};
	return 0;
}

void worker_globals_drop(struct worker_globals *g, uint32_t library)
{
	uint32_t i, kept = 0;

	for (i = 0; i < g->n; i++)
		if (g->v[i].library != library)
			g->v[kept++] = g->v[i];
	g->n = kept;
}

int worker_globals_contain(const struct worker_globals *g, uint64_t addr,
			   uint64_t len)
{
	const struct worker_global *v;
	uint32_t i;

	for (i = 0; i < g->n; i++) {
		v = &g->v[i];
		if (addr >= v->addr && len <= v->bytes &&
		    addr - v->addr <= v->bytes - len)
			return 1;
	}
	return 0;
}

void worker_handles_init(struct worker_handles *h)
{
	handle_table_init(&h->streams, WORKER_MAX_STREAMS);
	handle_table_init(&h->events, HANDLE_MAX_SLOTS);
	handle_table_init(&h->libraries, WORKER_MAX_LIBRARIES);
	handle_table_init(&h->kernels, HANDLE_MAX_SLOTS);
	handle_table_init(&h->regions, WORKER_MAX_REGIONS);
	memset(&h->globals, 0, sizeof(h->globals));
}

void worker_handles_fini(struct worker_handles *h)
{
	handle_table_fini(&h->streams);
	handle_table_fini(&h->events);
	handle_table_fini(&h->libraries);
	handle_table_fini(&h->kernels);
	handle_table_fini(&h->regions);
	free(h->globals.v);
	memset(&h->globals, 0, sizeof(h->globals));
}
