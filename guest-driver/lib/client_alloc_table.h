/* SPDX-License-Identifier: MIT */
/*
 * The device allocations this process holds, so cuMemcpy can tell a
 * device pointer of this vGPU from a host pointer (unified addressing)
 * and cuMemFree can reject what was never allocated.
 */
#ifndef VGPU_CLIENT_ALLOC_TABLE_H
#define VGPU_CLIENT_ALLOC_TABLE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct client_alloc {
	uint64_t base;
	uint64_t size;
};

struct client_alloc_table {
	pthread_mutex_t lock;
	struct client_alloc *v; /* sorted by base, disjoint */
	size_t n, cap;
};

void client_alloc_table_init(struct client_alloc_table *t);
void client_alloc_table_fini(struct client_alloc_table *t);

/* Records [base, base + size); 0, or -1 (no memory, or an overlap). */
int client_alloc_add(struct client_alloc_table *t, uint64_t base,
		     uint64_t size);
/* Forgets the allocation that starts at base; 0, or -1 if none does. */
int client_alloc_remove(struct client_alloc_table *t, uint64_t base);
/* True (and *out set, if given) when ptr lies inside an allocation. */
int client_alloc_find(struct client_alloc_table *t, uint64_t ptr,
		      struct client_alloc *out);
/* A copy of every allocation at this moment (*out, the caller frees it;
 * NULL when there are none): the count, or -1 without memory. */
long client_alloc_snapshot(struct client_alloc_table *t,
			   struct client_alloc **out);

#endif /* VGPU_CLIENT_ALLOC_TABLE_H */
