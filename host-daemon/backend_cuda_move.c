/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend's migration (backend.h: migrate_prepare/commit/abort):
 * a live vGPU moves to another GPU, or to a new context on its own GPU,
 * and every device address its clients hold stays valid.
 *
 *   prepare (the clients run on): a green context over the target groups
 *     (cuda_slice_build), its kernels loaded (cuKernelGetFunction), and,
 *     for another GPU, one physical allocation on the target per granule
 *     mapped now (cuMemCreate with location = the target), mapped into a
 *     staging reservation that mirrors the VA window, readable and
 *     writable by the target (and by the source, when it can reach the
 *     target's memory: cuDeviceCanAccessPeer).
 *   commit (a kernel boundary: every client thread stopped between two
 *     descriptors, every stream drained; under b->api and b->lock):
 *     granules mapped or freed since prepare are added or dropped; the
 *     memory is copied (GPU to GPU with cuMemcpyDtoDAsync on a source
 *     stream, or through two pinned host buffers); streams and events are
 *     made anew in the target context; each module-scope variable a
 *     client was given is looked up in the target context and its bytes
 *     copied there; then each granule of the window is unmapped from the
 *     source memory and mapped to the target's at the same address
 *     (cuMemUnmap, cuMemMap, cuMemSetAccess for the target), with every
 *     earlier step undone if one fails. Only then does anything switch:
 *     the streams and events the clients hold get their new CUstream and
 *     CUevent, the old context is retired (resize_reclaim destroys it),
 *     the source memory is released.
 *   The staging mappings are removed later, by resize_reclaim.
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

/* A module-scope variable handed to a client (backend_library.gvars). */
struct cuda_global {
	struct cuda_global *next;
	CUdeviceptr vis;  /* the address the client was given */
	CUdeviceptr real; /* its storage in the current context */
	size_t bytes;
	char name[]; /* as the client asked for it */
};

/* A committed migration's staging reservation, for resize_reclaim. */
struct cuda_move_junk {
	struct cuda_move_junk *next;
	CUdeviceptr va;
	size_t size;
	uint64_t ngranules;
	uint8_t *mapped; /* granules still mapped there */
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
	/* cross: target memory per granule of the window, mapped at
	 * stage + i * gran */
	CUdeviceptr stage;
	int stage_reserved;
	CUmemGenericAllocationHandle *h;
	uint8_t *staged;
	uint64_t staged_count;
	void *bounce[2];
	uint64_t prepare_ns;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int bit(const uint8_t *bits, uint64_t i)
{
	return (bits[i / 8] >> (i % 8)) & 1;
}

static void bit_set(uint8_t *bits, uint64_t i, int v)
{
	if (v)
		bits[i / 8] |= (uint8_t)(1u << (i % 8));
	else
		bits[i / 8] &= (uint8_t) ~(1u << (i % 8));
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

static CUmemAllocationProp target_prop(const struct backend_move *m)
{
	CUmemAllocationProp prop;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = m->dev;
	return prop;
}

/* Target memory for granule i, mapped at its staging address. */
static CUresult stage_add(struct backend *b, struct backend_move *m, uint64_t i)
{
	CUmemAllocationProp prop = target_prop(m);
	CUmemGenericAllocationHandle h;
	CUresult rc;

	rc = b->cu.cuMemCreate(&h, b->gran, &prop, 0);
	if (rc)
		return rc;
	rc = b->cu.cuMemMap(m->stage + i * b->gran, b->gran, 0, h, 0);
	if (rc) {
		b->cu.cuMemRelease(h);
		return rc;
	}
	m->h[i] = h;
	bit_set(m->staged, i, 1);
	m->staged_count++;
	return CUDA_SUCCESS;
}

static void stage_drop(struct backend *b, struct backend_move *m, uint64_t i)
{
	b->cu.cuMemUnmap(m->stage + i * b->gran, b->gran);
	b->cu.cuMemRelease(m->h[i]);
	m->h[i] = 0;
	bit_set(m->staged, i, 0);
	m->staged_count--;
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

/* Staging for every granule set in bits (runs get one access call). */
static CUresult stage_fill(struct backend *b, struct backend_move *m,
			   const uint8_t *bits, char *err, size_t errlen)
{
	uint64_t i, j, n = b->ngranules, done = 0, want = 0;
	char a[32], c[32];
	CUresult rc = CUDA_SUCCESS;

	for (i = 0; i < n; i++)
		want += bit(bits, i);
	for (i = 0; i < n && rc == CUDA_SUCCESS;) {
		if (!bit(bits, i) || bit(m->staged, i)) {
			i++;
			continue;
		}
		for (j = i; j < n && bit(bits, j) && !bit(m->staged, j); j++) {
			rc = stage_add(b, m, j);
			if (rc)
				break;
			done++;
		}
		if (rc == CUDA_SUCCESS)
			rc = stage_access(b, m, i, j - i);
		i = j;
	}
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

/* ---- prepare / abort --------------------------------------------------- */

void cuda_migrate_abort(struct backend *b, struct backend_move *m)
{
	uint64_t i;

	if (!m)
		return;
	if (m->staged)
		for (i = 0; i < b->ngranules && m->staged_count; i++)
			if (bit(m->staged, i))
				stage_drop(b, m, i);
	if (m->stage_reserved)
		b->cu.cuMemAddressFree(m->stage, b->cfg.va_size);
	for (i = 0; i < 2; i++)
		if (m->bounce[i])
			b->cu.cuMemFreeHost(m->bounce[i]);
	if (m->sl)
		cuda_slice_free(b, m->sl);
	free(m->h);
	free(m->staged);
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
			b->cu.cuKernelGetFunction(&f, k->kernel);
	pthread_mutex_unlock(&b->lock);
	cuda_ctx_refresh(b);
}

/* The target's memory side of prepare (another GPU). */
static CUresult prepare_memory(struct backend *b, struct backend_move *m,
			       char *err, size_t errlen)
{
	uint64_t gran = 0, bytes = (b->ngranules + 7) / 8;
	uint8_t *snap;
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
	m->h = calloc(b->ngranules, sizeof(*m->h));
	m->staged = calloc(bytes, 1);
	snap = malloc(bytes);
	if (!m->h || !m->staged || !snap) {
		free(snap);
		snprintf(err, errlen, "cuda: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&b->lock);
	memcpy(snap, b->mapped, bytes);
	pthread_mutex_unlock(&b->lock);
	rc = stage_fill(b, m, snap, err, errlen);
	free(snap);
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
	if (!m || !(m->sl = calloc(1, sizeof(*m->sl)))) {
		free(m);
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
	rc = cuda_slice_build(b, m->dev, groups, ngroups, m->sl, err, errlen);
	if (rc)
		goto fail;
	warm_kernels(b, m);
	if (m->cross && (rc = prepare_memory(b, m, err, errlen)))
		goto fail;
	m->prepare_ns = now_ns() - t0;
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
			b->cu.cuStreamDestroy_v2(n->streams[i]);
	for (i = 0; n->events && i < n->nevents; i++)
		if (n->events[i])
			b->cu.cuEventDestroy_v2(n->events[i]);
	free(n->streams);
	free(n->events);
	free(n->greal);
	memset(n, 0, sizeof(*n));
}

/* Bring the staging in line with what is mapped now. */
static CUresult commit_delta(struct backend *b, struct backend_move *m,
			     char *err, size_t errlen)
{
	uint64_t i;

	for (i = 0; i < b->ngranules; i++)
		if (bit(m->staged, i) && !bit(b->mapped, i))
			stage_drop(b, m, i);
	return stage_fill(b, m, b->mapped, err, errlen);
}

/* One run of granules to the target, GPU to GPU or through the host. */
static CUresult copy_run(struct backend *b, struct backend_move *m,
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

	if (m->peer) {
		if ((rc = use_ctx(b, b->cur->ctx)))
			return rc;
		return cu->cuMemcpyDtoDAsync_v2(to, from, len, src);
	}
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

/* Every mapped granule to its staging twin. New context current. */
static CUresult commit_copy(struct backend *b, struct backend_move *m,
			    uint64_t *bytes)
{
	const struct cuda_sym *cu = &b->cu;
	CUevent bev[2] = {NULL, NULL};
	uint64_t i, j, chunk = 0;
	CUresult rc = CUDA_SUCCESS;

	/* the events are recorded on the target's stream: made there */
	if (!m->peer &&
	    ((rc = use_ctx(b, m->sl->ctx)) ||
	     (rc = cu->cuEventCreate(&bev[0], CU_EVENT_DISABLE_TIMING)) ||
	     (rc = cu->cuEventCreate(&bev[1], CU_EVENT_DISABLE_TIMING))))
		goto out;
	for (i = 0; i < b->ngranules && rc == CUDA_SUCCESS;) {
		if (!bit(b->mapped, i)) {
			i++;
			continue;
		}
		for (j = i; j < b->ngranules && bit(b->mapped, j); j++)
			;
		rc = copy_run(b, m, bev, &chunk, i, j - i);
		*bytes += (j - i) * b->gran;
		i = j;
	}
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(b->cur->marker);
	if (rc == CUDA_SUCCESS)
		rc = cu->cuStreamSynchronize(m->sl->marker);
out:
	use_ctx(b, m->sl->ctx);
	if (bev[0])
		cu->cuEventDestroy_v2(bev[0]);
	if (bev[1])
		cu->cuEventDestroy_v2(bev[1]);
	return rc;
}

/*
 * New streams and events in the target context (current), and each
 * module variable's storage there with its bytes copied over.
 */
static CUresult commit_objects(struct backend *b, struct backend_move *m,
			       struct move_new *n)
{
	const struct cuda_sym *cu = &b->cu;
	struct backend_stream *s;
	struct backend_event *e;
	struct backend_library *l;
	struct cuda_global *g;
	CUdeviceptr p;
	uint32_t i;
	size_t sz;
	void *tmp;
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
		rc = cu->cuGreenCtxStreamCreate(&n->streams[i], m->sl->green,
						CU_STREAM_NON_BLOCKING, 0);
		if (rc) {
			n->streams[i] = NULL;
			return rc;
		}
	}
	for (e = b->events, i = 0; e; e = e->next, i++) {
		rc = cu->cuEventCreate(&n->events[i], e->flags);
		if (rc) {
			n->events[i] = NULL;
			return rc;
		}
		/* a recorded event stays complete (its time: the move) */
		if (e->recorded &&
		    (rc = cu->cuEventRecord(n->events[i], m->sl->marker)))
			return rc;
	}
	i = 0;
	for (l = b->libs; l; l = l->next) {
		for (g = l->gvars; g; g = g->next, i++) {
			rc = cu->cuLibraryGetGlobal(&p, &sz, l->lib, g->name);
			if (rc)
				return rc;
			n->greal[i] = p;
			if (sz < g->bytes)
				return CUDA_ERROR_INVALID_IMAGE;
			tmp = malloc(g->bytes);
			if (!tmp)
				return CUDA_ERROR_OUT_OF_MEMORY;
			rc = use_ctx(b, b->cur->ctx);
			if (rc == CUDA_SUCCESS)
				rc = cu->cuMemcpyDtoHAsync_v2(
					tmp, g->real, g->bytes, b->cur->marker);
			if (rc == CUDA_SUCCESS)
				rc = cu->cuStreamSynchronize(b->cur->marker);
			if (rc == CUDA_SUCCESS)
				rc = use_ctx(b, m->sl->ctx);
			if (rc == CUDA_SUCCESS)
				rc = cu->cuMemcpyHtoDAsync_v2(p, tmp, g->bytes,
							      m->sl->marker);
			if (rc == CUDA_SUCCESS)
				rc = cu->cuStreamSynchronize(m->sl->marker);
			free(tmp);
			if (rc)
				return rc;
		}
	}
	return CUDA_SUCCESS;
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

/* Put the source memory back under the granules below `upto` (undo). */
static void remap_undo(struct backend *b, struct backend_move *m, uint64_t upto)
{
	uint64_t i, j;

	for (i = 0; i < upto; i++) {
		if (!bit(b->mapped, i))
			continue;
		b->cu.cuMemUnmap(b->va + i * b->gran, b->gran);
		b->cu.cuMemMap(b->va + i * b->gran, b->gran, 0, b->handles[i],
			       0);
	}
	for (i = 0; i < upto;) {
		if (!bit(b->mapped, i)) {
			i++;
			continue;
		}
		for (j = i; j < upto && bit(b->mapped, j); j++)
			;
		window_access(b, b->dev, i, j - i);
		i = j;
	}
}

/*
 * Each mapped granule of the window onto the target's memory, then access
 * for the target. On failure everything is put back.
 */
static CUresult commit_remap(struct backend *b, struct backend_move *m)
{
	const struct cuda_sym *cu = &b->cu;
	uint64_t i, j;
	CUresult rc = CUDA_SUCCESS;

	for (i = 0; i < b->ngranules; i++) {
		if (!bit(b->mapped, i))
			continue;
		rc = cu->cuMemUnmap(b->va + i * b->gran, b->gran);
		if (rc)
			break;
		rc = cu->cuMemMap(b->va + i * b->gran, b->gran, 0, m->h[i], 0);
		if (rc) {
			cu->cuMemMap(b->va + i * b->gran, b->gran, 0,
				     b->handles[i], 0);
			break;
		}
	}
	if (rc) {
		remap_undo(b, m, i);
		if (i < b->ngranules && bit(b->mapped, i))
			window_access(b, b->dev, i, 1);
		return rc;
	}
	for (i = 0; i < b->ngranules && rc == CUDA_SUCCESS;) {
		if (!bit(b->mapped, i)) {
			i++;
			continue;
		}
		for (j = i; j < b->ngranules && bit(b->mapped, j); j++)
			;
		rc = window_access(b, m->dev, i, j - i);
		i = j;
	}
	if (rc)
		remap_undo(b, m, b->ngranules);
	return rc;
}

/* Nothing below fails: the clients' objects get their new handles. */
static void commit_switch(struct backend *b, struct backend_move *m,
			  struct move_new *n, struct backend_move_info *out)
{
	struct cuda_slice *old = b->cur, *sl = m->sl;
	struct backend_stream *s;
	struct backend_event *e;
	struct backend_library *l;
	struct cuda_global *g;
	CUstream *olds = n->streams; /* reused for the old handles */
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
	old->old = olds;
	old->nold = n->nstreams;
	n->streams = NULL;
	/* events: the old ones are done (drained) */
	for (e = b->events, i = 0; e; e = e->next, i++) {
		b->cu.cuEventDestroy_v2(e->event);
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
	/* memory: the source's is released (its mappings are gone) */
	for (i = 0; m->cross && i < b->ngranules; i++) {
		if (!bit(b->mapped, i))
			continue;
		b->cu.cuMemRelease(b->handles[i]);
		b->handles[i] = m->h[i];
		m->h[i] = 0;
	}
	sl->id = ++b->slice_ids;
	cuda_tls_slice = sl->id; /* it is current here */
	b->cur = sl;
	b->nsms = sl->nsms;
	b->dev = m->dev;
	b->cfg.gpu = m->gpu;
	b->cfg.ngroups = m->ngroups;
	memset(b->cfg.groups, 0, sizeof(b->cfg.groups));
	memcpy(b->cfg.groups, m->groups, m->ngroups * sizeof(m->groups[0]));
	old->next = b->retired;
	b->retired = old;
	b->nretired++;
	m->sl = NULL;
	cuda_read_info(b, m->name, m->uuid);
	out->sms = b->nsms;
	out->peer = (uint32_t)m->peer;
}

/* The staging reservation goes to resize_reclaim (a commit's leftover). */
static void commit_junk(struct backend *b, struct backend_move *m)
{
	struct cuda_move_junk *j;

	if (!m->stage_reserved)
		return;
	j = calloc(1, sizeof(*j));
	if (!j) {
		/* free it now: slower, but nothing leaks */
		uint64_t i;

		for (i = 0; i < b->ngranules; i++)
			if (bit(m->staged, i))
				b->cu.cuMemUnmap(m->stage + i * b->gran,
						 b->gran);
		b->cu.cuMemAddressFree(m->stage, b->cfg.va_size);
		m->stage_reserved = 0;
		/* the handles are the window's now: nothing left to drop */
		free(m->staged);
		m->staged = NULL;
		m->staged_count = 0;
		return;
	}
	j->va = m->stage;
	j->size = b->cfg.va_size;
	j->ngranules = b->ngranules;
	j->mapped = m->staged; /* the handles are the window's now */
	m->staged = NULL;
	m->staged_count = 0;
	m->stage_reserved = 0;
	j->next = b->junk;
	b->junk = j;
}

int cuda_migrate_commit(struct backend *b, struct backend_move *m,
			struct backend_move_info *out, char *err, size_t errlen)
{
	const struct cuda_sym *cu = &b->cu;
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
	t3 = now_ns();
	if (m->cross && (rc = commit_remap(b, m))) {
		cuda_fail(cu, rc, err, errlen,
			  "mapping the target's memory into the window");
		goto fail;
	}
	t4 = now_ns();
	commit_switch(b, m, &n, out);
	commit_junk(b, m);
	pthread_mutex_unlock(&b->lock);
	api_unlock(b);
	out->bytes = bytes;
	out->prepare_ns = m->prepare_ns;
	out->copy_ns = t2 - t1;
	out->remap_ns = t4 - t3;
	out->switch_ns = (t3 - t2) + (now_ns() - t4);
	out->commit_ns = now_ns() - t0;
	new_free(b, &n);
	cuda_migrate_abort(b, m); /* what is left of it */
	return CUDA_SUCCESS;
fail:
	new_free(b, &n);
	cu->cuCtxSetCurrent(b->cur->ctx);
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
	uint64_t i;

	while ((j = b->junk)) {
		b->junk = j->next;
		for (i = 0; i < j->ngranules; i++)
			if (bit(j->mapped, i))
				b->cu.cuMemUnmap(j->va + i * b->gran, b->gran);
		b->cu.cuMemAddressFree(j->va, j->size);
		free(j->mapped);
		free(j);
	}
}

void cuda_move_close(struct backend *b)
{
	cuda_move_reclaim(b);
	if (b->alias_va)
		b->cu.cuMemAddressFree(b->alias_va, CUDA_ALIAS_BYTES);
	b->alias_va = 0;
}
