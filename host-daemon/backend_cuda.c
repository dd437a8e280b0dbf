/* SPDX-License-Identifier: MIT */
/*
 * The "cuda" backend: a vGPU slice on a real NVIDIA GPU.
 *
 *   - SMs: the device's SM resource is split into groups of
 *     minSmPartitionSize SMs (the same call in every process, so every
 *     worker sees the same groups); the slice is a green context over the
 *     groups the config lists, and/or the SMs the split left over (group
 *     index = the group count: alone, or lent on top of groups).
 *   - Memory: the vGPU's VA window is reserved at exactly va_base
 *     (cuMemAddressReserve) and backed by one physical allocation per run
 *     of granules a mem_map call backs anew (cuMemCreate + cuMemMap +
 *     cuMemSetAccess, at most EXTENT_MAX_BYTES each): an extent
 *     (backend_extent.h). cuMemUnmap cannot split a mapping, and the
 *     worker unmaps what it mapped; an extent that a caller unmaps only
 *     in part keeps its memory until its last granule goes.
 *   - Code: libraries are loaded context-independently (cuLibraryLoadData)
 *     and kernels launched as CUkernel.
 *
 * Threads: cuda.h says a green context is current to one thread at a time
 * and that the driver does not synchronise calls on it from several
 * threads. So by default every driver call on the context is made under
 * b->api; the calls that wait for the device (stream and event
 * synchronisation) are made outside it, so one client waiting never
 * blocks another. So are the calls that belong to no context and that the
 * driver makes wait for the work of every stream of the process (measured
 * on the H200: library unloading, unpinning host memory, freeing pinned
 * memory): work still running then holds up only the client that unloads
 * or unpins, not every client of the vGPU behind the lock. (Host functions
 * never hold a stream on the GPU: worker_defer.c.) They run with the
 * thread's context made current (api_ctx). VGPU_CUDA_SERIALIZE=0
 * turns the lock off (to measure whether it matters; a vGPU cannot be resized
 * then).
 *
 * Resize (dynamic partitioning): the slice is a struct cuda_slice, one
 * green context; a resize builds a new one beside the running clients and
 * switches every stream to a new stream in it at a kernel boundary (see
 * cuda_resize). Libraries and the VA window's mappings belong to no
 * context, so they stay valid; events move to the new context at their
 * next record (or when the old context is reclaimed). Each thread makes
 * the current slice's context current to itself under b->api when it
 * sees that the slice changed.
 */
#include <elf.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda.h>
#include <vgpu/va.h>

#include "backend_cuda_int.h"
#include "va_hold.h"

/* How long close() lets queued work finish before tearing down anyway. */
#define CUDA_CLOSE_DRAIN_MS 10000
/* Old contexts that may still run queued work: a resize waits for room. */
#define CUDA_MAX_RETIRED 8
/* Events moved out of an old context per hold of the API lock. */
#define CUDA_EVICT_BATCH 32

/* ---- helpers --------------------------------------------------------- */

/* The id of the slice whose context this thread has made current. */
__thread uint64_t cuda_tls_slice;

/* Put "cuda: <what> failed: CUDA_ERROR_X" in err; returns rc. */
int cuda_fail(const struct cuda_sym *cu, CUresult rc, char *err, size_t errlen,
	      const char *what)
{
	char buf[32];

	snprintf(err, errlen, "cuda: %s failed: %s", what,
		 cuda_sym_error_name(cu, rc, buf, sizeof(buf)));
	return rc;
}

static CUstream stream_of(struct backend *b, struct backend_stream *s)
{
	return s ? s->stream : b->defstream.stream;
}

/*
 * For a wait outside the API lock: the stream's handle now, and its slice
 * held (users) so that resize_reclaim cannot destroy the handle under the
 * wait. Pair with slice_put.
 */
static CUstream stream_hold_locked(struct backend *b, struct backend_stream *s,
				   struct cuda_slice **held)
{
	struct backend_stream *bs = s ? s : &b->defstream;

	*held = bs->slice;
	__atomic_add_fetch(&(*held)->users, 1, __ATOMIC_SEQ_CST);
	return bs->stream;
}

static CUstream stream_hold(struct backend *b, struct backend_stream *s,
			    struct cuda_slice **held)
{
	CUstream st;

	api_lock(b);
	st = stream_hold_locked(b, s, held);
	api_unlock(b);
	return st;
}

static void slice_put(struct cuda_slice *sl)
{
	__atomic_sub_fetch(&sl->users, 1, __ATOMIC_SEQ_CST);
}

/* A per-vGPU UUID: the GPU's, with the vGPU name hashed into the last 8
 * bytes, so two slices of one GPU do not look like the same device. */
static void cuda_vgpu_uuid(uint8_t out[16], const uint8_t gpu[16],
			   const char *name)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */
	int i;

	for (; *name; name++)
		h = (h ^ (uint8_t)*name) * 1099511628211ull;
	memcpy(out, gpu, 16);
	for (i = 0; i < 8; i++)
		out[8 + i] ^= (uint8_t)(h >> (8 * i));
}

/* ---- the SM split ------------------------------------------------------ */

/*
 * Split the device's SMs into groups of minSmPartitionSize, exactly as
 * every other process does, so group i means the same SMs everywhere.
 * The SMs left over go to *rest (when not NULL; smCount 0 if none): the
 * slice of group index *ngroups.
 */
static int cuda_split(const struct cuda_sym *cu, CUdevice dev,
		      CUdevResource *whole, CUdevResource *groups,
		      unsigned *ngroups, CUdevResource *rest, char *err,
		      size_t errlen)
{
	CUdevResource remaining;
	CUresult rc;

	rc = cu->cuDeviceGetDevResource(dev, whole, CU_DEV_RESOURCE_TYPE_SM);
	if (rc)
		return cuda_fail(cu, rc, err, errlen, "cuDeviceGetDevResource");
	*ngroups = VGPU_MAX_SM_GROUPS;
	if (!rest)
		rest = &remaining;
	memset(rest, 0, sizeof(*rest));
	rc = cu->cuDevSmResourceSplitByCount(groups, ngroups, whole, rest, 0,
					     whole->sm.minSmPartitionSize);
	if (rc)
		return cuda_fail(cu, rc, err, errlen,
				 "cuDevSmResourceSplitByCount");
	if (*ngroups > VGPU_MAX_SM_GROUPS)
		*ngroups = VGPU_MAX_SM_GROUPS;
	return CUDA_SUCCESS;
}

int cuda_granularity_of(const struct cuda_sym *cu, CUdevice dev, uint64_t *gran)
{
	CUmemAllocationProp prop;
	size_t g = 0;
	CUresult rc;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	rc = cu->cuMemGetAllocationGranularity(
		&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
	*gran = g;
	return rc;
}

/* ---- probe ------------------------------------------------------------- */

static int cuda_probe_one(const struct cuda_sym *cu, int ordinal,
			  struct vgpu_gpu_info *gi, char *err, size_t errlen)
{
	CUdevResource whole, groups[VGPU_MAX_SM_GROUPS];
	unsigned ngroups, i;
	CUdevice dev;
	CUuuid uuid;
	size_t total;
	int v;
	CUresult rc;

	memset(gi, 0, sizeof(*gi));
	gi->index = (uint32_t)ordinal;
	gi->backend = VGPU_BACKEND_CUDA;
	if ((rc = cu->cuDeviceGet(&dev, ordinal)))
		return cuda_fail(cu, rc, err, errlen, "cuDeviceGet");
	if ((rc = cu->cuDeviceGetName(gi->name, sizeof(gi->name) - 1, dev)))
		return cuda_fail(cu, rc, err, errlen, "cuDeviceGetName");
	if ((rc = cu->cuDeviceGetUuid_v2(&uuid, dev)))
		return cuda_fail(cu, rc, err, errlen, "cuDeviceGetUuid");
	memcpy(gi->uuid, uuid.bytes, sizeof(gi->uuid));
	if ((rc = cu->cuDeviceTotalMem_v2(&total, dev)))
		return cuda_fail(cu, rc, err, errlen, "cuDeviceTotalMem");
	gi->memory_total = total;
	if ((rc = cu->cuDeviceGetAttribute(
		     &v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)))
		return cuda_fail(cu, rc, err, errlen, "cuDeviceGetAttribute");
	gi->sm_count = (uint32_t)v;
	if ((rc = cu->cuDeviceGetAttribute(
		     &v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev)))
		return cuda_fail(cu, rc, err, errlen, "cuDeviceGetAttribute");
	gi->cc_major = (uint32_t)v;
	if ((rc = cu->cuDeviceGetAttribute(
		     &v, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev)))
		return cuda_fail(cu, rc, err, errlen, "cuDeviceGetAttribute");
	gi->cc_minor = (uint32_t)v;
	if ((rc = cuda_split(cu, dev, &whole, groups, &ngroups, NULL, err,
			     errlen)))
		return rc;
	gi->min_partition = whole.sm.minSmPartitionSize;
	gi->alignment = whole.sm.smCoscheduledAlignment;
	gi->ngroups = ngroups;
	for (i = 0; i < ngroups; i++)
		gi->group_sms[i] = groups[i].sm.smCount;
	if ((rc = cuda_granularity_of(cu, dev, &gi->granularity)))
		return cuda_fail(cu, rc, err, errlen,
				 "cuMemGetAllocationGranularity");
	return CUDA_SUCCESS;
}

static int cuda_probe(struct vgpu_gpu_info *gpus, int max, char *err,
		      size_t errlen)
{
	struct cuda_sym cu;
	int count = 0, i;
	CUresult rc;

	if (cuda_sym_load(&cu, err, errlen))
		return -1;
	if ((rc = cu.cuInit(0))) {
		cuda_fail(&cu, rc, err, errlen, "cuInit");
		return -1;
	}
	if ((rc = cu.cuDeviceGetCount(&count))) {
		cuda_fail(&cu, rc, err, errlen, "cuDeviceGetCount");
		return -1;
	}
	for (i = 0; i < count && i < max; i++) {
		char one[200];

		if (cuda_probe_one(&cu, i, &gpus[i], one, sizeof(one))) {
			snprintf(err, errlen, "GPU %d: %s", i, one);
			return -1;
		}
	}
	return i;
}

/* ---- open / close ------------------------------------------------------ */

/*
 * Group index ngroups names the SMs the split left over (H100, H200: 12),
 * the `remaining` resource of cuDevSmResourceSplitByCount. cuda.h gives
 * it none of the groups' guarantees and discourages splitting it further
 * (we never do); cuDevResourceGenerateDesc takes it together with groups
 * of the same split, so it is a slice of its own or lent on top of one
 * (daemon_sched_leftover.c).
 */
static int cuda_leftover(const struct backend *b, const CUdevResource *rest,
			 uint32_t g, char *err, size_t errlen)
{
	if (rest->type != CU_DEV_RESOURCE_TYPE_SM || !rest->sm.smCount) {
		snprintf(err, errlen,
			 "cuda: SM group %u does not exist (GPU %u has %u "
			 "groups and no SMs left over)",
			 g, b->cfg.gpu, g);
		return CUDA_ERROR_INVALID_VALUE;
	}
	return CUDA_SUCCESS;
}

/*
 * A green context over the listed groups (or over the leftover SMs), with
 * its marker stream; current to no thread yet. Touches nothing of the
 * slice in use, so a resize builds it while the clients go on.
 */
int cuda_slice_build(struct backend *b, CUdevice dev, const uint32_t *want,
		     uint32_t nwant, struct cuda_slice *sl, char *err,
		     size_t errlen)
{
	const struct cuda_sym *cu = &b->cu;
	CUdevResource whole, groups[VGPU_MAX_SM_GROUPS];
	CUdevResource sel[VGPU_MAX_SM_GROUPS], got, rest;
	uint8_t used[VGPU_MAX_SM_GROUPS + 1] = {0}; /* + the leftover */
	CUdevResourceDesc desc;
	unsigned ngroups, i, sum = 0;
	CUresult rc;

	if ((rc = cuda_split(cu, dev, &whole, groups, &ngroups, &rest, err,
			     errlen)))
		return rc;
	if (nwant == 0 || nwant > VGPU_MAX_SM_GROUPS) {
		snprintf(err, errlen,
			 "cuda: a slice needs 1 to %u SM groups, "
			 "not %u",
			 VGPU_MAX_SM_GROUPS, nwant);
		return CUDA_ERROR_INVALID_VALUE;
	}
	for (i = 0; i < nwant; i++) {
		uint32_t g = want[i];

		if (g == ngroups) {
			if (used[g]) {
				snprintf(err, errlen,
					 "cuda: SM group %u is listed twice",
					 g);
				return CUDA_ERROR_INVALID_VALUE;
			}
			if ((rc = cuda_leftover(b, &rest, g, err, errlen)))
				return rc;
			used[g] = 1;
			sel[i] = rest;
			sum += rest.sm.smCount;
			continue;
		}
		if (g >= ngroups || used[g]) {
			snprintf(err, errlen,
				 g >= ngroups
					 ? "cuda: SM group %u does not exist "
					   "(GPU %u has %u groups)"
					 : "cuda: SM group %u is listed twice",
				 g, b->cfg.gpu, ngroups);
			return CUDA_ERROR_INVALID_VALUE;
		}
		used[g] = 1;
		sel[i] = groups[g];
		sum += groups[g].sm.smCount;
	}
	rc = cu->cuDevResourceGenerateDesc(&desc, sel, nwant);
	if (rc)
		return cuda_fail(cu, rc, err, errlen,
				 "cuDevResourceGenerateDesc");
	rc = cu->cuGreenCtxCreate(&sl->green, desc, dev,
				  CU_GREEN_CTX_DEFAULT_STREAM);
	if (rc) {
		sl->green = NULL;
		return cuda_fail(cu, rc, err, errlen, "cuGreenCtxCreate");
	}
	if ((rc = cu->cuCtxFromGreenCtx(&sl->ctx, sl->green)))
		return cuda_fail(cu, rc, err, errlen, "cuCtxFromGreenCtx");
	memset(&got, 0, sizeof(got));
	rc = cu->cuGreenCtxGetDevResource(sl->green, &got,
					  CU_DEV_RESOURCE_TYPE_SM);
	if (rc)
		return cuda_fail(cu, rc, err, errlen,
				 "cuGreenCtxGetDevResource");
	if (got.sm.smCount != sum) {
		snprintf(err, errlen,
			 "cuda: the green context has %u SMs, but its %u "
			 "groups hold %u",
			 got.sm.smCount, nwant, sum);
		return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
	}
	/* cuda.h: the stream is made in the given green context, whatever
	 * context is current */
	rc = cu->cuGreenCtxStreamCreate(&sl->marker, sl->green,
					CU_STREAM_NON_BLOCKING, 0);
	if (rc) {
		sl->marker = NULL;
		return cuda_fail(cu, rc, err, errlen,
				 "cuGreenCtxStreamCreate (marker)");
	}
	sl->nsms = sum;
	sl->dev = dev;
	sl->mask = cuda_groups_mask(want, nwant);
	return CUDA_SUCCESS;
}

/*
 * Destroy a slice nothing refers to any more (its streams drained, its
 * events gone). Its context may still be current to some thread: that
 * thread makes the current slice's current at its next locked call.
 */
void cuda_slice_free_leftovers(struct backend *b, struct cuda_slice *sl)
{
	uint32_t i;

	for (i = 0; i < sl->nold; i++)
		if (sl->old[i])
			b->cu.cuStreamDestroy_v2(sl->old[i]);
	for (i = 0; i < sl->nfences; i++)
		if (sl->fences[i])
			b->cu.cuEventDestroy_v2(sl->fences[i]);
	for (i = 0; i < sl->npassed; i++)
		if (sl->passed[i])
			b->cu.cuEventDestroy_v2(sl->passed[i]);
	free(sl->old);
	free(sl->fences);
	free(sl->passed);
	sl->old = NULL;
	sl->fences = NULL;
	sl->passed = NULL;
	sl->nold = sl->nfences = sl->npassed = 0;
}

void cuda_slice_free(struct backend *b, struct cuda_slice *sl)
{
	if (!sl)
		return;
	cuda_slice_free_leftovers(b, sl);
	cuda_slice_free_spares(b, sl);
	if (sl->marker)
		b->cu.cuStreamDestroy_v2(sl->marker);
	if (sl->green)
		b->cu.cuGreenCtxDestroy(sl->green);
	free(sl);
}

/* The vGPU's first slice, over the config's groups, current here. */
static int cuda_open_slice(struct backend *b, char *err, size_t errlen)
{
	struct cuda_slice *sl = calloc(1, sizeof(*sl));
	CUresult rc;

	if (!sl) {
		snprintf(err, errlen, "cuda: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	rc = cuda_slice_build(b, b->dev, b->cfg.groups, b->cfg.ngroups, sl, err,
			      errlen);
	if (rc == CUDA_SUCCESS && (rc = b->cu.cuCtxSetCurrent(sl->ctx)))
		cuda_fail(&b->cu, rc, err, errlen, "cuCtxSetCurrent");
	if (rc) {
		cuda_slice_free(b, sl);
		return rc;
	}
	sl->id = ++b->slice_ids;
	cuda_tls_slice = sl->id;
	b->cur = sl;
	b->nsms = sl->nsms;
	return CUDA_SUCCESS;
}

/*
 * Reserve the VA window at exactly va_base, never anywhere else. The
 * address is only a hint to the driver, which keeps host and device
 * addresses apart (unified addressing) and so takes the range only where
 * the process had nothing mapped at cuInit and has nothing now: the
 * worker's own hold on the window (va_hold.c) is given back before cuInit
 * (cuda_open), and what the driver returns is checked.
 */
static int cuda_reserve(struct backend *b, char *err, size_t errlen)
{
	const struct cuda_sym *cu = &b->cu;
	CUdeviceptr p = 0;
	char holder[256];
	CUresult rc;

	if (!b->cfg.va_base || !b->cfg.va_size || b->cfg.va_base % b->gran ||
	    b->cfg.va_size % b->gran ||
	    b->cfg.va_base + b->cfg.va_size < b->cfg.va_base) {
		snprintf(err, errlen,
			 "cuda: VA window 0x%" PRIx64 " + 0x%" PRIx64
			 " is empty or not aligned to the 0x%" PRIx64
			 "-byte granule",
			 b->cfg.va_base, b->cfg.va_size, b->gran);
		return CUDA_ERROR_INVALID_VALUE;
	}
	va_hold_release(b->cfg.va_base, b->cfg.va_size);
	rc = cu->cuMemAddressReserve(&p, b->cfg.va_size, 0,
				     (CUdeviceptr)b->cfg.va_base, 0);
	if (rc) {
		char what[96];

		snprintf(what, sizeof(what),
			 "cuMemAddressReserve at 0x%" PRIx64, b->cfg.va_base);
		return cuda_fail(cu, rc, err, errlen, what);
	}
	if (p != (CUdeviceptr)b->cfg.va_base) {
		cu->cuMemAddressFree(p, b->cfg.va_size);
		vgpu_va_holder(b->cfg.va_base, b->cfg.va_size, holder,
			       sizeof(holder));
		snprintf(err, errlen,
			 "cuda: asked for the VA window at 0x%" PRIx64
			 " but the driver reserved 0x%llx (the range is taken;"
			 " this process has there: %s)",
			 b->cfg.va_base, (unsigned long long)p, holder);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	b->va = p;
	b->va_reserved = 1;
	b->ngranules = b->cfg.va_size / b->gran;
	if (extent_map_init(&b->mem, b->ngranules)) {
		snprintf(err, errlen, "cuda: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

/* What a client sees as the device, read once. */
void cuda_read_info(struct backend *b, const char *gpu_name,
		    const uint8_t uuid[16])
{
	struct vgpu_device_info *info = &b->info;
	int i, v;

	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "vGPU %s: %u-SM slice of %s",
		 b->cfg.name, b->nsms, gpu_name);
	snprintf(info->gpu_name, sizeof(info->gpu_name), "%s", gpu_name);
	snprintf(info->vgpu_name, sizeof(info->vgpu_name), "%s", b->cfg.name);
	info->backend = VGPU_BACKEND_CUDA;
	info->sm_count = b->nsms;
	info->memory_quota = b->cfg.memory_quota;
	cuda_vgpu_uuid(info->uuid, uuid, b->cfg.name);
	for (i = 1; i < VGPU_DEVICE_ATTRS; i++) {
		v = 0;
		if (b->cu.cuDeviceGetAttribute(&v, (CUdevice_attribute)i,
					       b->dev))
			v = 0;
		info->attrs[i] = v;
	}
	info->attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = (int)b->nsms;
	info->cc_major =
		(uint32_t)info
			->attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR];
	info->cc_minor =
		(uint32_t)info
			->attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
	v = 0;
	if (b->cu.cuDriverGetVersion(&v) == CUDA_SUCCESS)
		info->driver_version = (uint32_t)v;
}

static void cuda_close(struct backend *b);

static int cuda_open(struct backend **out, const struct vgpu_worker_config *cfg,
		     char *err, size_t errlen)
{
	const char *ser = getenv("VGPU_CUDA_SERIALIZE");
	const char *attr = getenv("VGPU_CUDA_MARKER_ATTR");
	struct backend *b = calloc(1, sizeof(*b));
	char gpu_name[128] = "";
	CUuuid uuid;
	CUresult rc;

	if (!b) {
		snprintf(err, errlen, "cuda: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_init(&b->api, NULL);
	pthread_mutex_init(&b->lock, NULL);
	b->serialize = !(ser && strcmp(ser, "0") == 0);
	b->marker_attr = (attr && strcmp(attr, "0") == 0) ? -1 : 0;
	b->cache_max = cuda_cache_size_from_env();
	b->cfg = *cfg;
	b->cfg.name[sizeof(b->cfg.name) - 1] = '\0';

	if (cuda_sym_load(&b->cu, err, errlen)) {
		rc = CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
		goto fail;
	}
	/*
	 * Not held through cuInit: the driver keeps out of its device
	 * address space whatever the process has mapped when it starts
	 * (unified addressing), and never gave the window after that (seen
	 * on the H200: 0x110000000000 asked, 0x120000000000 given, the hold
	 * long gone). Between here and cuda_reserve the driver maps only
	 * its own, below.
	 */
	va_hold_release(cfg->va_base, cfg->va_size);
	if ((rc = b->cu.cuInit(0))) {
		cuda_fail(&b->cu, rc, err, errlen, "cuInit");
		goto fail;
	}
	if ((rc = b->cu.cuDeviceGet(&b->dev, (int)cfg->gpu))) {
		char what[48];

		snprintf(what, sizeof(what), "cuDeviceGet(%u)", cfg->gpu);
		cuda_fail(&b->cu, rc, err, errlen, what);
		goto fail;
	}
	if ((rc = b->cu.cuDeviceGetName(gpu_name, sizeof(gpu_name) - 1,
					b->dev)) ||
	    (rc = b->cu.cuDeviceGetUuid_v2(&uuid, b->dev))) {
		cuda_fail(&b->cu, rc, err, errlen, "reading the device");
		goto fail;
	}
	if ((rc = cuda_open_slice(b, err, errlen)))
		goto fail;
	if ((rc = cuda_granularity_of(&b->cu, b->dev, &b->gran)) ||
	    b->gran == 0) {
		cuda_fail(&b->cu, rc ? rc : CUDA_ERROR_UNKNOWN, err, errlen,
			  "cuMemGetAllocationGranularity");
		rc = rc ? rc : CUDA_ERROR_UNKNOWN;
		goto fail;
	}
	if ((rc = cuda_reserve(b, err, errlen)))
		goto fail;
	rc = b->cu.cuGreenCtxStreamCreate(&b->defstream.stream, b->cur->green,
					  CU_STREAM_NON_BLOCKING, 0);
	if (rc) {
		b->defstream.stream = NULL;
		cuda_fail(&b->cu, rc, err, errlen, "cuGreenCtxStreamCreate");
		goto fail;
	}
	b->defstream.slice = b->cur;
	cuda_read_info(b, gpu_name, (const uint8_t *)uuid.bytes);
	*out = b;
	return CUDA_SUCCESS;
fail:
	cuda_close(b);
	return rc;
}

/* Give queued work a bounded time to finish: unmapping memory under a
 * running kernel would fault it (and, under MPS, its neighbours). */
static void cuda_drain(struct backend *b)
{
	struct timespec nap = {0, 1000000};
	long waited = 0;
	struct backend_stream *s;
	int busy;

	struct cuda_slice *r;
	uint32_t i;

	do {
		busy = b->defstream.stream &&
		       b->cu.cuStreamQuery(b->defstream.stream) ==
			       CUDA_ERROR_NOT_READY;
		for (s = b->streams; s && !busy; s = s->next)
			busy = b->cu.cuStreamQuery(s->stream) ==
			       CUDA_ERROR_NOT_READY;
		for (r = b->retired; r && !busy; r = r->next)
			for (i = 0; i < r->nold && !busy; i++)
				busy = b->cu.cuStreamQuery(r->old[i]) ==
				       CUDA_ERROR_NOT_READY;
		if (busy)
			nanosleep(&nap, NULL);
	} while (busy && ++waited < CUDA_CLOSE_DRAIN_MS);
}

/*
 * Give an extent's memory back: unmap it from the window (exactly what
 * its cuMemMap mapped) and release the handle. extent_unmap's drop.
 */
static int cuda_extent_drop(void *ctx, const struct extent *e)
{
	struct backend *b = ctx;
	CUresult rc;

	rc = b->cu.cuMemUnmap(b->va + e->first * b->gran, e->count * b->gran);
	if (rc)
		return rc; /* it stays mapped and accounted */
	/* unmapped: nothing can reach the memory whatever release says */
	(void)b->cu.cuMemRelease((CUmemGenericAllocationHandle)e->handle);
	return CUDA_SUCCESS;
}

static void cuda_close(struct backend *b)
{
	struct extent *e;
	uint64_t pos = 0;

	if (!b)
		return;
	if (b->cur) {
		b->cu.cuCtxSetCurrent(b->cur->ctx);
		cuda_tls_slice = b->cur->id;
		cuda_drain(b);
	}
	while (b->libs) {
		struct backend_library *l = b->libs;

		b->libs = l->next;
		while (l->kernels) {
			struct backend_kernel *k = l->kernels;

			l->kernels = k->next;
			free(k);
		}
		b->cu.cuLibraryUnload(l->lib);
		cuda_globals_drop(b, l);
		free(l);
	}
	cuda_move_close(b);
	while (b->events) {
		struct backend_event *e = b->events;

		b->events = e->next;
		b->cu.cuEventDestroy_v2(e->event);
		free(e);
	}
	while (b->streams) {
		struct backend_stream *s = b->streams;

		b->streams = s->next;
		b->cu.cuStreamDestroy_v2(s->stream);
		free(s);
	}
	if (b->defstream.stream)
		b->cu.cuStreamDestroy_v2(b->defstream.stream);
	while (b->mem.ngranules && (e = extent_next(&b->mem, &pos))) {
		cuda_extent_drop(b, e);
		extent_remove(&b->mem, e);
	}
	if (b->va_reserved)
		b->cu.cuMemAddressFree(b->va, b->cfg.va_size);
	b->cu.cuCtxSetCurrent(NULL);
	cuda_tls_slice = 0;
	while (b->retired) {
		struct cuda_slice *r = b->retired;

		b->retired = r->next;
		cuda_slice_free(b, r);
	}
	cuda_cache_drop(b);
	cuda_slice_free(b, b->cur);
	b->cur = NULL;
	extent_map_destroy(&b->mem);
	pthread_mutex_destroy(&b->api);
	pthread_mutex_destroy(&b->lock);
	/* b->cu.dl stays open: libcuda cannot be unloaded once used */
	free(b);
}

static int cuda_thread_attach(struct backend *b)
{
	CUresult rc;

	if (b->serialize)
		pthread_mutex_lock(&b->api);
	rc = cuda_ctx_refresh(b);
	if (b->serialize)
		pthread_mutex_unlock(&b->api);
	return rc;
}

static void cuda_device_info(struct backend *b, struct vgpu_device_info *info)
{
	*info = b->info;
}

/* ---- memory ------------------------------------------------------------ */

static uint64_t cuda_granularity(struct backend *b)
{
	return b->gran;
}

static int cuda_granules(struct backend *b, uint64_t va, uint64_t size,
			 uint64_t *first, uint64_t *count)
{
	uint64_t off = va - b->cfg.va_base;

	if (va < b->cfg.va_base || off > b->cfg.va_size || size == 0 ||
	    size > b->cfg.va_size - off || off % b->gran || size % b->gran)
		return -1;
	*first = off / b->gran;
	*count = size / b->gran;
	return 0;
}

/* Device memory of dev, as every extent of the window is made. */
CUmemAllocationProp cuda_alloc_prop(CUdevice dev)
{
	CUmemAllocationProp prop;

	memset(&prop, 0, sizeof(prop));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = dev;
	return prop;
}

/*
 * One physical allocation of n granules on dev, mapped at va and made
 * read-write for dev: *h on success, nothing left behind on failure.
 */
static CUresult cuda_chunk_map(struct backend *b, CUdevice dev, CUdeviceptr va,
			       uint64_t n, CUmemGenericAllocationHandle *h)
{
	const struct cuda_sym *cu = &b->cu;
	CUmemAllocationProp prop = cuda_alloc_prop(dev);
	CUmemAccessDesc access;
	size_t bytes = n * b->gran;
	CUresult rc;

	memset(&access, 0, sizeof(access));
	access.location = prop.location;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	rc = cu->cuMemCreate(h, bytes, &prop, 0);
	if (rc)
		return rc;
	rc = cu->cuMemMap(va, bytes, 0, *h, 0);
	if (rc) {
		(void)cu->cuMemRelease(*h);
		return rc;
	}
	rc = cu->cuMemSetAccess(va, bytes, &access, 1);
	if (rc) {
		(void)cu->cuMemUnmap(va, bytes);
		(void)cu->cuMemRelease(*h);
	}
	return rc;
}

/* extent_fill's back: device memory for granules [first, first + count). */
static int cuda_extent_back(void *ctx, uint64_t first, uint64_t count,
			    uint64_t *handle)
{
	struct backend *b = ctx;
	CUmemGenericAllocationHandle h;
	CUresult rc;

	rc = cuda_chunk_map(b, b->dev, b->va + first * b->gran, count, &h);
	if (!rc)
		*handle = (uint64_t)h;
	return (int)rc;
}

/*
 * Back [va, va + size) with device memory: one physical allocation per
 * run of granules that nothing backs yet (at most EXTENT_MAX_BYTES each;
 * normally the whole range is one run: one cuMemCreate, one cuMemMap,
 * one cuMemSetAccess), and granules an earlier partial unmap kept are
 * taken back as they are. On failure everything this call made is
 * released again.
 */
static int cuda_mem_map(struct backend *b, uint64_t va, uint64_t size)
{
	uint64_t first, count, fresh, max;
	uint64_t quota = b->cfg.memory_quota / b->gran;
	CUresult rc = CUDA_SUCCESS;
	int r;

	if (cuda_granules(b, va, size, &first, &count))
		return CUDA_ERROR_INVALID_VALUE;
	max = EXTENT_MAX_BYTES / b->gran ? EXTENT_MAX_BYTES / b->gran : 1;
	pthread_mutex_lock(&b->lock);
	cuda_ctx_refresh(b); /* b->cur changes only under b->lock too */
	r = extent_map_check(&b->mem, first, count, quota, &fresh);
	if (r) {
		/* mapped already; or kept memory would break the quota */
		rc = r == -EINVAL ? CUDA_ERROR_INVALID_VALUE
				  : CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	r = extent_fill(&b->mem, first, count, max, cuda_extent_back,
			cuda_extent_drop, b);
	if (r) {
		rc = r == -ENOMEM ? CUDA_ERROR_OUT_OF_MEMORY : (CUresult)r;
		goto out;
	}
	extent_revive(&b->mem, first, count);
out:
	pthread_mutex_unlock(&b->lock);
	return rc;
}

/*
 * Release [va, va + size): every extent left without a mapped granule is
 * unmapped (whole, as it was mapped) and released. Normally the range is
 * exactly what one mem_map call (or several) mapped.
 */
static int cuda_mem_unmap(struct backend *b, uint64_t va, uint64_t size)
{
	uint64_t first, count;
	int rc;

	if (cuda_granules(b, va, size, &first, &count))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&b->lock);
	cuda_ctx_refresh(b);
	rc = extent_unmap(&b->mem, first, count, cuda_extent_drop, b);
	pthread_mutex_unlock(&b->lock);
	if (rc == -EINVAL)
		return CUDA_ERROR_INVALID_VALUE; /* not mapped */
	return rc; /* what stays mapped stays accounted */
}

/* ---- copies ------------------------------------------------------------ */

/*
 * Host buffers are in the client's ring (a shared memfd mapping), i.e.
 * pageable memory. A pageable copy can block the calling thread until the
 * stream's earlier work is done, so the stream is synchronised first,
 * outside the API lock, and the copy itself then runs on an idle stream.
 * TODO: cuMemHostRegister the ring's data area once per client, which
 * makes these copies DMA straight from the ring.
 */
/*
 * The ring's data area is shared memory the driver would treat as pageable
 * and stage through its own bounce buffers (measured: about 9 GB/s against
 * 55 GB/s pinned); registered, copies to and from it are DMA.
 */
static int cuda_host_register(struct backend *b, void *p, size_t n)
{
	api_ctx(b);
	/* DEVICEMAP: stream gates write into it (cuStreamWriteValue64);
	 * PORTABLE: pinned for every context, so for the next one after a
	 * resize too */
	return b->cu.cuMemHostRegister_v2(p, n,
					  CU_MEMHOSTREGISTER_DEVICEMAP |
						  CU_MEMHOSTREGISTER_PORTABLE);
}

static void cuda_host_unregister(struct backend *b, void *p)
{
	api_ctx(b);
	b->cu.cuMemHostUnregister(p);
}

/* Registered DEVICEMAP | PORTABLE above: with unified addressing the
 * device address is the host one, in every context, so it outlives a
 * resize or a move to another GPU of this host. */
static int cuda_host_device_ptr(struct backend *b, void *p, uint64_t *dev)
{
	CUdeviceptr d = 0;
	CUresult rc;

	api_ctx(b);
	rc = b->cu.cuMemHostGetDevicePointer_v2(&d, p, 0);
	*dev = d;
	return rc;
}

/* ---- stream gates: "reached" words in the registered data area --------- */

/* p lies in a data area registered with DEVICEMAP (cuda_host_register). */
static int cuda_stream_write_host(struct backend *b, struct backend_stream *s,
				  uint64_t *p, uint64_t value)
{
	CUdeviceptr d;
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuMemHostGetDevicePointer_v2(&d, p, 0);
	if (rc == CUDA_SUCCESS)
		rc = b->cu.cuStreamWriteValue64_v2(
			stream_of(b, s), d, value,
			CU_STREAM_WRITE_VALUE_DEFAULT);
	api_unlock(b);
	return rc;
}

/*
 * A copy between the host and the device that returns once it is done:
 * wait for the stream, copy, wait again. The waits are outside the API
 * lock, with the stream's slice held (a resize may switch the stream
 * meanwhile; the copy then goes to the new stream, after the old work).
 */
static int cuda_copy_sync(struct backend *b, struct backend_stream *s,
			  CUdeviceptr dev, void *host, size_t n, int to_device)
{
	struct cuda_slice *held;
	CUstream st = stream_hold(b, s, &held);
	CUresult rc = b->cu.cuStreamSynchronize(st);

	slice_put(held);
	if (rc)
		return rc;
	api_lock(b);
	st = stream_hold_locked(b, s, &held);
	dev = cuda_global_real(b, dev, n); /* a moved module variable */
	if (to_device)
		rc = b->cu.cuMemcpyHtoDAsync_v2(dev, host, n, st);
	else
		rc = b->cu.cuMemcpyDtoHAsync_v2(host, dev, n, st);
	api_unlock(b);
	if (rc == CUDA_SUCCESS)
		rc = b->cu.cuStreamSynchronize(st);
	slice_put(held);
	return rc;
}

static int cuda_memcpy_htod(struct backend *b, struct backend_stream *s,
			    uint64_t dst, const void *src, size_t n)
{
	return cuda_copy_sync(b, s, (CUdeviceptr)dst, (void *)src, n, 1);
}

static int cuda_memcpy_dtoh(struct backend *b, struct backend_stream *s,
			    void *dst, uint64_t src, size_t n)
{
	return cuda_copy_sync(b, s, (CUdeviceptr)src, dst, n, 0);
}

static int cuda_memcpy_dtod(struct backend *b, struct backend_stream *s,
			    uint64_t dst, uint64_t src, size_t n)
{
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuMemcpyDtoDAsync_v2(cuda_global_real(b, dst, n),
					cuda_global_real(b, src, n), n,
					stream_of(b, s));
	api_unlock(b);
	return rc;
}

static int cuda_memset(struct backend *b, struct backend_stream *s,
		       uint64_t dst, uint32_t value, uint32_t elem_size,
		       size_t count)
{
	CUstream st;
	CUresult rc;

	api_lock(b);
	st = stream_of(b, s); /* under the lock: a resize may switch it */
	dst = cuda_global_real(b, dst, count * elem_size);
	switch (elem_size) {
	case 1:
		rc = b->cu.cuMemsetD8Async((CUdeviceptr)dst,
					   (unsigned char)value, count, st);
		break;
	case 2:
		rc = b->cu.cuMemsetD16Async((CUdeviceptr)dst,
					    (unsigned short)value, count, st);
		break;
	case 4:
		rc = b->cu.cuMemsetD32Async((CUdeviceptr)dst, value, count, st);
		break;
	default:
		rc = CUDA_ERROR_INVALID_VALUE;
		break;
	}
	api_unlock(b);
	return rc;
}

/* ---- code -------------------------------------------------------------- */

#define FATBIN_WRAPPER_MAGIC 0x466243b1u /* __fatBinC_Wrapper_t */
#define FATBIN_MAGIC	     0xba55ed50u

static int range_ok(uint64_t off, uint64_t n, uint64_t len)
{
	return off <= len && n <= len - off;
}

/* An ELF cubin: every header and section inside the image. */
static int elf_image_ok(const unsigned char *img, size_t len)
{
	Elf64_Ehdr eh;
	uint16_t i;

	if (len < sizeof(eh))
		return 0;
	memcpy(&eh, img, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
	if (eh.e_phnum &&
	    (eh.e_phentsize != sizeof(Elf64_Phdr) ||
	     !range_ok(eh.e_phoff, (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr),
		       len)))
		return 0;
	if (eh.e_shnum &&
	    (eh.e_shentsize != sizeof(Elf64_Shdr) ||
	     !range_ok(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr),
		       len)))
		return 0;
	for (i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh;

		memcpy(&sh, img + eh.e_shoff + (uint64_t)i * sizeof(sh),
		       sizeof(sh));
		if (sh.sh_type != SHT_NOBITS &&
		    !range_ok(sh.sh_offset, sh.sh_size, len))
			return 0;
	}
	return 1;
}

/*
 * The image comes from an untrusted client and the driver parses it in
 * this process, so check what can be checked cheaply: no fatbin wrapper
 * (it holds a pointer the driver would follow), ELF and fatbin sizes within
 * the image, and PTX NUL-terminated (copied with a NUL when it is not).
 * Returns the buffer to load (image or *copy), or NULL.
 */
static const void *cuda_image_checked(const unsigned char *img, size_t len,
				      unsigned char **copy)
{
	uint32_t magic = 0;
	uint16_t hsize;
	uint64_t fsize;

	*copy = NULL;
	if (len >= 4)
		memcpy(&magic, img, 4);
	if (magic == FATBIN_WRAPPER_MAGIC)
		return NULL;
	if (len >= 4 && memcmp(img, ELFMAG, SELFMAG) == 0)
		return elf_image_ok(img, len) ? img : NULL;
	if (magic == FATBIN_MAGIC) {
		if (len < 16)
			return NULL;
		memcpy(&hsize, img + 6, sizeof(hsize));
		memcpy(&fsize, img + 8, sizeof(fsize));
		return range_ok(hsize, fsize, len) ? img : NULL;
	}
	if (len && img[len - 1] == '\0')
		return img; /* PTX */
	*copy = malloc(len + 1);
	if (!*copy)
		return NULL;
	memcpy(*copy, img, len);
	(*copy)[len] = '\0';
	return *copy;
}

static int cuda_library_load(struct backend *b, const void *image, size_t len,
			     struct backend_library **out)
{
	struct backend_library *l;
	unsigned char *copy;
	const void *code;
	CUresult rc;

	if (!image || len == 0)
		return CUDA_ERROR_INVALID_VALUE;
	code = cuda_image_checked(image, len, &copy);
	if (!code)
		return CUDA_ERROR_INVALID_IMAGE;
	l = calloc(1, sizeof(*l));
	if (!l) {
		free(copy);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	api_ctx(b);
	rc = b->cu.cuLibraryLoadData(&l->lib, code, NULL, NULL, 0, NULL, NULL,
				     0);
	free(copy);
	if (rc) {
		free(l);
		return rc;
	}
	pthread_mutex_lock(&b->lock);
	LIST_ADD(b->libs, l);
	pthread_mutex_unlock(&b->lock);
	*out = l;
	return CUDA_SUCCESS;
}

static void cuda_library_unload(struct backend *b, struct backend_library *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&b->lock);
	LIST_DEL(b->libs, l);
	pthread_mutex_unlock(&b->lock);
	api_lock(b);
	b->globals -= l->nglobals;
	cuda_globals_drop(b, l);
	api_unlock(b);
	b->cu.cuLibraryUnload(l->lib); /* no context's: may wait (above) */
	while (l->kernels) {
		struct backend_kernel *k = l->kernels;

		l->kernels = k->next;
		free(k);
	}
	free(l->knames);
	free(l);
}

/* The names of l's kernels, read from the driver the first time (its
 * strings live as long as the library). Called under api_lock. */
static int cuda_library_knames(struct backend *b, struct backend_library *l)
{
	CUkernel *ks = NULL;
	unsigned int n = 0, i;
	CUresult rc;

	if (l->knames)
		return CUDA_SUCCESS;
	rc = b->cu.cuLibraryGetKernelCount(&n, l->lib);
	if (rc == CUDA_SUCCESS && n) {
		ks = calloc(n, sizeof(*ks));
		l->knames = calloc(n, sizeof(*l->knames));
		if (!ks || !l->knames)
			rc = CUDA_ERROR_OUT_OF_MEMORY;
	}
	if (rc == CUDA_SUCCESS && n)
		rc = b->cu.cuLibraryEnumerateKernels(ks, n, l->lib);
	for (i = 0; rc == CUDA_SUCCESS && i < n; i++)
		rc = b->cu.cuKernelGetName(&l->knames[i], ks[i]);
	free(ks);
	if (rc != CUDA_SUCCESS) {
		free(l->knames);
		l->knames = NULL;
		return rc;
	}
	l->nknames = n;
	if (!n)
		l->knames = calloc(1, sizeof(*l->knames)); /* read: none */
	return l->knames ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

static int cuda_library_kernel_name(struct backend *b,
				    struct backend_library *l, uint32_t index,
				    const char **name, uint32_t *count)
{
	int rc;

	api_lock(b);
	rc = cuda_library_knames(b, l);
	if (rc == CUDA_SUCCESS) {
		*count = l->nknames;
		*name = index < l->nknames ? l->knames[index] : NULL;
	}
	api_unlock(b);
	return rc;
}

/* The parameter layout, from cuKernelGetParamInfo: it answers
 * CUDA_ERROR_INVALID_VALUE one past the last parameter. */
static int cuda_param_layout(struct backend *b, CUkernel k,
			     struct vgpu_kernel_info *layout)
{
	uint64_t end = 0;
	size_t i, off, size;
	CUresult rc;

	memset(layout, 0, sizeof(*layout));
	for (i = 0;; i++) {
		rc = b->cu.cuKernelGetParamInfo(k, i, &off, &size);
		if (rc == CUDA_ERROR_INVALID_VALUE)
			break;
		if (rc)
			return rc;
		if (i >= VGPU_MAX_PARAMS || off > VGPU_MAX_PARAM_BYTES ||
		    size > VGPU_MAX_PARAM_BYTES)
			return CUDA_ERROR_NOT_SUPPORTED;
		layout->params[i].offset = (uint32_t)off;
		layout->params[i].size = (uint32_t)size;
		if (off + size > end)
			end = off + size;
	}
	if (end > VGPU_MAX_PARAM_BYTES)
		return CUDA_ERROR_NOT_SUPPORTED;
	layout->nparams = (uint32_t)i;
	layout->param_bytes = (uint32_t)end;
	return CUDA_SUCCESS;
}

static int cuda_library_get_kernel(struct backend *b, struct backend_library *l,
				   const char *name,
				   struct backend_kernel **out,
				   struct vgpu_kernel_info *layout)
{
	struct vgpu_kernel_info info;
	struct backend_kernel *k;
	CUkernel kernel;
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuLibraryGetKernel(&kernel, l->lib, name);
	if (rc == CUDA_SUCCESS)
		rc = cuda_param_layout(b, kernel, &info);
	api_unlock(b);
	if (rc)
		return rc;

	pthread_mutex_lock(&b->lock);
	for (k = l->kernels; k && k->kernel != kernel; k = k->next)
		;
	if (!k && (k = calloc(1, sizeof(*k)))) {
		k->kernel = kernel;
		k->next = l->kernels;
		l->kernels = k;
	}
	pthread_mutex_unlock(&b->lock);
	if (!k)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (layout)
		*layout = info;
	*out = k;
	return CUDA_SUCCESS;
}

/*
 * A module-scope variable of l in this vGPU's context (cuLibraryGetGlobal
 * answers for the current context: the green context, made current by
 * thread_attach). The driver allocated it itself, outside the VA window;
 * the copy entry points reach it like any device address of the context.
 */
static int cuda_library_get_global(struct backend *b, struct backend_library *l,
				   const char *name, uint64_t *dptr,
				   uint64_t *bytes)
{
	CUdeviceptr p = 0;
	size_t n = 0;
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuLibraryGetGlobal(&p, &n, l->lib, name);
	/* the address the client gets stays across migrations */
	if (rc == CUDA_SUCCESS)
		rc = cuda_global_note(b, l, name, p, n, &p);
	if (rc == CUDA_SUCCESS) {
		/* its storage is this context's: see cuda_resize */
		l->nglobals++;
		b->globals++;
	}
	api_unlock(b);
	if (rc)
		return rc;
	*dptr = (uint64_t)p;
	*bytes = (uint64_t)n;
	return CUDA_SUCCESS;
}

/*
 * cuda.h (cuLaunchKernel): a CUkernel from cuLibraryGetKernel may be
 * passed cast to CUfunction; the context is taken from the stream, which
 * is always one of the green context's.
 */
/*
 * A launch through cuLaunchKernelEx: in thread-block clusters (the driver
 * checks that the kernel and the slice take the shape), and/or with ev
 * recorded when every block of the kernel has ended
 * (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT), and/or cooperative (every
 * block resident at once; the driver checks the green context holds
 * them). Under api_lock.
 */
static CUresult cuda_launch_ex(struct backend *b, struct backend_kernel *k,
			       const uint32_t grid[3], const uint32_t block[3],
			       uint32_t shared_bytes, CUstream st,
			       void **params, const uint32_t *cluster,
			       CUevent ev, bool coop)
{
	CUlaunchAttribute attr[3];
	CUlaunchConfig cfg = {
		.gridDimX = grid[0],
		.gridDimY = grid[1],
		.gridDimZ = grid[2],
		.blockDimX = block[0],
		.blockDimY = block[1],
		.blockDimZ = block[2],
		.sharedMemBytes = shared_bytes,
		.hStream = st,
		.attrs = attr,
	};

	memset(attr, 0, sizeof(attr));
	if (cluster) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attr[cfg.numAttrs].value.clusterDim.x = cluster[0];
		attr[cfg.numAttrs].value.clusterDim.y = cluster[1];
		attr[cfg.numAttrs].value.clusterDim.z = cluster[2];
		cfg.numAttrs++;
	}
	if (ev) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
		attr[cfg.numAttrs].value.programmaticEvent.event = ev;
		cfg.numAttrs++;
	}
	if (coop) {
		attr[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
		attr[cfg.numAttrs].value.cooperative = 1;
		cfg.numAttrs++;
	}
	return b->cu.cuLaunchKernelEx(&cfg, (CUfunction)k->kernel, params,
				      NULL);
}

/* Under api_lock. */
static CUresult cuda_launch_locked(struct backend *b, struct backend_kernel *k,
				   const uint32_t grid[3],
				   const uint32_t block[3],
				   uint32_t shared_bytes, CUstream st,
				   void **params, const uint32_t *cluster)
{
	if (cluster)
		return cuda_launch_ex(b, k, grid, block, shared_bytes, st,
				      params, cluster, NULL, false);
	return b->cu.cuLaunchKernel((CUfunction)k->kernel, grid[0], grid[1],
				    grid[2], block[0], block[1], block[2],
				    shared_bytes, st, params, NULL);
}

static int cuda_launch(struct backend *b, struct backend_kernel *k,
		       const uint32_t grid[3], const uint32_t block[3],
		       uint32_t shared_bytes, struct backend_stream *s,
		       void **params, const uint32_t *cluster)
{
	CUresult rc;

	api_lock(b);
	rc = cuda_launch_locked(b, k, grid, block, shared_bytes,
				stream_of(b, s), params, cluster);
	api_unlock(b);
	return rc;
}

static int cuda_launch_cooperative(struct backend *b, struct backend_kernel *k,
				   const uint32_t grid[3],
				   const uint32_t block[3],
				   uint32_t shared_bytes,
				   struct backend_stream *s, void **params)
{
	CUresult rc;

	api_lock(b);
	rc = cuda_launch_ex(b, k, grid, block, shared_bytes, stream_of(b, s),
			    params, NULL, NULL, true);
	api_unlock(b);
	return rc;
}

static CUresult cuda_event_move(struct backend *b, struct backend_event *e);

/*
 * A launch and its watchdog marker in one driver call: the event rides on
 * the launch (CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT) instead of a
 * cuEventRecord after it. On the H200 a vGPU's async launch rate with the
 * watchdog was 0.876 of its rate without, with a record after each launch,
 * and 0.983 so (scripts/wd-bench.sh). The event completes when every
 * block has ended, or has called cudaTriggerProgrammaticLaunchCompletion:
 * such a kernel reads as done from its trigger on, and the watchdog times
 * what its stream still runs (worker_watchdog.c, wd_drained). A driver
 * that refuses the attribute gets a launch and a record instead, from then
 * on, as does VGPU_CUDA_MARKER_ATTR=0.
 */
static int cuda_launch_marked(struct backend *b, struct backend_kernel *k,
			      const uint32_t grid[3], const uint32_t block[3],
			      uint32_t shared_bytes, struct backend_stream *s,
			      void **params, const uint32_t *cluster,
			      struct backend_event *e, int *marked)
{
	struct backend_stream *bs = s ? s : &b->defstream;
	CUresult rc = CUDA_SUCCESS;
	bool usable;

	*marked = BACKEND_MARKED_NOT;
	api_lock(b);
	usable = e->slice == bs->slice || cuda_event_move(b, e) == 0;
	if (usable && b->marker_attr >= 0) {
		rc = cuda_launch_ex(b, k, grid, block, shared_bytes, bs->stream,
				    params, cluster, e->event, false);
		if (rc == CUDA_SUCCESS) {
			b->marker_attr = 1;
			e->recorded = 1;
			*marked = BACKEND_MARKED_EARLY;
			goto out;
		}
	}
	/* a refused launch queued nothing: without the attribute, whatever
	 * the refusal said; if that works where the attribute never did,
	 * the driver refuses the attribute */
	rc = cuda_launch_locked(b, k, grid, block, shared_bytes, bs->stream,
				params, cluster);
	if (rc != CUDA_SUCCESS || !usable)
		goto out;
	if (b->marker_attr == 0) {
		b->marker_attr = -1;
		fprintf(stderr, "vgpu-worker: the driver refuses "
				"CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT; the "
				"watchdog records its markers after each "
				"launch instead\n");
	}
	if (b->cu.cuEventRecord(e->event, bs->stream) == CUDA_SUCCESS) {
		e->recorded = 1;
		*marked = BACKEND_MARKED_AFTER;
	}
out:
	api_unlock(b);
	return rc;
}

/* ---- tensor maps ------------------------------------------------------ */

_Static_assert(sizeof(CUtensorMap) == VGPU_TENSOR_MAP_BYTES,
	       "a tensor map is 128 bytes");

/* The driver's own encoding: host-side, no context needed. */
static int cuda_tensor_map(struct backend *b, const struct vgpu_tensor_map *t,
			   uint8_t *map)
{
	CUtensorMap m;
	void *addr = (void *)(uintptr_t)t->global_address;
	CUresult rc = CUDA_ERROR_INVALID_VALUE;

	switch (t->kind) {
	case VGPU_TENSOR_MAP_TILED:
		rc = b->cu.cuTensorMapEncodeTiled(
			&m, (CUtensorMapDataType)t->data_type, t->rank, addr,
			t->global_dim, t->global_strides, t->box_dim,
			t->element_strides,
			(CUtensorMapInterleave)t->interleave,
			(CUtensorMapSwizzle)t->swizzle,
			(CUtensorMapL2promotion)t->l2_promotion,
			(CUtensorMapFloatOOBfill)t->oob_fill);
		break;
	case VGPU_TENSOR_MAP_IM2COL:
		rc = b->cu.cuTensorMapEncodeIm2col(
			&m, (CUtensorMapDataType)t->data_type, t->rank, addr,
			t->global_dim, t->global_strides, t->lower_corner,
			t->upper_corner, t->channels_per_pixel,
			t->pixels_per_column, t->element_strides,
			(CUtensorMapInterleave)t->interleave,
			(CUtensorMapSwizzle)t->swizzle,
			(CUtensorMapL2promotion)t->l2_promotion,
			(CUtensorMapFloatOOBfill)t->oob_fill);
		break;
	case VGPU_TENSOR_MAP_IM2COL_WIDE:
		rc = b->cu.cuTensorMapEncodeIm2colWide(
			&m, (CUtensorMapDataType)t->data_type, t->rank, addr,
			t->global_dim, t->global_strides, t->lower_corner[0],
			t->upper_corner[0], t->channels_per_pixel,
			t->pixels_per_column, t->element_strides,
			(CUtensorMapInterleave)t->interleave,
			(CUtensorMapIm2ColWideMode)t->wide_mode,
			(CUtensorMapSwizzle)t->swizzle,
			(CUtensorMapL2promotion)t->l2_promotion,
			(CUtensorMapFloatOOBfill)t->oob_fill);
		break;
	case VGPU_TENSOR_MAP_REPLACE_ADDRESS:
		memcpy(&m, t->map, sizeof(m));
		rc = b->cu.cuTensorMapReplaceAddress(&m, addr);
		break;
	}
	if (rc == CUDA_SUCCESS)
		memcpy(map, &m, sizeof(m));
	return rc;
}

/* ---- kernel attributes (the device's, not the slice's: per SM) ---------- */

static int cuda_kernel_get_attribute(struct backend *b,
				     struct backend_kernel *k, int attr,
				     int *value)
{
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuKernelGetAttribute(value, (CUfunction_attribute)attr,
					k->kernel, b->dev);
	api_unlock(b);
	return rc;
}

static int cuda_kernel_set_attribute(struct backend *b,
				     struct backend_kernel *k, int attr,
				     int value)
{
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuKernelSetAttribute((CUfunction_attribute)attr, value,
					k->kernel, b->dev);
	api_unlock(b);
	return rc;
}

/* The kernel's function in the slice's context, then the driver's count. */
static int cuda_kernel_occupancy(struct backend *b, struct backend_kernel *k,
				 int block, size_t dyn_smem, unsigned int flags,
				 int *blocks)
{
	CUfunction f;
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuKernelGetFunction(&f, k->kernel);
	if (rc == CUDA_SUCCESS)
		rc = b->cu.cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
			blocks, f, block, dyn_smem, flags);
	api_unlock(b);
	return rc;
}

/*
 * Thread-block clusters: the driver's own answer for the kernel's
 * function in the slice's context (a green context answers for its SMs).
 */
static int cuda_kernel_clusters(struct backend *b, struct backend_kernel *k,
				const struct backend_cluster_query *q, int *out)
{
	CUlaunchAttribute attrs[2];
	CUlaunchConfig cfg = {
		.gridDimX = q->grid[0],
		.gridDimY = q->grid[1],
		.gridDimZ = q->grid[2],
		.blockDimX = q->block[0],
		.blockDimY = q->block[1],
		.blockDimZ = q->block[2],
		.sharedMemBytes = q->shared,
		.attrs = attrs,
	};
	CUfunction f;
	CUresult rc;

	memset(attrs, 0, sizeof(attrs));
	if (q->cluster[0]) {
		attrs[cfg.numAttrs].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
		attrs[cfg.numAttrs].value.clusterDim.x = q->cluster[0];
		attrs[cfg.numAttrs].value.clusterDim.y = q->cluster[1];
		attrs[cfg.numAttrs].value.clusterDim.z = q->cluster[2];
		cfg.numAttrs++;
	}
	if (q->policy) {
		attrs[cfg.numAttrs].id =
			CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE;
		attrs[cfg.numAttrs].value.clusterSchedulingPolicyPreference =
			(CUclusterSchedulingPolicy)q->policy;
		cfg.numAttrs++;
	}
	api_lock(b);
	rc = b->cu.cuKernelGetFunction(&f, k->kernel);
	if (rc == CUDA_SUCCESS && q->query == VGPU_CLUSTERS_MAX_SIZE)
		rc = b->cu.cuOccupancyMaxPotentialClusterSize(out, f, &cfg);
	else if (rc == CUDA_SUCCESS)
		rc = b->cu.cuOccupancyMaxActiveClusters(out, f, &cfg);
	api_unlock(b);
	return rc;
}

/* A limit of the slice's context (the driver's own checks apply too). */
static int cuda_ctx_limit(struct backend *b, int limit, int set, uint64_t value,
			  uint64_t *out)
{
	size_t v = 0;
	CUresult rc = CUDA_SUCCESS;

	api_lock(b);
	if (set)
		rc = b->cu.cuCtxSetLimit((CUlimit)limit, (size_t)value);
	if (set && rc == CUDA_SUCCESS) {
		b->limits_set |= 1u << limit;
		b->limit_value[limit] = value;
	}
	if (rc == CUDA_SUCCESS)
		rc = b->cu.cuCtxGetLimit(&v, (CUlimit)limit);
	api_unlock(b);
	*out = v;
	return rc;
}

void cuda_limits_apply(struct backend *b)
{
	int i;

	for (i = 0; i < CU_LIMIT_MAX; i++)
		if (b->limits_set & (1u << i))
			(void)b->cu.cuCtxSetLimit((CUlimit)i,
						  (size_t)b->limit_value[i]);
}

/* ---- streams and events ------------------------------------------------ */

static int cuda_stream_create(struct backend *b, struct backend_stream **out)
{
	struct backend_stream *s = calloc(1, sizeof(*s));
	CUresult rc;

	if (!s)
		return CUDA_ERROR_OUT_OF_MEMORY;
	/* made and listed in one hold of the lock: a resize switches it */
	api_lock(b);
	rc = b->cu.cuGreenCtxStreamCreate(&s->stream, b->cur->green,
					  CU_STREAM_NON_BLOCKING, 0);
	if (rc == CUDA_SUCCESS) {
		s->slice = b->cur;
		pthread_mutex_lock(&b->lock);
		LIST_ADD(b->streams, s);
		pthread_mutex_unlock(&b->lock);
	}
	api_unlock(b);
	if (rc) {
		free(s);
		return rc;
	}
	*out = s;
	return CUDA_SUCCESS;
}

static void cuda_stream_destroy(struct backend *b, struct backend_stream *s)
{
	if (!s)
		return;
	api_lock(b);
	pthread_mutex_lock(&b->lock);
	LIST_DEL(b->streams, s);
	pthread_mutex_unlock(&b->lock);
	b->cu.cuStreamDestroy_v2(s->stream);
	api_unlock(b);
	free(s);
}

static int cuda_stream_sync(struct backend *b, struct backend_stream *s)
{
	struct cuda_slice *held;
	CUstream st = stream_hold(b, s, &held);
	CUresult rc = b->cu.cuStreamSynchronize(st);

	slice_put(held);
	return rc;
}

static int cuda_stream_query(struct backend *b, struct backend_stream *s)
{
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuStreamQuery(stream_of(b, s));
	api_unlock(b);
	return rc;
}

static int cuda_stream_wait_event(struct backend *b, struct backend_stream *s,
				  struct backend_event *e)
{
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuStreamWaitEvent(stream_of(b, s), e->event, 0);
	api_unlock(b);
	return rc;
}

static int cuda_event_create(struct backend *b, uint32_t flags,
			     struct backend_event **out)
{
	struct backend_event *e;
	CUresult rc;

	if (flags & CU_EVENT_INTERPROCESS)
		return CUDA_ERROR_NOT_SUPPORTED; /* no IPC across vGPUs */
	e = calloc(1, sizeof(*e));
	if (!e)
		return CUDA_ERROR_OUT_OF_MEMORY;
	api_lock(b);
	rc = b->cu.cuEventCreate(&e->event, flags);
	if (rc == CUDA_SUCCESS) {
		e->flags = flags;
		e->slice = b->cur;
		b->cur->events++;
		pthread_mutex_lock(&b->lock);
		LIST_ADD(b->events, e);
		pthread_mutex_unlock(&b->lock);
	}
	api_unlock(b);
	if (rc) {
		free(e);
		return rc;
	}
	*out = e;
	return CUDA_SUCCESS;
}

static void cuda_event_destroy(struct backend *b, struct backend_event *e)
{
	if (!e)
		return;
	api_lock(b);
	pthread_mutex_lock(&b->lock);
	LIST_DEL(b->events, e);
	pthread_mutex_unlock(&b->lock);
	b->cu.cuEventDestroy_v2(e->event);
	e->slice->events--;
	api_unlock(b);
	free(e);
}

/*
 * An event of an old context moves into the current one (cuEventRecord
 * wants the event and the stream in one context). The old CUevent may
 * still be pending: cuEventDestroy then frees it once it completes. Only
 * the event's owner records it, so nobody waits on the old one outside
 * the lock now. Under b->api.
 */
static CUresult cuda_event_move(struct backend *b, struct backend_event *e)
{
	CUevent ne;
	CUresult rc;

	rc = b->cu.cuEventCreate(&ne, e->flags);
	if (rc)
		return rc;
	b->cu.cuEventDestroy_v2(e->event);
	e->event = ne;
	e->slice->events--;
	e->slice = b->cur;
	b->cur->events++;
	return CUDA_SUCCESS;
}

static int cuda_event_record(struct backend *b, struct backend_event *e,
			     struct backend_stream *s)
{
	struct backend_stream *bs = s ? s : &b->defstream;
	CUresult rc = CUDA_SUCCESS;

	api_lock(b);
	if (e->slice != bs->slice)
		rc = cuda_event_move(b, e);
	if (rc == CUDA_SUCCESS)
		rc = b->cu.cuEventRecord(e->event, bs->stream);
	if (rc == CUDA_SUCCESS)
		e->recorded = 1;
	api_unlock(b);
	return rc;
}

static int cuda_event_sync(struct backend *b, struct backend_event *e)
{
	struct cuda_slice *held;
	CUevent ev;
	CUresult rc;

	api_lock(b);
	ev = e->event;
	held = e->slice;
	__atomic_add_fetch(&held->users, 1, __ATOMIC_SEQ_CST);
	api_unlock(b);
	rc = b->cu.cuEventSynchronize(ev);
	slice_put(held);
	return rc;
}

static int cuda_event_query(struct backend *b, struct backend_event *e)
{
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuEventQuery(e->event);
	api_unlock(b);
	return rc;
}

static int cuda_event_elapsed(struct backend *b, struct backend_event *start,
			      struct backend_event *end, float *ms)
{
	CUresult rc;

	api_lock(b);
	rc = b->cu.cuEventElapsedTime_v2(ms, start->event, end->event);
	api_unlock(b);
	return rc;
}

/* ---- resize (dynamic partitioning) -------------------------------------- */

static uint64_t cuda_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* What a resize makes beside the clients before it switches. */
struct cuda_prep {
	struct cuda_slice *sl; /* the new slice */
	CUstream *streams;     /* a stream in it per stream to move */
	CUevent *passed;       /* in it: recorded behind each wait */
	CUevent *fences;       /* in the current context, made at the switch */
	struct backend_stream **moved;
	CUresult *state; /* cuStreamQuery of each old stream */
	uint32_t *fence_of;
	uint32_t n, cap, nfences, npassed_used;
	int enqueued; /* waits were put on the new streams */
};

/* Streams the switch moves: the default one and every listed one. Under
 * b->lock. */
static uint32_t cuda_stream_count(struct backend *b)
{
	struct backend_stream *s;
	uint32_t n = 1;

	for (s = b->streams; s; s = s->next)
		n++;
	return n;
}

/*
 * Room for n streams in p: streams in the new slice (kept ones first,
 * cuda_slice_stream) and "passed"
 * events, made with the new context current to this thread (nobody else
 * uses it yet). On return the thread has the current slice's context
 * again when restore is set. 0 or a CUresult.
 */
static CUresult cuda_prep_grow(struct backend *b, struct cuda_prep *p,
			       uint32_t n, int restore)
{
	const struct cuda_sym *cu = &b->cu;
	CUresult rc = CUDA_SUCCESS;
	uint32_t cap = p->cap;
	void *q;

	if (n <= cap)
		return CUDA_SUCCESS;
	/* exactly n: each spare would be destroyed after the switch, before
	 * the worker answers (streams the clients make meanwhile are added
	 * by the switch) */
	cap = n;
#define GROW(field)                                                            \
	do {                                                                   \
		q = realloc(p->field, cap * sizeof(*p->field));                \
		if (!q)                                                        \
			return CUDA_ERROR_OUT_OF_MEMORY;                       \
		p->field = q;                                                  \
		memset(p->field + p->cap, 0,                                   \
		       (cap - p->cap) * sizeof(*p->field));                    \
	} while (0)
	GROW(streams);
	GROW(passed);
	GROW(fences);
	GROW(moved);
	GROW(state);
	GROW(fence_of);
#undef GROW
	rc = cu->cuCtxSetCurrent(p->sl->ctx);
	cuda_tls_slice = 0; /* not the current slice's */
	while (rc == CUDA_SUCCESS && p->cap < cap) {
		rc = cuda_slice_stream(b, p->sl, &p->streams[p->cap]);
		if (rc)
			break;
		/* counted at once: cuda_prep_free destroys what there is */
		rc = cu->cuEventCreate(&p->passed[p->cap++],
				       CU_EVENT_DISABLE_TIMING);
	}
	if (restore)
		cuda_ctx_refresh(b);
	return rc;
}

/*
 * Load every kernel of every library into the new context now, with it
 * current to this thread (cuKernelGetFunction answers for the current
 * context), so that the first launches after the switch do not pay for
 * it. b->lock keeps libraries from being unloaded meanwhile; the clients'
 * launches go on.
 */
static void cuda_prep_warm(struct backend *b)
{
	struct backend_library *l;
	struct backend_kernel *k;
	CUfunction f;

	pthread_mutex_lock(&b->lock);
	for (l = b->libs; l; l = l->next)
		for (k = l->kernels; k; k = k->next)
			b->cu.cuKernelGetFunction(&f, k->kernel);
	pthread_mutex_unlock(&b->lock);
}

/* Everything of p that the switch did not take over. */
static void cuda_prep_free(struct backend *b, struct cuda_prep *p)
{
	uint32_t i;

	for (i = 0; i < p->cap; i++) {
		if (p->streams && p->streams[i])
			b->cu.cuStreamDestroy_v2(p->streams[i]);
		if (p->passed && p->passed[i])
			b->cu.cuEventDestroy_v2(p->passed[i]);
	}
	for (i = 0; i < p->nfences; i++)
		b->cu.cuEventDestroy_v2(p->fences[i]);
	free(p->streams);
	free(p->passed);
	free(p->fences);
	free(p->moved);
	free(p->state);
	free(p->fence_of);
	memset(p, 0, sizeof(*p));
}

/*
 * The switch, under b->api and b->lock (the barrier: no client submits
 * meanwhile). For each stream, by the ECLIP rule: when its old stream
 * still has work pending, record a fence there and make the new stream
 * wait for it (and record "passed" behind the wait, so the old context
 * is not destroyed under a wait that has not been passed yet); when it
 * is idle, nothing. Every fallible call comes before anything changes.
 */
static CUresult cuda_switch(struct backend *b, struct cuda_prep *p,
			    struct backend_resize_info *out)
{
	const struct cuda_sym *cu = &b->cu;
	struct cuda_slice *old = b->cur, *sl = p->sl;
	struct backend_stream *s;
	CUstream *olds;
	uint32_t n = cuda_stream_count(b), i, k;
	CUresult rc;

	rc = cuda_prep_grow(b, p, n, 1);
	olds = calloc(n, sizeof(*olds));
	if (rc || !olds) {
		free(olds);
		return rc ? rc : CUDA_ERROR_OUT_OF_MEMORY;
	}
	p->n = 0;
	p->moved[p->n++] = &b->defstream;
	for (s = b->streams; s; s = s->next)
		p->moved[p->n++] = s;
	/* the old streams, in the old context (current here) */
	for (i = 0; i < p->n; i++) {
		rc = cu->cuStreamQuery(p->moved[i]->stream);
		p->state[i] = rc;
		if (rc != CUDA_SUCCESS && rc != CUDA_ERROR_NOT_READY)
			goto fail;
		if (rc == CUDA_SUCCESS)
			continue;
		rc = cu->cuEventCreate(&p->fences[p->nfences],
				       CU_EVENT_DISABLE_TIMING);
		if (rc)
			goto fail;
		p->fence_of[i] = p->nfences++;
		rc = cu->cuEventRecord(p->fences[p->fence_of[i]],
				       p->moved[i]->stream);
		if (rc)
			goto fail;
	}
	/* the new streams, in the new context */
	rc = cu->cuCtxSetCurrent(sl->ctx);
	cuda_tls_slice = 0;
	for (i = 0, k = 0; rc == CUDA_SUCCESS && i < p->n; i++) {
		if (p->state[i] != CUDA_ERROR_NOT_READY)
			continue;
		p->enqueued = 1;
		rc = cu->cuStreamWaitEvent(p->streams[i],
					   p->fences[p->fence_of[i]], 0);
		if (rc == CUDA_SUCCESS)
			rc = cu->cuEventRecord(p->passed[k++], p->streams[i]);
		out->waits++;
	}
	if (rc)
		goto fail;
	/* commit: nothing below fails */
	for (i = 0; i < p->n; i++) {
		olds[i] = p->moved[i]->stream;
		p->moved[i]->stream = p->streams[i];
		p->moved[i]->slice = sl;
		p->streams[i] = NULL;
	}
	old->old = olds;
	old->nold = p->n;
	old->fences = p->fences;
	old->nfences = p->nfences;
	old->passed = p->passed;
	old->npassed = p->cap; /* unrecorded ones query as complete */
	p->fences = NULL;
	p->passed = NULL;
	p->nfences = 0;
	sl->id = ++b->slice_ids;
	cuda_tls_slice = sl->id;
	b->cur = sl;
	b->nsms = sl->nsms;
	cuda_limits_apply(b); /* the clients' limits, on the new context */
	old->next = b->retired;
	b->retired = old;
	b->nretired++;
	out->streams = p->n;
	return CUDA_SUCCESS;
fail:
	free(olds);
	cu->cuCtxSetCurrent(old->ctx);
	cuda_tls_slice = old->id;
	return rc;
}

/* The device description after a resize: the slice's name and SMs. */
static void cuda_info_resized(struct backend *b)
{
	struct vgpu_device_info *info = &b->info;
	char gpu[sizeof(info->gpu_name)];

	memcpy(gpu, info->gpu_name, sizeof(gpu));
	gpu[sizeof(gpu) - 1] = '\0';
	snprintf(info->name, sizeof(info->name), "vGPU %s: %u-SM slice of %s",
		 b->cfg.name, b->nsms, gpu);
	info->sm_count = b->nsms;
	info->attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = (int)b->nsms;
}

static int cuda_resize_reclaim(struct backend *b);

/*
 * Resize or move: build a green context over the new groups (about 1.3 ms
 * on an H100; or take a kept one, backend_cuda_cache.c) while the clients
 * go on, then switch every stream under the
 * API lock (cuda_switch). The old context is retired, not destroyed:
 * its queued work still runs on the old groups; resize_reclaim destroys
 * it later. Refused while a client holds module-scope variables: the
 * driver keeps their storage per context, so a new context would give
 * kernels fresh copies at other addresses.
 */
static int cuda_resize(struct backend *b, const uint32_t *groups,
		       uint32_t ngroups, struct backend_resize_info *out,
		       char *err, size_t errlen)
{
	struct cuda_prep p;
	uint64_t t0, t1, t2, globals;
	uint32_t n;
	CUresult rc;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	if (!b->serialize) {
		snprintf(err, errlen,
			 "cuda: resizing needs the API lock, which "
			 "VGPU_CUDA_SERIALIZE=0 turned off");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	api_lock(b);
	globals = b->globals;
	api_unlock(b);
	if (globals) {
		snprintf(err, errlen,
			 "cuda: a client uses %llu module-scope variable%s "
			 "(__device__/__constant__), whose storage the driver "
			 "keeps per context; resizing would give its kernels "
			 "new copies, so it is refused until they are unloaded",
			 (unsigned long long)globals, globals == 1 ? "" : "s");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (b->nretired >= CUDA_MAX_RETIRED &&
	    cuda_resize_reclaim(b) == CUDA_ERROR_NOT_READY &&
	    b->nretired >= CUDA_MAX_RETIRED) {
		snprintf(err, errlen,
			 "cuda: %u earlier slices still run work queued "
			 "before their resize; try again when it is done",
			 b->nretired);
		return CUDA_ERROR_NOT_READY;
	}
	t0 = cuda_now_ns();
	rc = cuda_slice_get(b, b->dev, groups, ngroups, &p.sl, err, errlen);
	if (rc == CUDA_SUCCESS) {
		pthread_mutex_lock(&b->lock);
		n = cuda_stream_count(b);
		pthread_mutex_unlock(&b->lock);
		rc = cuda_prep_grow(b, &p, n, 0);
		if (rc)
			cuda_fail(&b->cu, rc, err, errlen,
				  "preparing the new streams");
		else
			cuda_prep_warm(b); /* the new context is current */
	}
	t1 = cuda_now_ns();
	if (rc == CUDA_SUCCESS) {
		api_lock(b);
		pthread_mutex_lock(&b->lock);
		t1 = cuda_now_ns();
		rc = cuda_switch(b, &p, out);
		t2 = cuda_now_ns();
		pthread_mutex_unlock(&b->lock);
		api_unlock(b);
		if (rc)
			cuda_fail(&b->cu, rc, err, errlen,
				  "switching the streams");
	} else {
		cuda_ctx_refresh(b);
		t2 = t1;
	}
	if (rc) {
		if (p.enqueued) {
			/* the new streams wait on old work: let reclaim
			 * destroy them (and the new context) once done */
			struct cuda_slice *dead = p.sl;

			dead->old = p.streams;
			dead->nold = p.cap;
			dead->passed = p.passed;
			dead->npassed = p.cap;
			p.streams = NULL;
			p.passed = NULL;
			p.cap = 0;
			dead->next = b->retired;
			b->retired = dead;
			b->nretired++;
		} else {
			cuda_prep_free(b, &p); /* streams made in p.sl */
			cuda_slice_free(b, p.sl);
		}
		cuda_prep_free(b, &p);
		return rc;
	}
	cuda_prep_free(b, &p);		   /* streams not needed after all */
	cuda_slice_free_spares(b, b->cur); /* and kept ones not taken */
	cuda_info_resized(b);
	out->sms = b->nsms;
	out->build_ns = t1 - t0;
	out->switch_ns = t2 - t1;
	out->after_ns = cuda_now_ns() - t2;
	return CUDA_SUCCESS;
}

/* Whether everything left behind in a retired slice is done. Under api. */
static int cuda_slice_drained(struct backend *b, struct cuda_slice *r)
{
	uint32_t i;

	for (i = 0; i < r->nold; i++)
		if (r->old[i] &&
		    b->cu.cuStreamQuery(r->old[i]) == CUDA_ERROR_NOT_READY)
			return 0;
	for (i = 0; i < r->npassed; i++)
		if (r->passed[i] &&
		    b->cu.cuEventQuery(r->passed[i]) == CUDA_ERROR_NOT_READY)
			return 0;
	return 1;
}

/*
 * Move up to CUDA_EVICT_BATCH events out of a drained retired slice into
 * the current context. Its streams are done, so each of its events is
 * complete or was never recorded; a recorded one is recorded again on
 * the current slice's idle marker stream (complete at once: its elapsed
 * time to another event becomes the time of the move). Under b->api,
 * with no thread waiting on r's handles (users == 0).
 */
static void cuda_slice_evict(struct backend *b, struct cuda_slice *r)
{
	struct backend_event *e;
	uint32_t moved = 0;
	CUevent ne;

	pthread_mutex_lock(&b->lock);
	for (e = b->events; e && r->events && moved < CUDA_EVICT_BATCH;
	     e = e->next) {
		if (e->slice != r)
			continue;
		if (b->cu.cuEventCreate(&ne, e->flags))
			break;
		if (e->recorded)
			b->cu.cuEventRecord(ne, b->cur->marker);
		b->cu.cuEventDestroy_v2(e->event);
		e->event = ne;
		e->slice = b->cur;
		r->events--;
		b->cur->events++;
		moved++;
	}
	pthread_mutex_unlock(&b->lock);
}

/*
 * Destroy the retired slices that nothing needs any more; move the
 * events out of them first, a batch per hold of the API lock so the
 * clients are never held up long. Never waits for the device.
 */
static int cuda_resize_reclaim(struct backend *b)
{
	struct cuda_slice **pp = &b->retired, *r;
	uint32_t left = 0, before;
	int ready;

	cuda_move_reclaim(b); /* a migration's staging */
	while ((r = *pp)) {
		api_lock(b);
		for (;;) {
			ready = !__atomic_load_n(&r->users, __ATOMIC_SEQ_CST) &&
				cuda_slice_drained(b, r);
			if (!ready || !r->events)
				break;
			before = r->events;
			cuda_slice_evict(b, r);
			if (r->events == before)
				break; /* out of memory: another time */
			api_unlock(b);
			api_lock(b);
		}
		ready = ready && !r->events;
		if (ready)
			*pp = r->next;
		api_unlock(b);
		if (ready) {
			/* unreachable now: no stream or event refers to it
			 * and nobody holds it; kept for a later resize to
			 * the same groups, or destroyed */
			cuda_cache_put(b, r);
			b->nretired--;
		} else {
			left++;
			pp = &r->next;
		}
	}
	return left ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

const struct backend_ops backend_cuda_ops = {
	.name = "cuda",
	.kind = VGPU_BACKEND_CUDA,
	.probe = cuda_probe,
	.open = cuda_open,
	.close = cuda_close,
	.thread_attach = cuda_thread_attach,
	.device_info = cuda_device_info,
	.granularity = cuda_granularity,
	.mem_map = cuda_mem_map,
	.mem_unmap = cuda_mem_unmap,
	.host_register = cuda_host_register,
	.host_unregister = cuda_host_unregister,
	.host_device_ptr = cuda_host_device_ptr,
	.memcpy_htod = cuda_memcpy_htod,
	.memcpy_dtoh = cuda_memcpy_dtoh,
	.memcpy_dtod = cuda_memcpy_dtod,
	.memset = cuda_memset,
	.library_load = cuda_library_load,
	.library_unload = cuda_library_unload,
	.library_get_kernel = cuda_library_get_kernel,
	.library_get_global = cuda_library_get_global,
	.launch = cuda_launch,
	.launch_marked = cuda_launch_marked,
	.tensor_map = cuda_tensor_map,
	.launch_cooperative = cuda_launch_cooperative,
	.stream_create = cuda_stream_create,
	.stream_destroy = cuda_stream_destroy,
	.stream_sync = cuda_stream_sync,
	.stream_query = cuda_stream_query,
	.stream_wait_event = cuda_stream_wait_event,
	.event_create = cuda_event_create,
	.event_destroy = cuda_event_destroy,
	.event_record = cuda_event_record,
	.event_sync = cuda_event_sync,
	.event_query = cuda_event_query,
	.event_elapsed = cuda_event_elapsed,
	.resize = cuda_resize,
	.resize_reclaim = cuda_resize_reclaim,
	.kernel_get_attribute = cuda_kernel_get_attribute,
	.kernel_set_attribute = cuda_kernel_set_attribute,
	.kernel_occupancy = cuda_kernel_occupancy,
	.kernel_clusters = cuda_kernel_clusters,
	.ctx_limit = cuda_ctx_limit,
	.library_kernel_name = cuda_library_kernel_name,
	.stream_write_host = cuda_stream_write_host,
	.migrate_prepare = cuda_migrate_prepare,
	.migrate_commit = cuda_migrate_commit,
	.migrate_abort = cuda_migrate_abort,
};
