/* SPDX-License-Identifier: MIT */
/*
 * Stream-ordered memory pools, kept in the guest.
 *
 * A pool holds blocks of device memory the vGPU gave this process
 * (cuMemAlloc, so the worker counts them against the vGPU's quota, and
 * the allocation table knows them for unified copies). cuMemFreeAsync
 * puts a block back on its pool's free list, tagged with the stream it
 * was freed on and a sequence number; the memory stays with the process.
 * A later cuMemAllocAsync on the same stream may take it at once: stream
 * order puts the new work behind the old. Any other stream may take it
 * only once a wait has covered the free (a stream synchronise or destroy
 * of that stream, a context synchronise, begun after the free: the
 * sequence number taken before the wait says which frees it covers, so a
 * free another thread makes meanwhile is not taken for done). There is no
 * event to wait on in the worker, so a block is never handed across
 * streams early. When no block fits, the pool takes a new one from the
 * vGPU.
 *
 * Giving memory back to the vGPU (a free of the block) happens at a
 * context synchronise, down to the pool's release threshold (0 by
 * default, as in CUDA), at cuMemPoolTrimTo, when a pool is destroyed (and
 * as a destroyed pool's blocks come back), and when the vGPU is out of
 * memory for a new block. The worker's free waits for every stream of
 * the process, so a block whose last use is still queued is never freed
 * under it. CUDA also gives memory back at stream and event
 * synchronisations; here a free there would wait for the process's other
 * streams too, so it waits for the context's.
 *
 * Blocks are found by address in a small hash table; every pool's
 * counters (reserved: held from the vGPU; used: handed out) feed
 * cuMemPoolGetAttribute. One lock guards all of it; no driver call is
 * made under it.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "client.h"
#include "client_api.h"
#include "client_pool.h"

#define POOL_ALIGN    512ull /* what a block is rounded up to */
#define POOL_BUCKETS  1024u
#define POOL_OWN_KEEP UINT64_MAX /* pool_release: each pool's threshold */

struct pool_block {
	struct pool_block *hnext; /* the hash chain */
	struct pool_block *fnext; /* its pool's free list */
	struct client_pool *pool;
	uint64_t ptr, size;
	uint32_t stream; /* freed on it */
	uint64_t seq;	 /* the free's number (pool_seq) */
	bool free;	 /* on the free list */
	bool idle;	 /* a wait has covered its free */
};

struct client_pool {
	struct client_pool *next;
	bool dead;	    /* destroyed: goes once its blocks are back */
	uint64_t max_bytes; /* 0: as much as the vGPU has */
	int reuse[3];	    /* CU_MEMPOOL_ATTR_REUSE_*: kept, not needed */
	uint64_t threshold; /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
	uint64_t reserved, reserved_high, used, used_high;
	uint64_t blocks; /* blocks held (free, in use, or being made) */
	struct pool_block *free;
};

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct client_pool pool_default = {.reuse = {1, 1, 1}};
static struct client_pool *pools = &pool_default;
static struct client_pool *pool_current = &pool_default;
static struct pool_block *pool_table[POOL_BUCKETS];
static uint64_t pool_seq; /* frees so far: a wait covers those before it */

static unsigned int pool_hash(uint64_t ptr)
{
	return (unsigned int)((ptr >> 9) ^ (ptr >> 21)) % POOL_BUCKETS;
}

static struct pool_block **pool_find(uint64_t ptr)
{
	struct pool_block **pp = &pool_table[pool_hash(ptr)];

	while (*pp && (*pp)->ptr != ptr)
		pp = &(*pp)->hnext;
	return pp;
}

static void pool_unfree(struct pool_block *b)
{
	struct pool_block **pp = &b->pool->free;

	while (*pp != b)
		pp = &(*pp)->fnext;
	*pp = b->fnext;
	b->free = false;
}

/* A destroyed pool with nothing left goes. Under pool_lock. */
static void pool_reap(void)
{
	struct client_pool **pp = &pools, *p;

	while ((p = *pp)) {
		if (p->dead && !p->blocks) {
			*pp = p->next;
			free(p);
		} else {
			pp = &p->next;
		}
	}
}

/* The pool h names, live (NULL: the current one). Under pool_lock. */
static struct client_pool *pool_live(CUmemoryPool h)
{
	struct client_pool *p;

	if (!h)
		return pool_current;
	for (p = pools; p && (void *)p != (void *)h; p = p->next)
		;
	return p && !p->dead ? p : NULL;
}

struct client_pool *client_pool_default(void)
{
	return &pool_default;
}

struct client_pool *client_pool_current(void)
{
	struct client_pool *p;

	pthread_mutex_lock(&pool_lock);
	p = pool_current;
	pthread_mutex_unlock(&pool_lock);
	return p;
}

CUresult client_pool_set_current(CUmemoryPool h)
{
	struct client_pool *p;

	pthread_mutex_lock(&pool_lock);
	p = h ? pool_live(h) : NULL;
	if (p)
		pool_current = p;
	pthread_mutex_unlock(&pool_lock);
	return p ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

struct client_pool *client_pool_check(CUmemoryPool h)
{
	struct client_pool *p;

	if (!h)
		return NULL;
	pthread_mutex_lock(&pool_lock);
	p = pool_live(h);
	pthread_mutex_unlock(&pool_lock);
	return p;
}

CUresult client_pool_create(struct client_pool **out, uint64_t max_bytes)
{
	struct client_pool *p = calloc(1, sizeof(*p));

	if (!p)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p->max_bytes = max_bytes;
	p->reuse[0] = p->reuse[1] = p->reuse[2] = 1;
	pthread_mutex_lock(&pool_lock);
	p->next = pools;
	pools = p;
	pthread_mutex_unlock(&pool_lock);
	*out = p;
	return CUDA_SUCCESS;
}

/*
 * Gives free blocks back to the vGPU: of p, or of every pool (NULL),
 * until the pool holds at most keep bytes (POOL_OWN_KEEP: its release
 * threshold; a dead pool: none), only idle ones when idle_only. The
 * worker's free waits for the process's streams, so a block freed on a
 * busy stream is safe to give back.
 */
static CUresult pool_release(struct client_pool *only, uint64_t keep,
			     bool idle_only)
{
	struct pool_block *out = NULL, *b, **pp;
	struct client_pool *p;
	struct client *c;
	CUresult err = CUDA_SUCCESS, res;
	uint64_t k;

	pthread_mutex_lock(&pool_lock);
	for (p = pools; p; p = p->next) {
		if (only && p != only)
			continue;
		k = p->dead ? 0 : keep == POOL_OWN_KEEP ? p->threshold : keep;
		for (pp = &p->free; *pp;) {
			b = *pp;
			if (p->reserved <= k)
				break;
			if (idle_only && !b->idle) {
				pp = &b->fnext;
				continue;
			}
			*pp = b->fnext;
			*pool_find(b->ptr) = b->hnext;
			p->reserved -= b->size;
			p->blocks--;
			b->fnext = out;
			out = b;
		}
	}
	pool_reap();
	pthread_mutex_unlock(&pool_lock);
	if (out && client_get(&c) != CUDA_SUCCESS)
		c = NULL;
	while ((b = out)) {
		out = b->fnext;
		/* not cuMemFree: no context need be current here */
		res = c ? client_mem_free(c, (CUdeviceptr)b->ptr)
			: CUDA_ERROR_NOT_INITIALIZED;
		if (err == CUDA_SUCCESS)
			err = res;
		free(b);
	}
	return err;
}

CUresult client_pool_destroy(CUmemoryPool h)
{
	struct client_pool *p;

	pthread_mutex_lock(&pool_lock);
	p = pool_live(h);
	if (!p || p == &pool_default) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	p->dead = true;
	if (pool_current == p)
		pool_current = &pool_default;
	pthread_mutex_unlock(&pool_lock);
	return pool_release(p, 0, false);
}

/* A free block of p for bytes on stream, taken off the free list. */
static struct pool_block *pool_take(struct client_pool *p, uint64_t bytes,
				    uint32_t stream)
{
	struct pool_block *b, *best = NULL;

	for (b = p->free; b; b = b->fnext)
		if (b->size >= bytes && b->size / 2 <= bytes &&
		    (b->idle || b->stream == stream) &&
		    (!best || b->size < best->size))
			best = b;
	if (best)
		pool_unfree(best);
	return best;
}

static void pool_count_use(struct client_pool *p, uint64_t bytes)
{
	p->used += bytes;
	if (p->used > p->used_high)
		p->used_high = p->used;
}

CUresult client_pool_alloc(struct client *c, CUmemoryPool h, uint64_t bytes,
			   uint32_t stream, CUdeviceptr *out)
{
	uint64_t want = (bytes + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1);
	struct client_pool *p;
	struct pool_block *b;
	CUdeviceptr ptr = 0;
	CUresult err;
	int round;

	if (!bytes || want < bytes)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	p = pool_live(h);
	if (!p) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	b = pool_take(p, want, stream);
	if (b) {
		b->stream = stream;
		pool_count_use(p, b->size);
		pthread_mutex_unlock(&pool_lock);
		*out = (CUdeviceptr)b->ptr;
		return CUDA_SUCCESS;
	}
	if (p->max_bytes && p->reserved + want > p->max_bytes) {
		pthread_mutex_unlock(&pool_lock);
		pool_release(p, p->max_bytes > want ? p->max_bytes - want : 0,
			     false);
		pthread_mutex_lock(&pool_lock);
		if (pool_live(h) != p || p->reserved + want > p->max_bytes) {
			pthread_mutex_unlock(&pool_lock);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	/* counted for the new block from now on: a pool's maximum holds
	 * against other threads, and the pool stays while it is made */
	p->reserved += want;
	p->blocks++;
	pthread_mutex_unlock(&pool_lock);
	/* out of memory: what every pool holds unused goes back, then try
	 * again. The worker's frees wait for every stream of the process,
	 * so this waits for the whole device (docs/DESIGN.md) */
	for (round = 0;; round++) {
		err = cuMemAlloc(&ptr, want);
		if (err != CUDA_ERROR_OUT_OF_MEMORY || round)
			break;
		pool_release(NULL, 0, false);
	}
	b = err == CUDA_SUCCESS ? calloc(1, sizeof(*b)) : NULL;
	pthread_mutex_lock(&pool_lock);
	if (!b) {
		p->reserved -= want;
		p->blocks--;
		pool_reap();
		pthread_mutex_unlock(&pool_lock);
		if (err == CUDA_SUCCESS) {
			client_mem_free(c, ptr);
			err = CUDA_ERROR_OUT_OF_MEMORY;
		}
		return err;
	}
	b->pool = p;
	b->ptr = ptr;
	b->size = want;
	b->stream = stream;
	b->hnext = pool_table[pool_hash(ptr)];
	pool_table[pool_hash(ptr)] = b;
	if (p->reserved > p->reserved_high)
		p->reserved_high = p->reserved;
	pool_count_use(p, want);
	pthread_mutex_unlock(&pool_lock);
	*out = ptr;
	return CUDA_SUCCESS;
}

CUresult client_pool_free(CUdeviceptr ptr, uint32_t stream)
{
	struct client_pool *dead;
	struct pool_block *b;

	pthread_mutex_lock(&pool_lock);
	b = *pool_find(ptr);
	if (!b || b->free) {
		pthread_mutex_unlock(&pool_lock);
		return b ? CUDA_ERROR_INVALID_VALUE : CUDA_ERROR_NOT_FOUND;
	}
	b->free = true;
	b->idle = false;
	b->stream = stream;
	b->seq = ++pool_seq;
	b->fnext = b->pool->free;
	b->pool->free = b;
	b->pool->used -= b->size;
	dead = b->pool->dead ? b->pool : NULL;
	pthread_mutex_unlock(&pool_lock);
	/* a destroyed pool's memory goes back as it comes (the worker's
	 * free waits for the work before it) */
	return dead ? pool_release(dead, 0, false) : CUDA_SUCCESS;
}

int client_pool_forget(CUdeviceptr ptr)
{
	struct pool_block **pp, *b;
	int rc = 0;

	pthread_mutex_lock(&pool_lock);
	pp = pool_find(ptr);
	b = *pp;
	if (b && b->free) {
		rc = -1;
	} else if (b) {
		*pp = b->hnext;
		b->pool->used -= b->size;
		b->pool->reserved -= b->size;
		b->pool->blocks--;
		free(b);
		pool_reap();
		rc = 1;
	}
	pthread_mutex_unlock(&pool_lock);
	return rc;
}

uint64_t client_pool_mark(void)
{
	uint64_t seq;

	pthread_mutex_lock(&pool_lock);
	seq = pool_seq;
	pthread_mutex_unlock(&pool_lock);
	return seq;
}

void client_pool_stream_idle(uint32_t stream, uint64_t mark)
{
	struct client_pool *p;
	struct pool_block *b;

	pthread_mutex_lock(&pool_lock);
	for (p = pools; p; p = p->next)
		for (b = p->free; b; b = b->fnext)
			if (b->stream == stream && b->seq <= mark)
				b->idle = true;
	pthread_mutex_unlock(&pool_lock);
}

void client_pool_ctx_idle(uint64_t mark)
{
	struct client_pool *p;
	struct pool_block *b;
	bool any = false;

	pthread_mutex_lock(&pool_lock);
	for (p = pools; p; p = p->next) {
		for (b = p->free; b; b = b->fnext) {
			if (b->seq <= mark) {
				b->idle = true;
				any = true;
			}
		}
	}
	pthread_mutex_unlock(&pool_lock);
	if (any)
		pool_release(NULL, POOL_OWN_KEEP, true);
}

CUresult client_pool_trim(CUmemoryPool h, uint64_t keep)
{
	struct client_pool *p = client_pool_check(h);

	if (!p)
		return CUDA_ERROR_INVALID_VALUE;
	return pool_release(p, keep, false);
}

CUresult client_pool_get_attribute(CUmemoryPool h, CUmemPool_attribute attr,
				   void *value)
{
	CUresult err = CUDA_SUCCESS;
	struct client_pool *p;
	cuuint64_t v = 0;
	int iv = 0;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	p = h ? pool_live(h) : NULL;
	if (!p) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		iv = p->reuse[attr -
			      CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES];
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		v = p->threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		v = p->reserved;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		v = p->reserved_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		v = p->used;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		v = p->used_high;
		break;
	default:
		err = CUDA_ERROR_INVALID_VALUE;
	}
out:
	pthread_mutex_unlock(&pool_lock);
	if (err != CUDA_SUCCESS)
		return err;
	if (attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
		*(int *)value = iv; /* the reuse flags are ints */
	else
		*(cuuint64_t *)value = v;
	return CUDA_SUCCESS;
}

CUresult client_pool_set_attribute(CUmemoryPool h, CUmemPool_attribute attr,
				   const void *value)
{
	CUresult err = CUDA_SUCCESS;
	struct client_pool *p;
	cuuint64_t v;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&pool_lock);
	p = h ? pool_live(h) : NULL;
	if (!p) {
		pthread_mutex_unlock(&pool_lock);
		return CUDA_ERROR_INVALID_VALUE;
	}
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		p->reuse[attr -
			 CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES] =
			*(const int *)value != 0;
		break;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		p->threshold = *(const cuuint64_t *)value;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		/* only a reset to the current value: 0 is all one may set */
		v = *(const cuuint64_t *)value;
		if (v != 0)
			err = CUDA_ERROR_INVALID_VALUE;
		else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
			p->reserved_high = p->reserved;
		else
			p->used_high = p->used;
		break;
	default: /* the current figures are read-only */
		err = CUDA_ERROR_INVALID_VALUE;
	}
	pthread_mutex_unlock(&pool_lock);
	return err;
}

void client_pool_reset(void)
{
	struct client_pool *p, *next;
	struct pool_block *b;
	unsigned int i;

	pthread_mutex_lock(&pool_lock);
	for (i = 0; i < POOL_BUCKETS; i++) {
		while ((b = pool_table[i])) {
			pool_table[i] = b->hnext;
			free(b);
		}
	}
	for (p = pools; p; p = next) {
		next = p->next;
		if (p != &pool_default)
			free(p);
	}
	pool_default = (struct client_pool){.reuse = {1, 1, 1}};
	pools = &pool_default;
	pool_current = &pool_default;
	pthread_mutex_unlock(&pool_lock);
}
