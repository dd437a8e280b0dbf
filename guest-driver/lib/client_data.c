/* SPDX-License-Identifier: MIT */
/*
 * Data-area allocator: a sorted, coalesced list of free extents. The
 * area is small (16 MiB by default) and regions live only while their
 * descriptor is in flight, so the list stays short and a linear scan is
 * the simplest thing that is fast enough.
 */
#include <stdlib.h>
#include <string.h>

#include "client_data.h"

int client_data_init(struct client_data *d, uint64_t size)
{
	memset(d, 0, sizeof(*d));
	if (size == 0 || size % CLIENT_DATA_ALIGN)
		return -1;
	d->cap = 16;
	d->free = calloc(d->cap, sizeof(*d->free));
	if (!d->free)
		return -1;
	d->size = size;
	d->free_bytes = size;
	d->free[0].off = 0;
	d->free[0].len = size;
	d->nfree = 1;
	return 0;
}

void client_data_fini(struct client_data *d)
{
	free(d->free);
	memset(d, 0, sizeof(*d));
}

/*
 * Every live region can split at most one extent in two, so live + 2
 * extents always suffice; growing here, where failure is allowed, keeps
 * client_data_free from ever needing memory.
 */
static int data_reserve(struct client_data *d)
{
	uint32_t need = d->live + 2;
	struct client_data_extent *n;

	if (need <= d->cap)
		return 0;
	n = realloc(d->free, (size_t)need * 2 * sizeof(*n));
	if (!n)
		return -1;
	d->free = n;
	d->cap = need * 2;
	return 0;
}

static void data_remove(struct client_data *d, uint32_t i)
{
	memmove(&d->free[i], &d->free[i + 1],
		(d->nfree - i - 1) * sizeof(d->free[0]));
	d->nfree--;
}

int client_data_alloc(struct client_data *d, uint64_t len, uint64_t *off)
{
	struct client_data_extent *e;
	uint32_t i;

	if (len == 0 || len > d->size)
		return -1;
	len = client_data_round(len);
	if (len > d->free_bytes || data_reserve(d))
		return -1;

	if (len < CLIENT_DATA_SMALL) {
		/* small: the end of the last extent that fits */
		for (i = d->nfree; i-- > 0;) {
			e = &d->free[i];
			if (e->len < len)
				continue;
			*off = e->off + e->len - len;
			e->len -= len;
			if (e->len == 0)
				data_remove(d, i);
			goto found;
		}
		return -1;
	}
	/* large: the start of the first extent that fits */
	for (i = 0; i < d->nfree; i++) {
		e = &d->free[i];
		if (e->len < len)
			continue;
		*off = e->off;
		e->off += len;
		e->len -= len;
		if (e->len == 0)
			data_remove(d, i);
		goto found;
	}
	return -1;
found:
	d->free_bytes -= len;
	d->live++;
	return 0;
}

void client_data_free(struct client_data *d, uint64_t off, uint64_t len)
{
	struct client_data_extent *prev = NULL, *next = NULL;
	uint32_t i;

	len = client_data_round(len);
	/* first extent after the region */
	for (i = 0; i < d->nfree && d->free[i].off < off; i++)
		;
	if (i > 0 && d->free[i - 1].off + d->free[i - 1].len == off)
		prev = &d->free[i - 1];
	if (i < d->nfree && off + len == d->free[i].off)
		next = &d->free[i];

	if (prev && next) {
		prev->len += len + next->len;
		data_remove(d, i);
	} else if (prev) {
		prev->len += len;
	} else if (next) {
		next->off = off;
		next->len += len;
	} else {
		memmove(&d->free[i + 1], &d->free[i],
			(d->nfree - i) * sizeof(d->free[0]));
		d->free[i].off = off;
		d->free[i].len = len;
		d->nfree++;
	}
	d->free_bytes += len;
	d->live--;
}
