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

/* Index of the first allocation whose base is > ptr. Lock held. */
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

/* The entry ptr lies in, live or being freed; NULL if none. Lock held. */
static struct client_alloc *entry_at(struct client_alloc_table *t, uint64_t ptr)
{
	size_t i = upper_bound(t, ptr);

	if (i > 0 && ptr - t->v[i - 1].base < t->v[i - 1].size)
		return &t->v[i - 1];
	return NULL;
}

int client_alloc_add(struct client_alloc_table *t, uint64_t base, uint64_t size)
{
	struct client_alloc *n;
	size_t lo, hi;
	int ret = -1;

	if (size == 0 || base + size < base)
		return -1;
	pthread_mutex_lock(&t->lock);
	/* [lo, hi): the entries that overlap [base, base + size) */
	lo = hi = upper_bound(t, base);
	if (lo > 0 && t->v[lo - 1].base + t->v[lo - 1].size > base)
		lo--;
	while (hi < t->n && t->v[hi].base < base + size)
		hi++;
	/*
	 * The worker hands out only memory it has freed, so an overlapping
	 * entry being freed is one whose free the worker has done (its
	 * thread has not yet heard): it goes. A live one means the table
	 * is wrong about this range: refuse.
	 */
	for (size_t i = lo; i < hi; i++)
		if (!t->v[i].freeing)
			goto out;
	if (lo == hi && t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;

		n = realloc(t->v, cap * sizeof(*n));
		if (!n)
			goto out;
		t->v = n;
		t->cap = cap;
	}
	/* the new entry takes the place of the lo..hi ones */
	memmove(&t->v[lo + 1], &t->v[hi], (t->n - hi) * sizeof(*t->v));
	t->n = t->n - (hi - lo) + 1;
	t->v[lo] = (struct client_alloc){
		.base = base, .size = size, .id = ++t->ids};
	ret = 0;
out:
	pthread_mutex_unlock(&t->lock);
	return ret;
}

int client_alloc_find(struct client_alloc_table *t, uint64_t ptr,
		      struct client_alloc *out)
{
	const struct client_alloc *e;
	int found = 0;

	pthread_mutex_lock(&t->lock);
	e = entry_at(t, ptr);
	/* one being freed is gone for the program, as after the free */
	if (e && !e->freeing) {
		found = 1;
		if (out)
			*out = *e;
	}
	pthread_mutex_unlock(&t->lock);
	return found;
}

int client_alloc_freeing(struct client_alloc_table *t, uint64_t ptr)
{
	const struct client_alloc *e;
	int freeing;

	pthread_mutex_lock(&t->lock);
	e = entry_at(t, ptr);
	freeing = e && e->freeing;
	pthread_mutex_unlock(&t->lock);
	return freeing;
}

int client_alloc_free_begin(struct client_alloc_table *t, uint64_t base,
			    uint64_t *ticket)
{
	struct client_alloc *e;
	int ret = -1;

	pthread_mutex_lock(&t->lock);
	e = entry_at(t, base);
	if (e && e->base == base && !e->freeing) {
		/* never 0, which means live */
		if (++t->tickets == 0)
			++t->tickets;
		e->freeing = t->tickets;
		*ticket = t->tickets;
		ret = 0;
	}
	pthread_mutex_unlock(&t->lock);
	return ret;
}

void client_alloc_free_end(struct client_alloc_table *t, uint64_t base,
			   uint64_t ticket, int freed)
{
	struct client_alloc *e;
	size_t i;

	pthread_mutex_lock(&t->lock);
	e = entry_at(t, base);
	/* another entry here now: an add dropped ours (the free was done) */
	if (e && e->base == base && e->freeing == ticket) {
		if (freed) {
			i = (size_t)(e - t->v);
			memmove(e, e + 1, (t->n - i - 1) * sizeof(*t->v));
			t->n--;
		} else {
			e->freeing = 0;
		}
	}
	pthread_mutex_unlock(&t->lock);
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
