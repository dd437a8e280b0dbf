/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend's insides, shared by its files:
 *
 *   backend_cuda.c       open, close, memory, copies, code, streams,
 *                        events, resize
 *   backend_cuda_move.c  migration to another GPU (or context), and the
 *                        addresses of module-scope variables across it
 *   backend_cuda_cache.c idle green contexts kept for the next resize
 *
 * See backend_cuda.c for the locking rules: driver calls on the context
 * under b->api (api_lock), the extent map and the object lists under
 * b->lock.
 */
#ifndef VGPU_BACKEND_CUDA_INT_H
#define VGPU_BACKEND_CUDA_INT_H

#include <pthread.h>
#include <stdint.h>

#include <cuda.h>

#include "backend.h"
#include "backend_extent.h"
#include "cuda_sym.h"

struct cuda_global;
struct cuda_move_junk;

/* Idle green contexts kept after a resize (backend_cuda_cache.c). */
#define CUDA_SLICE_CACHE_DEFAULT 4
#define CUDA_SLICE_CACHE_MAX	 16
/* streams a kept context keeps for the next switch to it, at most */
#define CUDA_SLICE_SPARES_MAX 16

/*
 * One green context of the vGPU. A resize makes a new one current
 * (b->cur) and retires the one before (b->retired); resize_reclaim
 * destroys a retired one once nothing needs it: the streams it had have
 * drained, the waits on its fences have been passed, no event lives in it
 * and no thread waits outside b->api on one of its handles (users).
 */
struct cuda_slice {
	struct cuda_slice *next; /* b->retired */
	uint64_t id;		 /* never reused: threads remember it */
	CUdevice dev;		 /* the GPU it is on */
	uint64_t mask;		 /* its SM groups (cuda_groups_mask) */
	CUgreenCtx green;
	CUcontext ctx;
	CUstream marker; /* never given work: a record there completes */
	uint32_t nsms;
	uint32_t events; /* live backend_events whose CUevent is here */
	int users;	 /* atomic: unlocked waits on its handles */
	/* what the switch away from it left behind (retired slices) */
	CUstream *old;	 /* its streams, draining */
	CUevent *fences; /* recorded on them (in this context) */
	CUevent *passed; /* recorded behind the waits (in the next one) */
	uint32_t nold, nfences, npassed;
	/* kept slices: its drained streams, for the next switch to it */
	CUstream *spare;
	uint32_t nspare, spare_next; /* spare_next: the next one to take */
};

struct backend_stream {
	struct backend_stream *next, *prev;
	CUstream stream;
	struct cuda_slice *slice; /* always b->cur once a switch is done */
};

struct backend_event {
	struct backend_event *next, *prev;
	CUevent event;
	struct cuda_slice *slice; /* the context the CUevent is in */
	unsigned int flags;
	int recorded; /* it has been recorded at least once */
};

struct backend_kernel {
	struct backend_kernel *next;
	CUkernel kernel;
};

struct backend_library {
	struct backend_library *next, *prev;
	CUlibrary lib;
	struct backend_kernel *kernels;
	uint32_t nglobals; /* module variables handed out (see resize) */
	struct cuda_global
		*gvars;	     /* and where they are (backend_cuda_move.c) */
	const char **knames; /* its kernels' names, read once (api_lock) */
	uint32_t nknames;
};

struct backend {
	struct cuda_sym cu;
	struct vgpu_worker_config cfg;
	CUdevice dev;
	struct cuda_slice *cur; /* under api and lock: both to change */
	/* the limits the clients set (bit i: limit i was set to
	 * limit_value[i]), set again on each new slice's context (api) */
	uint32_t limits_set;
	uint64_t limit_value[CU_LIMIT_MAX];
	struct cuda_slice *retired; /* main thread (resize, reclaim) */
	uint32_t nretired;
	/* idle contexts kept for the next resize (backend_cuda_cache.c) */
	struct cuda_slice *cache[CUDA_SLICE_CACHE_MAX];
	uint32_t ncache, cache_max;
	uint64_t slice_ids;
	struct backend_stream defstream; /* used for a NULL stream */
	uint32_t nsms;
	uint64_t globals; /* module variables handed out, all libraries */
	uint64_t gran;

	CUdeviceptr va;
	int va_reserved;

	int serialize;
	/* launch_marked's event attribute: 1 works, 0 not tried yet, -1
	 * refused (or VGPU_CUDA_MARKER_ATTR=0). Under api. */
	int marker_attr;
	pthread_mutex_t api; /* driver calls on the green context */

	pthread_mutex_t lock; /* the extent map and the object lists */
	uint64_t ngranules;
	/* the window's memory: what is mapped, and the physical extents
	 * (extent.handle: a CUmemGenericAllocationHandle) */
	struct extent_map mem;
	struct backend_stream *streams;
	struct backend_event *events;
	struct backend_library *libs;

	struct vgpu_device_info info; /* read at open and after a migration */

	/* migration (backend_cuda_move.c) */
	uint32_t aliased;	     /* module variables whose address moved */
	CUdeviceptr alias_va;	     /* never-mapped range for fresh aliases */
	uint64_t alias_next;	     /* bytes of it handed out */
	struct cuda_move_junk *junk; /* staging left for resize_reclaim */
};

/* The id of the slice whose context this thread has made current. */
extern __thread uint64_t cuda_tls_slice;

/*
 * Make the current slice's context current to this thread when it is not
 * yet (first call, or a resize since). Under b->api, or b->lock.
 */
static inline CUresult cuda_ctx_refresh(struct backend *b)
{
	CUresult rc;

	if (!b->cur || cuda_tls_slice == b->cur->id)
		return CUDA_SUCCESS;
	rc = b->cu.cuCtxSetCurrent(b->cur->ctx);
	if (rc == CUDA_SUCCESS)
		cuda_tls_slice = b->cur->id;
	return rc;
}

/* Take the API lock; the thread then has the current context. */
/* The limits clients set, on the current context (a new slice's). */
void cuda_limits_apply(struct backend *b);

static inline void api_lock(struct backend *b)
{
	if (b->serialize)
		pthread_mutex_lock(&b->api);
	cuda_ctx_refresh(b);
}

static inline void api_unlock(struct backend *b)
{
	if (b->serialize)
		pthread_mutex_unlock(&b->api);
}

/* For a call that belongs to no context and may wait for the device: the
 * thread's context made current, the lock not held over the call. */
static inline void api_ctx(struct backend *b)
{
	api_lock(b);
	api_unlock(b);
}

/* Doubly linked list helpers for the tracked objects. */
#define LIST_ADD(head, o)                                                      \
	do {                                                                   \
		(o)->prev = NULL;                                              \
		(o)->next = (head);                                            \
		if (head)                                                      \
			(head)->prev = (o);                                    \
		(head) = (o);                                                  \
	} while (0)
#define LIST_DEL(head, o)                                                      \
	do {                                                                   \
		if ((o)->prev)                                                 \
			(o)->prev->next = (o)->next;                           \
		else                                                           \
			(head) = (o)->next;                                    \
		if ((o)->next)                                                 \
			(o)->next->prev = (o)->prev;                           \
	} while (0)

/* ---- backend_cuda.c ---- */

/* Put "cuda: <what> failed: CUDA_ERROR_X" in err; returns rc. */
int cuda_fail(const struct cuda_sym *cu, CUresult rc, char *err, size_t errlen,
	      const char *what);
/* A green context over groups of device dev, with its marker stream;
 * current to no thread. */
int cuda_slice_build(struct backend *b, CUdevice dev, const uint32_t *want,
		     uint32_t nwant, struct cuda_slice *sl, char *err,
		     size_t errlen);
/* Destroy a slice nothing refers to any more. */
void cuda_slice_free(struct backend *b, struct cuda_slice *sl);
/* Only what the switch away from it left: its old streams, fences and
 * "passed" events (the context and marker stay). */
void cuda_slice_free_leftovers(struct backend *b, struct cuda_slice *sl);
/* The device description for b->dev and b->nsms. */
void cuda_read_info(struct backend *b, const char *gpu_name,
		    const uint8_t uuid[16]);
int cuda_granularity_of(const struct cuda_sym *cu, CUdevice dev,
			uint64_t *gran);
/* Device memory of dev, as every extent of the window is made. */
CUmemAllocationProp cuda_alloc_prop(CUdevice dev);

/* ---- backend_cuda_cache.c ---- */

uint64_t cuda_groups_mask(const uint32_t *groups, uint32_t ngroups);
uint32_t cuda_cache_size_from_env(void);
/* A kept context for dev and the group set, out of the cache, or NULL. */
struct cuda_slice *cuda_cache_take(struct backend *b, CUdevice dev,
				   uint64_t mask);
/* Keep a drained retired slice (or destroy it). */
void cuda_cache_put(struct backend *b, struct cuda_slice *sl);
/* Destroy every kept context. */
void cuda_cache_drop(struct backend *b);
/* A stream in slice sl: one of the streams it kept, else a new one
 * (cuGreenCtxStreamCreate: in sl's context whatever is current). */
CUresult cuda_slice_stream(struct backend *b, struct cuda_slice *sl,
			   CUstream *out);
/* Destroy the streams sl kept that no switch has taken. */
void cuda_slice_free_spares(struct backend *b, struct cuda_slice *sl);
/* The slice over groups of dev: a kept one, else a new one (built again
 * without the kept ones if that fails). 0, or a CUresult with a
 * sentence in err and *out NULL. */
int cuda_slice_get(struct backend *b, CUdevice dev, const uint32_t *groups,
		   uint32_t ngroups, struct cuda_slice **out, char *err,
		   size_t errlen);

/* ---- backend_cuda_move.c ---- */

/*
 * cuLibraryGetGlobal gave p (n bytes) for name of l in the current
 * context: remember it and return the address the client is given
 * (stable across migrations). Under b->api.
 */
CUresult cuda_global_note(struct backend *b, struct backend_library *l,
			  const char *name, CUdeviceptr p, size_t n,
			  CUdeviceptr *vis);
/* Where [addr, addr + n) of a client is now: addr itself, unless it lies
 * in a module variable that moved. Under b->api. */
CUdeviceptr cuda_global_real(struct backend *b, CUdeviceptr addr, size_t n);
/* l is unloaded (or the backend closes): forget its variables. */
void cuda_globals_drop(struct backend *b, struct backend_library *l);
/* Free what a migration left behind (from resize_reclaim). */
void cuda_move_reclaim(struct backend *b);
/* Everything of migrations, at close (after the libraries are gone). */
void cuda_move_close(struct backend *b);

int cuda_migrate_prepare(struct backend *b, uint32_t gpu,
			 const uint32_t *groups, uint32_t ngroups,
			 struct backend_move **m, char *err, size_t errlen);
int cuda_migrate_commit(struct backend *b, struct backend_move *m,
			struct backend_move_info *out, char *err,
			size_t errlen);
void cuda_migrate_abort(struct backend *b, struct backend_move *m);

#endif /* VGPU_BACKEND_CUDA_INT_H */
