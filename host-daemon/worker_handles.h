/* SPDX-License-Identifier: MIT */
/*
 * Per-client handle tables of vgpu-worker: the small numbers a client uses
 * for its streams, events, libraries, kernels and host regions.
 *
 * A handle is (generation << 16) | (slot + 1): never 0 (0 is the default
 * stream, or "none"), and a slot's generation moves on each time the slot
 * is freed, so a stale handle does not find the slot's next object. Freed
 * slots queue up (FIFO) and the table grows rather than reuse one of its
 * last few free slots, so a number comes back only after many others.
 * Each client has its own tables: another client's handle is just a number
 * that names nothing (or something of this client's, never anything else).
 */
#ifndef VGPU_WORKER_HANDLES_H
#define VGPU_WORKER_HANDLES_H

#include <stdint.h>

#include <vgpu/protocol.h>

#define HANDLE_MAX_SLOTS 65535u /* live objects per table, at most */

/*
 * Per-client limits below HANDLE_MAX_SLOTS where an object costs the host
 * more than memory (a stream is a thread in the simulator, a CUDA stream
 * in the driver): a client must not exhaust the worker.
 */
#define WORKER_MAX_STREAMS   256u
#define WORKER_MAX_LIBRARIES 1024u
/* Host regions per client: each is a mapping (and a pinning) in the worker;
 * their bytes are bounded separately (VGPU_HOST_REGIONS_MAX_BYTES). */
#define WORKER_MAX_REGIONS 4096u

struct handle_slot {
	void *obj;	    /* NULL when free */
	uint32_t gen;	    /* 1..0xffff */
	uint32_t next_free; /* slot index + 1 of the next free slot, 0 = end */
};

struct handle_table {
	struct handle_slot *slots;
	uint32_t cap, live, max;
	uint32_t free_head, free_tail, nfree; /* FIFO of free slots (+1) */
};

/* Empty table; grows on demand up to max (<= HANDLE_MAX_SLOTS) live. */
void handle_table_init(struct handle_table *t, uint32_t max);
void handle_table_fini(struct handle_table *t); /* objects are the caller's */

/* Store obj (non-NULL) under a new handle. 0, -ENOSPC or -ENOMEM. */
int handle_table_add(struct handle_table *t, void *obj, uint32_t *handle);

/* The object of a live handle, or NULL (0, stale, out of range). */
void *handle_table_get(const struct handle_table *t, uint32_t handle);

/* Remove a live handle and return its object, or NULL. */
void *handle_table_remove(struct handle_table *t, uint32_t handle);

/*
 * Iterate: start with *pos = 0; returns the next live object and its
 * handle, or NULL at the end. Removing the returned handle is allowed.
 */
void *handle_table_next(const struct handle_table *t, uint32_t *pos,
			uint32_t *handle);

/* ---- what the handles name ------------------------------------------ */

struct backend_stream;
struct backend_event;
struct backend_library;
struct backend_kernel;
struct worker_wd_queue;

struct worker_deferred;

struct worker_stream {
	struct backend_stream *bs;
	struct worker_wd_queue *wd; /* in-flight launches; NULL: no watchdog */
	uint32_t gate; /* slot + 1 in the session's gate table; 0: none */
	/* work held back behind a host function (worker_defer.c): not yet
	 * given to the backend, in order; next_held: session's list */
	struct worker_deferred *dq_head, *dq_tail;
	uint32_t ndq;
	struct worker_stream *next_held;
};

struct worker_event {
	struct backend_event *be;
	/* records accepted from the client, and handed to the backend (in
	 * the same order); deferred entries that name it (worker_defer.c) */
	uint64_t rec_enq, rec_run;
	uint32_t refs;
	int destroyed; /* out of the table: freed when refs reaches 0 */
};

struct worker_library {
	struct backend_library *bl;
	uint8_t *image; /* a copy for state files; NULL: not kept */
	uint64_t image_len;
};

struct worker_kernel {
	struct backend_kernel *bk;
	uint32_t library; /* handle of the library it belongs to */
	struct vgpu_kernel_info info;
	/* params[i] -> parameter i inside the client's private parameter
	 * buffer: a launch copies the buffer and passes this array */
	void *params[VGPU_MAX_PARAMS];
};

/*
 * A host region (HOST_REGION_CREATE): a memfd the client maps too, mapped
 * here MAP_SHARED at base. The memfd is sealed against resizing, so the
 * mapping stays backed for as long as it exists.
 */
struct worker_region {
	void *base;
	uint64_t size; /* page multiple, > 0 */
	int pinned;    /* registered with the backend (host_register) */
};

/*
 * Module-scope variables (__device__, __constant__) a client has asked for
 * with LIBRARY_GET_GLOBAL: device ranges outside the VA window that its
 * copies and memsets may touch while their library stays loaded. A program
 * has few, so a plain array; it is searched only for a device range that
 * lies in none of the client's allocations.
 */
#define WORKER_MAX_GLOBALS 4096u /* per client */

struct worker_global {
	uint64_t addr, bytes; /* bytes > 0, addr + bytes does not wrap */
	uint32_t library;     /* handle of the library it belongs to */
};

struct worker_globals {
	struct worker_global *v;
	uint32_t n, cap;
};

/* Record [addr, addr + bytes) for library; asking again for the same range
 * records nothing new. 0, -EINVAL (empty or wrapping range), -ENOSPC
 * (WORKER_MAX_GLOBALS) or -ENOMEM. */
int worker_globals_add(struct worker_globals *g, uint32_t library,
		       uint64_t addr, uint64_t bytes);
/* Forget every range of library (it is being unloaded). */
void worker_globals_drop(struct worker_globals *g, uint32_t library);
/* 1 when [addr, addr + len) lies inside one recorded range, else 0. */
int worker_globals_contain(const struct worker_globals *g, uint64_t addr,
			   uint64_t len);

/* One client's tables. */
struct worker_handles {
	struct handle_table streams, events, libraries, kernels, regions;
	struct worker_globals globals;
};

void worker_handles_init(struct worker_handles *h);
void worker_handles_fini(struct worker_handles *h);

#endif /* VGPU_WORKER_HANDLES_H */
