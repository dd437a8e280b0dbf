/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for libcuda.so.1 for tests/unit/test_cuda_move.c (the cuda
 * backend loads it through VGPU_REAL_LIBCUDA): two GPUs of 132 SMs, no
 * memory contents, but a strict model of the virtual memory API as
 * cuda.h 13 documents it, so that the cuda backend's memory and migration
 * code runs here without a GPU:
 *
 *   cuMemMap    offset 0, inside one reservation, over nothing mapped
 *               (and, stricter than cuda.h, the handle's whole size)
 *   cuMemUnmap  exactly the range one cuMemMap mapped
 *   cuMemSetAccess  a range of whole mappings with no hole
 *   cuMemRelease    a live handle, once; the memory goes with its last
 *                   mapping
 *   cuMemAddressFree  exactly a reservation, with nothing mapped in it
 *   cuMemAddressReserve  a hint is taken only where the process maps
 *               nothing and mapped nothing at cuInit (unified addressing:
 *               no address is both a host and a device one; the H200's
 *               driver never gave a range the process had mapped when
 *               cuInit ran, though it was unmapped since)
 *   copies and memsets  device ranges mapped and readable/writable by the
 *               device of the stream, whose context must be current
 *
 * Each breach is counted and described (fake_cuda_stats); the call fails
 * with CUDA_ERROR_INVALID_VALUE (or ILLEGAL_ADDRESS for a copy). Failures
 * can be injected: FAKE_CUDA_FAIL_MAP=N makes the N-th cuMemMap from then
 * on fail (fake_cuda_fail_map), FAKE_CUDA_PEER=0 denies peer access.
 * Streams have no work of their own; fake_cuda_busy_queries(n) makes the
 * next n cuStreamQuery calls say there is some (NOT_READY). A stream
 * destroyed twice, or used after it was destroyed, is a breach too.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cuda.h>

#include "fake_libcuda.h"

#define NDEV	 FAKE_CUDA_NDEV
#define NSMS	 132
#define GRAN	 (2ull << 20)
#define DEV_MEM	 (64ull << 30)
#define MAX_OBJS 65536

struct fctx {
	int dev;
	unsigned int sms;
	int streams; /* live streams made in it */
};

struct fstream {
	struct fctx *ctx;
	bool dead; /* destroyed: kept (graveyard) to catch a later use */
	struct fstream *next_dead;
};

struct fhandle {
	size_t size;
	int dev;
	int released;
	int nmaps;
};

struct fmap {
	CUdeviceptr va;
	size_t size;
	struct fhandle *h;
	unsigned int access; /* bit per device */
};

struct fres {
	CUdeviceptr va;
	size_t size;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fmap maps[MAX_OBJS];
static int nmaps;
static struct fres res[MAX_OBJS];
static int nres;
static struct fake_cuda_stats st;
static CUdeviceptr next_va = 0x7e0000000000ull;
static long fail_map = -1;	  /* the cuMemMap that fails, counting down */
static long busy_queries;	  /* cuStreamQuery calls still to say busy */
static struct fstream *graveyard; /* destroyed streams */
static __thread struct fctx *current;

static CUresult breach(CUresult rc, const char *fmt, ...)
{
	va_list ap;

	st.violations++;
	va_start(ap, fmt);
	vsnprintf(st.last, sizeof(st.last), fmt, ap);
	va_end(ap);
	fprintf(stderr, "fake libcuda: %s\n", st.last);
	return rc;
}

void fake_cuda_stats(struct fake_cuda_stats *out)
{
	pthread_mutex_lock(&lock);
	*out = st;
	pthread_mutex_unlock(&lock);
}

/* The n-th cuMemMap from now fails (0: the next one; -1: none). */
void fake_cuda_fail_map(long n)
{
	pthread_mutex_lock(&lock);
	fail_map = n;
	pthread_mutex_unlock(&lock);
}

/* The next n cuStreamQuery calls answer CUDA_ERROR_NOT_READY. */
void fake_cuda_busy_queries(long n)
{
	pthread_mutex_lock(&lock);
	busy_queries = n;
	pthread_mutex_unlock(&lock);
}

/* The access bits of the mapping holding va (0 if none). */
unsigned int fake_cuda_access(CUdeviceptr va)
{
	unsigned int a = 0;
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nmaps; i++)
		if (va >= maps[i].va && va - maps[i].va < maps[i].size)
			a = maps[i].access;
	pthread_mutex_unlock(&lock);
	return a;
}

/* ---- devices and contexts ------------------------------------------- */

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
	switch (error) {
	case CUDA_SUCCESS:
		*pStr = "CUDA_SUCCESS";
		break;
	case CUDA_ERROR_INVALID_VALUE:
		*pStr = "CUDA_ERROR_INVALID_VALUE";
		break;
	case CUDA_ERROR_OUT_OF_MEMORY:
		*pStr = "CUDA_ERROR_OUT_OF_MEMORY";
		break;
	default:
		*pStr = "CUDA_ERROR_FAKE";
	}
	return CUDA_SUCCESS;
}

/* What the process had mapped at cuInit (its first 256 ranges). */
static struct {
	unsigned long long from, to;
} init_maps[256];
static int ninit_maps;

CUresult CUDAAPI cuInit(unsigned int flags)
{
	const char *s = getenv("FAKE_CUDA_FAIL_MAP");
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];

	if (s)
		fail_map = atol(s);
	ninit_maps = 0;
	while (f && ninit_maps < 256 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &init_maps[ninit_maps].from,
			   &init_maps[ninit_maps].to) == 2)
			ninit_maps++;
	if (f)
		fclose(f);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *v)
{
	*v = 13000;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	*count = NDEV;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	if (ordinal < 0 || ordinal >= NDEV)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	snprintf(name, (size_t)len, "fake GPU %d", dev);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	memset(uuid, 0, sizeof(*uuid));
	uuid->bytes[0] = (char)(0x40 + dev);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev)
{
	*bytes = DEV_MEM;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib,
				      CUdevice dev)
{
	switch (attrib) {
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		*pi = NSMS;
		break;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		*pi = 9;
		break;
	default:
		*pi = 0;
	}
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer)
{
	const char *s = getenv("FAKE_CUDA_PEER");

	*can = !(s && !strcmp(s, "0")) && dev != peer;
	return CUDA_SUCCESS;
}

static void sm_resource(CUdevResource *r, unsigned int sms)
{
	memset(r, 0, sizeof(*r));
	r->type = CU_DEV_RESOURCE_TYPE_SM;
	r->sm.smCount = sms;
	r->sm.minSmPartitionSize = 8;
	r->sm.smCoscheduledAlignment = 8;
}

CUresult CUDAAPI cuDeviceGetDevResource(CUdevice device, CUdevResource *r,
					CUdevResourceType type)
{
	sm_resource(r, NSMS);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevSmResourceSplitByCount(CUdevResource *result,
					     unsigned int *nbGroups,
					     const CUdevResource *input,
					     CUdevResource *remaining,
					     unsigned int useFlags,
					     unsigned int minCount)
{
	unsigned int n = input->sm.smCount / minCount, i;

	if (n > *nbGroups)
		n = *nbGroups;
	for (i = 0; i < n; i++)
		sm_resource(&result[i], minCount);
	*nbGroups = n;
	if (remaining)
		sm_resource(remaining, input->sm.smCount - n * minCount);
	return CUDA_SUCCESS;
}

struct CUdevResourceDesc_st {
	unsigned int sms;
};

/* Descriptors are read at once by cuGreenCtxCreate: a small ring. */
static struct CUdevResourceDesc_st descs[64];
static unsigned int ndescs;

CUresult CUDAAPI cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc,
					   CUdevResource *resources,
					   unsigned int n)
{
	struct CUdevResourceDesc_st *d;
	unsigned int i;

	pthread_mutex_lock(&lock);
	d = &descs[ndescs++ % 64];
	d->sms = 0;
	for (i = 0; i < n; i++)
		d->sms += resources[i].sm.smCount;
	pthread_mutex_unlock(&lock);
	*phDesc = d;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc,
				  CUdevice dev, unsigned int flags)
{
	const char *max = getenv("FAKE_CUDA_MAX_GREENS");
	struct fctx *c;

	/* a device that holds only so many contexts (memory, MPS) */
	if (max && st.greens_live >= strtoull(max, NULL, 10))
		return CUDA_ERROR_OUT_OF_MEMORY;
	c = calloc(1, sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	c->dev = dev;
	c->sms = desc->sms;
	*phCtx = (CUgreenCtx)c;
	pthread_mutex_lock(&lock);
	st.greens++;
	st.greens_live++;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGreenCtxDestroy(CUgreenCtx hCtx)
{
	pthread_mutex_lock(&lock);
	if (((struct fctx *)hCtx)->streams) {
		/* kept (leaked): its streams still point at it */
		breach(CUDA_ERROR_INVALID_CONTEXT,
		       "green context destroyed with %d streams of it alive",
		       ((struct fctx *)hCtx)->streams);
		st.greens_live--;
		pthread_mutex_unlock(&lock);
		return CUDA_SUCCESS;
	}
	if (!st.greens_live)
		breach(CUDA_ERROR_INVALID_CONTEXT,
		       "green context destroyed twice");
	else
		st.greens_live--;
	pthread_mutex_unlock(&lock);
	free(hCtx);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxFromGreenCtx(CUcontext *pContext, CUgreenCtx hCtx)
{
	*pContext = (CUcontext)hCtx;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGreenCtxGetDevResource(CUgreenCtx hCtx, CUdevResource *r,
					  CUdevResourceType type)
{
	sm_resource(r, ((struct fctx *)hCtx)->sms);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx g,
					unsigned int flags, int priority)
{
	struct fstream *s = calloc(1, sizeof(*s));

	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	s->ctx = (struct fctx *)g;
	*phStream = (CUstream)s;
	pthread_mutex_lock(&lock);
	s->ctx->streams++;
	st.streams++;
	st.streams_live++;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	current = (struct fctx *)ctx;
	return CUDA_SUCCESS;
}

/* ---- the virtual memory API ------------------------------------------ */

CUresult CUDAAPI cuMemGetAllocationGranularity(
	size_t *granularity, const CUmemAllocationProp *prop,
	CUmemAllocationGranularity_flags option)
{
	*granularity = GRAN;
	return CUDA_SUCCESS;
}

static int overlaps(CUdeviceptr a, size_t n, CUdeviceptr b, size_t m)
{
	return a < b + m && b < a + n;
}

/* True when the process has something mapped in [va, va + size), or had
 * at cuInit. */
static int host_mapped(CUdeviceptr va, size_t size)
{
	void *want = (void *)(uintptr_t)va, *p;
	int i;

	for (i = 0; i < ninit_maps; i++)
		if (va < init_maps[i].to && init_maps[i].from < va + size)
			return 1;
	p = mmap(want, size, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
			 MAP_FIXED_NOREPLACE,
		 -1, 0);
	if (p == MAP_FAILED)
		return 1;
	munmap(p, size);
	return p != want;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size,
				     size_t alignment, CUdeviceptr addr,
				     unsigned long long flags)
{
	CUdeviceptr va = addr;
	int i;

	if (!size || size % GRAN)
		return breach(CUDA_ERROR_INVALID_VALUE,
			      "cuMemAddressReserve of %zu bytes", size);
	pthread_mutex_lock(&lock);
	if (va && host_mapped(va, size))
		va = 0; /* elsewhere, as the driver does */
	for (i = 0; va && i < nres; i++)
		if (overlaps(va, size, res[i].va, res[i].size))
			va = 0; /* taken: elsewhere, as the driver does */
	if (!va) {
		va = next_va;
		next_va += (size + (1ull << 32)) & ~(GRAN - 1);
	}
	res[nres++] = (struct fres){va, size};
	st.reservations++;
	pthread_mutex_unlock(&lock);
	*ptr = va;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	CUresult rc = CUDA_SUCCESS;
	int i, j;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nres; i++)
		if (res[i].va == ptr && res[i].size == size)
			break;
	if (i == nres) {
		rc = breach(
			CUDA_ERROR_INVALID_VALUE,
			"cuMemAddressFree(0x%llx, %zu): no such reservation",
			(unsigned long long)ptr, size);
		goto out;
	}
	for (j = 0; j < nmaps; j++) {
		if (overlaps(maps[j].va, maps[j].size, ptr, size)) {
			rc = breach(CUDA_ERROR_INVALID_VALUE,
				    "cuMemAddressFree(0x%llx): 0x%llx is still "
				    "mapped",
				    (unsigned long long)ptr,
				    (unsigned long long)maps[j].va);
			goto out;
		}
	}
	res[i] = res[--nres];
	st.reservations--;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			     const CUmemAllocationProp *prop,
			     unsigned long long flags)
{
	struct fhandle *h;
	int dev = prop->location.id;

	if (!size || size % GRAN ||
	    prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE || dev < 0 ||
	    dev >= NDEV || flags)
		return breach(CUDA_ERROR_INVALID_VALUE,
			      "cuMemCreate of %zu bytes on %d", size, dev);
	pthread_mutex_lock(&lock);
	if (st.bytes[dev] + size > DEV_MEM) {
		pthread_mutex_unlock(&lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h = calloc(1, sizeof(*h));
	if (!h) {
		pthread_mutex_unlock(&lock);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	h->size = size;
	h->dev = dev;
	st.bytes[dev] += size;
	st.creates++;
	st.handles++;
	pthread_mutex_unlock(&lock);
	*handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
	return CUDA_SUCCESS;
}

/* Under lock: a handle with no mapping left and released goes. */
static void handle_put(struct fhandle *h)
{
	if (!h->released || h->nmaps)
		return;
	st.bytes[h->dev] -= h->size;
	st.handles--;
	free(h);
}

CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct fhandle *h = (struct fhandle *)(uintptr_t)handle;

	pthread_mutex_lock(&lock);
	if (!h || h->released) {
		pthread_mutex_unlock(&lock);
		return breach(CUDA_ERROR_INVALID_VALUE,
			      "cuMemRelease of a released handle");
	}
	h->released = 1;
	handle_put(h);
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			  CUmemGenericAllocationHandle handle,
			  unsigned long long flags)
{
	struct fhandle *h = (struct fhandle *)(uintptr_t)handle;
	CUresult rc = CUDA_SUCCESS;
	int i;

	pthread_mutex_lock(&lock);
	if (fail_map == 0) {
		fail_map = -1;
		rc = CUDA_ERROR_OUT_OF_MEMORY; /* injected */
		goto out;
	}
	if (fail_map > 0)
		fail_map--;
	if (!h || h->released || offset || size != h->size || ptr % GRAN) {
		rc = breach(CUDA_ERROR_INVALID_VALUE,
			    "cuMemMap(0x%llx, %zu, offset %zu) of a %zu-byte "
			    "handle%s",
			    (unsigned long long)ptr, size, offset,
			    h ? h->size : 0,
			    h && h->released ? " (released)" : "");
		goto out;
	}
	for (i = 0; i < nres; i++)
		if (ptr >= res[i].va && ptr + size <= res[i].va + res[i].size)
			break;
	if (i == nres) {
		rc = breach(CUDA_ERROR_INVALID_VALUE,
			    "cuMemMap(0x%llx, %zu): outside every reservation",
			    (unsigned long long)ptr, size);
		goto out;
	}
	for (i = 0; i < nmaps; i++) {
		if (overlaps(maps[i].va, maps[i].size, ptr, size)) {
			rc = breach(CUDA_ERROR_INVALID_VALUE,
				    "cuMemMap(0x%llx, %zu): 0x%llx is mapped",
				    (unsigned long long)ptr, size,
				    (unsigned long long)maps[i].va);
			goto out;
		}
	}
	if (nmaps == MAX_OBJS) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	maps[nmaps++] = (struct fmap){ptr, size, h, 0};
	h->nmaps++;
	st.maps++;
	st.mappings++;
out:
	pthread_mutex_unlock(&lock);
	return rc;
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	struct fhandle *h;
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nmaps; i++)
		if (maps[i].va == ptr && maps[i].size == size)
			break;
	if (i == nmaps) {
		pthread_mutex_unlock(&lock);
		return breach(CUDA_ERROR_INVALID_VALUE,
			      "cuMemUnmap(0x%llx, %zu): not what one cuMemMap "
			      "mapped",
			      (unsigned long long)ptr, size);
	}
	h = maps[i].h;
	maps[i] = maps[--nmaps];
	h->nmaps--;
	handle_put(h);
	st.unmaps++;
	st.mappings--;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

/* Under lock: the mappings tile [ptr, ptr + size) exactly? */
static int tiled(CUdeviceptr ptr, size_t size)
{
	CUdeviceptr at = ptr;
	int i, found;

	while (at < ptr + size) {
		found = 0;
		for (i = 0; i < nmaps && !found; i++)
			found = maps[i].va == at;
		if (!found)
			return 0;
		for (i = 0; i < nmaps; i++)
			if (maps[i].va == at) {
				at += maps[i].size;
				break;
			}
	}
	return at == ptr + size;
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size,
				const CUmemAccessDesc *desc, size_t count)
{
	unsigned int bits = 0;
	size_t k;
	int i;

	for (k = 0; k < count; k++) {
		if (desc[k].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
		    desc[k].location.id < 0 || desc[k].location.id >= NDEV)
			return breach(CUDA_ERROR_INVALID_VALUE,
				      "cuMemSetAccess: bad location");
		if (desc[k].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
			bits |= 1u << desc[k].location.id;
	}
	pthread_mutex_lock(&lock);
	if (!tiled(ptr, size)) {
		pthread_mutex_unlock(&lock);
		return breach(CUDA_ERROR_INVALID_VALUE,
			      "cuMemSetAccess(0x%llx, %zu): not a range of "
			      "whole mappings",
			      (unsigned long long)ptr, size);
	}
	for (i = 0; i < nmaps; i++)
		if (maps[i].va >= ptr && maps[i].va < ptr + size)
			maps[i].access = bits;
	st.access_calls++;
	pthread_mutex_unlock(&lock);
	return CUDA_SUCCESS;
}

/* Under lock: [p, p + n) mapped and accessible by dev (or a host or
 * module address outside every reservation: not checked). */
static int reachable(CUdeviceptr p, size_t n, int dev)
{
	CUdeviceptr at = p;
	int i, in = 0;

	for (i = 0; i < nres; i++)
		in |= overlaps(p, n, res[i].va, res[i].size);
	if (!in)
		return 1;
	while (at < p + n) {
		for (i = 0; i < nmaps; i++)
			if (at >= maps[i].va && at < maps[i].va + maps[i].size)
				break;
		if (i == nmaps || !(maps[i].access & (1u << dev)))
			return 0;
		at = maps[i].va + maps[i].size;
	}
	return 1;
}

/* A stream given to what is not one destroyed before (NULL is fine). */
static CUresult stream_live(const char *what, CUstream s)
{
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&lock);
	if (s && ((struct fstream *)s)->dead)
		rc = breach(CUDA_ERROR_INVALID_HANDLE, "%s: a destroyed stream",
			    what);
	pthread_mutex_unlock(&lock);
	return rc;
}

static CUresult device_op(const char *what, CUstream s, CUdeviceptr a,
			  size_t an, CUdeviceptr b, size_t bn)
{
	struct fstream *fs = (struct fstream *)s;
	CUresult rc = CUDA_SUCCESS;

	if (!fs)
		return breach(CUDA_ERROR_INVALID_HANDLE, "%s: no stream", what);
	if (stream_live(what, s))
		return CUDA_ERROR_INVALID_HANDLE;
	if (fs->ctx != current)
		return breach(CUDA_ERROR_INVALID_CONTEXT,
			      "%s: the stream's context is not current", what);
	pthread_mutex_lock(&lock);
	if ((an && !reachable(a, an, fs->ctx->dev)) ||
	    (bn && !reachable(b, bn, fs->ctx->dev)))
		rc = breach(CUDA_ERROR_ILLEGAL_ADDRESS,
			    "%s: 0x%llx or 0x%llx not mapped for GPU %d", what,
			    (unsigned long long)a, (unsigned long long)b,
			    fs->ctx->dev);
	pthread_mutex_unlock(&lock);
	return rc;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t n,
				   CUstream s)
{
	return device_op("cuMemcpyHtoDAsync", s, dst, n, 0, 0);
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t n,
				   CUstream s)
{
	return device_op("cuMemcpyDtoHAsync", s, src, n, 0, 0);
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t n,
				   CUstream s)
{
	return device_op("cuMemcpyDtoDAsync", s, dst, n, src, n);
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n,
				 CUstream s)
{
	return device_op("cuMemsetD8Async", s, dst, n, 0, 0);
}

CUresult CUDAAPI cuMemsetD16Async(CUdeviceptr dst, unsigned short us, size_t n,
				  CUstream s)
{
	return device_op("cuMemsetD16Async", s, dst, n * 2, 0, 0);
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t n,
				  CUstream s)
{
	return device_op("cuMemsetD32Async", s, dst, n * 4, 0, 0);
}

/* ---- host memory, streams, events: enough to run -------------------- */

CUresult CUDAAPI cuMemHostRegister(void *p, size_t n, unsigned int flags)
{
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t n, unsigned int flags)
{
	*pp = malloc(n ? n : 1);
	return *pp ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
	free(p);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetDevicePointer(CUdeviceptr *pdptr, void *p,
					   unsigned int flags)
{
	*pdptr = (CUdeviceptr)(uintptr_t)p;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWriteValue64(CUstream stream, CUdeviceptr addr,
				      cuuint64_t value, unsigned int flags)
{
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamWaitValue64(CUstream stream, CUdeviceptr addr,
				     cuuint64_t value, unsigned int flags)
{
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary *library, const void *code,
				   CUjit_option *jitOptions,
				   void **jitOptionsValues,
				   unsigned int numJitOptions,
				   CUlibraryOption *libraryOptions,
				   void **libraryOptionValues,
				   unsigned int numLibraryOptions)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library)
{
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel *pKernel, CUlibrary library,
				    const char *name)
{
	return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr *dptr, size_t *bytes,
				    CUlibrary library, const char *name)
{
	return CUDA_ERROR_NOT_FOUND;
}

CUresult CUDAAPI cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex,
				      size_t *paramOffset, size_t *paramSize)
{
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX,
				unsigned int gridDimY, unsigned int gridDimZ,
				unsigned int blockDimX, unsigned int blockDimY,
				unsigned int blockDimZ,
				unsigned int sharedMemBytes, CUstream hStream,
				void **kernelParams, void **extra)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
				  void **kernelParams, void **extra)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* Tensor maps: the cuda backend resolves them; no test encodes one. */
CUresult CUDAAPI cuTensorMapEncodeTiled(
	CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
	cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
	const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
	const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
	CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
	CUtensorMapFloatOOBfill oobFill)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuTensorMapEncodeIm2col(
	CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
	cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
	const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
	const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
	cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
	CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
	CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuTensorMapEncodeIm2colWide(
	CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
	cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
	const cuuint64_t *globalStrides, int pixelBoxLowerCornerWidth,
	int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
	cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
	CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
	CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
	CUtensorMapFloatOOBfill oobFill)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuTensorMapReplaceAddress(CUtensorMap *tensorMap,
					   void *globalAddress)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuKernelGetAttribute(int *pi, CUfunction_attribute attrib,
				      CUkernel kernel, CUdevice dev)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val,
				      CUkernel kernel, CUdevice dev)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction *pFunc, CUkernel kernel)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
	int *numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize,
	unsigned int flags)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuOccupancyMaxActiveClusters(int *numClusters, CUfunction f,
					      const CUlaunchConfig *config)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuOccupancyMaxPotentialClusterSize(
	int *clusterSize, CUfunction f, const CUlaunchConfig *config)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int *count, CUlibrary lib)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel *kernels,
					   unsigned int numKernels,
					   CUlibrary lib)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuKernelGetName(const char **name, CUkernel hfunc)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult CUDAAPI cuStreamDestroy(CUstream s)
{
	struct fstream *fs = (struct fstream *)s;
	CUresult rc = CUDA_SUCCESS;

	pthread_mutex_lock(&lock);
	if (!fs) {
		rc = breach(CUDA_ERROR_INVALID_HANDLE, "cuStreamDestroy: NULL");
	} else if (fs->dead) {
		rc = breach(CUDA_ERROR_INVALID_HANDLE,
			    "cuStreamDestroy: a stream destroyed twice");
	} else {
		fs->ctx->streams--;
		st.streams_live--;
		fs->dead = true;
		fs->next_dead = graveyard;
		graveyard = fs;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream s)
{
	return stream_live("cuStreamSynchronize", s);
}

CUresult CUDAAPI cuStreamQuery(CUstream s)
{
	CUresult rc = stream_live("cuStreamQuery", s);

	if (rc)
		return rc;
	pthread_mutex_lock(&lock);
	if (busy_queries > 0) {
		busy_queries--;
		rc = CUDA_ERROR_NOT_READY;
	}
	pthread_mutex_unlock(&lock);
	return rc;
}

CUresult CUDAAPI cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags)
{
	return stream_live("cuStreamWaitEvent", s);
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int flags)
{
	if (!current)
		return breach(CUDA_ERROR_INVALID_CONTEXT,
			      "cuEventCreate without a current context");
	*phEvent = (CUevent)calloc(1, 16);
	return *phEvent ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult CUDAAPI cuEventDestroy(CUevent e)
{
	free(e);
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent e, CUstream s)
{
	return stream_live("cuEventRecord", s);
}

CUresult CUDAAPI cuEventSynchronize(CUevent e)
{
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventQuery(CUevent e)
{
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
	*ms = 0;
	return CUDA_SUCCESS;
}
