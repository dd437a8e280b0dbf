/* SPDX-License-Identifier: MIT */
/*
 * The "sim" backend: a CPU simulator of a GPU slice, for CI and machines
 * without a GPU. It names itself as a simulator everywhere ("vgpu
 * simulated GPU"); no GPU figure is ever taken from it.
 *
 * Settings (environment, read by probe and open):
 *   VGPU_SIM_GPUS    simulated GPUs (default 1)
 *   VGPU_SIM_SMS     SMs per GPU (default 132); split into floor(sms / 8)
 *                    groups of 8, group g being SMs g*8 .. g*8+7; the
 *                    SMs left over (132: 128..131) are group floor(sms/8),
 *                    a slice alone or lent on top of groups
 *   VGPU_SIM_MEMORY  bytes per GPU, suffix K, M or G allowed (default 16G)
 *   VGPU_SIM_WEDGE_PRINTF_FIFO  for the liveness tests: a client that sets
 *                    CU_LIMIT_PRINTF_FIFO_SIZE to exactly this many bytes
 *                    wedges its worker thread in the backend for good, as
 *                    a driver call that never returns (default 0: never)
 *
 * Device memory is the vGPU's VA window itself, reserved PROT_NONE at
 * exactly va_base and made read-write where it is mapped, so a device
 * pointer is a host pointer here. The physical side is kept as the cuda
 * backend keeps it (backend_extent.h: an extent per run a mem_map call
 * backs anew, kept granules after a partial unmap), so CI runs the same
 * bookkeeping, and a migration moves extent by extent as on a GPU. Kernels are
 * the C twins in kernels/, found by name; execution is in sim_exec.c.
 * What a library holds is read from its cubin where there is one
 * (sim_image.c: CUDA's libraries' compressed fatbins too): every kernel
 * is found, and launches of one without a twin fail (NOT_SUPPORTED);
 * every module-scope variable gets host storage with its initial bytes,
 * outside the window, as the driver puts them outside it on a GPU.
 * Without a cubin, names are looked for in the image's text and the
 * twins' variables (kernels/sim_globals.c) get zeroed storage.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>

#include <vgpu/va.h>

#include "env_number.h"
#include "backend.h"
#include "backend_extent.h"
#include "sim_exec.h"
#include "sim_image.h"
#include "sim_kernel.h"
#include "va_hold.h"

#define SIM_GPU_NAME	   "vgpu simulated GPU"
#define SIM_GROUP_SMS	   8
#define SIM_GRANULE	   (2ull << 20)
#define SIM_CC_MAJOR	   9
#define SIM_CC_MINOR	   0
#define SIM_DRIVER_VERSION 13000
#define SIM_MAX_SMS	   (VGPU_MAX_SM_GROUPS * SIM_GROUP_SMS)

struct sim_settings {
	uint32_t gpus;
	uint32_t sms;
	uint64_t memory;
	uint64_t wedge_fifo; /* VGPU_SIM_WEDGE_PRINTF_FIFO */
};

struct backend_kernel {
	struct backend_kernel *next;
	const char *name; /* the twin's, or the library's cubin's */
	const struct sim_kernel_desc *desc;    /* its twin, or NULL: none */
	int said;			       /* "no twin" logged (b->lock) */
	const struct backend_library *library; /* its own */
	int max_dyn_shared; /* 0: SIM_SHARED_DEFAULT (b->lock) */
	int carveout;	    /* as set + 1; 0: -1, the default */
	/* the thread-block cluster attributes as set (the simulator runs
	 * blocks one by one, so they only answer what was set) */
	int cluster[CU_FUNC_ATTRIBUTE_MAX -
		    CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET];
};

static int sim_attr_is_cluster(int attr)
{
	return attr >= CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET &&
	       attr < CU_FUNC_ATTRIBUTE_MAX;
}

/* The storage of one module-scope variable of a loaded library. */
struct sim_lib_global {
	const char *name; /* sim_globals[]'s, or the library's cubin's */
	uint64_t bytes;
	void *mem; /* bytes, set at load, 256-byte aligned */
};

struct backend_library {
	struct backend_library *next, *prev;
	unsigned char *image;
	size_t len;
	struct sim_image *cubin; /* what it names, when readable */
	uint64_t bytes;		 /* sim_image_bytes(cubin), in lib_bytes */
	int by_twin_name; /* names unreadable: see sim_names_unreadable() */
	struct backend_kernel *kernels;
	struct sim_lib_global *globals; /* fixed from load to unload */
	uint32_t nglobals;
};

struct backend {
	struct vgpu_worker_config cfg;
	struct sim_settings st;
	uint32_t nsms;
	uint32_t smids[SIM_MAX_SMS];
	unsigned char *va;
	uint64_t va_size;
	struct sim_exec *x;

	pthread_mutex_t lock; /* the extent map and the library list */
	struct extent_map mem;
	struct backend_library *libs;
	uint64_t lib_bytes; /* what the loaded libraries' cubins hold */
	uint64_t limits[CU_LIMIT_MAX]; /* the context's (lock) */
};

/* The limits of a new context, as an H100's driver gives them. */
static const uint64_t sim_limit_defaults[CU_LIMIT_MAX] = {
	[CU_LIMIT_STACK_SIZE] = 1024,
	[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
	[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
	[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
	[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
	[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
};

/* What all libraries' unpacked code and module variables may take (the
 * clients send the images: compressed, one can unpack to 256 MiB). */
#define SIM_LIBS_TOTAL_MAX (1ull << 30)

/* ---- settings ----------------------------------------------------------- */

static int sim_settings_read(struct sim_settings *st, char *err, size_t errlen)
{
	uint64_t v;

	if (env_number("VGPU_SIM_GPUS", 1, 0, 1, VGPU_MAX_GPUS, &v, err,
		       errlen))
		return -1;
	st->gpus = (uint32_t)v;
	if (env_number("VGPU_SIM_SMS", 132, 0, SIM_GROUP_SMS, SIM_MAX_SMS, &v,
		       err, errlen))
		return -1;
	st->sms = (uint32_t)v;
	if (env_number("VGPU_SIM_MEMORY", 16ull << 30, 1, SIM_GRANULE,
		       1ull << 44, &v, err, errlen))
		return -1;
	st->memory = v;
	if (env_number("VGPU_SIM_WEDGE_PRINTF_FIFO", 0, 1, 0, UINT64_MAX, &v,
		       err, errlen))
		return -1;
	st->wedge_fifo = v;
	return 0;
}

static uint32_t sim_ngroups(const struct sim_settings *st)
{
	return st->sms / SIM_GROUP_SMS;
}

/* A UUID that cannot be mistaken for a real GPU's: "vgpu-sim" + index. */
static void sim_uuid(uint8_t uuid[16], uint32_t gpu)
{
	memset(uuid, 0, 16);
	memcpy(uuid, "vgpu-sim", 8);
	uuid[12] = (uint8_t)(gpu >> 24);
	uuid[13] = (uint8_t)(gpu >> 16);
	uuid[14] = (uint8_t)(gpu >> 8);
	uuid[15] = (uint8_t)gpu;
}

static int sim_probe(struct vgpu_gpu_info *gpus, int max, char *err,
		     size_t errlen)
{
	struct sim_settings st;
	uint32_t i, g;

	if (sim_settings_read(&st, err, errlen))
		return -1;
	for (i = 0; i < st.gpus && (int)i < max; i++) {
		struct vgpu_gpu_info *gi = &gpus[i];

		memset(gi, 0, sizeof(*gi));
		gi->index = i;
		gi->backend = VGPU_BACKEND_SIM;
		snprintf(gi->name, sizeof(gi->name), "%s", SIM_GPU_NAME);
		sim_uuid(gi->uuid, i);
		gi->sm_count = st.sms;
		gi->min_partition = SIM_GROUP_SMS;
		gi->alignment = SIM_GROUP_SMS;
		gi->cc_major = SIM_CC_MAJOR;
		gi->cc_minor = SIM_CC_MINOR;
		gi->memory_total = st.memory;
		gi->granularity = SIM_GRANULE;
		gi->ngroups = sim_ngroups(&st);
		for (g = 0; g < gi->ngroups; g++)
			gi->group_sms[g] = SIM_GROUP_SMS;
	}
	return (int)i;
}

/* ---- open / close ------------------------------------------------------ */

/*
 * The leftover group, index ngroups: the SMs after the last whole group,
 * numbered on from the groups' SMs. Like the cuda backend's "remaining"
 * resource it may be held alone or with groups.
 */
static int sim_add_leftover(struct backend *b, uint32_t g, char *err,
			    size_t errlen)
{
	uint32_t first = g * SIM_GROUP_SMS, j;

	if (first >= b->st.sms) {
		snprintf(err, errlen,
			 "sim: SM group %u does not exist (GPU %u has %u "
			 "groups of %u SMs and no SMs left over)",
			 g, b->cfg.gpu, g, SIM_GROUP_SMS);
		return -1;
	}
	for (j = first; j < b->st.sms; j++)
		b->smids[b->nsms++] = j;
	return 0;
}

/* Check the slice part of a config against the simulated GPUs and fill in
 * the SM ids the slice's threads play. */
static int sim_check_config(struct backend *b, char *err, size_t errlen)
{
	const struct vgpu_worker_config *cfg = &b->cfg;
	uint8_t used[VGPU_MAX_SM_GROUPS + 1] = {0}; /* + the leftover */
	uint32_t ngroups = sim_ngroups(&b->st), i, j;

	if (cfg->gpu >= b->st.gpus) {
		snprintf(err, errlen,
			 "sim: GPU %u does not exist (VGPU_SIM_GPUS=%u)",
			 cfg->gpu, b->st.gpus);
		return -1;
	}
	if (cfg->ngroups == 0 || cfg->ngroups > VGPU_MAX_SM_GROUPS) {
		snprintf(err, errlen,
			 "sim: a slice needs 1 to %u SM groups, "
			 "not %u",
			 VGPU_MAX_SM_GROUPS, cfg->ngroups);
		return -1;
	}
	for (i = 0; i < cfg->ngroups; i++) {
		uint32_t g = cfg->groups[i];

		if (g <= ngroups && used[g]) {
			snprintf(err, errlen,
				 "sim: SM group %u is listed twice", g);
			return -1;
		}
		if (g == ngroups) {
			if (sim_add_leftover(b, g, err, errlen))
				return -1;
			used[g] = 1;
			continue;
		}
		if (g >= ngroups) {
			snprintf(err, errlen,
				 "sim: SM group %u does not exist (GPU %u has "
				 "%u groups of %u SMs)",
				 g, cfg->gpu, ngroups, SIM_GROUP_SMS);
			return -1;
		}
		used[g] = 1;
		for (j = 0; j < SIM_GROUP_SMS; j++)
			b->smids[b->nsms++] = g * SIM_GROUP_SMS + j;
	}
	if (!cfg->va_base || cfg->va_base % SIM_GRANULE || !cfg->va_size ||
	    cfg->va_size % SIM_GRANULE ||
	    cfg->va_base + cfg->va_size < cfg->va_base) {
		snprintf(err, errlen,
			 "sim: VA window 0x%" PRIx64 " + 0x%" PRIx64
			 " is empty or not aligned to the 2 MiB granule",
			 cfg->va_base, cfg->va_size);
		return -1;
	}
	return 0;
}

/*
 * Reserve the window at exactly va_base, never anywhere else. In the
 * worker, the hold it has had since start-up (va_hold.c) is that
 * reservation already.
 */
static int sim_reserve(struct backend *b, char *err, size_t errlen)
{
	char holder[256];
	int rc = 0;

	if (!va_hold_take(b->cfg.va_base, b->cfg.va_size))
		rc = vgpu_va_reserve(b->cfg.va_base, b->cfg.va_size);
	if (rc) {
		vgpu_va_holder(b->cfg.va_base, b->cfg.va_size, holder,
			       sizeof(holder));
		snprintf(err, errlen,
			 "sim: cannot reserve the VA window at 0x%" PRIx64
			 " (0x%" PRIx64
			 " bytes): %s; this process has there: %s",
			 b->cfg.va_base, b->cfg.va_size, vgpu_va_why(rc),
			 holder);
		return -1;
	}
	b->va = (void *)(uintptr_t)b->cfg.va_base;
	b->va_size = b->cfg.va_size;
	return 0;
}

static void sim_close(struct backend *b);

static int sim_open(struct backend **out, const struct vgpu_worker_config *cfg,
		    char *err, size_t errlen)
{
	struct backend *b = calloc(1, sizeof(*b));
	int rc;

	if (!b) {
		snprintf(err, errlen, "sim: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_init(&b->lock, NULL);
	b->cfg = *cfg;
	b->cfg.name[sizeof(b->cfg.name) - 1] = '\0';
	memcpy(b->limits, sim_limit_defaults, sizeof(b->limits));
	rc = CUDA_ERROR_INVALID_VALUE;
	if (sim_settings_read(&b->st, err, errlen) ||
	    sim_check_config(b, err, errlen))
		goto fail;
	rc = CUDA_ERROR_OUT_OF_MEMORY;
	if (extent_map_init(&b->mem, cfg->va_size / SIM_GRANULE)) {
		snprintf(err, errlen, "sim: out of memory");
		goto fail;
	}
	if (sim_reserve(b, err, errlen))
		goto fail;
	rc = sim_exec_create(&b->x, b->smids, b->nsms, err, errlen);
	if (rc != CUDA_SUCCESS)
		goto fail;
	*out = b;
	return CUDA_SUCCESS;
fail:
	sim_close(b);
	return rc;
}

static void sim_library_free(struct backend_library *l)
{
	uint32_t i;

	for (i = 0; i < l->nglobals; i++)
		free(l->globals[i].mem);
	free(l->globals);
	sim_image_free(l->cubin);
	while (l->kernels) {
		struct backend_kernel *k = l->kernels;

		l->kernels = k->next;
		free(k);
	}
	free(l->image);
	free(l);
}

static void sim_close(struct backend *b)
{
	if (!b)
		return;
	sim_exec_destroy(b->x);
	while (b->libs) {
		struct backend_library *l = b->libs;

		b->libs = l->next;
		sim_library_free(l);
	}
	if (b->va)
		munmap(b->va, b->va_size);
	extent_map_destroy(&b->mem);
	pthread_mutex_destroy(&b->lock);
	free(b);
}

static int sim_thread_attach(struct backend *b)
{
	return CUDA_SUCCESS;
}

/* Device attributes an H100 slice would report (the SM count is the
 * slice's). Only what a CUDA program commonly asks for. */
static void sim_fill_attrs(const struct backend *b, int32_t *attrs)
{
	static const struct {
		int attr;
		int32_t value;
	} h100[] = {
		{CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
		{CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
		{CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
		{CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
		{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
		{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
		{CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
		{CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
		{CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
		{CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
		{CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
		{CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
		{CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1755000},
		{CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
		{CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
		{CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
		{CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
		{CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
		{CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
		{CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
		{CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
		{CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 2},
		{CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
		{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, SIM_CC_MAJOR},
		{CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, SIM_CC_MINOR},
		{CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
		{CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
		{CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
		{CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
		 233472},
		{CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
		{CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
		{CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
		{CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
		{CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
	};
	size_t i;

	memset(attrs, 0, VGPU_DEVICE_ATTRS * sizeof(*attrs));
	for (i = 0; i < sizeof(h100) / sizeof(h100[0]); i++)
		if (h100[i].attr < VGPU_DEVICE_ATTRS)
			attrs[h100[i].attr] = h100[i].value;
	attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = (int32_t)b->nsms;
}

static void sim_device_info(struct backend *b, struct vgpu_device_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->name, sizeof(info->name), "vGPU %s: %u-SM slice of %s",
		 b->cfg.name, b->nsms, SIM_GPU_NAME);
	snprintf(info->gpu_name, sizeof(info->gpu_name), "%s", SIM_GPU_NAME);
	snprintf(info->vgpu_name, sizeof(info->vgpu_name), "%s", b->cfg.name);
	info->backend = VGPU_BACKEND_SIM;
	info->sm_count = b->nsms;
	info->cc_major = SIM_CC_MAJOR;
	info->cc_minor = SIM_CC_MINOR;
	info->memory_quota = b->cfg.memory_quota;
	info->driver_version = SIM_DRIVER_VERSION;
	sim_uuid(info->uuid, b->cfg.gpu);
	sim_fill_attrs(b, info->attrs);
}

/* ---- memory ----------------------------------------------------------- */

static uint64_t sim_granularity(struct backend *b)
{
	return SIM_GRANULE;
}

/* The granule range of [va, va + size), or -1 when it is not a granule
 * aligned range inside the window. */
static int sim_granules(struct backend *b, uint64_t va, uint64_t size,
			uint64_t *first, uint64_t *count)
{
	uint64_t off = va - b->cfg.va_base;

	if (va < b->cfg.va_base || off > b->va_size || size == 0 ||
	    size > b->va_size - off || off % SIM_GRANULE || size % SIM_GRANULE)
		return -1;
	*first = off / SIM_GRANULE;
	*count = size / SIM_GRANULE;
	return 0;
}

/*
 * Map [va, va + size): read-write pages; an extent per run that nothing
 * backs yet (as the cuda backend's cuMemCreate per run), kept granules
 * taken back. Refused when the simulated GPU's memory or (kept granules
 * counted) the quota would be exceeded.
 */
static int sim_mem_map(struct backend *b, uint64_t va, uint64_t size)
{
	uint64_t first, count, fresh;
	uint64_t max = EXTENT_MAX_BYTES / SIM_GRANULE;
	int rc = CUDA_SUCCESS, r;

	if (sim_granules(b, va, size, &first, &count))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&b->lock);
	r = extent_map_check(&b->mem, first, count,
			     b->cfg.memory_quota / SIM_GRANULE, &fresh);
	if (r) {
		rc = r == -EINVAL ? CUDA_ERROR_INVALID_VALUE /* mapped */
				  : CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if ((b->mem.nbacked + fresh) > b->st.memory / SIM_GRANULE) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	if (mprotect((void *)(uintptr_t)va, size, PROT_READ | PROT_WRITE)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY; /* e.g. too many mappings */
		goto out;
	}
	/* the pages are the memory: the extents only count it */
	if (extent_fill(&b->mem, first, count, max, NULL, NULL, NULL)) {
		rc = CUDA_ERROR_OUT_OF_MEMORY;
		mprotect((void *)(uintptr_t)va, size, PROT_NONE);
		goto out;
	}
	extent_revive(&b->mem, first, count);
out:
	pthread_mutex_unlock(&b->lock);
	return rc;
}

/*
 * Unmap [va, va + size): its pages dropped (they read as zeros when mapped
 * again) and fenced; extents left without a mapped granule are forgotten,
 * the others keep theirs (counted, as on a GPU).
 */
static int sim_mem_unmap(struct backend *b, uint64_t va, uint64_t size)
{
	void *p = (void *)(uintptr_t)va;
	uint64_t first, count;
	int rc = CUDA_SUCCESS;

	if (sim_granules(b, va, size, &first, &count))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&b->lock);
	if (!extent_range_mapped(&b->mem, first, count)) {
		rc = CUDA_ERROR_INVALID_VALUE; /* not mapped */
		goto out;
	}
	if (madvise(p, size, MADV_DONTNEED) || mprotect(p, size, PROT_NONE)) {
		rc = CUDA_ERROR_UNKNOWN;
		goto out;
	}
	extent_unmap(&b->mem, first, count, NULL, NULL);
out:
	pthread_mutex_unlock(&b->lock);
	return rc;
}

/* ---- copies ------------------------------------------------------------ */

static void *dptr(uint64_t va)
{
	return (void *)(uintptr_t)va;
}

static int sim_memcpy_htod(struct backend *b, struct backend_stream *s,
			   uint64_t dst, const void *src, size_t n)
{
	return sim_copy(b->x, s, dptr(dst), src, n, 1);
}

static int sim_memcpy_dtoh(struct backend *b, struct backend_stream *s,
			   void *dst, uint64_t src, size_t n)
{
	return sim_copy(b->x, s, dst, dptr(src), n, 1);
}

static int sim_memcpy_dtod(struct backend *b, struct backend_stream *s,
			   uint64_t dst, uint64_t src, size_t n)
{
	return sim_copy(b->x, s, dptr(dst), dptr(src), n, 0);
}

static int sim_memset_op(struct backend *b, struct backend_stream *s,
			 uint64_t dst, uint32_t value, uint32_t elem_size,
			 size_t count)
{
	return sim_memset(b->x, s, dptr(dst), value, elem_size, count);
}

/* Stream gates: any host memory will do for the simulator. */
static int sim_stream_write_host(struct backend *b, struct backend_stream *s,
				 uint64_t *p, uint64_t value)
{
	return sim_host_op(b->x, s, p, value, 0);
}

/* ---- code -------------------------------------------------------------- */

static int ident_char(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$';
}

/* What may follow a kernel's name: NUL (an ELF string table) or '(' (a
 * PTX .entry). */
static int kernel_name_end(unsigned char c)
{
	return c == '\0' || c == '(';
}

/* What may follow a variable's name: NUL (an ELF string table), or in PTX
 * '[' (an array), ';' or white space (".global .align 4 .f32 cscale;",
 * "... .u32 x = 1;"). */
static int global_name_end(unsigned char c)
{
	return c == '\0' || c == '[' || c == ';' || c == ' ' || c == '\t' ||
	       c == '\n' || c == '\r';
}

/*
 * Does the image hold name? It does when name appears as a whole word
 * (after a character that cannot be part of an identifier) followed by a
 * character end() accepts, so a cubin or PTX without the kernel or
 * variable does not "contain" it.
 */
static int image_has_name(const unsigned char *image, size_t len,
			  const char *name, int (*end_ok)(unsigned char))
{
	size_t n = strlen(name);
	const unsigned char *p = image, *end = image + len;

	if (n == 0)
		return 0;
	while ((size_t)(end - p) > n) {
		const unsigned char *hit =
			memmem(p, (size_t)(end - p), name, n);

		if (!hit || (size_t)(end - hit) <= n)
			return 0;
		if (end_ok(hit[n]) && (hit == image || !ident_char(hit[-1])))
			return 1;
		p = hit + 1;
	}
	return 0;
}

/*
 * A fatbin sim_image could not read (compressed some other way, or not
 * as it expects) whose text names no twin's kernel: kernels and module
 * variables are found by their twin's name alone. The names come from
 * the program's own registration calls (__cudaRegisterFunction /
 * __cudaRegisterVar through the guest library), so they name what the
 * program was built with.
 */
static int sim_names_unreadable(const unsigned char *img, size_t len)
{
	static const unsigned char fatbin_magic[4] = {0x50, 0xed, 0x55, 0xba};
	const struct sim_kernel_desc *k;

	if (len < sizeof(fatbin_magic) ||
	    memcmp(img, fatbin_magic, sizeof(fatbin_magic)) != 0)
		return 0;
	for (k = sim_kernels; k->name; k++)
		if (image_has_name(img, len, k->name, kernel_name_end))
			return 0;
	return 1;
}

/* Storage for one more variable of l: bytes, initialised from init (or
 * zeroed). l->globals has room. */
static int sim_global_add(struct backend_library *l, const char *name,
			  uint64_t bytes, const void *init)
{
	struct sim_lib_global *lg = &l->globals[l->nglobals];
	size_t size = ((size_t)bytes + 255) & ~(size_t)255;

	lg->mem = aligned_alloc(256, size ? size : 256);
	if (!lg->mem)
		return CUDA_ERROR_OUT_OF_MEMORY;
	memset(lg->mem, 0, size);
	if (init)
		memcpy(lg->mem, init, bytes);
	lg->name = name;
	lg->bytes = bytes;
	l->nglobals++;
	return CUDA_SUCCESS;
}

/*
 * Storage for every module variable l holds: those its cubin names, or
 * without one those of sim_globals[] whose names its text has.
 */
static int sim_library_globals(struct backend_library *l)
{
	const struct sim_image_var *v;
	const struct sim_global_desc *g;
	size_t n = 0;
	uint32_t i;
	int rc;

	if (l->cubin) {
		n = sim_image_var_count(l->cubin);
	} else {
		for (g = sim_globals; g->name; g++)
			n++;
	}
	if (!n)
		return CUDA_SUCCESS;
	l->globals = calloc(n, sizeof(*l->globals));
	if (!l->globals)
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; l->cubin && (v = sim_image_var(l->cubin, i)); i++) {
		rc = sim_global_add(l, v->name, v->bytes, v->init);
		if (rc)
			return rc;
	}
	for (g = sim_globals; !l->cubin && g->name; g++) {
		if (!g->bytes || (!l->by_twin_name &&
				  !image_has_name(l->image, l->len, g->name,
						  global_name_end)))
			continue;
		rc = sim_global_add(l, g->name, g->bytes, NULL);
		if (rc)
			return rc;
	}
	return CUDA_SUCCESS;
}

/* The storage of l's variable called name, or NULL. */
static struct sim_lib_global *
sim_library_global(const struct backend_library *l, const char *name)
{
	uint32_t i;

	for (i = 0; i < l->nglobals; i++)
		if (strcmp(l->globals[i].name, name) == 0)
			return &l->globals[i];
	return NULL;
}

/* sim_block.global: what a twin calls to reach a module variable. */
static void *sim_block_global(const struct sim_block *blk, const char *name)
{
	const struct sim_lib_global *g;

	if (!blk->library || !name)
		return NULL;
	g = sim_library_global(blk->library, name);
	return g ? g->mem : NULL;
}

static int sim_library_load(struct backend *b, const void *image, size_t len,
			    struct backend_library **out)
{
	struct backend_library *l;

	if (!image || len == 0)
		return CUDA_ERROR_INVALID_VALUE;
	l = calloc(1, sizeof(*l));
	if (!l || !(l->image = malloc(len))) {
		free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memcpy(l->image, image, len);
	l->len = len;
	if (sim_image_open(l->image, len, &l->cubin, NULL)) {
		sim_library_free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	l->by_twin_name = !l->cubin && sim_names_unreadable(l->image, len);
	l->bytes = l->cubin ? sim_image_bytes(l->cubin) : 0;
	pthread_mutex_lock(&b->lock);
	if (l->bytes > SIM_LIBS_TOTAL_MAX - b->lib_bytes) {
		pthread_mutex_unlock(&b->lock);
		sim_library_free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	b->lib_bytes += l->bytes;
	pthread_mutex_unlock(&b->lock);
	if (sim_library_globals(l) != CUDA_SUCCESS) {
		pthread_mutex_lock(&b->lock);
		b->lib_bytes -= l->bytes;
		pthread_mutex_unlock(&b->lock);
		sim_library_free(l);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_lock(&b->lock);
	l->next = b->libs;
	if (b->libs)
		b->libs->prev = l;
	b->libs = l;
	pthread_mutex_unlock(&b->lock);
	*out = l;
	return CUDA_SUCCESS;
}

static void sim_library_unload(struct backend *b, struct backend_library *l)
{
	if (!l)
		return;
	pthread_mutex_lock(&b->lock);
	if (l->prev)
		l->prev->next = l->next;
	else
		b->libs = l->next;
	if (l->next)
		l->next->prev = l->prev;
	b->lib_bytes -= l->bytes;
	pthread_mutex_unlock(&b->lock);
	sim_library_free(l);
}

/* Whether a cubin's parameters are, one by one, as large as twin d's. */
static int sim_layout_fits(const struct sim_kernel_desc *d,
			   const struct vgpu_kernel_info *info)
{
	struct vgpu_kernel_info tw;
	uint32_t i;

	sim_param_layout(d, &tw);
	if (tw.nparams != info->nparams)
		return 0;
	for (i = 0; i < tw.nparams; i++)
		if (tw.params[i].size != info->params[i].size)
			return 0;
	return 1;
}

/*
 * Kernel name of l: with a cubin, any kernel it has (the twin of that name
 * runs it, if there is one; the layout is the cubin's); without one, a
 * twin whose name the image's text has.
 */
static int sim_library_get_kernel(struct backend *b, struct backend_library *l,
				  const char *name, struct backend_kernel **out,
				  struct vgpu_kernel_info *layout)
{
	const struct sim_kernel_desc *desc = sim_kernel_find(name);
	struct vgpu_kernel_info info;
	struct backend_kernel *k;
	int rc = CUDA_SUCCESS;

	if (l->cubin) {
		if (sim_image_kernel_params(l->cubin, name, &info))
			return CUDA_ERROR_NOT_FOUND; /* or unreadable */
		/* a twin reads each parameter at its own size: it runs only
		 * a kernel whose parameters are the ones it was written for */
		if (desc && !sim_layout_fits(desc, &info))
			desc = NULL;
	} else if (!desc ||
		   (!l->by_twin_name &&
		    !image_has_name(l->image, l->len, name, kernel_name_end))) {
		return CUDA_ERROR_NOT_FOUND;
	} else {
		sim_param_layout(desc, &info);
	}
	pthread_mutex_lock(&b->lock);
	for (k = l->kernels; k && strcmp(k->name, name) != 0; k = k->next)
		;
	if (!k) {
		k = calloc(1, sizeof(*k) + strlen(name) + 1);
		if (k) {
			k->name = strcpy((char *)(k + 1), name);
			k->desc = desc;
			k->library = l;
			k->next = l->kernels;
			l->kernels = k;
		} else {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		}
	}
	pthread_mutex_unlock(&b->lock);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (layout)
		*layout = info;
	*out = k;
	return CUDA_SUCCESS;
}

/* l's kernels: its cubin's, or without one the twins its text names. */
static int sim_library_kernel_name(struct backend *b, struct backend_library *l,
				   uint32_t index, const char **name,
				   uint32_t *count)
{
	const struct sim_kernel_desc *d;
	uint32_t n = 0;

	*name = NULL;
	if (l->cubin) {
		*count = sim_image_kernel_count(l->cubin);
		*name = sim_image_kernel_name(l->cubin, index);
		return CUDA_SUCCESS;
	}
	for (d = sim_kernels; d->name && !l->by_twin_name; d++) {
		if (!image_has_name(l->image, l->len, d->name, kernel_name_end))
			continue;
		if (n++ == index)
			*name = d->name;
	}
	*count = n;
	return CUDA_SUCCESS;
}

static int sim_library_get_global(struct backend *b, struct backend_library *l,
				  const char *name, uint64_t *dptr,
				  uint64_t *bytes)
{
	const struct sim_lib_global *g = sim_library_global(l, name);

	if (!g)
		return CUDA_ERROR_NOT_FOUND;
	*dptr = (uint64_t)(uintptr_t)g->mem;
	*bytes = g->bytes;
	return CUDA_SUCCESS;
}

/* ---- kernel attributes ------------------------------------------------- */

static int kernel_max_dyn_shared(struct backend *b, struct backend_kernel *k)
{
	int v;

	pthread_mutex_lock(&b->lock);
	v = k->max_dyn_shared ? k->max_dyn_shared : SIM_SHARED_DEFAULT;
	pthread_mutex_unlock(&b->lock);
	return v;
}

/*
 * The twins have no registers or static shared memory: a kernel reports
 * 32 registers per thread, no static memory, sm_90 code, and the limits
 * an H100 gives a kernel that uses no more.
 */
static int sim_kernel_get_attribute(struct backend *b, struct backend_kernel *k,
				    int attr, int *value)
{
	switch (attr) {
	case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
		*value = 1024;
		break;
	case CU_FUNC_ATTRIBUTE_NUM_REGS:
		*value = 32;
		break;
	case CU_FUNC_ATTRIBUTE_PTX_VERSION:
	case CU_FUNC_ATTRIBUTE_BINARY_VERSION:
		*value = SIM_CC_MAJOR * 10 + SIM_CC_MINOR;
		break;
	case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
		*value = kernel_max_dyn_shared(b, k);
		break;
	case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
		pthread_mutex_lock(&b->lock);
		*value = k->carveout - 1;
		pthread_mutex_unlock(&b->lock);
		break;
	default:
		if (sim_attr_is_cluster(attr)) {
			pthread_mutex_lock(&b->lock);
			*value =
				k->cluster
					[attr -
					 CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET];
			pthread_mutex_unlock(&b->lock);
			break;
		}
		*value = 0;
		break;
	}
	return CUDA_SUCCESS;
}

static int sim_kernel_set_attribute(struct backend *b, struct backend_kernel *k,
				    int attr, int value)
{
	if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
	    (value < 0 || value > SIM_SHARED_OPTIN))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&b->lock);
	if (attr == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
		k->max_dyn_shared = value ? value : SIM_SHARED_DEFAULT;
	else if (sim_attr_is_cluster(attr))
		k->cluster[attr - CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET] =
			value;
	else
		k->carveout = value + 1;
	pthread_mutex_unlock(&b->lock);
	return CUDA_SUCCESS;
}

/* Resident blocks per SM under an H100's limits (threads in whole warps,
 * 32 blocks, 228 KiB of shared memory with 1 KiB reserved per block,
 * 64 Ki registers at 32 per thread). */
static int sim_kernel_occupancy(struct backend *b, struct backend_kernel *k,
				int block, size_t dyn_smem, unsigned int flags,
				int *blocks)
{
	int threads = (block + 31) / 32 * 32, n = 2048 / threads;

	if (n > 32)
		n = 32;
	if (dyn_smem > (size_t)kernel_max_dyn_shared(b, k)) {
		*blocks = 0;
		return CUDA_SUCCESS;
	}
	if (dyn_smem && (int)(233472 / (dyn_smem + 1024)) < n)
		n = (int)(233472 / (dyn_smem + 1024));
	if (65536 / (threads * 32) < n)
		n = 65536 / (threads * 32);
	*blocks = n;
	return CUDA_SUCCESS;
}

/*
 * Thread-block clusters, as an H100 places them: a cluster's blocks are
 * resident together in one GPC, here 16 of the slice's SMs (the last GPC
 * gets what is left); 8 blocks at most, 16 with the non-portable opt-in.
 * A cluster size comes from the query or from the kernel's required
 * one, and the two must agree.
 */
#define SIM_GPC_SMS 16

/*
 * What k's attributes say of its clusters: its required shape (req, all
 * 0 when it has none; their product into *want, 0 then) and the most
 * blocks a cluster may have (8, 16 with the non-portable opt-in).
 */
static int sim_cluster_rules(struct backend *b, struct backend_kernel *k,
			     int req[3], int *want)
{
	int i, limit;

	pthread_mutex_lock(&b->lock);
	*want = 1;
	for (i = 0; i < 3; i++) {
		req[i] = k->cluster[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH +
				    i -
				    CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET];
		*want *= req[i];
	}
	limit = k->cluster[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED -
			   CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET]
			? 16
			: 8;
	pthread_mutex_unlock(&b->lock);
	return limit;
}

static int sim_kernel_clusters(struct backend *b, struct backend_kernel *k,
			       const struct backend_cluster_query *q, int *out)
{
	int req[3], limit, size = 0, want, per_sm, total = 0, gpc, i;
	uint32_t left;

	limit = sim_cluster_rules(b, k, req, &want);
	if (q->cluster[0]) {
		size = (int)(q->cluster[0] * q->cluster[1] * q->cluster[2]);
		for (i = 0; want && i < 3; i++)
			if ((int)q->cluster[i] != req[i])
				return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	} else {
		size = want;
	}
	sim_kernel_occupancy(b, k,
			     (int)(q->block[0] * q->block[1] * q->block[2]),
			     q->shared, 0, &per_sm);
	if (q->query == VGPU_CLUSTERS_MAX_SIZE) {
		gpc = (int)(b->nsms < SIM_GPC_SMS ? b->nsms : SIM_GPC_SMS);
		if (size) /* the kernel's own, or the one asked about */
			*out = size <= limit && size <= gpc * per_sm ? size : 0;
		else
			*out = limit < gpc * per_sm ? limit : gpc * per_sm;
		return CUDA_SUCCESS;
	}
	if (!size || size > limit)
		return CUDA_ERROR_INVALID_CLUSTER_SIZE;
	for (left = b->nsms; left; left -= (uint32_t)gpc) {
		gpc = (int)(left < SIM_GPC_SMS ? left : SIM_GPC_SMS);
		total += gpc * per_sm / size;
	}
	*out = total;
	return CUDA_SUCCESS;
}

/* The simulator's limits only answer what was set: its twins use none. */
/*
 * Tensor maps: the simulator runs no kernel that reads one (no TMA), so
 * its encoding is its own: the address, rank, data type and the global
 * dimensions, in that order. It checks what the driver checks first: a
 * known data type, the rank, a 16-byte aligned address, dimensions of
 * at least 1 and boxes of 1 to 256.
 */
static int sim_tensor_map(struct backend *b, const struct vgpu_tensor_map *t,
			  uint8_t *map)
{
	uint32_t i;

	(void)b;
	if (t->global_address % 16)
		return CUDA_ERROR_INVALID_VALUE;
	if (t->kind == VGPU_TENSOR_MAP_REPLACE_ADDRESS) {
		memcpy(map, t->map, VGPU_TENSOR_MAP_BYTES);
		memcpy(map, &t->global_address, sizeof(t->global_address));
		return CUDA_SUCCESS;
	}
	if (t->data_type > CU_TENSOR_MAP_DATA_TYPE_16U6_ALIGN16B)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < t->rank; i++)
		if (!t->global_dim[i] ||
		    (t->kind == VGPU_TENSOR_MAP_TILED &&
		     (!t->box_dim[i] || t->box_dim[i] > 256)))
			return CUDA_ERROR_INVALID_VALUE;
	memset(map, 0, VGPU_TENSOR_MAP_BYTES);
	memcpy(map, &t->global_address, 8);
	memcpy(map + 8, &t->rank, 4);
	memcpy(map + 12, &t->data_type, 4);
	memcpy(map + 16, t->global_dim, t->rank * 8);
	return CUDA_SUCCESS;
}

static int sim_ctx_limit(struct backend *b, int limit, int set, uint64_t value,
			 uint64_t *out)
{
	if (set && limit == CU_LIMIT_PRINTF_FIFO_SIZE && b->st.wedge_fifo &&
	    value == b->st.wedge_fifo) {
		fprintf(stderr, "vgpu-worker: sim: wedging this thread for "
				"good (VGPU_SIM_WEDGE_PRINTF_FIFO)\n");
		for (;;)
			pause();
	}
	pthread_mutex_lock(&b->lock);
	if (set)
		b->limits[limit] = value;
	*out = b->limits[limit];
	pthread_mutex_unlock(&b->lock);
	return CUDA_SUCCESS;
}

/*
 * A launch's cluster shape against the kernel's attributes, as CUDA
 * checks it: at most 8 blocks, 16 with the non-portable opt-in, and the
 * kernel's required shape when it has one (all three edges set). The
 * twins run blocks alone, so a
 * cluster changes nothing else here; nor is it checked against a GPC's
 * worth of the slice, which the occupancy query models.
 */
static int sim_cluster_ok(struct backend *b, struct backend_kernel *k,
			  const uint32_t cluster[3])
{
	int i, req[3], want;
	int ok = cluster[0] * cluster[1] * cluster[2] <=
		 (uint32_t)sim_cluster_rules(b, k, req, &want);

	for (i = 0; ok && want && i < 3; i++)
		ok = (uint32_t)req[i] == cluster[i];
	return ok;
}

static int sim_launch_op(struct backend *b, struct backend_kernel *k,
			 const uint32_t grid[3], const uint32_t block[3],
			 uint32_t shared_bytes, struct backend_stream *s,
			 void **params, const uint32_t *cluster)
{
	const struct sim_code code = {k->desc, sim_block_global, k->library};

	if (cluster && !sim_cluster_ok(b, k, cluster))
		return CUDA_ERROR_INVALID_CLUSTER_SIZE;

	if (!k->desc) {
		pthread_mutex_lock(&b->lock);
		if (!k->said)
			fprintf(stderr,
				"vgpu-worker: the simulator has no C twin of "
				"kernel %s: its launches fail "
				"(CUDA_ERROR_NOT_SUPPORTED)\n",
				k->name);
		k->said = 1;
		pthread_mutex_unlock(&b->lock);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (shared_bytes > (uint32_t)kernel_max_dyn_shared(b, k))
		return CUDA_ERROR_INVALID_VALUE; /* as CUDA without the opt-in
						  */

	return sim_launch(b->x, s, &code, grid, block, shared_bytes, params);
}

/* The worker checked the slice holds every block; the twins run blocks
 * one after another, so a kernel that waits for the whole grid
 * (grid.sync) has no twin here. */
static int sim_launch_cooperative(struct backend *b, struct backend_kernel *k,
				  const uint32_t grid[3],
				  const uint32_t block[3],
				  uint32_t shared_bytes,
				  struct backend_stream *s, void **params)
{
	return sim_launch_op(b, k, grid, block, shared_bytes, s, params, NULL);
}

/* The twins read and write through plain pointers: host memory is at
 * its own address on the simulated device. */
static int sim_host_device_ptr(struct backend *b, void *p, uint64_t *dev)
{
	*dev = (uint64_t)(uintptr_t)p;
	return CUDA_SUCCESS;
}

/* ---- streams and events ------------------------------------------------ */

static int sim_stream_create_op(struct backend *b, struct backend_stream **out)
{
	return sim_stream_create(b->x, out);
}

static void sim_stream_destroy_op(struct backend *b, struct backend_stream *s)
{
	sim_stream_destroy(b->x, s);
}

static int sim_stream_sync_op(struct backend *b, struct backend_stream *s)
{
	return sim_stream_sync(b->x, s);
}

static int sim_stream_query_op(struct backend *b, struct backend_stream *s)
{
	return sim_stream_query(b->x, s);
}

static int sim_stream_wait_event_op(struct backend *b, struct backend_stream *s,
				    struct backend_event *e)
{
	return sim_stream_wait_event(b->x, s, e);
}

static int sim_event_create_op(struct backend *b, uint32_t flags,
			       struct backend_event **out)
{
	return sim_event_create(b->x, flags, out);
}

static void sim_event_destroy_op(struct backend *b, struct backend_event *e)
{
	sim_event_destroy(b->x, e);
}

static int sim_event_record_op(struct backend *b, struct backend_event *e,
			       struct backend_stream *s)
{
	return sim_event_record(b->x, e, s);
}

static int sim_event_sync_op(struct backend *b, struct backend_event *e)
{
	return sim_event_sync(b->x, e);
}

static int sim_event_query_op(struct backend *b, struct backend_event *e)
{
	return sim_event_query(b->x, e);
}

static int sim_event_elapsed_op(struct backend *b, struct backend_event *start,
				struct backend_event *end, float *ms)
{
	return sim_event_elapsed(b->x, start, end, ms);
}

/* ---- dynamic partitioning ----------------------------------------------- */

/*
 * The slice moves onto other groups: the same checks as at open, then a
 * new pool of SM threads (sim_exec_resize). The order of each stream's
 * work needs nothing more here: a stream's thread waits for each grid
 * before its next item, and a grid runs wholly on the pool it was
 * handed to.
 */
static int sim_resize(struct backend *b, const uint32_t *groups,
		      uint32_t ngroups, struct backend_resize_info *out,
		      char *err, size_t errlen)
{
	struct vgpu_worker_config old_cfg = b->cfg;
	uint32_t old_smids[SIM_MAX_SMS], old_nsms = b->nsms;
	uint64_t t0 = 0, switch_ns = 0;
	struct timespec ts;
	int rc;

	if (!ngroups || ngroups > VGPU_MAX_SM_GROUPS) {
		snprintf(err, errlen, "sim: a slice needs 1 to %u SM groups",
			 VGPU_MAX_SM_GROUPS);
		return CUDA_ERROR_INVALID_VALUE;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	memcpy(old_smids, b->smids, sizeof(old_smids));
	b->cfg.ngroups = ngroups;
	memset(b->cfg.groups, 0, sizeof(b->cfg.groups));
	memcpy(b->cfg.groups, groups, ngroups * sizeof(*groups));
	b->nsms = 0;
	rc = sim_check_config(b, err, errlen) ? CUDA_ERROR_INVALID_VALUE
					      : CUDA_SUCCESS;
	if (rc == CUDA_SUCCESS)
		rc = sim_exec_resize(b->x, b->smids, b->nsms, &switch_ns, err,
				     errlen);
	if (rc != CUDA_SUCCESS) {
		b->cfg = old_cfg;
		memcpy(b->smids, old_smids, sizeof(old_smids));
		b->nsms = old_nsms;
		return rc;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	memset(out, 0, sizeof(*out));
	out->sms = b->nsms;
	out->switch_ns = switch_ns;
	out->build_ns = (uint64_t)ts.tv_sec * 1000000000ull +
			(uint64_t)ts.tv_nsec - t0 - switch_ns;
	return CUDA_SUCCESS;
}

/* ---- migration (another simulated GPU) ------------------------------ */

/* Fresh pages for one extent ("the target's memory"), as the cuda
 * backend makes one target allocation per extent. */
struct sim_stage {
	uint64_t id; /* the extent's */
	uint64_t va, len;
	void *p; /* MAP_FAILED once used or given back */
};

/* What commit needs: the checked target, pages made ready for it. */
struct backend_move {
	uint32_t gpu, ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS];
	uint64_t prepare_ns;
	struct sim_stage *stage; /* in address order */
	uint32_t nstage;
};

static void sim_move_free(struct backend_move *m)
{
	uint32_t i;

	for (i = 0; i < m->nstage; i++)
		if (m->stage[i].p != MAP_FAILED)
			munmap(m->stage[i].p, m->stage[i].len);
	free(m->stage);
	free(m);
}

/*
 * Pages for every extent there is now, populated while the clients go on
 * (as the cuda backend allocates the target's memory in prepare).
 * Extents made before the commit get pages there.
 */
static void sim_move_stage(struct backend *b, struct backend_move *m)
{
	struct sim_stage *st;
	struct extent *e;
	uint64_t pos = 0;
	uint32_t n = 0, i;

	pthread_mutex_lock(&b->lock);
	st = calloc(b->mem.count + 1, sizeof(*st));
	while (st && (e = extent_next(&b->mem, &pos))) {
		st[n].id = e->id;
		st[n].va = b->cfg.va_base + e->first * SIM_GRANULE;
		st[n].len = e->count * SIM_GRANULE;
		st[n++].p = MAP_FAILED;
	}
	pthread_mutex_unlock(&b->lock);
	for (i = 0; i < n; i++)
		st[i].p = mmap(NULL, st[i].len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
				       MAP_POPULATE,
			       -1, 0);
	m->stage = st;
	m->nstage = st ? n : 0;
}

static uint64_t sim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Point the slice at gpu and groups: the config's checks, the SM ids.
 * On failure everything is as it was.
 */
static int sim_retarget(struct backend *b, uint32_t gpu, const uint32_t *groups,
			uint32_t ngroups, char *err, size_t errlen)
{
	struct vgpu_worker_config old_cfg = b->cfg;
	uint32_t old_smids[SIM_MAX_SMS], old_nsms = b->nsms;

	if (!ngroups || ngroups > VGPU_MAX_SM_GROUPS) {
		snprintf(err, errlen, "sim: a slice needs 1 to %u SM groups",
			 VGPU_MAX_SM_GROUPS);
		return CUDA_ERROR_INVALID_VALUE;
	}
	memcpy(old_smids, b->smids, sizeof(old_smids));
	b->cfg.gpu = gpu;
	b->cfg.ngroups = ngroups;
	memset(b->cfg.groups, 0, sizeof(b->cfg.groups));
	memcpy(b->cfg.groups, groups, ngroups * sizeof(*groups));
	b->nsms = 0;
	if (sim_check_config(b, err, errlen) == 0)
		return CUDA_SUCCESS;
	b->cfg = old_cfg;
	memcpy(b->smids, old_smids, sizeof(old_smids));
	b->nsms = old_nsms;
	return CUDA_ERROR_INVALID_VALUE;
}

/* Check the target now (nothing to allocate ahead on the simulator). */
static int sim_migrate_prepare(struct backend *b, uint32_t gpu,
			       const uint32_t *groups, uint32_t ngroups,
			       struct backend_move **out, char *err,
			       size_t errlen)
{
	struct vgpu_worker_config cfg = b->cfg;
	uint32_t smids[SIM_MAX_SMS], nsms = b->nsms;
	uint64_t t0 = sim_now_ns();
	struct backend_move *m;
	int rc;

	memcpy(smids, b->smids, sizeof(smids));
	rc = sim_retarget(b, gpu, groups, ngroups, err, errlen);
	if (rc)
		return rc;
	b->cfg = cfg; /* only checked: commit moves */
	memcpy(b->smids, smids, sizeof(smids));
	b->nsms = nsms;
	pthread_mutex_lock(&b->lock);
	if (gpu != b->cfg.gpu && b->mem.nbacked * SIM_GRANULE > b->st.memory) {
		pthread_mutex_unlock(&b->lock);
		snprintf(err, errlen,
			 "sim: GPU %u has %" PRIu64
			 " bytes, the vGPU maps %" PRIu64,
			 gpu, b->st.memory,
			 (uint64_t)(b->mem.nbacked * SIM_GRANULE));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&b->lock);
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "sim: out of memory");
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	m->gpu = gpu;
	m->ngroups = ngroups;
	memcpy(m->groups, groups, ngroups * sizeof(*groups));
	if (gpu != b->cfg.gpu)
		sim_move_stage(b, m);
	m->prepare_ns = sim_now_ns() - t0;
	*out = m;
	return CUDA_SUCCESS;
}

/*
 * Move one extent: its mapped runs copied into fresh pages ("the target
 * GPU's", made in prepare when the extent was there then: *k walks the
 * stages, which are in address order as the extents are), and the pages
 * put at the same addresses (mremap over the old ones), as the cuda
 * backend copies to the target and maps each extent's twin. Kept
 * granules hold nothing and stay fenced.
 */
static int sim_move_extent(struct backend *b, struct backend_move *m,
			   const struct extent *e, uint32_t *k, uint64_t *bytes,
			   uint64_t *copy_ns, uint64_t *remap_ns)
{
	uint64_t t0 = sim_now_ns(), t1, pos = e->first, f, c, i, j;
	uint64_t va = b->cfg.va_base + e->first * SIM_GRANULE;
	uint64_t len = e->count * SIM_GRANULE, end = e->first + e->count;
	void *p = MAP_FAILED, *q;

	/* stages of extents gone since prepare are skipped (freed later) */
	while (*k < m->nstage && m->stage[*k].va < va)
		(*k)++;
	if (*k < m->nstage && m->stage[*k].id == e->id &&
	    m->stage[*k].p != MAP_FAILED) {
		p = m->stage[*k].p; /* made ready in prepare */
		m->stage[*k].p = MAP_FAILED;
	}
	if (p == MAP_FAILED)
		p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	while (extent_next_run(&b->mem, b->mem.mapped, &pos, end, &f, &c)) {
		memcpy((char *)p + (f - e->first) * SIM_GRANULE,
		       (void *)(uintptr_t)(b->cfg.va_base + f * SIM_GRANULE),
		       c * SIM_GRANULE);
		*bytes += c * SIM_GRANULE;
	}
	t1 = sim_now_ns();
	*copy_ns += t1 - t0;
	if (mremap(p, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
		   (void *)(uintptr_t)va) == MAP_FAILED) {
		munmap(p, len);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	/* the kept granules: dropped and fenced again, as they were */
	for (i = e->first; i < end; i = j) {
		for (; i < end && extent_bit(b->mem.mapped, i); i++)
			;
		for (j = i; j < end && !extent_bit(b->mem.mapped, j); j++)
			;
		q = (void *)(uintptr_t)(b->cfg.va_base + i * SIM_GRANULE);
		if (j > i &&
		    (madvise(q, (j - i) * SIM_GRANULE, MADV_DONTNEED) ||
		     mprotect(q, (j - i) * SIM_GRANULE, PROT_NONE)))
			return CUDA_ERROR_OUT_OF_MEMORY; /* mappings */
	}
	*remap_ns += sim_now_ns() - t1;
	return CUDA_SUCCESS;
}

static int sim_migrate_commit(struct backend *b, struct backend_move *m,
			      struct backend_move_info *out, char *err,
			      size_t errlen)
{
	uint64_t t0 = sim_now_ns(), pos = 0;
	uint64_t copy_ns = 0, remap_ns = 0, switch_ns = 0, bytes = 0;
	struct vgpu_worker_config old_cfg;
	uint32_t old_smids[SIM_MAX_SMS], old_nsms, k = 0;
	struct extent *e;
	int rc = CUDA_SUCCESS;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&b->lock);
	while (m->gpu != b->cfg.gpu && rc == CUDA_SUCCESS &&
	       (e = extent_next(&b->mem, &pos)))
		rc = sim_move_extent(b, m, e, &k, &bytes, &copy_ns, &remap_ns);
	pthread_mutex_unlock(&b->lock);
	if (rc) {
		/* the extents already moved hold the same bytes: nothing the
		 * clients can see changed */
		snprintf(err, errlen,
			 "sim: no memory for a copy of the vGPU's memory");
		sim_move_free(m);
		return rc;
	}
	memcpy(old_smids, b->smids, sizeof(old_smids));
	old_cfg = b->cfg;
	old_nsms = b->nsms;
	rc = sim_retarget(b, m->gpu, m->groups, m->ngroups, err, errlen);
	if (rc == CUDA_SUCCESS) {
		rc = sim_exec_resize(b->x, b->smids, b->nsms, &switch_ns, err,
				     errlen);
		if (rc) {
			b->cfg = old_cfg;
			memcpy(b->smids, old_smids, sizeof(old_smids));
			b->nsms = old_nsms;
		}
	}
	if (rc == CUDA_SUCCESS) {
		out->sms = b->nsms;
		out->peer = 1;
		out->bytes = bytes;
		out->prepare_ns = m->prepare_ns;
		out->copy_ns = copy_ns;
		out->remap_ns = remap_ns;
		out->switch_ns = switch_ns;
		out->commit_ns = sim_now_ns() - t0;
	}
	sim_move_free(m);
	return rc;
}

static void sim_migrate_abort(struct backend *b, struct backend_move *m)
{
	sim_move_free(m);
}

static int sim_resize_reclaim(struct backend *b)
{
	return sim_exec_reclaim(b->x);
}

static uint64_t sim_busy_ns(struct backend *b)
{
	return sim_exec_busy_ns(b->x);
}

const struct backend_ops backend_sim_ops = {
	.name = "sim",
	.kind = VGPU_BACKEND_SIM,
	.probe = sim_probe,
	.open = sim_open,
	.close = sim_close,
	.thread_attach = sim_thread_attach,
	.device_info = sim_device_info,
	.granularity = sim_granularity,
	.mem_map = sim_mem_map,
	.host_device_ptr = sim_host_device_ptr,
	.mem_unmap = sim_mem_unmap,
	.memcpy_htod = sim_memcpy_htod,
	.memcpy_dtoh = sim_memcpy_dtoh,
	.memcpy_dtod = sim_memcpy_dtod,
	.memset = sim_memset_op,
	.library_load = sim_library_load,
	.library_unload = sim_library_unload,
	.library_get_kernel = sim_library_get_kernel,
	.library_get_global = sim_library_get_global,
	.launch = sim_launch_op,
	.launch_cooperative = sim_launch_cooperative,
	.stream_create = sim_stream_create_op,
	.stream_destroy = sim_stream_destroy_op,
	.stream_sync = sim_stream_sync_op,
	.stream_query = sim_stream_query_op,
	.stream_wait_event = sim_stream_wait_event_op,
	.event_create = sim_event_create_op,
	.event_destroy = sim_event_destroy_op,
	.event_record = sim_event_record_op,
	.event_sync = sim_event_sync_op,
	.event_query = sim_event_query_op,
	.event_elapsed = sim_event_elapsed_op,
	.kernel_get_attribute = sim_kernel_get_attribute,
	.kernel_set_attribute = sim_kernel_set_attribute,
	.kernel_clusters = sim_kernel_clusters,
	.ctx_limit = sim_ctx_limit,
	.tensor_map = sim_tensor_map,
	.library_kernel_name = sim_library_kernel_name,
	.kernel_occupancy = sim_kernel_occupancy,
	.stream_write_host = sim_stream_write_host,
	.resize = sim_resize,
	.resize_reclaim = sim_resize_reclaim,
	.busy_ns = sim_busy_ns,
	.migrate_prepare = sim_migrate_prepare,
	.migrate_commit = sim_migrate_commit,
	.migrate_abort = sim_migrate_abort,
};
