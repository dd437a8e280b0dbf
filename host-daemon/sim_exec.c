/* SPDX-License-Identifier: MIT */
/*
 * The simulator's execution engine (see sim_exec.h): stream threads with
 * in-order queues, a pool of SM threads per slice, events as queue markers.
 *
 * Locks: x->lock guards the stream queues, the event states and the lists
 * of streams and events; x->pool_lock guards the pool's grid list, the
 * grids' counters, the pool generation and the busy-time account. The stream
 * thread never holds x->lock while it runs a copy or waits for a grid, so
 * queries and new work never wait for the device.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>

#include "sim_exec.h"

enum sim_item_kind {
	SIM_ITEM_COPY,
	SIM_ITEM_MEMSET,
	SIM_ITEM_LAUNCH,
	SIM_ITEM_RECORD,
	SIM_ITEM_WAIT,
	SIM_ITEM_HOST_WRITE, /* *p = value */
	SIM_ITEM_HOST_WAIT,  /* until *p >= value (signed distance) */
};

struct sim_grid;

/* One entry of a stream's queue. */
struct sim_item {
	struct sim_item *next;
	enum sim_item_kind kind;
	int sync; /* a caller waits for it and owns it: never freed here */
	int done; /* sync items: set once it has run */
	union {
		struct {
			void *dst;
			const void *src;
			size_t n;
		} copy;
		struct {
			void *dst;
			uint32_t value, elem_size;
			size_t count;
		} set;
		struct sim_grid *grid;
		struct {
			struct backend_event *e;
			uint64_t seq;
		} ev;
		struct {
			uint64_t *p;
			uint64_t value;
		} host;
	} u;
};

/*
 * A launched grid: its queue item, the block counters and its parameters
 * (copied), in one allocation so that a launch costs one malloc.
 */
struct sim_grid {
	struct sim_item item;  /* SIM_ITEM_LAUNCH, u.grid = this grid */
	struct sim_grid *next; /* in the pool's list while listed */
	int listed;
	struct sim_code code;
	void *params[SIM_MAX_PARAMS];
	struct sim_dim3 grid_dim, block_dim;
	uint64_t total;
	uint64_t next_block; /* atomic: the next block to claim */
	uint64_t done;	     /* blocks finished (or skipped on stop) */
	uint32_t active;     /* SM threads working on it */
	uint64_t gen;	     /* the pool generation that runs it */
	_Alignas(8) unsigned char buf[]; /* parameters, naturally aligned */
};

struct backend_stream {
	struct backend_stream *next; /* x->streams */
	struct sim_exec *x;
	pthread_t thread;
	pthread_cond_t work; /* an item was queued, or quit */
	pthread_cond_t idle; /* an item finished */
	struct sim_item *head, *tail;
	int running;  /* an item runs outside the lock */
	int dying;    /* destroyed: exit once drained */
	int quit;     /* engine teardown: exit now */
	int finished; /* the thread is past its last use of the lock */
};

struct backend_event {
	struct backend_event *next, *prev; /* x->events, until freed */
	uint32_t flags;
	uint64_t recorded;    /* sequence of the latest record */
	uint64_t completed;   /* highest sequence reached by a stream */
	struct timespec when; /* when `completed` was reached */
	int refs;	      /* the user's, plus one per queued item */
	int destroyed;
};

struct sim_sm {
	struct sim_exec *x;
	uint32_t smid;
	uint64_t gen; /* runs the grids listed while x->gen was this */
	int quit;     /* a resize that failed: leave at once */
	pthread_t thread;
	int started;
	int joined;
};

/* The SM threads of a slice before a resize, until they have exited. */
struct sim_pool_old {
	struct sim_pool_old *next;
	struct sim_sm *sms;
	uint32_t nsms;
};

struct sim_exec {
	pthread_mutex_t lock;
	pthread_cond_t ev_cond; /* some event completed, or teardown */
	int stop;		/* read by twins through sim_block.stop */
	struct backend_stream *streams;
	struct backend_stream *default_stream;
	struct backend_event *events;

	pthread_mutex_t pool_lock;
	pthread_cond_t pool_cond; /* a grid was listed, or quit */
	pthread_cond_t pool_done; /* a grid finished */
	struct sim_grid *grids;	  /* FIFO of grids with blocks to claim */
	int pool_quit;
	uint32_t nsms;
	struct sim_sm *sms;
	uint64_t gen;		       /* bumped by each resize */
	struct sim_pool_old *old;      /* earlier pools, still exiting */
	uint32_t grids_running;	       /* grids handed to the pool */
	uint64_t busy_since, busy_acc; /* ns: while grids_running > 0 */
};

static int stop_requested(struct sim_exec *x)
{
	return __atomic_load_n(&x->stop, __ATOMIC_ACQUIRE);
}

/* ---- the SM pool ---------------------------------------------------- */

/* sim_block.global of a grid whose library has no module variables. */
static void *no_global(const struct sim_block *blk, const char *name)
{
	return NULL;
}

static void run_block(struct sim_sm *sm, struct sim_grid *g, uint64_t idx)
{
	struct sim_block blk;
	uint64_t gx = g->grid_dim.x, gy = g->grid_dim.y;

	blk.block_idx.x = (uint32_t)(idx % gx);
	blk.block_idx.y = (uint32_t)((idx / gx) % gy);
	blk.block_idx.z = (uint32_t)(idx / (gx * gy));
	blk.block_dim = g->block_dim;
	blk.grid_dim = g->grid_dim;
	blk.smid = sm->smid;
	blk.stop = &sm->x->stop;
	blk.global = g->code.global;
	blk.library = g->code.library;
	g->code.k->fn(&blk, g->params);
}

static void grid_unlist(struct sim_exec *x, struct sim_grid *g)
{
	struct sim_grid **pp;

	for (pp = &x->grids; *pp; pp = &(*pp)->next) {
		if (*pp == g) {
			*pp = g->next;
			break;
		}
	}
	g->listed = 0;
}

/* The oldest listed grid of pool generation gen. Under pool_lock. */
static struct sim_grid *grid_of_gen(struct sim_exec *x, uint64_t gen)
{
	struct sim_grid *g;

	for (g = x->grids; g && g->gen != gen; g = g->next)
		;
	return g;
}

/*
 * One simulated SM: take the oldest grid of its generation that still has
 * blocks, claim its blocks one at a time from the atomic counter and run
 * them (skip them once teardown has begun), then account for what it ran.
 * After a resize (x->gen moved past its own) it finishes the grids that
 * were handed to its generation, then exits: a grid runs on one slice.
 */
static void *sm_main(void *arg)
{
	struct sim_sm *sm = arg;
	struct sim_exec *x = sm->x;

	pthread_mutex_lock(&x->pool_lock);
	for (;;) {
		struct sim_grid *g;
		uint64_t idx, ran = 0;

		g = grid_of_gen(x, sm->gen);
		if (!g) {
			if (x->pool_quit || sm->quit || sm->gen < x->gen)
				break;
			pthread_cond_wait(&x->pool_cond, &x->pool_lock);
			continue;
		}
		g->active++;
		pthread_mutex_unlock(&x->pool_lock);

		while ((idx = __atomic_fetch_add(&g->next_block, 1,
						 __ATOMIC_RELAXED)) <
		       g->total) {
			if (!stop_requested(x))
				run_block(sm, g, idx);
			ran++;
		}

		pthread_mutex_lock(&x->pool_lock);
		g->active--;
		g->done += ran;
		if (g->listed)
			grid_unlist(x, g);
		if (g->done == g->total && g->active == 0)
			pthread_cond_broadcast(&x->pool_done);
	}
	pthread_mutex_unlock(&x->pool_lock);
	return NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Hand a grid to the SM threads of the current generation and wait until
 * every block has run. The slice is busy while any grid is handed out.
 */
static void pool_run(struct sim_exec *x, struct sim_grid *g)
{
	struct sim_grid **pp;

	pthread_mutex_lock(&x->pool_lock);
	if (x->grids_running++ == 0)
		x->busy_since = mono_ns();
	for (pp = &x->grids; *pp; pp = &(*pp)->next)
		;
	g->next = NULL;
	g->gen = x->gen;
	*pp = g;
	g->listed = 1;
	pthread_cond_broadcast(&x->pool_cond);
	while (g->done != g->total || g->active != 0)
		pthread_cond_wait(&x->pool_done, &x->pool_lock);
	if (--x->grids_running == 0)
		x->busy_acc += mono_ns() - x->busy_since;
	pthread_mutex_unlock(&x->pool_lock);
}

/* ---- events ------------------------------------------------------------ */

/* Drop one reference; the last one frees the event. Under x->lock. */
static void event_unref(struct sim_exec *x, struct backend_event *e)
{
	if (--e->refs > 0)
		return;
	if (e->prev)
		e->prev->next = e->next;
	else
		x->events = e->next;
	if (e->next)
		e->next->prev = e->prev;
	free(e);
}

/* A stream reached record number seq of e. Under x->lock. */
static void event_complete(struct sim_exec *x, struct backend_event *e,
			   uint64_t seq)
{
	if (seq > e->completed) {
		e->completed = seq;
		clock_gettime(CLOCK_MONOTONIC, &e->when);
	}
	pthread_cond_broadcast(&x->ev_cond);
}

static int event_done(const struct backend_event *e)
{
	return e->completed >= e->recorded;
}

/* ---- streams ----------------------------------------------------------- */

static void item_run(struct sim_exec *x, struct sim_item *it)
{
	size_t i;

	switch (it->kind) {
	case SIM_ITEM_COPY:
		memmove(it->u.copy.dst, it->u.copy.src, it->u.copy.n);
		break;
	case SIM_ITEM_MEMSET:
		if (it->u.set.elem_size == 1) {
			memset(it->u.set.dst, (int)(it->u.set.value & 0xff),
			       it->u.set.count);
		} else if (it->u.set.elem_size == 2) {
			uint16_t *p = it->u.set.dst;

			for (i = 0; i < it->u.set.count; i++)
				p[i] = (uint16_t)it->u.set.value;
		} else {
			uint32_t *p = it->u.set.dst;

			for (i = 0; i < it->u.set.count; i++)
				p[i] = it->u.set.value;
		}
		break;
	case SIM_ITEM_LAUNCH:
		pool_run(x, it->u.grid);
		break;
	case SIM_ITEM_HOST_WRITE:
		__atomic_store_n(it->u.host.p, it->u.host.value,
				 __ATOMIC_RELEASE);
		break;
	case SIM_ITEM_HOST_WAIT:
		/* as the GPU polls; the engine's teardown ends it */
		while ((int64_t)(__atomic_load_n(it->u.host.p,
						 __ATOMIC_ACQUIRE) -
				 it->u.host.value) < 0 &&
		       !stop_requested(x)) {
			struct timespec t = {0, 20000};

			nanosleep(&t, NULL);
		}
		break;
	default:
		break;
	}
}

/* The item left the queue (run or abandoned). Under x->lock. */
static void item_finish(struct sim_exec *x, struct backend_stream *s,
			struct sim_item *it)
{
	if (it->kind == SIM_ITEM_RECORD || it->kind == SIM_ITEM_WAIT)
		event_unref(x, it->u.ev.e);
	if (it->sync) {
		it->done = 1; /* the waiter owns it from here */
	} else {
		/* a launch item is part of its grid: one free for both */
		free(it->kind == SIM_ITEM_LAUNCH ? (void *)it->u.grid : it);
	}
	pthread_cond_broadcast(&s->idle);
}

static struct sim_item *queue_pop(struct backend_stream *s)
{
	struct sim_item *it = s->head;

	s->head = it->next;
	if (!s->head)
		s->tail = NULL;
	return it;
}

/*
 * A stream's thread: run its queue in order. Markers (event records and
 * waits) are handled under the lock; copies and grids run outside it.
 */
static void *stream_main(void *arg)
{
	struct backend_stream *s = arg;
	struct sim_exec *x = s->x;

	pthread_mutex_lock(&x->lock);
	for (;;) {
		struct sim_item *it = s->head;

		if (s->quit)
			break;
		if (!it) {
			if (s->dying)
				break;
			pthread_cond_wait(&s->work, &x->lock);
			continue;
		}
		if (it->kind == SIM_ITEM_WAIT) {
			if (it->u.ev.e->completed < it->u.ev.seq) {
				pthread_cond_wait(&x->ev_cond, &x->lock);
				continue;
			}
			item_finish(x, s, queue_pop(s));
			continue;
		}
		if (it->kind == SIM_ITEM_RECORD) {
			event_complete(x, it->u.ev.e, it->u.ev.seq);
			item_finish(x, s, queue_pop(s));
			continue;
		}
		queue_pop(s);
		s->running = 1;
		pthread_mutex_unlock(&x->lock);
		item_run(x, it);
		pthread_mutex_lock(&x->lock);
		s->running = 0;
		item_finish(x, s, it);
	}
	s->finished = 1;
	pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&x->lock);
	return NULL;
}

static void stream_free(struct sim_exec *x, struct backend_stream *s)
{
	pthread_cond_destroy(&s->work);
	pthread_cond_destroy(&s->idle);
	free(s);
}

/* Join and free destroyed streams whose threads have finished. Under
 * x->lock (a finished thread no longer needs it). */
static void streams_reap(struct sim_exec *x)
{
	struct backend_stream **pp = &x->streams;

	while (*pp) {
		struct backend_stream *s = *pp;

		if (s->dying && s->finished) {
			*pp = s->next;
			pthread_join(s->thread, NULL);
			stream_free(x, s);
		} else {
			pp = &s->next;
		}
	}
}

static int stream_new(struct sim_exec *x, struct backend_stream **out)
{
	struct backend_stream *s = calloc(1, sizeof(*s));
	int rc;

	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->x = x;
	pthread_cond_init(&s->work, NULL);
	pthread_cond_init(&s->idle, NULL);
	rc = pthread_create(&s->thread, NULL, stream_main, s);
	if (rc) {
		stream_free(x, s);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_setname_np(s->thread, "vgpu-sim-strm");
	pthread_mutex_lock(&x->lock);
	streams_reap(x);
	s->next = x->streams;
	x->streams = s;
	pthread_mutex_unlock(&x->lock);
	*out = s;
	return CUDA_SUCCESS;
}

static struct backend_stream *stream_or_default(struct sim_exec *x,
						struct backend_stream *s)
{
	return s ? s : x->default_stream;
}

/* Append an item; fails only for a stream already destroyed. */
static int enqueue(struct sim_exec *x, struct backend_stream *s,
		   struct sim_item *it)
{
	if (s->dying || s->quit)
		return CUDA_ERROR_INVALID_HANDLE;
	it->next = NULL;
	if (s->tail)
		s->tail->next = it;
	else
		s->head = it;
	s->tail = it;
	pthread_cond_signal(&s->work);
	return CUDA_SUCCESS;
}

static int enqueue_locked(struct sim_exec *x, struct backend_stream *s,
			  struct sim_item *it)
{
	int rc;

	pthread_mutex_lock(&x->lock);
	rc = enqueue(x, s, it);
	pthread_mutex_unlock(&x->lock);
	return rc;
}

int sim_stream_create(struct sim_exec *x, struct backend_stream **out)
{
	return stream_new(x, out);
}

void sim_stream_destroy(struct sim_exec *x, struct backend_stream *s)
{
	if (!s || s == x->default_stream)
		return;
	pthread_mutex_lock(&x->lock);
	s->dying = 1;
	pthread_cond_signal(&s->work);
	streams_reap(x);
	pthread_mutex_unlock(&x->lock);
}

int sim_stream_sync(struct sim_exec *x, struct backend_stream *s)
{
	s = stream_or_default(x, s);
	pthread_mutex_lock(&x->lock);
	while ((s->head || s->running) && !s->finished)
		pthread_cond_wait(&s->idle, &x->lock);
	pthread_mutex_unlock(&x->lock);
	return CUDA_SUCCESS;
}

int sim_stream_query(struct sim_exec *x, struct backend_stream *s)
{
	int busy;

	s = stream_or_default(x, s);
	pthread_mutex_lock(&x->lock);
	busy = s->head || s->running;
	pthread_mutex_unlock(&x->lock);
	return busy ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

int sim_stream_wait_event(struct sim_exec *x, struct backend_stream *s,
			  struct backend_event *e)
{
	struct sim_item *it = calloc(1, sizeof(*it));
	int rc = CUDA_SUCCESS;

	if (!it)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s = stream_or_default(x, s);
	it->kind = SIM_ITEM_WAIT;
	pthread_mutex_lock(&x->lock);
	if (event_done(e)) {
		/* never recorded, or already reached: nothing to wait for */
		free(it);
	} else {
		it->u.ev.e = e;
		it->u.ev.seq = e->recorded;
		rc = enqueue(x, s, it);
		if (rc == CUDA_SUCCESS)
			e->refs++;
		else
			free(it);
	}
	pthread_mutex_unlock(&x->lock);
	return rc;
}

/* ---- event operations --------------------------------------------------- */

int sim_event_create(struct sim_exec *x, uint32_t flags,
		     struct backend_event **out)
{
	const uint32_t known = CU_EVENT_BLOCKING_SYNC |
			       CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	struct backend_event *e;

	if (flags & ~known)
		return CUDA_ERROR_INVALID_VALUE;
	if (flags & CU_EVENT_INTERPROCESS)
		return CUDA_ERROR_NOT_SUPPORTED;
	e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	e->flags = flags;
	e->refs = 1;
	pthread_mutex_lock(&x->lock);
	e->next = x->events;
	if (x->events)
		x->events->prev = e;
	x->events = e;
	pthread_mutex_unlock(&x->lock);
	*out = e;
	return CUDA_SUCCESS;
}

void sim_event_destroy(struct sim_exec *x, struct backend_event *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&x->lock);
	if (!e->destroyed) {
		e->destroyed = 1;
		event_unref(x, e);
	}
	pthread_mutex_unlock(&x->lock);
}

int sim_event_record(struct sim_exec *x, struct backend_event *e,
		     struct backend_stream *s)
{
	struct sim_item *it = calloc(1, sizeof(*it));
	int rc;

	if (!it)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s = stream_or_default(x, s);
	it->kind = SIM_ITEM_RECORD;
	it->u.ev.e = e;
	pthread_mutex_lock(&x->lock);
	it->u.ev.seq = e->recorded + 1;
	if (!s->head && !s->running && !s->dying && !s->quit) {
		/*
		 * An idle stream reaches the record at once. Queued, it
		 * would keep the stream busy for stream_query until its
		 * thread woke: a record the worker adds (the watchdog's
		 * catch-up) would make cuStreamQuery say NOT_READY on a
		 * stream whose work is all done. On a busy stream the
		 * record is reached under the same lock hold that finishes
		 * its predecessor, so it is never seen alone.
		 */
		e->recorded++;
		event_complete(x, e, e->recorded);
		pthread_mutex_unlock(&x->lock);
		free(it);
		return CUDA_SUCCESS;
	}
	rc = enqueue(x, s, it);
	if (rc == CUDA_SUCCESS) {
		e->recorded++;
		e->refs++;
	} else {
		free(it);
	}
	pthread_mutex_unlock(&x->lock);
	return rc;
}

int sim_event_sync(struct sim_exec *x, struct backend_event *e)
{
	uint64_t target;

	pthread_mutex_lock(&x->lock);
	target = e->recorded;
	while (e->completed < target && !stop_requested(x))
		pthread_cond_wait(&x->ev_cond, &x->lock);
	pthread_mutex_unlock(&x->lock);
	return CUDA_SUCCESS;
}

int sim_event_query(struct sim_exec *x, struct backend_event *e)
{
	int done;

	pthread_mutex_lock(&x->lock);
	done = event_done(e);
	pthread_mutex_unlock(&x->lock);
	return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

int sim_event_elapsed(struct sim_exec *x, struct backend_event *start,
		      struct backend_event *end, float *ms)
{
	int rc = CUDA_SUCCESS;
	double d;

	pthread_mutex_lock(&x->lock);
	if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING ||
	    !start->recorded || !end->recorded) {
		rc = CUDA_ERROR_INVALID_HANDLE;
	} else if (!event_done(start) || !event_done(end)) {
		rc = CUDA_ERROR_NOT_READY;
	} else {
		d = (double)(end->when.tv_sec - start->when.tv_sec) * 1e3 +
		    (double)(end->when.tv_nsec - start->when.tv_nsec) / 1e6;
		*ms = (float)d;
	}
	pthread_mutex_unlock(&x->lock);
	return rc;
}

/* ---- work -------------------------------------------------------------- */

int sim_copy(struct sim_exec *x, struct backend_stream *s, void *dst,
	     const void *src, size_t n, int wait)
{
	struct sim_item local, *it;
	int rc;

	s = stream_or_default(x, s);
	if (wait) {
		it = &local;
		memset(it, 0, sizeof(*it));
		it->sync = 1;
	} else {
		it = calloc(1, sizeof(*it));
		if (!it)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	it->kind = SIM_ITEM_COPY;
	it->u.copy.dst = dst;
	it->u.copy.src = src;
	it->u.copy.n = n;

	pthread_mutex_lock(&x->lock);
	rc = enqueue(x, s, it);
	if (rc == CUDA_SUCCESS && wait) {
		while (!it->done && !s->finished)
			pthread_cond_wait(&s->idle, &x->lock);
		if (!it->done)
			rc = CUDA_ERROR_ILLEGAL_STATE; /* engine torn down */
	}
	pthread_mutex_unlock(&x->lock);
	if (rc != CUDA_SUCCESS && !wait)
		free(it);
	return rc;
}

int sim_memset(struct sim_exec *x, struct backend_stream *s, void *dst,
	       uint32_t value, uint32_t elem_size, size_t count)
{
	struct sim_item *it;
	int rc;

	if ((elem_size != 1 && elem_size != 2 && elem_size != 4) ||
	    (uintptr_t)dst % elem_size)
		return CUDA_ERROR_INVALID_VALUE;
	it = calloc(1, sizeof(*it));
	if (!it)
		return CUDA_ERROR_OUT_OF_MEMORY;
	it->kind = SIM_ITEM_MEMSET;
	it->u.set.dst = dst;
	it->u.set.value = value;
	it->u.set.elem_size = elem_size;
	it->u.set.count = count;
	rc = enqueue_locked(x, stream_or_default(x, s), it);
	if (rc != CUDA_SUCCESS)
		free(it);
	return rc;
}

int sim_host_op(struct sim_exec *x, struct backend_stream *s, uint64_t *p,
		uint64_t value, int wait)
{
	struct sim_item *it = calloc(1, sizeof(*it));
	int rc;

	if (!it)
		return CUDA_ERROR_OUT_OF_MEMORY;
	it->kind = wait ? SIM_ITEM_HOST_WAIT : SIM_ITEM_HOST_WRITE;
	it->u.host.p = p;
	it->u.host.value = value;
	rc = enqueue_locked(x, stream_or_default(x, s), it);
	if (rc != CUDA_SUCCESS)
		free(it);
	return rc;
}

void sim_param_layout(const struct sim_kernel_desc *k,
		      struct vgpu_kernel_info *layout)
{
	uint32_t off = 0, i;

	memset(layout, 0, sizeof(*layout));
	layout->nparams = k->nparams;
	for (i = 0; i < k->nparams && i < SIM_MAX_PARAMS; i++) {
		uint32_t size = k->param_sizes[i];
		uint32_t align = size < 8 ? size : 8;

		if (align == 0)
			align = 1;
		off = (off + align - 1) / align * align;
		layout->params[i].offset = off;
		layout->params[i].size = size;
		off += size;
	}
	layout->param_bytes = off;
}

/* CUDA's launch limits (as the simulated device reports them). */
static int launch_dims_ok(const uint32_t grid[3], const uint32_t block[3],
			  uint32_t shared_bytes)
{
	uint64_t threads = (uint64_t)block[0] * block[1] * block[2];

	if (!grid[0] || !grid[1] || !grid[2] || !threads)
		return 0;
	if (grid[0] > 0x7fffffffu || grid[1] > 65535 || grid[2] > 65535)
		return 0;
	if (block[0] > 1024 || block[1] > 1024 || block[2] > 64 ||
	    threads > 1024)
		return 0;
	return shared_bytes <= SIM_SHARED_OPTIN; /* the kernel's own limit
						     is the backend's check */
}

int sim_launch(struct sim_exec *x, struct backend_stream *s,
	       const struct sim_code *code, const uint32_t grid[3],
	       const uint32_t block[3], uint32_t shared_bytes, void **params)
{
	const struct sim_kernel_desc *k = code->k;
	struct vgpu_kernel_info layout;
	struct sim_grid *g;
	struct sim_item *it;
	uint32_t i;
	int rc;

	if (!launch_dims_ok(grid, block, shared_bytes))
		return CUDA_ERROR_INVALID_VALUE;
	if (k->nparams > SIM_MAX_PARAMS || (k->nparams && !params))
		return CUDA_ERROR_INVALID_VALUE;
	sim_param_layout(k, &layout);

	for (i = 0; i < k->nparams; i++)
		if (!params[i])
			return CUDA_ERROR_INVALID_VALUE;
	g = calloc(1, sizeof(*g) + layout.param_bytes);
	if (!g)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < k->nparams; i++) {
		g->params[i] = g->buf + layout.params[i].offset;
		memcpy(g->params[i], params[i], layout.params[i].size);
	}
	g->code = *code;
	if (!g->code.global)
		g->code.global = no_global;
	g->grid_dim = (struct sim_dim3){grid[0], grid[1], grid[2]};
	g->block_dim = (struct sim_dim3){block[0], block[1], block[2]};
	g->total = (uint64_t)grid[0] * grid[1] * grid[2];
	it = &g->item;
	it->kind = SIM_ITEM_LAUNCH;
	it->u.grid = g;
	rc = enqueue_locked(x, stream_or_default(x, s), it);
	if (rc != CUDA_SUCCESS)
		free(g);
	return rc;
}

/* ---- engine ------------------------------------------------------------ */

/*
 * Start the SM threads of generation gen into sms[0 .. nsms) (calloc'd
 * by the caller). On failure the threads already started are in sms with
 * started set; the caller stops them (pool_quit) and joins them.
 */
static int pool_start(struct sim_exec *x, struct sim_sm *sms,
		      const uint32_t *smids, uint32_t nsms, uint64_t gen,
		      char *err, size_t errlen)
{
	uint32_t i;
	int rc;

	for (i = 0; i < nsms; i++) {
		struct sim_sm *sm = &sms[i];
		char name[16];

		sm->x = x;
		sm->smid = smids[i];
		sm->gen = gen;
		rc = pthread_create(&sm->thread, NULL, sm_main, sm);
		if (rc) {
			snprintf(err, errlen,
				 "sim: cannot start the thread of SM %u: %s",
				 smids[i], strerror(rc));
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		sm->started = 1;
		snprintf(name, sizeof(name), "vgpu-sim-sm%u", smids[i]);
		pthread_setname_np(sm->thread, name);
	}
	return CUDA_SUCCESS;
}

/* Join the threads of a pool that have not been joined yet. */
static void pool_join(struct sim_sm *sms, uint32_t nsms)
{
	uint32_t i;

	for (i = 0; i < nsms; i++) {
		if (sms[i].started && !sms[i].joined)
			pthread_join(sms[i].thread, NULL);
		sms[i].joined = 1;
	}
}

int sim_exec_create(struct sim_exec **out, const uint32_t *smids, uint32_t nsms,
		    char *err, size_t errlen)
{
	struct sim_exec *x;
	int rc;

	if (nsms == 0) {
		snprintf(err, errlen, "sim: a slice needs at least one SM");
		return CUDA_ERROR_INVALID_VALUE;
	}
	x = calloc(1, sizeof(*x));
	if (!x || !(x->sms = calloc(nsms, sizeof(*x->sms)))) {
		free(x);
		snprintf(err, errlen, "sim: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_init(&x->lock, NULL);
	pthread_cond_init(&x->ev_cond, NULL);
	pthread_mutex_init(&x->pool_lock, NULL);
	pthread_cond_init(&x->pool_cond, NULL);
	pthread_cond_init(&x->pool_done, NULL);
	x->nsms = nsms;
	rc = pool_start(x, x->sms, smids, nsms, 0, err, errlen);
	if (rc != CUDA_SUCCESS) {
		sim_exec_destroy(x);
		return rc;
	}
	rc = stream_new(x, &x->default_stream);
	if (rc != CUDA_SUCCESS) {
		snprintf(err, errlen, "sim: cannot start the default stream");
		sim_exec_destroy(x);
		return rc;
	}
	*out = x;
	return CUDA_SUCCESS;
}

void sim_exec_destroy(struct sim_exec *x)
{
	struct backend_stream *s;

	if (!x)
		return;
	pthread_mutex_lock(&x->lock);
	__atomic_store_n(&x->stop, 1, __ATOMIC_RELEASE);
	for (s = x->streams; s; s = s->next) {
		s->quit = 1;
		pthread_cond_signal(&s->work);
	}
	pthread_cond_broadcast(&x->ev_cond);
	pthread_mutex_unlock(&x->lock);

	/* Streams first: their grids finish fast once stop is set. */
	while ((s = x->streams)) {
		x->streams = s->next;
		pthread_join(s->thread, NULL);
		pthread_mutex_lock(&x->lock);
		while (s->head)
			item_finish(x, s, queue_pop(s));
		pthread_mutex_unlock(&x->lock);
		stream_free(x, s);
	}

	pthread_mutex_lock(&x->pool_lock);
	x->pool_quit = 1;
	pthread_cond_broadcast(&x->pool_cond);
	pthread_mutex_unlock(&x->pool_lock);
	pool_join(x->sms, x->nsms);
	while (x->old) {
		struct sim_pool_old *o = x->old;

		x->old = o->next;
		pool_join(o->sms, o->nsms);
		free(o->sms);
		free(o);
	}

	while (x->events) {
		struct backend_event *e = x->events;

		x->events = e->next;
		free(e);
	}
	pthread_mutex_destroy(&x->lock);
	pthread_cond_destroy(&x->ev_cond);
	pthread_mutex_destroy(&x->pool_lock);
	pthread_cond_destroy(&x->pool_cond);
	pthread_cond_destroy(&x->pool_done);
	free(x->sms);
	free(x);
}

/* ---- resize ------------------------------------------------------------- */

/*
 * A new pool for the new SMs, started before the switch (so the switch
 * itself is a pointer swap under pool_lock): grids handed out from then
 * on run on the new pool, grids already handed out finish on the old one
 * (each grid on one slice), and each stream's thread waits for its grid
 * before its next item, so the order of a stream's work is kept as it is.
 */
int sim_exec_resize(struct sim_exec *x, const uint32_t *smids, uint32_t nsms,
		    uint64_t *switch_ns, char *err, size_t errlen)
{
	struct sim_pool_old *o;
	struct sim_sm *sms;
	uint64_t t0, gen;
	uint32_t i;
	int rc;

	if (nsms == 0) {
		snprintf(err, errlen, "sim: a slice needs at least one SM");
		return CUDA_ERROR_INVALID_VALUE;
	}
	o = calloc(1, sizeof(*o));
	sms = calloc(nsms, sizeof(*sms));
	if (!o || !sms) {
		free(o);
		free(sms);
		snprintf(err, errlen, "sim: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* only resize moves x->gen, and resizes come one at a time */
	pthread_mutex_lock(&x->pool_lock);
	gen = x->gen + 1;
	pthread_mutex_unlock(&x->pool_lock);
	rc = pool_start(x, sms, smids, nsms, gen, err, errlen);
	if (rc != CUDA_SUCCESS) {
		pthread_mutex_lock(&x->pool_lock);
		for (i = 0; i < nsms; i++)
			sms[i].quit = 1;
		pthread_cond_broadcast(&x->pool_cond);
		pthread_mutex_unlock(&x->pool_lock);
		pool_join(sms, nsms);
		free(sms);
		free(o);
		return rc;
	}
	pthread_mutex_lock(&x->pool_lock);
	t0 = mono_ns();
	o->sms = x->sms;
	o->nsms = x->nsms;
	o->next = x->old;
	x->old = o;
	x->sms = sms;
	x->nsms = nsms;
	x->gen++;
	pthread_cond_broadcast(&x->pool_cond);
	*switch_ns = mono_ns() - t0;
	pthread_mutex_unlock(&x->pool_lock);
	return CUDA_SUCCESS;
}

/* Whether every thread of an old pool has left sm_main. */
static int pool_exited(struct sim_sm *sms, uint32_t nsms)
{
	uint32_t i;

	for (i = 0; i < nsms; i++) {
		if (!sms[i].started || sms[i].joined)
			continue;
		if (pthread_tryjoin_np(sms[i].thread, NULL))
			return 0;
		sms[i].joined = 1;
	}
	return 1;
}

int sim_exec_reclaim(struct sim_exec *x)
{
	struct sim_pool_old **pp = &x->old, *o;

	while ((o = *pp)) {
		if (pool_exited(o->sms, o->nsms)) {
			*pp = o->next;
			free(o->sms);
			free(o);
		} else {
			pp = &o->next;
		}
	}
	return x->old ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

uint64_t sim_exec_busy_ns(struct sim_exec *x)
{
	uint64_t v;

	pthread_mutex_lock(&x->pool_lock);
	v = x->busy_acc;
	if (x->grids_running)
		v += mono_ns() - x->busy_since;
	pthread_mutex_unlock(&x->pool_lock);
	return v;
}
