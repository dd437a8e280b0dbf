/* SPDX-License-Identifier: MIT */
/*
 * Registry of the handles the library gave out (CUcontext, CUstream,
 * CUevent, CUmodule/CUlibrary, CUfunction/CUkernel). A handle is the
 * address of a small object; before the library looks inside one it asks
 * the registry, so a garbage or stale handle is an error
 * (CUDA_ERROR_INVALID_HANDLE / _CONTEXT), never a dereference.
 *
 * Objects are reference counted: the registry holds one reference while
 * the handle is live, client_registry_get() adds one for the caller. The
 * object's release() runs when the last one goes.
 */
#ifndef VGPU_CLIENT_REGISTRY_H
#define VGPU_CLIENT_REGISTRY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

enum client_obj_type {
	CLIENT_OBJ_CTX = 1,
	CLIENT_OBJ_STREAM = 2,
	CLIENT_OBJ_EVENT = 3,
	CLIENT_OBJ_LIBRARY = 4, /* CUmodule and CUlibrary */
	CLIENT_OBJ_KERNEL = 5,	/* CUfunction and CUkernel */
};

struct client_obj {
	uint32_t type; /* enum client_obj_type */
	uint32_t refs;
	void (*release)(struct client_obj *o); /* frees the object */
};

struct client_registry {
	pthread_mutex_t lock;
	struct client_obj **slots; /* open addressing, NULL = empty */
	size_t cap;		   /* power of two */
	size_t count;
};

int client_registry_init(struct client_registry *reg);
/* Drops the registry's references (objects still held stay alive). */
void client_registry_fini(struct client_registry *reg);

/* Registers o (type and release set) holding one reference. 0 or -1. */
int client_registry_add(struct client_registry *reg, struct client_obj *o);

/* The live object at handle if it has the type, with a reference for
 * the caller; NULL otherwise. */
struct client_obj *client_registry_get(struct client_registry *reg,
				       const void *handle, uint32_t type);

/* Unregisters the object at handle (if live and of the type) and hands
 * the registry's reference to the caller; NULL otherwise. */
struct client_obj *client_registry_take(struct client_registry *reg,
					const void *handle, uint32_t type);

void client_obj_put(struct client_registry *reg, struct client_obj *o);

/*
 * The handles of every live object of type, at this moment, in a new
 * array (*out, the caller frees it; NULL when there are none): for
 * cuDevicePrimaryCtxReset, which destroys them one by one through the
 * ordinary calls. The count, or -1 without memory.
 */
long client_registry_handles(struct client_registry *reg, uint32_t type,
			     void ***out);

#endif /* VGPU_CLIENT_REGISTRY_H */
