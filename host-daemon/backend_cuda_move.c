/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend's migration (backend.h: migrate_prepare/commit/abort):
 * a live vGPU moves to another GPU, or to a new context on its own GPU,
 * and every device address its clients hold stays valid.
 *
 * The window's memory is a set of extents (backend_extent.h): one
 * physical allocation each, normally one per allocation the clients made.
 * A move mirrors them: one target allocation per extent, so an 8 GiB vGPU
 * of 1 GiB allocations costs 8 cuMemCreate calls, not 4,096.
 *
 *   prepare (the clients run on): a green context over the target groups
 *     (cuda_slice_build), its kernels loaded (cuKernelGetFunction), fresh
 *     streams and events in it for those the clients have now, and, for
 *     another GPU, per source extent one allocation on the target
 *     (cuMemCreate) mapped into a staging reservation that mirrors the
 *     window, readable and writable by the target (and by the source,
 *     when it can reach the target's memory: cuDeviceCanAccessPeer); and
 *     copy streams in the source context.
 *   commit (a kernel boundary: every client thread stopped between two
 *     descriptors, every stream drained; under b->api and b->lock), the
 *     blackout, which holds only what must see the final state:
 *     extents made or freed since prepare get or lose their twin (the
 *     clients ran: normally none); the mapped memory is copied (GPU to
 *     GPU with cuMemcpyDtoDAsync spread over the copy streams, or
 *     through two pinned host buffers); streams and events the clients
 *     made since prepare get theirs, recorded events are recorded again;
 *     each module-scope variable a client was given is looked up in the
 *     target context and its bytes copied there; then each extent of the
 *     window is unmapped from the source memory and its twin mapped at
 *     the same address (one cuMemUnmap and one cuMemMap per extent, one
 *     cuMemSetAccess per run of extents), with every earlier step undone
 *     if one fails. Only then does anything switch: the streams and
 *     events the clients hold get their new CUstream and CUevent, the old
 *     context is retired (resize_reclaim destroys it).
 *   After the clients go on, resize_reclaim removes the staging mappings
 *     and releases the source memory (cuda_move_reclaim).
 *
 * Libraries are context-independent (cuLibraryLoadData): nothing to load
 * again, the target context gets their code on first use (warmed in
 * prepare). Module-scope variables are not: their storage is per context,
 * so after a migration a variable lives at another address than the one
 * its client was given. The client's address stays its name for it:
 * copies and memsets to it are translated here (cuda_global_real). A
 * variable first handed out later whose storage happens to reuse such an
 * old address gets a fresh address from a never-mapped range instead.
 * What cannot be translated is an address a kernel reads as a parameter
 * (cudaGetSymbolAddress passed to a kernel): documented in DESIGN.md.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend_cuda_int.h"

/* Fresh addresses for module variables whose own collide (see top). */
#define CUDA_ALIAS_BYTES (1ull << 30)
/* Host bounce buffers when the GPUs cannot reach each other: two of these */
#define CUDA_BOUNCE_BYTES (64u << 20)
/* GPU-to-GPU copies: spread over this many streams in the source context
 * (several copy engines at once), each run cut into pieces of this */
#define CUDA_COPY_STREAMS 4
#define CUDA_COPY_PIECE	  (256ull << 20)

/* A module-scope variable handed to a client (backend_library.gvars). */
struct cuda_global {
	struct cuda_global *next;
	CUdeviceptr vis;  /* the address the client was given */
	CUdeviceptr real; /* its storage in the current context */
	size_t bytes;
	char name[]; /* as the client asked for it */
};

/* The target's twin of one source extent, mapped at stage + first * gran
 * while h is set (or, after the switch, while it is junk). */
struct move_ext {
	uint64_t id; /* the source extent's */
	uint64_t first, count;
	CUmemGenericAllocationHandle h;
};

/* What a committed migration leaves for resize_reclaim: the staging
 * reservation with its mappings, and the source GPU's memory. */
struct cuda_move_junk {
	struct cuda_move_junk *next;
	CUdeviceptr va; /* the staging reservation */
	size_t size;
	uint64_t gran;
	struct move_ext *ext; /* mapped there (their handles: the window's) */
	uint32_t next_ext;
	CUmemGenericAllocationHandle *old; /* the source memory, unmapped */
	uint32_t nold;
};

/* An event made ahead in the target context, for an event of b. */
struct move_event {
	CUevent ev;
	unsigned int flags;
};

struct backend_move {
	uint32_t gpu;
	CUdevice dev;
	int cross; /* another GPU: the memory moves */
	int peer;  /* the source can write the target's memory */
	uint32_t ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS];
	struct cuda_slice *sl;
	char name[128]; /* of the target GPU */
	uint8_t uuid[16];
	/* cross: a twin per source extent, sorted by first */
	CUdeviceptr stage;
	int stage_reserved;
	struct move_ext *ext;
	uint32_t next, cap;
	void *bounce[2];
	CUstream copy[CUDA_COPY_STREAMS]; /* in the source context */
	uint32_t ncopy;
	/* made ahead in the target context (NULL once taken) */
	CUstream *pstreams;
	uint32_t npstreams;
	struct move_event *pevents;
	uint32_t npevents;
	uint64_t prepare_ns;
	uint64_t create_ns, access_ns; /* memory made, access set (so far) */
	/* parts of prepare_ns: the context, and the two above by its end */
	uint64_t slice_ns, prep_create_ns, prep_access_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static const char *gib(uint64_t n, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f GiB", n / (double)(1ull << 30));
	return buf;
}

/*
 * Make ctx current to this thread for a call on one of its streams (the
 * driver wants the stream's context current); the thread's slice id is
 * reset so that its next locked call makes the right one current again.
 */
static CUresult use_ctx(struct backend *b, CUcontext ctx)
{
	cuda_tls_slice = 0;
	return b->cu.cuCtxSetCurrent(ctx);
}

/* ---- module-scope variables ---------------------------------------- */

/* Whether [p, p + n) meets the client address of a variable of b. */
static int vis_taken(struct backend *b, CUdeviceptr p, size_t n)
{
	struct backend_library *l;
	struct cuda_global *g;

	for (l = b->libs; l; l = l->next)
		for (g = l->gvars; g; g = g->next)
			if (p < g->vis + g->bytes && g->vis < p + n)
				return 1;
	return 0;
}

/* A fresh never-mapped address for n bytes (256-aligned). */
static CUresult alias_alloc(struct backend *b, size_t n, CUdeviceptr *out)
{
	uint64_t need = (n + 255) & ~255ull;
	CUresult rc;

	if (!b->alias_va) {
		rc = b->cu.cuMemAddressReserve(&b->alias_va, CUDA_ALIAS_BYTES,
					       0, 0, 0);
		if (rc) {
			b->alias_va = 0;
			return rc;
		}
	}
	if (need > CUDA_ALIAS_BYTES - b->alias_next)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*out = b->alias_va + b->alias_next;
	b->alias_next += need;
	return CUDA_SUCCESS;
}

CUresult cuda_global_note(struct backend *b, struct backend_library *l,
			  const char *name, CUdeviceptr p, size_t n,
			  CUdeviceptr *vis)
{
	struct cuda_global *g;
	CUdeviceptr v = p;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&b->lock);
	for (g = l->gvars; g; g = g->next) {
		if (strcmp(g->name, name) == 0) {
			*vis = g->vis;
			goto out;
		}
	}
	if (b->aliased && vis_taken(b, p, n)) {
		rc = alias_alloc(b, n, &v);
		if (rc)
			goto out;
	}
	g = malloc(sizeof(*g) + strlen(name) + 1);
	if (!g) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	strcpy(g->name, name);
	g->vis = v;
	g->real = p;
	g->bytes = n;
	g->next = l->gvars;
	l->gvars = g;
	if (v != p)
		b->aliased++;
	*vis = v;
out:
	pthread_mutex_unlock(&b->lock);
	return rc;
}

CUdeviceptr cuda_global_real(struct backend *b, CUdeviceptr addr, size_t n)
{
	struct backend_library *l;
	struct cuda_global *g;
	CUdeviceptr r = addr;

	if (!b->aliased ||
	    (addr >= b->cfg.va_base && addr - b->cfg.va_base < b->cfg.va_size))
		return addr;
	pthread_mutex_lock(&b->lock);
	for (l = b->libs; l && r == addr; l = l->next) {
		for (g = l->gvars; g; g = g->next) {
			if (addr >= g->vis && n <= g->bytes &&
			    addr - g->vis <= g->bytes - n) {
				r = g->real + (addr - g->vis);
				break;
			}
		}
	}
	pthread_mutex_unlock(&b->lock);
	return r;
}

void cuda_globals_drop(struct backend *b, struct backend_library *l)
{
	struct cuda_global *g;

	while ((g = l->gvars)) {
		l->gvars = g->next;
		if (g->vis != g->real)
			b->aliased--;
		free(g);
	}
}

/* ---- staging ----------------------------------------------------------- */

static CUdeviceptr stage_va(const struct backend *b,
			    const struct backend_move *m,
			    const struct move_ext *x)
{
	return m->stage + x->first * b->gran;
}

/* Target memory for twin x (one allocation), mapped at its staging
 * address. Access comes per run (stage_access). */
static CUresult stage_add(struct backend *b, struct backend_move *m,
			  struct move_ext *x)
{
	CUmemAllocationProp prop = cuda_alloc_prop(m->dev);
	size_t bytes = x->count * b->gran;
	CUmemGenericAllocationHandle h;
	CUresult rc;

	rc = b->cu.cuMemCreate(&h, bytes, &prop, 0);
	if (rc)
		return rc;
	rc = b->cu.cuMemMap(stage_va(b, m, x), bytes, 0, h, 0);
	if (rc) {
		(void)b->cu.cuMemRelease(h);
		return rc;
	}
	x->h = h;
	return CUDA_SUCCESS;
}

/* Undo stage_add (a twin whose extent went away, or an abort). */
static void stage_drop(struct backend *b, struct backend_move *m,
		       struct move_ext *x)
{
	if (!x->h)
		return;
	(void)b->cu.cuMemUnmap(stage_va(b, m, x), x->count * b->gran);
	(void)b->cu.cuMemRelease(x->h);
	x->h = 0;
}

/* Read-write for the target, and for the source when it copies. */
static CUresult stage_access(struct backend *b, struct backend_move *m,
			     uint64_t first, uint64_t count)
{
	CUmemAccessDesc acc[2];
	CUresult rc;
	int n = 1;

	memset(acc, 0, sizeof(acc));
	acc[0].location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc[0].location.id = m->dev;
	acc[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	if (m->peer) {
		acc[1] = acc[0];
		acc[1].location.id = b->dev;
		n = 2;
	}
	rc = b->cu.cuMemSetAccess(m->stage + first * b->gran, count * b->gran,
				  acc, (size_t)n);
	if (rc && n == 2 && rc != CUDA_ERROR_OUT_OF_MEMORY) {
		/* the source may not map the target's memory here (MPS, a
		 * platform without peer mappings): copy through the host */
		m->peer = 0;
		rc = b->cu.cuMemSetAccess(m->stage + first * b->gran,
					  count * b->gran, acc, 1);
	}
	return rc;
}

/*
 * Target memory for every twin in m->ext that has none yet, one access
 * call per run of adjacent new twins. m->ext is sorted by first.
 */
static CUresult stage_fill(struct backend *b, struct backend_move *m, char *err,
			   size_t errlen)
{
	uint64_t want = 0, done = 0, rfirst = 0, rend = 0, t;
	struct move_ext *x;
	char a[32], c[32];
	CUresult rc = CUDA_SUCCESS;
	uint32_t i;

	for (i = 0; i < m->next; i++)
		if (!m->ext[i].h)
			want += m->ext[i].count;
	for (i = 0; i < m->next && rc == CUDA_SUCCESS; i++) {
		x = &m->ext[i];
		if (x->h)
			continue;
		t = now_ns();
		rc = stage_add(b, m, x);
		m->create_ns += now_ns() - t;
		if (rc)
			break;
		done += x->count;
		if (rend > rfirst && rend == x->first) {
			rend += x->count; /* one access call for the run */
			continue;
		}
		t = now_ns();
		if (rend > rfirst)
			rc = stage_access(b, m, rfirst, rend - rfirst);
		m->access_ns += now_ns() - t;
		rfirst = x->first;
		rend = x->first + x->count;
	}
	t = now_ns();
	if (rc == CUDA_SUCCESS && rend > rfirst)
		rc = stage_access(b, m, rfirst, rend - rfirst);
	m->access_ns += now_ns() - t;
	if (rc == CUDA_ERROR_OUT_OF_MEMORY)
		snprintf(err, errlen,
			 "cuda: GPU %u lacks the memory: the vGPU maps %s, "
			 "cuMemCreate there failed after %s "
			 "(CUDA_ERROR_OUT_OF_MEMORY)",
			 m->gpu, gib(want * b->gran, a, sizeof(a)),
			 gib(done * b->gran, c, sizeof(c)));
	else if (rc)
		cuda_fail(&b->cu, rc, err, errlen,
			  "mapping the target GPU's memory");
	return rc;
}

/* Room for one more twin. */
static int ext_grow(struct backend_move *m)
{
	struct move_ext *t;
	uint32_t cap;

	if (m->next < m->cap)
		return 0;
	cap = m->cap ? m->cap * 2 : 16;
	t = realloc(m->ext, (size_t)cap * sizeof(*t));
	if (!t)
		return -1;
	m->ext = t;
	m->cap = cap;
	return 0;
}

/* ---- prepare / abort --------------------------------------------------- */

void cuda_migrate_abort(struct backend *b, struct backend_move *m)
{
	uint32_t i;

	if (!m)
		return;
	for (i = 0; i < m->next; i++)
		stage_drop(b, m, &m->ext[i]);
	if (m->stage_reserved)
		(void)b->cu.cuMemAddressFree(m->stage, b->cfg.va_size);
	for (i = 0; i < 2; i++)
		if (m->bounce[i])
			(void)b->cu.cuMemFreeHost(m->bounce[i]);
	for (i = 0; i < m->ncopy; i++)
		(void)b->cu.cuStreamDestroy_v2(m->copy[i]);
	for (i = 0; i < m->npstreams; i++)
		if (m->pstreams[i])
			(void)b->cu.cuStreamDestroy_v2(m->pstreams[i]);
	for (i = 0; i < m->npevents; i++)
		if (m->pevents[i].ev)
			(void)b->cu.cuEventDestroy_v2(m->pevents[i].ev);
	if (m->sl)
		cuda_slice_free(b, m->sl);
	free(m->pstreams);
	free(m->pevents);
	free(m->ext);
	free(m);
}

/* Load every kernel into the new context now (as a resize does). */
static void warm_kernels(struct backend *b, struct backend_move *m)
{
	struct backend_library *l;
	struct backend_kernel *k;
	CUfunction f;

	if (b->cu.cuCtxSetCurrent(m->sl->ctx))
		return;
	cuda_tls_slice = 0; /* not the current slice's */
	pthread_mutex_lock(&b->lock);
	for (l = b->libs; l; l = l->next)
		for (k = l->kernels; k; k = k->next)
			(void)b->cu.cuKernelGetFunction(&f, k->kernel);
	pthread_mutex_unlock(&b->lock);
	cuda_ctx_refresh(b);
}

/*
 * Streams and events in the target context for those the clients have
 * now, so that commit only makes what came since. Best effort: what
 * fails here commit makes (and reports) itself.
 */
static void prepare_objects(struct backend *b, struct backend_move *m)
{
	struct backend_stream *s;
	struct backend_event *e;
	unsigned int *flags;
	uint32_t ns = 1, ne = 0, i;

	pthread_mutex_lock(&b->lock);
	for (s = b->streams; s; s = s->next)
		ns++;
	for (e = b->events; e; e = e->next)
		ne++;
	flags = calloc(ne + 1, sizeof(*flags));
	m->pstreams = calloc(ns, sizeof(*m->pstreams));
	m->pevents = calloc(ne + 1, sizeof(*m->pevents));
	for (e = b->events, i = 0; flags && e; e = e->next, i++)
		flags[i] = e->flags;
	pthread_mutex_unlock(&b->lock);
	if (!flags || !m->pstreams || !m->pevents)
		goto out;
	/* made in the given green context, whatever is current */
	for (i = 0; i < ns; i++) {
		if (cuda_slice_stream(b, m->sl, &m->pstreams[i])) {
			m->pstreams[i] = NULL;
			break;
		}
		m->npstreams = i + 1;
	}
	/* cuEventCreate makes it in the current context */
	if (use_ctx(b, m->sl->ctx) == CUDA_SUCCESS) {
		for (i = 0; i < ne; i++) {
			if (b->cu.cuEventCreate(&m->pevents[i].ev, flags[i])) {
				m->pevents[i].ev = NULL;
				break;
			}
			m->pevents[i].flags = flags[i];
			m->npevents = i + 1;
		}
	}
	cuda_ctx_refresh(b);
out:
	free(flags);
}

/*
 * Streams in the source context that the GPU-to-GPU copy is spread over
 * (several copy engines at once). Best effort: with none, the copy runs
 * on the current slice's marker stream.
 */
static void prepare_copy_streams(struct backend *b, struct backend_move *m)
{
	uint32_t i;

	api_lock(b);
	for (i = 0; i < CUDA_COPY_STREAMS; i++) {
		if (b->cu.cuGreenCtxStreamCreate(&m->copy[i], b->cur->green,
						 CU_STREAM_NON_BLOCKING, 0)) {
			m->copy[i] = NULL;
			break;
		}
		m->ncopy = i + 1;
	}
	api_unlock(b);
}

/* The target's memory side of prepare (another GPU): a twin per extent. */
static CUresult prepare_memory(struct backend *b, struct backend_move *m,
			       char *err, size_t errlen)
{
	uint64_t gran = 0, pos = 0;
	struct extent *e;
	int can = 0, i;
	CUresult rc;

	rc = cuda_granularity_of(&b->cu, m->dev, &gran);
	if (rc)
		return cuda_fail(&b->cu, rc, err, errlen,
				 "cuMemGetAllocationGranularity (target)");
	if (gran != b->gran) {
		snprintf(err, errlen,
			 "cuda: GPU %u maps memory in %" PRIu64
			 "-byte granules, GPU %u in %" PRIu64,
			 m->gpu, gran, b->cfg.gpu, b->gran);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	rc = b->cu.cuDeviceCanAccessPeer(&can, b->dev, m->dev);
	if (rc)
		return cuda_fail(&b->cu, rc, err, errlen,
				 "cuDeviceCanAccessPeer");
	m->peer = can;
	rc = b->cu.cuMemAddressReserve(&m->stage, b->cfg.va_size, b->gran, 0,
				       0);
	if (rc)
		return cuda_fail(&b->cu, rc, err, errlen,
				 "cuMemAddressReserve (staging)");
	m->stage_reserved = 1;
	/* the extents now; commit adds or drops what changes meanwhile */
	pthread_mutex_lock(&b->lock);
	while ((e = extent_next(&b->mem, &pos))) {
		if (ext_grow(m)) {
			pthread_mutex_unlock(&b->lock);
			snprintf(err, errlen, "cuda: out of memory");
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		m->ext[m->next++] =
			(struct move_ext){e->id, e->first, e->count, 0};
	}
	pthread_mutex_unlock(&b->lock);
	rc = stage_fill(b, m, err, errlen);
	for (i = 0; rc == CUDA_SUCCESS && !m->peer && i < 2; i++) {
		rc = b->cu.cuMemHostAlloc(&m->bounce[i], CUDA_BOUNCE_BYTES,
					  CU_MEMHOSTALLOC_PORTABLE);
		if (rc) {
			m->bounce[i] = NULL;
			cuda_fail(&b->cu, rc, err, errlen,
				  "cuMemHostAlloc (bounce buffers)");
		}
	}
	return rc;
}

int cuda_migrate_prepare(struct backend *b, uint32_t gpu,
			 const uint32_t *groups, uint32_t ngroups,
			 struct backend_move **out, char *err, size_t errlen)
{
	uint64_t t0 = now_ns();
	struct backend_move *m;
	CUuuid uuid;
	CUresult rc;
	char what[48];

	if (!b->serialize) {
		snprintf(err, errlen,
			 "cuda: migrating needs the API lock, which "
			 "VGPU_CUDA_SERIALIZE=0 turned off");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!ngroups || ngroups > VGPU_MAX_SM_GROUPS) {
		snprintf(err, errlen, "cuda: a slice needs 1 to %u SM groups",
			 VGPU_MAX_SM_GROUPS);
		return CUDA_ERROR_INVALID_VALUE;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "cuda: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->gpu = gpu;
	m->ngroups = ngroups;
	memcpy(m->groups, groups, ngroups * sizeof(*groups));
	rc = b->cu.cuDeviceGet(&m->dev, (int)gpu);
	if (rc) {
		snprintf(what, sizeof(what), "cuDeviceGet(%u)", gpu);
		cuda_fail(&b->cu, rc, err, errlen, what);
		goto fail;
	}
	m->cross = m->dev != b->dev;
	if ((rc = b->cu.cuDeviceGetName(m->name, sizeof(m->name) - 1,
					m->dev)) ||
	    (rc = b->cu.cuDeviceGetUuid_v2(&uuid, m->dev))) {
		cuda_fail(&b->cu, rc, err, errlen, "reading the target GPU");
		goto fail;
	}
	memcpy(m->uuid, uuid.bytes, sizeof(m->uuid));
	/* a context kept from an earlier stay there (backend_cuda_cache.c),
	 * else a new one */
	rc = cuda_slice_get(b, m->dev, groups, ngroups, &m->sl, err, errlen);
	if (rc)
		goto fail;
	warm_kernels(b, m);
	m->slice_ns = now_ns() - t0;
	prepare_objects(b, m);
	if (m->cross && (rc = prepare_memory(b, m, err, errlen)))
		goto fail;
	if (m->cross && m->peer)
		prepare_copy_streams(b, m);
	m->prepare_ns = now_ns() - t0;
	m->prep_create_ns = m->create_ns; /* commit may add its own */
	m->prep_access_ns = m->access_ns;
	*out = m;
	return CUDA_SUCCESS;
fail:
	cuda_migrate_abort(b, m);
	return rc;
}

/* ---- commit ------------------------------------------------------------- */

/* What commit makes in the target context before anything switches. */
struct move_new {
	CUstream *streams; /* [0] for defstream, then b->streams in order */
	uint32_t nstreams;
	CUevent *events; /* b->events in order */
	uint32_t nevents;
	CUdeviceptr *greal; /* every variable of every library, in order */
	uint32_t nglobals;
};

static void new_free(struct backend *b, struct move_new *n)
{
	uint32_t i;

	for (i = 0; n->streams && i < n->nstreams; i++)
		if (n->streams[i])
			(void)b->cu.cuStreamDestroy_v2(n->streams[i]);
	for (i = 0; n->events && i < n->nevents; i++)
		if (n->events[i])
			(void)b->cu.cuEventDestroy_v2(n->events[i]);
	free(n->streams);
	free(n->events);
	free(n->greal);
	memset(n, 0, sizeof(*n));
}

static int ext_cmp(const void *a, const void *b)
{
	const struct move_ext *x = a, *y = b;

	return x->first < y->first ? -1 : x->first > y->first;
}

/*
 * Bring the twins in line with the extents now: drop those whose extent
 * went away, make those of extents added since prepare. Afterwards
 * m->ext[i] is the twin of the i-th extent in address order.
 */
static CUresult commit_delta(struct backend *b, struct backend_move *m,
			     char *err, size_t errlen)
{
	struct extent *e;
	uint64_t pos = 0;
	uint32_t i, k, old;

	for (i = k = 0; i < m->next; i++) {
		e = extent_at(&b->mem, m->ext[i].first);
		if (!e || e->id != m->ext[i].id) {
			stage_drop(b, m, &m->ext[i]);
			continue;
		}
		m->ext[k++] = m->ext[i];
	}
	m->next = old = k;
	k = 0;
	while ((e = extent_next(&b->mem, &pos))) {
		if (k < old && m->ext[k].id == e->id) {
			k++;
			continue;
		}
		if (ext_grow(m)) {
			snprintf(err, errlen, "cuda: out of memory");
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		m->ext[m->next++] =
			(struct move_ext){e->id, e->first, e->count, 0};
	}
	if (m->next == old)
		return CUDA_SUCCESS;
	qsort(m->ext, m->next, sizeof(*m->ext), ext_cmp);
	return stage_fill(b, m, err, errlen);
}

/* One run of mapped granules to the target through the host buffers. */
static CUresult copy_bounce(struct backend *b, struct backend_move *m,
			    CUevent bev[2], uint64_t *chunk, uint64_t first,
			    uint64_t count)
{
	const struct cuda_sym *cu = &b->cu;
	CUstream src = b->cur->marker, dst = m->sl->marker;
	CUdeviceptr from = b->va + first * b->gran;
	CUdeviceptr to = m->stage + first * b->gran;
	uint64_t len = count * b->gran, off, c;
	void *buf;
	CUresult rc;

	for (off = 0; off < len; off += c, (*chunk)++) {
		c = len - off < CUDA_BOUNCE_BYTES ? len - off
						  : CUDA_BOUNCE_BYTES;
		buf = m->bounce[*chunk & 1];
		/* the copy out of this buffer two chunks ago is done */
		if (*chunk >= 2 &&
		    (rc = cu->cuEventSynchronize(bev[*chunk & 1])))
			return rc;
		if ((rc = use_ctx(b, b->cur->ctx)) ||
		    (rc = cu->cuMemcpyDtoHAsync_v2(buf, from + off, c, src)) ||
		    (rc = cu->cuStreamSynchronize(src)) ||
		    (rc = use_ctx(b, m->sl->ctx)) ||
		    (rc = cu->cuMemcpyHtoDAsync_v2(to + off, buf, c, dst)) ||
		    (rc = cu->cuEventRecord(bev[*chunk & 1], dst)))
			return rc;
	}
	return CUDA_SUCCESS;
}

/*
 * Every mapped granule to its staging twin: GPU to GPU, pieces spread
 * over the copy streams (kept granules hold nothing: not copied).
 */
static CUresult copy_peer(struct backend *b, struct backend_move *m,
			  uint64_t *bytes)
{
	const struct cuda_sym *cu = &b->cu;
	CUstream one = b->cur->marker, *st = m->ncopy ? m->copy : &one;
	uint32_t ns = m->ncopy ? m->ncopy : 1, k = 0, i;
	uint64_t pos = 0, f, c, off, len, piece;
	CUdeviceptr from, to;
	CUresult rc;

	if ((rc = use_ctx(b, b->cur->ctx)))
		return rc;
	while (extent_next_run(&b->mem, b->mem.mapped, &pos, b->ngranules, &f,
			       &c)) {
		from = b->va + f * b->gran;
		to = m->stage + f * b->gran;
		len = c * b->gran;
		for (off = 0; off < len; off += piece) {
			piece = len - off < CUDA_COPY_PIECE ? len - off
							    : CUDA_COPY_PIECE;
			rc = cu->cuMemcpyDtoDAsync_v2(to + off, from + off,
						      piece, st[k++ % ns]);
			if (rc)
				return rc;
		}
		*bytes += len;
	}
	for (i = 0; i < ns; i++)
		if ((rc = cu->cuStreamSynchronize(st[i])))
			return rc;
	return CUDA_SUCCESS;
}

/* Every mapped granule to its staging twin. New context current after. */
static CUresult commit_copy(struct backend *b, struct backend_move *m,
			    uint64_t *bytes)
{
	const struct cuda_sym *cu = &b->cu;
	CUevent bev[2] = {NULL, NULL};
	uint64_t pos = 0, f, c, chunk = 0;
	CUresult rc = CUDA_SUCCESS;
	int i;

	if (m->peer) {
		rc = copy_peer(b, m, bytes);
		goto out;
	}
	/* a fallback found in commit: the buffers were not made ahead */
	for (i = 0; i < 2 && rc == CUDA_SUCCESS; i++) {
		if (m->bounce[i])
			continue;
		rc = cu->cuMemHostAlloc(&m->bounce[i], CUDA_BOUNCE_BYTES,
					CU_MEMHOSTALLOC_PORTABLE);
		if (rc)
			m->bounce[i] = NULL;
	}
	/* the events are recorded on the target's stream: made there */
	if (rc || (rc = use_ctx(b, m->sl->ctx)) ||
	    (rc = cu->cuEventCreate(&bev[0], CU_EVENT_DISABLE_TIMING)) ||
	    (rc = cu->cuEventCreate(&bev[1], CU_EVENT_DISABLE_TIMING)))
		goto out;
	while (rc == CUDA_SUCCESS &&
	       extent_next_run(&b->mem, b->mem.mapped, &pos, b->ngranules, &f,
			       &c)) {
		rc = copy_bounce(b, m, bev, &chunk, f, c);
		*bytes += c * b->gran;
	}
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(b->cur->marker);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(m->sl->marker);
out:
	(void)use_ctx(b, m->sl->ctx);
	if (bev[0])
		(void)cu->cuEventDestroy_v2(bev[0]);
	if (bev[1])
		(void)cu->cuEventDestroy_v2(bev[1]);
	return rc;
}

/* An event made ahead with these flags (the i-th's first), or NULL. */
static CUevent take_event(struct backend_move *m, uint32_t i,
			  unsigned int flags)
{
	uint32_t k = i;
	CUevent ev;

	if (k >= m->npevents || !m->pevents[k].ev ||
	    m->pevents[k].flags != flags) {
		for (k = 0; k < m->npevents; k++)
			if (m->pevents[k].ev && m->pevents[k].flags == flags)
				break;
		if (k == m->npevents)
			return NULL;
	}
	ev = m->pevents[k].ev;
	m->pevents[k].ev = NULL;
	return ev;
}

/*
 * Each module variable's storage in the target context (current) with
 * its bytes copied over: all read from the source in one pass, written
 * in another (two waits, not two per variable).
 */
static CUresult commit_globals(struct backend *b, struct backend_move *m,
			       struct move_new *n)
{
	const struct cuda_sym *cu = &b->cu;
	struct backend_library *l;
	struct cuda_global *g;
	uint64_t total = 0, off;
	uint8_t *tmp;
	CUdeviceptr p;
	uint32_t i = 0;
	size_t sz;
	CUresult rc;

	for (l = b->libs; l; l = l->next) {
		for (g = l->gvars; g; g = g->next, i++) {
			rc = cu->cuLibraryGetGlobal(&p, &sz, l->lib, g->name);
			if (rc)
				return rc;
			if (sz < g->bytes)
				return CUDA_ERROR_INVALID_IMAGE;
			n->greal[i] = p;
			total += g->bytes;
		}
	}
	if (!total)
		return CUDA_SUCCESS;
	tmp = malloc(total);
	if (!tmp)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = use_ctx(b, b->cur->ctx);
	off = 0;
	for (l = b->libs; rc == CUDA_SUCCESS && l; l = l->next)
		for (g = l->gvars; rc == CUDA_SUCCESS && g; g = g->next) {
			rc = cu->cuMemcpyDtoHAsync_v2(tmp + off, g->real,
						      g->bytes, b->cur->marker);
			off += g->bytes;
		}
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(b->cur->marker);
	if (rc == CUDA_SUCCESS)
		rc = use_ctx(b, m->sl->ctx);
	off = 0;
	i = 0;
	for (l = b->libs; rc == CUDA_SUCCESS && l; l = l->next)
		for (g = l->gvars; rc == CUDA_SUCCESS && g; g = g->next, i++) {
			rc = cu->cuMemcpyHtoDAsync_v2(n->greal[i], tmp + off,
						      g->bytes, m->sl->marker);
			off += g->bytes;
		}
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(m->sl->marker);
	free(tmp);
	return rc;
}

/*
 * Streams and events in the target context (current), taken from those
 * made in prepare where it can, and the module variables.
 */
static CUresult commit_objects(struct backend *b, struct backend_move *m,
			       struct move_new *n)
{
	const struct cuda_sym *cu = &b->cu;
	struct backend_stream *s;
	struct backend_event *e;
	struct backend_library *l;
	struct cuda_global *g;
	uint32_t i;
	CUresult rc;

	n->nstreams = 1;
	for (s = b->streams; s; s = s->next)
		n->nstreams++;
	for (e = b->events; e; e = e->next)
		n->nevents++;
	for (l = b->libs; l; l = l->next)
		for (g = l->gvars; g; g = g->next)
			n->nglobals++;
	n->streams = calloc(n->nstreams, sizeof(*n->streams));
	n->events = calloc(n->nevents + 1, sizeof(*n->events));
	n->greal = calloc(n->nglobals + 1, sizeof(*n->greal));
	if (!n->streams || !n->events || !n->greal)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < n->nstreams; i++) {
		if (i < m->npstreams && m->pstreams[i]) {
			n->streams[i] = m->pstreams[i];
			m->pstreams[i] = NULL;
			continue;
		}
		rc = cuda_slice_stream(b, m->sl, &n->streams[i]);
		if (rc) {
			n->streams[i] = NULL;
			return rc;
		}
	}
	for (e = b->events, i = 0; e; e = e->next, i++) {
		n->events[i] = take_event(m, i, e->flags);
		if (!n->events[i]) {
			rc = cu->cuEventCreate(&n->events[i], e->flags);
			if (rc) {
				n->events[i] = NULL;
				return rc;
			}
		}
		/* a recorded event stays complete (its time: the move) */
		if (e->recorded &&
		    (rc = cu->cuEventRecord(n->events[i], m->sl->marker)))
			return rc;
	}
	return commit_globals(b, m, n);
}

static CUresult window_access(struct backend *b, CUdevice dev, uint64_t first,
			      uint64_t count)
{
	CUmemAccessDesc acc;

	memset(&acc, 0, sizeof(acc));
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = dev;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return b->cu.cuMemSetAccess(b->va + first * b->gran, count * b->gran,
				    &acc, 1);
}

/*
 * Put the source memory back under the first `upto` extents (their twins
 * were mapped there), then the source's access on every extent. Best
 * effort: this is the undo of a failed remap.
 */
static void remap_undo(struct backend *b, uint32_t upto)
{
	uint64_t pos = 0, f, c;
	struct extent *e;
	uint32_t i;

	for (i = 0; i < upto && (e = extent_next(&b->mem, &pos)); i++) {
		CUdeviceptr va = b->va + e->first * b->gran;
		size_t bytes = e->count * b->gran;

		(void)b->cu.cuMemUnmap(va, bytes);
		(void)b->cu.cuMemMap(va, bytes, 0,
				     (CUmemGenericAllocationHandle)e->handle,
				     0);
	}
	pos = 0;
	while (extent_next_run(&b->mem, b->mem.backed, &pos, b->ngranules, &f,
			       &c))
		(void)window_access(b, b->dev, f, c);
}

/*
 * Each extent of the window onto its twin (one cuMemUnmap, one cuMemMap:
 * exactly what the extent's own cuMemMap mapped), then access for the
 * target per run of extents. On failure everything is put back.
 */
static CUresult commit_remap(struct backend *b, struct backend_move *m)
{
	const struct cuda_sym *cu = &b->cu;
	uint64_t pos = 0, f, c;
	struct extent *e;
	uint32_t i = 0;
	CUresult rc = CUDA_SUCCESS;

	while ((e = extent_next(&b->mem, &pos))) {
		CUdeviceptr va = b->va + e->first * b->gran;
		size_t bytes = e->count * b->gran;

		if (i >= m->next || m->ext[i].id != e->id || !m->ext[i].h) {
			rc = CUDA_ERROR_ILLEGAL_STATE; /* commit_delta's job */
			break;
		}
		rc = cu->cuMemUnmap(va, bytes);
		if (rc)
			break;
		rc = cu->cuMemMap(va, bytes, 0, m->ext[i].h, 0);
		if (rc) {
			(void)cu->cuMemMap(
				va, bytes, 0,
				(CUmemGenericAllocationHandle)e->handle, 0);
			break;
		}
		i++;
	}
	if (rc) {
		remap_undo(b, i);
		return rc;
	}
	pos = 0;
	while (rc == CUDA_SUCCESS &&
	       extent_next_run(&b->mem, b->mem.backed, &pos, b->ngranules, &f,
			       &c))
		rc = window_access(b, m->dev, f, c);
	if (rc)
		remap_undo(b, i);
	return rc;
}

/*
 * Nothing below fails: the clients' objects get their new handles, the
 * window's extents their twins' handles. The source's memory (unmapped
 * now) goes into old[] for resize_reclaim, or is released here when old
 * is NULL.
 */
static void commit_switch(struct backend *b, struct backend_move *m,
			  struct move_new *n, struct backend_move_info *out,
			  CUmemGenericAllocationHandle *old)
{
	struct cuda_slice *cur = b->cur, *sl = m->sl;
	struct backend_stream *s;
	struct backend_event *e;
	struct backend_library *l;
	struct cuda_global *g;
	CUstream *olds = n->streams; /* reused for the old handles */
	struct extent *x;
	uint64_t pos = 0;
	uint32_t i;
	CUstream t;

	/* streams: swap, the old ones go with the old context */
	t = b->defstream.stream;
	b->defstream.stream = olds[0];
	b->defstream.slice = sl;
	olds[0] = t;
	for (s = b->streams, i = 1; s; s = s->next, i++) {
		t = s->stream;
		s->stream = olds[i];
		s->slice = sl;
		olds[i] = t;
	}
	cur->old = olds;
	cur->nold = n->nstreams;
	n->streams = NULL;
	/* events: the old ones are done (drained) */
	for (e = b->events, i = 0; e; e = e->next, i++) {
		(void)b->cu.cuEventDestroy_v2(e->event);
		e->event = n->events[i];
		n->events[i] = NULL;
		e->slice->events--;
		e->slice = sl;
		sl->events++;
	}
	/* module variables: their new storage */
	i = 0;
	for (l = b->libs; l; l = l->next) {
		for (g = l->gvars; g; g = g->next, i++) {
			if (g->vis != g->real)
				b->aliased--;
			g->real = n->greal[i];
			if (g->vis != g->real)
				b->aliased++;
		}
	}
	/* memory: each extent is its twin now */
	for (i = 0; m->cross && (x = extent_next(&b->mem, &pos)); i++) {
		if (old)
			old[i] = (CUmemGenericAllocationHandle)x->handle;
		else
			(void)b->cu.cuMemRelease(
				(CUmemGenericAllocationHandle)x->handle);
		x->handle = (uint64_t)m->ext[i].h;
		m->ext[i].h = 0; /* still mapped in the staging: junk */
	}
	sl->id = ++b->slice_ids;
	cuda_tls_slice = sl->id; /* it is current here */
	b->cur = sl;
	b->nsms = sl->nsms;
	cuda_limits_apply(b); /* the clients' limits, on the new context */
	b->dev = m->dev;
	b->cfg.gpu = m->gpu;
	b->cfg.ngroups = m->ngroups;
	memset(b->cfg.groups, 0, sizeof(b->cfg.groups));
	memcpy(b->cfg.groups, m->groups, m->ngroups * sizeof(m->groups[0]));
	cur->next = b->retired;
	b->retired = cur;
	b->nretired++;
	m->sl = NULL;
	cuda_read_info(b, m->name, m->uuid);
	out->sms = b->nsms;
	out->peer = (uint32_t)m->peer;
}

/* Unmap a junk's staging mappings and free its reservation and the
 * source memory it holds. */
static void junk_free(struct backend *b, struct cuda_move_junk *j)
{
	uint32_t i;

	for (i = 0; i < j->next_ext; i++)
		(void)b->cu.cuMemUnmap(j->va + j->ext[i].first * j->gran,
				       j->ext[i].count * j->gran);
	if (j->va)
		(void)b->cu.cuMemAddressFree(j->va, j->size);
	for (i = 0; i < j->nold; i++)
		(void)b->cu.cuMemRelease(j->old[i]);
	free(j->ext);
	free(j->old);
	free(j);
}

/*
 * What a cross-GPU commit leaves goes to resize_reclaim (after the
 * clients go on): the staging mappings and the source memory (j->old,
 * filled by commit_switch). j was made before the switch; without it the
 * staging goes now (slower, nothing leaks).
 */
static void commit_junk(struct backend *b, struct backend_move *m,
			struct cuda_move_junk *j)
{
	uint32_t i;

	if (!j) {
		for (i = 0; i < m->next; i++)
			(void)b->cu.cuMemUnmap(stage_va(b, m, &m->ext[i]),
					       m->ext[i].count * b->gran);
		(void)b->cu.cuMemAddressFree(m->stage, b->cfg.va_size);
	} else {
		j->va = m->stage;
		j->size = b->cfg.va_size;
		j->gran = b->gran;
		j->ext = m->ext; /* all mapped there; handles: the window's */
		j->next_ext = m->next;
		m->ext = NULL;
		j->next = b->junk;
		b->junk = j;
	}
	free(m->ext);
	m->ext = NULL;
	m->next = m->cap = 0;
	m->stage_reserved = 0;
}

/* The junk of a cross-GPU commit, made before anything changes. */
static struct cuda_move_junk *junk_alloc(struct backend *b)
{
	struct cuda_move_junk *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->nold = b->mem.count;
	j->old = calloc(j->nold + 1, sizeof(*j->old));
	if (!j->old) {
		free(j);
		return NULL;
	}
	return j;
}

int cuda_migrate_commit(struct backend *b, struct backend_move *m,
			struct backend_move_info *out, char *err, size_t errlen)
{
	const struct cuda_sym *cu = &b->cu;
	struct cuda_move_junk *j = NULL;
	struct move_new n;
	uint64_t t0 = now_ns(), t1, t2, t3, t4, bytes = 0;
	CUresult rc = CUDA_SUCCESS;

	memset(out, 0, sizeof(*out));
	memset(&n, 0, sizeof(n));
	api_lock(b);
	pthread_mutex_lock(&b->lock);
	if (m->cross && (rc = commit_delta(b, m, err, errlen)))
		goto fail;
	t1 = now_ns();
	if (m->cross && (rc = commit_copy(b, m, &bytes))) {
		cuda_fail(cu, rc, err, errlen, "copying the memory");
		goto fail;
	}
	t2 = now_ns();
	/* cuEventCreate and cuLibraryGetGlobal answer for the current one */
	rc = use_ctx(b, m->sl->ctx);
	if (rc == CUDA_SUCCESS)
		rc = commit_objects(b, m, &n);
	if (rc == CUDA_SUCCESS)
		rc = use_ctx(b, m->sl->ctx);
	if (rc) {
		cuda_fail(cu, rc, err, errlen,
			  "making streams, events and module variables in "
			  "the target context");
		goto fail;
	}
	if (m->cross)
		j = junk_alloc(b); /* NULL: freed at once instead */
	t3 = now_ns();
	if (m->cross && (rc = commit_remap(b, m))) {
		cuda_fail(cu, rc, err, errlen,
			  "mapping the target's memory into the window");
		goto fail;
	}
	t4 = now_ns();
	commit_switch(b, m, &n, out, j ? j->old : NULL);
	if (m->cross)
		commit_junk(b, m, j);
	pthread_mutex_unlock(&b->lock);
	api_unlock(b);
	cuda_slice_free_spares(b, b->cur); /* kept streams not taken */
	out->bytes = bytes;
	out->prepare_ns = m->prepare_ns;
	out->prepare_slice_ns = m->slice_ns;
	out->prepare_create_ns = m->prep_create_ns;
	out->prepare_access_ns = m->prep_access_ns;
	out->copy_ns = t2 - t1;
	out->remap_ns = t4 - t3;
	out->switch_ns = (t3 - t2) + (now_ns() - t4);
	out->commit_ns = now_ns() - t0;
	new_free(b, &n);
	cuda_migrate_abort(b, m); /* what is left of it */
	return CUDA_SUCCESS;
fail:
	if (j) {
		j->nold = 0; /* nothing of the source is in it yet */
		junk_free(b, j);
	}
	new_free(b, &n);
	(void)cu->cuCtxSetCurrent(b->cur->ctx);
	cuda_tls_slice = b->cur->id;
	pthread_mutex_unlock(&b->lock);
	api_unlock(b);
	cuda_migrate_abort(b, m);
	return rc;
}

/* ---- leftovers ----------------------------------------------------------- */

void cuda_move_reclaim(struct backend *b)
{
	struct cuda_move_junk *j;

	while ((j = b->junk)) {
		b->junk = j->next;
		junk_free(b, j);
	}
}

void cuda_move_close(struct backend *b)
{
	cuda_move_reclaim(b);
	if (b->alias_va)
		(void)b->cu.cuMemAddressFree(b->alias_va, CUDA_ALIAS_BYTES);
	b->alias_va = 0;
}
