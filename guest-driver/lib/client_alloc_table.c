/* SPDX-License-Identifier: MIT */
/*
 * Allocation table: a sorted array searched by bisection. Programs hold
 * at most some thousands of allocations; an insert's memmove is cheap
 * next to the round trip to the worker that precedes it.
 */
#include <stdlib.h>
#include <string.h>

#include "client_snapshot.h"
#include "client_alloc_table.h"

void client_alloc_table_init(struct client_alloc_table *t)
{
	memset(t, 0, sizeof(*t));
	pthread_mutex_init(&t->lock, NULL);
}

void client_alloc_table_fini(struct client_alloc_table *t)
{
	free(t->v);
	pthread_mutex_destroy(&t->lock);
	memset(t, 0, sizeof(*t));
}

/* Index of the first allocation whose base is > ptr. */
static size_t upper_bound(const struct client_alloc_table *t, uint64_t ptr)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->v[mid].base <= ptr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int client_alloc_add(struct client_alloc_table *t, uint64_t base, uint64_t size)
{
	struct client_alloc *n;
	int ret = -1;
	size_t i;

	if (size == 0 || base + size < base)
		return -1;
	pthread_mutex_lock(&t->lock);
	i = upper_bound(t, base);
	if (i > 0 && t->v[i - 1].base + t->v[i - 1].size > base)
		goto out;
	if (i < t->n && base + size > t->v[i].base)
		goto out;
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;

		n = realloc(t->v, cap * sizeof(*n));
		if (!n)
			goto out;
		t->v = n;
		t->cap = cap;
	}
	memmove(&t->v[i + 1], &t->v[i], (t->n - i) * sizeof(*t->v));
	t->v[i].base = base;
	t->v[i].size = size;
	t->n++;
	ret = 0;
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int client_alloc_remove(struct client_alloc_table *t, uint64_t base)
{
	int ret = -1;
	size_t i;

	pthread_mutex_lock(&t->lock);
	i = upper_bound(t, base);
	if (i > 0 && t->v[i - 1].base == base) {
		i--;
		memmove(&t->v[i], &t->v[i + 1], (t->n - i - 1) * sizeof(*t->v));
		t->n--;
		ret = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int client_alloc_find(struct client_alloc_table *t, uint64_t ptr,
		      struct client_alloc *out)
{
	int found = 0;
	size_t i;

	pthread_mutex_lock(&t->lock);
	i = upper_bound(t, ptr);
	if (i > 0 && ptr - t->v[i - 1].base < t->v[i - 1].size) {
		found = 1;
		if (out)
			*out = t->v[i - 1];
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

long client_alloc_snapshot(struct client_alloc_table *t,
			   struct client_alloc **out)
{
	void *copy;
	long n = client_snapshot(&t->lock, (void *const *)&t->v, &t->n,
				 sizeof(*t->v), &copy);

	*out = copy;
	return n;
}
