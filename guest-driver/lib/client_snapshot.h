/* SPDX-License-Identifier: MIT */
/*
 * A copy of a locked table's array (the allocation and host-region
 * tables), for a caller that walks it without holding the lock
 * (cudaDeviceReset frees what it lists).
 */
#ifndef VGPU_CLIENT_SNAPSHOT_H
#define VGPU_CLIENT_SNAPSHOT_H

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* *v and *n (n elements of elem bytes) read under lock; *out is the copy
 * (NULL when empty). The count, or -1 without memory. */
static inline long client_snapshot(pthread_mutex_t *lock, void *const *v,
				   const size_t *n, size_t elem, void **out)
{
	void *copy = NULL;
	long count;

	pthread_mutex_lock(lock);
	count = (long)*n;
	if (count) {
		copy = malloc(*n * elem);
		if (copy)
			memcpy(copy, *v, *n * elem);
		else
			count = -1;
	}
	pthread_mutex_unlock(lock);
	*out = copy;
	return count;
}

#endif /* VGPU_CLIENT_SNAPSHOT_H */
