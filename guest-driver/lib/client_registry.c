/* SPDX-License-Identifier: MIT */
/*
 * Handle registry: a hash set of object addresses, linear probing with
 * backward-shift deletion (no tombstones), kept at most half full.
 */
#include <stdlib.h>

#include "client_registry.h"

static size_t reg_hash(const void *p, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)p;

	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return (size_t)h & (cap - 1);
}

int client_registry_init(struct client_registry *reg)
{
	reg->cap = 64;
	reg->count = 0;
	reg->slots = calloc(reg->cap, sizeof(*reg->slots));
	if (!reg->slots)
		return -1;
	pthread_mutex_init(&reg->lock, NULL);
	return 0;
}

void client_registry_fini(struct client_registry *reg)
{
	for (size_t i = 0; i < reg->cap; i++)
		if (reg->slots[i])
			client_obj_put(reg, reg->slots[i]);
	free(reg->slots);
	reg->slots = NULL;
	reg->cap = reg->count = 0;
	pthread_mutex_destroy(&reg->lock);
}

/* Index of handle's slot, or of the empty slot where it would go. */
static size_t reg_find(const struct client_registry *reg, const void *handle)
{
	size_t i = reg_hash(handle, reg->cap);

	while (reg->slots[i] && (const void *)reg->slots[i] != handle)
		i = (i + 1) & (reg->cap - 1);
	return i;
}

static int reg_grow(struct client_registry *reg)
{
	struct client_obj **old = reg->slots;
	size_t oldcap = reg->cap;

	reg->slots = calloc(oldcap * 2, sizeof(*reg->slots));
	if (!reg->slots) {
		reg->slots = old;
		return -1;
	}
	reg->cap = oldcap * 2;
	for (size_t i = 0; i < oldcap; i++)
		if (old[i])
			reg->slots[reg_find(reg, old[i])] = old[i];
	free(old);
	return 0;
}

int client_registry_add(struct client_registry *reg, struct client_obj *o)
{
	int ret = 0;

	o->refs = 1;
	pthread_mutex_lock(&reg->lock);
	if ((reg->count + 1) * 2 > reg->cap && reg_grow(reg)) {
		ret = -1;
	} else {
		reg->slots[reg_find(reg, o)] = o;
		reg->count++;
	}
	pthread_mutex_unlock(&reg->lock);
	return ret;
}

struct client_obj *client_registry_get(struct client_registry *reg,
				       const void *handle, uint32_t type)
{
	struct client_obj *o;

	if (!handle)
		return NULL;
	pthread_mutex_lock(&reg->lock);
	o = reg->slots[reg_find(reg, handle)];
	if (o && o->type == type)
		o->refs++;
	else
		o = NULL;
	pthread_mutex_unlock(&reg->lock);
	return o;
}

/* Removes slot i, moving later members of its cluster back. */
static void reg_delete(struct client_registry *reg, size_t i)
{
	size_t mask = reg->cap - 1, j = i;

	reg->slots[i] = NULL;
	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!reg->slots[j])
			break;
		home = reg_hash(reg->slots[j], reg->cap);
		/* move j back to i unless its home lies in (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			reg->slots[i] = reg->slots[j];
			reg->slots[j] = NULL;
			i = j;
		}
	}
	reg->count--;
}

struct client_obj *client_registry_take(struct client_registry *reg,
					const void *handle, uint32_t type)
{
	struct client_obj *o;
	size_t i;

	if (!handle)
		return NULL;
	pthread_mutex_lock(&reg->lock);
	i = reg_find(reg, handle);
	o = reg->slots[i];
	if (o && o->type == type)
		reg_delete(reg, i);
	else
		o = NULL;
	pthread_mutex_unlock(&reg->lock);
	return o;
}

void client_obj_put(struct client_registry *reg, struct client_obj *o)
{
	uint32_t left;

	pthread_mutex_lock(&reg->lock);
	left = --o->refs;
	pthread_mutex_unlock(&reg->lock);
	if (left == 0)
		o->release(o);
}

long client_registry_handles(struct client_registry *reg, uint32_t type,
			     void ***out)
{
	void **v = NULL;
	long n = 0;

	*out = NULL;
	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < reg->cap; i++)
		if (reg->slots[i] && reg->slots[i]->type == type)
			n++;
	if (n) {
		v = malloc((size_t)n * sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&reg->lock);
			return -1;
		}
		n = 0;
		for (size_t i = 0; i < reg->cap; i++)
			if (reg->slots[i] && reg->slots[i]->type == type)
				v[n++] = reg->slots[i];
	}
	pthread_mutex_unlock(&reg->lock);
	*out = v;
	return n;
}
