/* SPDX-License-Identifier: MIT */
/*
 * The device allocations this process holds, so cuMemcpy can tell a
 * device pointer of this vGPU from a host pointer (unified addressing)
 * and cuMemFree can reject what was never allocated.
 *
 * A free is two steps around the worker's round trip: the entry is
 * marked as being freed first (lookups no longer see it, a second free
 * of it fails), then dropped once the worker has freed the memory, or
 * made live again if the worker refused. Meanwhile another thread may
 * get the same address from the worker; adding it drops the marked
 * entry, since the worker only hands out memory it has freed.
 */
#ifndef VGPU_CLIENT_ALLOC_TABLE_H
#define VGPU_CLIENT_ALLOC_TABLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct client_alloc {
	uint64_t base;
	uint64_t size;
	uint64_t freeing; /* 0, or the ticket of the free under way */
	uint64_t id;	  /* CU_POINTER_ATTRIBUTE_BUFFER_ID: never reused */
};

struct client_alloc_table {
	pthread_mutex_t lock;
	struct client_alloc *v; /* sorted by base, disjoint */
	size_t n, cap;
	uint64_t tickets; /* the last ticket handed out */
	uint64_t ids;	  /* the last buffer id handed out */
};

void client_alloc_table_init(struct client_alloc_table *t);
void client_alloc_table_fini(struct client_alloc_table *t);

/* Records [base, base + size), dropping entries being freed that overlap
 * it; 0, or -1 (no memory, or an overlap with a live allocation). */
int client_alloc_add(struct client_alloc_table *t, uint64_t base,
		     uint64_t size);
/* True (and *out set, if given) when ptr lies inside a live allocation
 * (one not being freed). */
int client_alloc_find(struct client_alloc_table *t, uint64_t ptr,
		      struct client_alloc *out);
/* True when ptr lies inside an allocation being freed. */
int client_alloc_freeing(struct client_alloc_table *t, uint64_t ptr);
/*
 * Marks the live allocation that starts at base as being freed; *ticket
 * names this free for client_alloc_free_end. 0, or -1 when no live
 * allocation starts at base (never allocated, already freed, or being
 * freed by another thread).
 */
int client_alloc_free_begin(struct client_alloc_table *t, uint64_t base,
			    uint64_t *ticket);
/* Ends the free of ticket: the entry goes when freed, else it is live
 * again. Nothing happens if an add has dropped it meanwhile. */
void client_alloc_free_end(struct client_alloc_table *t, uint64_t base,
			   uint64_t ticket, int freed);
/* A copy of every allocation at this moment, those being freed included
 * (*out, the caller frees it; NULL when there are none): the count, or
 * -1 without memory. */
long client_alloc_snapshot(struct client_alloc_table *t,
			   struct client_alloc **out);

#endif /* VGPU_CLIENT_ALLOC_TABLE_H */
