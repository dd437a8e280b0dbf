/* SPDX-License-Identifier: MIT */
/*
 * Descriptor validation and execution for vgpu-worker.
 *
 * worker_validate() is the edge: it sees a descriptor the client wrote
 * (already copied out of the ring by the caller) and either rejects it with
 * the CUresult CUDA itself would give, or produces a struct worker_op in
 * which every handle is resolved to this client's object, every device
 * range lies inside one live allocation of this client or inside one
 * module-scope variable of a library it has loaded, every data-area
 * range lies inside the private copy of the data size, and names and
 * kernel parameters have been copied out of the shared data area.
 * worker_execute() trusts that form and only calls the backend.
 *
 * Nothing here knows about rings, sockets or threads, so the unit tests
 * drive it with a stub backend.
 */
#include <cuda.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "env_number.h"
#include "worker.h"
#include "worker_part.h"
#include "worker_state.h"

/* CUDA's launch limits (compute capability 9.0; unchanged since 3.0). */
#define CUDA_MAX_GRID_X	       2147483647u
#define CUDA_MAX_GRID_YZ       65535u
#define CUDA_MAX_BLOCK_XY      1024u
#define CUDA_MAX_BLOCK_Z       64u
#define CUDA_MAX_BLOCK_THREADS 1024u
/* More dynamic shared memory than any GPU has per block (H100: 227 KiB). */
#define WORKER_MAX_SHARED_BYTES (256u << 10)
/* Rejected descriptors logged per client, so a hostile one cannot flood. */
#define WORKER_LOG_REJECTS 16u
#define WORKER_STAGE_MIN   (64u << 10)
#define WORKER_PARAM_BUF_BYTES                                                 \
	((VGPU_MAX_PARAM_BYTES + 63u) & ~63u) /* 64-byte aligned size */

/* ---- helpers shared by every worker file ----------------------------- */

void worker_log(const struct worker *w, const char *fmt, ...)
{
	char line[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "vgpu-worker %s: %s\n",
		w && w->cfg.name[0] ? w->cfg.name : "-", line);
}

uint64_t worker_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int worker_error_is_fatal(int rc)
{
	switch (rc) {
	case CUDA_ERROR_ECC_UNCORRECTABLE:
	case CUDA_ERROR_ILLEGAL_ADDRESS:
	case CUDA_ERROR_LAUNCH_TIMEOUT:
	case CUDA_ERROR_CONTEXT_IS_DESTROYED:
	case CUDA_ERROR_ASSERT:
	case CUDA_ERROR_HARDWARE_STACK_ERROR:
	case CUDA_ERROR_ILLEGAL_INSTRUCTION:
	case CUDA_ERROR_MISALIGNED_ADDRESS:
	case CUDA_ERROR_INVALID_ADDRESS_SPACE:
	case CUDA_ERROR_INVALID_PC:
	case CUDA_ERROR_LAUNCH_FAILED:
	case CUDA_ERROR_MPS_CONNECTION_FAILED:
	case CUDA_ERROR_MPS_RPC_FAILURE:
	case CUDA_ERROR_MPS_CLIENT_TERMINATED:
	case CUDA_ERROR_UNKNOWN:
		return 1;
	}
	return 0;
}

int worker_check(struct worker *w, int rc, const char *what)
{
	char msg[VGPU_MESSAGE_MAX];

	if (rc && worker_error_is_fatal(rc)) {
		snprintf(msg, sizeof(msg), "%s failed with CUDA error %d", what,
			 rc);
		w->fault(w, VGPU_FAULT_GPU, rc, msg);
	}
	return rc;
}

int worker_mem_map(void *ctx, uint64_t va, uint64_t len)
{
	struct worker *w = ctx;

	return w->ops->mem_map(w->be, va, len);
}

int worker_mem_unmap(void *ctx, uint64_t va, uint64_t len)
{
	struct worker *w = ctx;

	if (worker_suspended(w))
		return 0; /* suspended: nothing of it is mapped now */
	return w->ops->mem_unmap(w->be, va, len);
}

/* ---- validation ------------------------------------------------------ */

static int reject(const char **why, const char *msg, int status)
{
	*why = msg;
	return status;
}

static inline int data_ok(const struct worker_session *s, uint64_t off,
			  uint64_t len)
{
	return ring_range_ok(off, len, s->data_size);
}

/*
 * 0 when [addr, addr + len) lies in one live allocation of this client or,
 * failing that, in one module-scope variable (LIBRARY_GET_GLOBAL) of a
 * library it has loaded: those live outside the VA window, where the
 * driver put them. The allocation check comes first: it is the common case
 * and stays as cheap as before.
 */
static int mem_ok(struct worker_session *s, uint64_t addr, uint64_t len)
{
	int rc;

	pthread_rwlock_rdlock(&s->w->mem_lock);
	rc = suballoc_lookup(&s->w->mem, addr, len, s->owner, NULL, NULL);
	/* what a save point brought back after a fault: the vGPU's */
	if (rc == -EPERM)
		rc = suballoc_lookup(&s->w->mem, addr, len,
				     WORKER_OWNER_RECOVERED, NULL, NULL);
	pthread_rwlock_unlock(&s->w->mem_lock);
	if (rc && s->h.globals.n &&
	    worker_globals_contain(&s->h.globals, addr, len))
		rc = 0;
	return rc;
}

static struct worker_stream *session_stream(struct worker_session *s,
					    uint32_t handle)
{
	if (!handle)
		return s->default_stream_ok ? &s->default_stream : NULL;
	return handle_table_get(&s->h.streams, handle);
}

/*
 * The stream a stream op acts on. protocol.h names it in neither field
 * for these ops, so either may carry it: `stream`, or `handle` with
 * stream 0. Both set and different is ambiguous and rejected.
 */
static int stream_target(const struct vgpu_sqe *q, uint32_t *handle)
{
	if (q->stream && q->handle && q->stream != q->handle)
		return -1;
	*handle = q->stream ? q->stream : q->handle;
	return 0;
}

/* The grid and block of LAUNCH and KERNEL_CLUSTERS (a0..a2), and their
 * dynamic shared memory (shared_word: a3, or LAUNCH's low half of it):
 * nonzero and within CUDA's limits. */
static int validate_dims(const struct vgpu_sqe *q, uint64_t shared_word,
			 uint32_t g[3], uint32_t b[3], uint32_t *shared,
			 const char **why)
{
	g[0] = (uint32_t)q->a[0];
	g[1] = (uint32_t)(q->a[0] >> 32);
	g[2] = (uint32_t)q->a[1];
	b[0] = (uint32_t)(q->a[1] >> 32);
	b[1] = (uint32_t)q->a[2];
	b[2] = (uint32_t)(q->a[2] >> 32);
	if (!g[0] || !g[1] || !g[2] || g[0] > CUDA_MAX_GRID_X ||
	    g[1] > CUDA_MAX_GRID_YZ || g[2] > CUDA_MAX_GRID_YZ)
		return reject(why, "grid dimension 0 or above CUDA's limit",
			      CUDA_ERROR_INVALID_VALUE);
	if (!b[0] || !b[1] || !b[2] || b[0] > CUDA_MAX_BLOCK_XY ||
	    b[1] > CUDA_MAX_BLOCK_XY || b[2] > CUDA_MAX_BLOCK_Z ||
	    (uint64_t)b[0] * b[1] * b[2] > CUDA_MAX_BLOCK_THREADS)
		return reject(why, "block dimension 0 or above CUDA's limit",
			      CUDA_ERROR_INVALID_VALUE);
	if (shared_word > WORKER_MAX_SHARED_BYTES)
		return reject(why, "too much dynamic shared memory",
			      CUDA_ERROR_INVALID_VALUE);
	*shared = (uint32_t)shared_word;
	return CUDA_SUCCESS;
}

/*
 * The largest cluster edge a program may ask for, and the most blocks in
 * a cluster (8 portable, 16 with the non-portable opt-in on sm_90).
 */
#define KATTR_CLUSTER_EDGE_MAX 16

/*
 * A cluster shape as LAUNCH and KERNEL_CLUSTERS carry it: edges up to 16,
 * all three 0 (none) or all set (else CUDA_ERROR_INVALID_CLUSTER_SIZE,
 * as CUDA). Whether the kernel allows more than 8 blocks is the
 * backend's.
 */
static int validate_cluster_shape(const uint32_t c[3], const char **why)
{
	int i, set = 0;

	for (i = 0; i < 3; i++) {
		if (c[i] > KATTR_CLUSTER_EDGE_MAX)
			return reject(why, "cluster dimension above 16",
				      CUDA_ERROR_INVALID_CLUSTER_SIZE);
		set += c[i] != 0;
	}
	if (set != 0 && set != 3)
		return reject(why, "cluster dimensions partly 0",
			      CUDA_ERROR_INVALID_CLUSTER_SIZE);
	return CUDA_SUCCESS;
}

/*
 * LAUNCH's cluster shape, a3's upper half, an edge per byte (a byte
 * above them is unknown): a shape, at most 16 blocks, and the grid a
 * multiple of it.
 */
static int validate_cluster(uint64_t a3, const uint32_t g[3], uint32_t c[3],
			    const char **why)
{
	int i, rc;

	if ((a3 & ~VGPU_LAUNCH_COOPERATIVE) >> 56)
		return reject(why, "launch word a3: unknown bits",
			      CUDA_ERROR_INVALID_VALUE);
	for (i = 0; i < 3; i++)
		c[i] = (uint32_t)(a3 >> (32 + 8 * i)) & 0xff;
	rc = validate_cluster_shape(c, why);
	if (rc || !c[0])
		return rc;
	if (c[0] * c[1] * c[2] > KATTR_CLUSTER_EDGE_MAX)
		return reject(why, "cluster of more than 16 blocks",
			      CUDA_ERROR_INVALID_CLUSTER_SIZE);
	for (i = 0; i < 3; i++)
		if (g[i] % c[i])
			return reject(why,
				      "grid not a multiple of the cluster "
				      "shape",
				      CUDA_ERROR_INVALID_CLUSTER_SIZE);
	return CUDA_SUCCESS;
}

static int validate_launch(struct worker_session *s, const struct vgpu_sqe *q,
			   struct worker_op *op, const char **why)
{
	uint32_t *g = op->launch.grid, *b = op->launch.block;
	struct worker_kernel *k;
	int rc;

	k = handle_table_get(&s->h.kernels, q->handle);
	if (!k)
		return reject(why, "unknown kernel handle",
			      CUDA_ERROR_INVALID_HANDLE);
	op->stream = session_stream(s, q->stream);
	if (!op->stream)
		return reject(why, "unknown stream handle",
			      CUDA_ERROR_INVALID_HANDLE);
	if (validate_dims(q, (uint32_t)q->a[3], g, b, &op->launch.shared, why))
		return CUDA_ERROR_INVALID_VALUE;
	rc = validate_cluster(q->a[3], g, op->launch.cluster, why);
	if (rc)
		return rc;
	op->launch.cooperative = (q->a[3] & VGPU_LAUNCH_COOPERATIVE) != 0;
	if (op->launch.cooperative && op->launch.cluster[0])
		return reject(why, "a cooperative launch in clusters",
			      CUDA_ERROR_NOT_SUPPORTED);
	if (q->a[5] != k->info.param_bytes)
		return reject(why,
			      "parameter buffer size differs from the kernel's",
			      CUDA_ERROR_INVALID_VALUE);
	if (!data_ok(s, q->a[4], q->a[5]))
		return reject(why, "parameter buffer outside the data area",
			      CUDA_ERROR_INVALID_VALUE);
	/* private copy: the client may rewrite the data area meanwhile */
	memcpy(s->param_buf, s->data + q->a[4], q->a[5]);
	op->launch.k = k;
	return CUDA_SUCCESS;
}

/*
 * The name of a kernel or module variable: a0 = its data offset, a1 =
 * bytes. Copied into session->name first (the client may rewrite the data
 * area meanwhile), then checked: a NUL within a1 bytes, not empty.
 */
static int copy_name(struct worker_session *s, const struct vgpu_sqe *q,
		     const char **why)
{
	if (!q->a[1] || q->a[1] > VGPU_KERNEL_NAME_MAX)
		return reject(why, "name length 0 or too long",
			      CUDA_ERROR_INVALID_VALUE);
	if (!data_ok(s, q->a[0], q->a[1]))
		return reject(why, "name outside the data area",
			      CUDA_ERROR_INVALID_VALUE);
	memcpy(s->name, s->data + q->a[0], q->a[1]);
	if (!memchr(s->name, 0, q->a[1]))
		return reject(why, "name not NUL-terminated",
			      CUDA_ERROR_INVALID_VALUE);
	if (!s->name[0])
		return reject(why, "empty name", CUDA_ERROR_INVALID_VALUE);
	return CUDA_SUCCESS;
}

static int validate_get_kernel(struct worker_session *s,
			       const struct vgpu_sqe *q, struct worker_op *op,
			       const char **why)
{
	int rc;

	op->get_kernel.lib = handle_table_get(&s->h.libraries, q->handle);
	if (!op->get_kernel.lib)
		return reject(why, "unknown library handle",
			      CUDA_ERROR_INVALID_HANDLE);
	op->handle = q->handle;
	rc = copy_name(s, q, why);
	if (rc)
		return rc;
	if (q->a[3] < sizeof(struct vgpu_kernel_info) ||
	    !data_ok(s, q->a[2], sizeof(struct vgpu_kernel_info)))
		return reject(why,
			      "kernel info buffer too small or outside "
			      "the data area",
			      CUDA_ERROR_INVALID_VALUE);
	op->get_kernel.out = s->data + q->a[2];
	return CUDA_SUCCESS;
}

/*
 * CTX_LIMIT. A vGPU's limits are its context's, shared by its clients.
 * What costs device memory outside the vGPU's quota is capped at a
 * quarter of the quota: the malloc heap, the printf FIFO, and the stack
 * (per thread, for every thread the slice's SMs can hold). The L2
 * persisting size is the whole GPU's, and the CIG ones are for contexts a
 * vGPU never has: CUDA_ERROR_UNSUPPORTED_LIMIT.
 */
#define LIMIT_THREADS_PER_SM	 2048
#define LIMIT_STACK_MAX		 (512u << 10) /* CUDA's per thread */
#define LIMIT_SYNC_DEPTH_MAX	 24
#define LIMIT_PENDING_LAUNCH_MAX 65536
#define LIMIT_L2_FETCH_MAX	 128

static int validate_limit(struct worker_session *s, const struct vgpu_sqe *q,
			  struct worker_op *op, const char **why)
{
	uint64_t share = s->w->cfg.memory_quota / 4, v = q->a[2];
	int32_t sms =
		s->w->info.attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT];

	if (q->a[0] >= CU_LIMIT_MAX)
		return reject(why, "unknown limit", CUDA_ERROR_INVALID_VALUE);
	if (q->a[1] > 1)
		return reject(why, "limit: a1 not 0 (read) or 1 (set)",
			      CUDA_ERROR_INVALID_VALUE);
	op->limit.limit = (int)q->a[0];
	op->limit.set = (int)q->a[1];
	op->limit.value = v;
	if (!op->limit.set)
		return CUDA_SUCCESS;
	switch (q->a[0]) {
	case CU_LIMIT_STACK_SIZE:
		if (v > LIMIT_STACK_MAX ||
		    v * (uint64_t)(sms > 0 ? sms : 1) * LIMIT_THREADS_PER_SM >
			    share)
			return reject(
				why,
				"stack size: its threads' stacks would "
				"take over a quarter of the vGPU's memory",
				CUDA_ERROR_INVALID_VALUE);
		return CUDA_SUCCESS;
	case CU_LIMIT_PRINTF_FIFO_SIZE:
	case CU_LIMIT_MALLOC_HEAP_SIZE:
		if (v > share)
			return reject(why,
				      "heap or printf FIFO over a quarter of "
				      "the vGPU's memory",
				      CUDA_ERROR_INVALID_VALUE);
		return CUDA_SUCCESS;
	case CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH:
		return v > LIMIT_SYNC_DEPTH_MAX
			       ? reject(why, "sync depth over 24",
					CUDA_ERROR_INVALID_VALUE)
			       : CUDA_SUCCESS;
	case CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT:
		return v > LIMIT_PENDING_LAUNCH_MAX
			       ? reject(why, "pending launch count over 65536",
					CUDA_ERROR_INVALID_VALUE)
			       : CUDA_SUCCESS;
	case CU_LIMIT_MAX_L2_FETCH_GRANULARITY:
		return v > LIMIT_L2_FETCH_MAX
			       ? reject(why, "L2 fetch granularity over 128",
					CUDA_ERROR_INVALID_VALUE)
			       : CUDA_SUCCESS;
	default:
		return reject(why,
			      "this limit is the whole GPU's or cannot be set",
			      CUDA_ERROR_UNSUPPORTED_LIMIT);
	}
}

/* LIBRARY_KERNEL_NAME: a library of this client, an index, room for the
 * name inside the data area (none is fine: a count is asked). */
static int validate_kernel_name(struct worker_session *s,
				const struct vgpu_sqe *q, struct worker_op *op,
				const char **why)
{
	op->kname.lib = handle_table_get(&s->h.libraries, q->handle);
	if (!op->kname.lib)
		return reject(why, "unknown library handle",
			      CUDA_ERROR_INVALID_HANDLE);
	if (q->a[0] > UINT32_MAX)
		return reject(why, "kernel index above 2^32",
			      CUDA_ERROR_INVALID_VALUE);
	if (q->a[2] > VGPU_KERNEL_NAME_MAX || !data_ok(s, q->a[1], q->a[2]))
		return reject(why, "name buffer outside the data area",
			      CUDA_ERROR_INVALID_VALUE);
	op->kname.index = (uint32_t)q->a[0];
	op->kname.out = s->data + q->a[1];
	op->kname.room = q->a[2];
	return CUDA_SUCCESS;
}

static int validate_memset(struct worker_session *s, const struct vgpu_sqe *q,
			   struct worker_op *op, const char **why)
{
	uint64_t elem = q->a[3];

	if (elem != 1 && elem != 2 && elem != 4)
		return reject(why, "memset element size not 1, 2 or 4",
			      CUDA_ERROR_INVALID_VALUE);
	if (elem < 4 && q->a[1] >> (8 * elem))
		return reject(why, "memset value wider than its element",
			      CUDA_ERROR_INVALID_VALUE);
	if (q->a[1] > UINT32_MAX)
		return reject(why, "memset value wider than its element",
			      CUDA_ERROR_INVALID_VALUE);
	if (q->a[0] % elem)
		return reject(why,
			      "memset destination not aligned to its "
			      "element size",
			      CUDA_ERROR_INVALID_VALUE);
	if (q->a[2] > UINT64_MAX / elem)
		return reject(why, "memset count overflows",
			      CUDA_ERROR_INVALID_VALUE);
	if (q->a[2] && mem_ok(s, q->a[0], q->a[2] * elem))
		return reject(why,
			      "memset range not inside one allocation "
			      "or module variable of this client",
			      CUDA_ERROR_INVALID_VALUE);
	op->memset.dst = q->a[0];
	op->memset.value = (uint32_t)q->a[1];
	op->memset.count = q->a[2];
	op->memset.elem = (uint32_t)elem;
	return CUDA_SUCCESS;
}

/*
 * HOST_REGION_CREATE: a0 = bytes. The size is rounded up to pages here so
 * that the per-client total is checked against what will be mapped.
 */
static int validate_region_create(struct worker_session *s,
				  const struct vgpu_sqe *q,
				  struct worker_op *op, const char **why)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), size;

	if (!q->a[0])
		return reject(why, "host region of 0 bytes",
			      CUDA_ERROR_INVALID_VALUE);
	if (q->a[0] > VGPU_HOST_REGION_MAX_BYTES)
		return reject(why,
			      "host region larger than "
			      "VGPU_HOST_REGION_MAX_BYTES",
			      CUDA_ERROR_OUT_OF_MEMORY);
	size = (q->a[0] + page - 1) & ~(page - 1);
	if (size > VGPU_HOST_REGIONS_MAX_BYTES - s->region_bytes)
		return reject(why,
			      "the client's host regions would exceed "
			      "VGPU_HOST_REGIONS_MAX_BYTES",
			      CUDA_ERROR_OUT_OF_MEMORY);
	if (s->sock < 0)
		return reject(why, "no client socket to pass a region on",
			      CUDA_ERROR_NOT_SUPPORTED);
	op->bytes = size;
	return CUDA_SUCCESS;
}

/*
 * MEMCPY_REGION_HTOD/DTOH: handle = region, a0 = device address, a1 =
 * offset in the region, a2 = bytes. The host range is checked against
 * the region's size (not the data area's), the device range exactly as
 * for MEMCPY_HTOD/DTOH.
 */
static int validate_region_copy(struct worker_session *s,
				const struct vgpu_sqe *q, struct worker_op *op,
				const char **why)
{
	struct worker_region *r;

	op->stream = session_stream(s, q->stream);
	if (!op->stream)
		return reject(why, "unknown stream handle",
			      CUDA_ERROR_INVALID_HANDLE);
	r = handle_table_get(&s->h.regions, q->handle);
	if (!r)
		return reject(why, "unknown host region handle",
			      CUDA_ERROR_INVALID_HANDLE);
	if (!ring_range_ok(q->a[1], q->a[2], r->size))
		return reject(why, "copy range outside the host region",
			      CUDA_ERROR_INVALID_VALUE);
	if (q->a[2] && mem_ok(s, q->a[0], q->a[2]))
		return reject(why,
			      "device range not inside one allocation or "
			      "module variable of this client",
			      CUDA_ERROR_INVALID_VALUE);
	op->copy.dev = q->a[0];
	op->copy.host = (uint8_t *)r->base + q->a[1];
	op->copy.bytes = q->a[2];
	return CUDA_SUCCESS;
}

/*
 * KERNEL_GET_ATTRIBUTE / _SET_ATTRIBUTE / _OCCUPANCY. Setting is limited to
 * the attributes CUDA lets a program tune (the dynamic shared memory
 * limit, up to the device's opt-in maximum, the carveout, and the
 * thread-block cluster ones, which cuBLAS sets while it creates a
 * handle); the rest describe the compiled kernel.
 */
/* KERNEL_SET_ATTRIBUTE of one of the cluster attributes (10..15). */
static int validate_cluster_attr(uint64_t attr, int64_t v, const char **why)
{
	switch (attr) {
	case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
	case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
		if (v != 0 && v != 1)
			return reject(why, "cluster flag not 0 or 1",
				      CUDA_ERROR_INVALID_VALUE);
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
	case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
		if (v < 0 || v > KATTR_CLUSTER_EDGE_MAX)
			return reject(why, "cluster dimension not in 0..16",
				      CUDA_ERROR_INVALID_VALUE);
		return CUDA_SUCCESS;
	case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
		if (v < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
		    v > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
			return reject(why, "unknown cluster scheduling policy",
				      CUDA_ERROR_INVALID_VALUE);
		return CUDA_SUCCESS;
	default:
		return reject(why, "kernel attribute cannot be set",
			      CUDA_ERROR_NOT_SUPPORTED);
	}
}

static int validate_kernel_attr(struct worker_session *s,
				const struct vgpu_sqe *q, struct worker_op *op,
				const char **why)
{
	const int32_t *attrs = s->w->info.attrs;
	int32_t optin =
		attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN];
	int32_t maxthr = attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];

	op->kattr.k = handle_table_get(&s->h.kernels, q->handle);
	if (!op->kattr.k)
		return reject(why, "unknown kernel handle",
			      CUDA_ERROR_INVALID_HANDLE);
	memcpy(op->kattr.a, q->a, sizeof(op->kattr.a));
	switch (q->opcode) {
	case VGPU_OP_KERNEL_GET_ATTRIBUTE:
		if (q->a[0] >= CU_FUNC_ATTRIBUTE_MAX)
			return reject(why, "unknown kernel attribute",
				      CUDA_ERROR_INVALID_VALUE);
		return CUDA_SUCCESS;
	case VGPU_OP_KERNEL_SET_ATTRIBUTE:
		if (q->a[0] ==
		    CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
			if (q->a[1] > (uint64_t)(optin > 0 ? optin : 0))
				return reject(why,
					      "dynamic shared memory limit "
					      "above the device's",
					      CUDA_ERROR_INVALID_VALUE);
			return CUDA_SUCCESS;
		}
		if (q->a[0] ==
		    CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
			if ((int64_t)q->a[1] < -1 || (int64_t)q->a[1] > 100)
				return reject(why, "carveout not in -1..100",
					      CUDA_ERROR_INVALID_VALUE);
			return CUDA_SUCCESS;
		}
		return validate_cluster_attr(q->a[0], (int64_t)q->a[1], why);
	default: /* KERNEL_OCCUPANCY */
		if (q->a[0] == 0 ||
		    q->a[0] > (uint64_t)(maxthr > 0 ? maxthr : 1024))
			return reject(why, "block size out of range",
				      CUDA_ERROR_INVALID_VALUE);
		if (q->a[1] > (uint64_t)(optin > 0 ? optin : 0))
			return reject(why,
				      "dynamic shared memory above the "
				      "device's",
				      CUDA_ERROR_INVALID_VALUE);
		if (q->a[2] & ~(uint64_t)CU_OCCUPANCY_DISABLE_CACHING_OVERRIDE)
			return reject(why, "unknown occupancy flags",
				      CUDA_ERROR_INVALID_VALUE);
		return CUDA_SUCCESS;
	}
}

/*
 * KERNEL_CLUSTERS: the dimensions as LAUNCH's, cluster edges up to 16
 * (all three 0, or all three set), a known scheduling policy and query.
 * Whether the cluster fits the kernel and the slice is the backend's
 * answer (CUDA_ERROR_INVALID_CLUSTER_SIZE).
 */
static int validate_clusters(struct worker_session *s, const struct vgpu_sqe *q,
			     struct worker_op *op, const char **why)
{
	struct backend_cluster_query *c = &op->clusters.q;
	int i, rc;

	op->clusters.k = handle_table_get(&s->h.kernels, q->handle);
	if (!op->clusters.k)
		return reject(why, "unknown kernel handle",
			      CUDA_ERROR_INVALID_HANDLE);
	if (validate_dims(q, q->a[3], c->grid, c->block, &c->shared, why))
		return CUDA_ERROR_INVALID_VALUE;
	if (q->a[4] >> 48)
		return reject(why, "cluster dimensions: unknown bits",
			      CUDA_ERROR_INVALID_VALUE);
	for (i = 0; i < 3; i++)
		c->cluster[i] = (uint32_t)(q->a[4] >> (16 * i)) & 0xffff;
	rc = validate_cluster_shape(c->cluster, why);
	if (rc)
		return rc;
	c->policy = (int)(uint32_t)q->a[5];
	c->query = (int)(q->a[5] >> 32);
	if (c->policy < CU_CLUSTER_SCHEDULING_POLICY_DEFAULT ||
	    c->policy > CU_CLUSTER_SCHEDULING_POLICY_LOAD_BALANCING)
		return reject(why, "unknown cluster scheduling policy",
			      CUDA_ERROR_INVALID_VALUE);
	if (c->query != VGPU_CLUSTERS_ACTIVE &&
	    c->query != VGPU_CLUSTERS_MAX_SIZE)
		return reject(why, "unknown cluster query",
			      CUDA_ERROR_INVALID_VALUE);
	return CUDA_SUCCESS;
}

int worker_validate(struct worker_session *s, const struct vgpu_sqe *q,
		    struct worker_op *op, const char **why)
{
	uint32_t h;

	op->opcode = q->opcode;
	op->stream = NULL;
	op->handle = 0;
	*why = NULL;
	if (q->flags)
		return reject(why, "flags must be 0", CUDA_ERROR_INVALID_VALUE);

	switch (q->opcode) {
	case VGPU_OP_NOP:
	case VGPU_OP_MEM_GET_INFO:
	case VGPU_OP_STREAM_CREATE:
	case VGPU_OP_CTX_SYNC:
		return CUDA_SUCCESS;

	case VGPU_OP_GET_DEVICE_INFO:
		if (q->a[1] < sizeof(struct vgpu_device_info) ||
		    !data_ok(s, q->a[0], sizeof(struct vgpu_device_info)))
			return reject(why,
				      "device info buffer too small or "
				      "outside the data area",
				      CUDA_ERROR_INVALID_VALUE);
		op->out = s->data + q->a[0];
		return CUDA_SUCCESS;

	case VGPU_OP_MEM_ALLOC:
		if (!q->a[0])
			return reject(why, "allocation of 0 bytes",
				      CUDA_ERROR_INVALID_VALUE);
		op->bytes = q->a[0];
		return CUDA_SUCCESS;

	case VGPU_OP_MEM_FREE: {
		uint64_t start;
		int rc;

		pthread_rwlock_rdlock(&s->w->mem_lock);
		rc = suballoc_lookup(&s->w->mem, q->a[0], 1, s->owner, &start,
				     NULL);
		pthread_rwlock_unlock(&s->w->mem_lock);
		if (rc || start != q->a[0])
			return reject(why,
				      "not the start of an allocation of "
				      "this client",
				      CUDA_ERROR_INVALID_VALUE);
		op->ptr = q->a[0];
		return CUDA_SUCCESS;
	}

	case VGPU_OP_MEMCPY_HTOD:
	case VGPU_OP_MEMCPY_DTOH:
		op->stream = session_stream(s, q->stream);
		if (!op->stream)
			return reject(why, "unknown stream handle",
				      CUDA_ERROR_INVALID_HANDLE);
		if (!data_ok(s, q->a[1], q->a[2]))
			return reject(why, "copy range outside the data area",
				      CUDA_ERROR_INVALID_VALUE);
		if (q->a[2] && mem_ok(s, q->a[0], q->a[2]))
			return reject(why,
				      "device range not inside one "
				      "allocation or module variable of "
				      "this client",
				      CUDA_ERROR_INVALID_VALUE);
		op->copy.dev = q->a[0];
		op->copy.host = s->data + q->a[1];
		op->copy.bytes = q->a[2];
		return CUDA_SUCCESS;

	case VGPU_OP_MEMCPY_DTOD:
		op->stream = session_stream(s, q->stream);
		if (!op->stream)
			return reject(why, "unknown stream handle",
				      CUDA_ERROR_INVALID_HANDLE);
		if (q->a[2] && (mem_ok(s, q->a[0], q->a[2]) ||
				mem_ok(s, q->a[1], q->a[2])))
			return reject(why,
				      "device range not inside one "
				      "allocation or module variable of "
				      "this client",
				      CUDA_ERROR_INVALID_VALUE);
		op->dtod.dst = q->a[0];
		op->dtod.src = q->a[1];
		op->dtod.bytes = q->a[2];
		return CUDA_SUCCESS;

	case VGPU_OP_MEMSET:
		op->stream = session_stream(s, q->stream);
		if (!op->stream)
			return reject(why, "unknown stream handle",
				      CUDA_ERROR_INVALID_HANDLE);
		return validate_memset(s, q, op, why);

	case VGPU_OP_STAGE_WRITE:
		if (!data_ok(s, q->a[1], q->a[2]))
			return reject(why, "stage data outside the data area",
				      CUDA_ERROR_INVALID_VALUE);
		if (q->a[0] > s->stage_len)
			return reject(why,
				      "stage offset beyond the staged "
				      "bytes (pieces must be contiguous)",
				      CUDA_ERROR_INVALID_VALUE);
		if (!ring_range_ok(q->a[0], q->a[2], VGPU_MAX_IMAGE_BYTES))
			return reject(why,
				      "staged image larger than "
				      "VGPU_MAX_IMAGE_BYTES",
				      CUDA_ERROR_INVALID_VALUE);
		op->stage.offset = q->a[0];
		op->stage.src = s->data + q->a[1];
		op->stage.bytes = q->a[2];
		return CUDA_SUCCESS;

	case VGPU_OP_LIBRARY_LOAD:
		if (!q->a[0] || q->a[0] > s->stage_len)
			return reject(why,
				      "image size 0 or more than was staged",
				      CUDA_ERROR_INVALID_VALUE);
		op->bytes = q->a[0];
		return CUDA_SUCCESS;

	case VGPU_OP_LIBRARY_UNLOAD:
		op->lib = handle_table_get(&s->h.libraries, q->handle);
		if (!op->lib)
			return reject(why, "unknown library handle",
				      CUDA_ERROR_INVALID_HANDLE);
		op->handle = q->handle;
		return CUDA_SUCCESS;

	case VGPU_OP_LIBRARY_GET_KERNEL:
		return validate_get_kernel(s, q, op, why);

	case VGPU_OP_LIBRARY_GET_GLOBAL:
		op->lib = handle_table_get(&s->h.libraries, q->handle);
		if (!op->lib)
			return reject(why, "unknown library handle",
				      CUDA_ERROR_INVALID_HANDLE);
		op->handle = q->handle;
		return copy_name(s, q, why);

	case VGPU_OP_LAUNCH:
		return validate_launch(s, q, op, why);

	case VGPU_OP_STREAM_DESTROY:
	case VGPU_OP_STREAM_SYNC:
	case VGPU_OP_STREAM_QUERY:
		if (stream_target(q, &h))
			return reject(why,
				      "stream and handle name different "
				      "streams",
				      CUDA_ERROR_INVALID_VALUE);
		if (q->opcode == VGPU_OP_STREAM_DESTROY && !h)
			return reject(why,
				      "the default stream cannot be "
				      "destroyed",
				      CUDA_ERROR_INVALID_HANDLE);
		op->stream = session_stream(s, h);
		if (!op->stream)
			return reject(why, "unknown stream handle",
				      CUDA_ERROR_INVALID_HANDLE);
		op->handle = h;
		return CUDA_SUCCESS;

	case VGPU_OP_EVENT_CREATE:
		if (q->a[0] & CU_EVENT_INTERPROCESS)
			return reject(why,
				      "interprocess events are not "
				      "supported",
				      CUDA_ERROR_NOT_SUPPORTED);
		if (q->a[0] & ~(uint64_t)(CU_EVENT_BLOCKING_SYNC |
					  CU_EVENT_DISABLE_TIMING))
			return reject(why, "unknown event flags",
				      CUDA_ERROR_INVALID_VALUE);
		op->event_flags = (uint32_t)q->a[0];
		return CUDA_SUCCESS;

	case VGPU_OP_KERNEL_GET_ATTRIBUTE:
	case VGPU_OP_KERNEL_SET_ATTRIBUTE:
	case VGPU_OP_KERNEL_OCCUPANCY:
		return validate_kernel_attr(s, q, op, why);
	case VGPU_OP_KERNEL_CLUSTERS:
		return validate_clusters(s, q, op, why);
	case VGPU_OP_LIBRARY_KERNEL_NAME:
		return validate_kernel_name(s, q, op, why);
	case VGPU_OP_CTX_LIMIT:
		return validate_limit(s, q, op, why);
	case VGPU_OP_TENSOR_MAP:
		return worker_tensor_map_validate(s, q, op, why);

	case VGPU_OP_STREAM_GATE:
		op->stream = session_stream(s, q->stream);
		if (!op->stream)
			return reject(why, "unknown stream handle",
				      CUDA_ERROR_INVALID_HANDLE);
		op->gate.off = q->a[0];
		op->gate.seq = q->a[1];
		return worker_gate_validate(s, q->a[0], q->a[1], why);

	case VGPU_OP_EVENT_RECORD:
	case VGPU_OP_STREAM_WAIT_EVENT:
		op->stream = session_stream(s, q->stream);
		if (!op->stream)
			return reject(why, "unknown stream handle",
				      CUDA_ERROR_INVALID_HANDLE);
		/* fall through */
	case VGPU_OP_EVENT_SYNC:
	case VGPU_OP_EVENT_QUERY:
	case VGPU_OP_EVENT_DESTROY:
		op->event = handle_table_get(&s->h.events, q->handle);
		if (!op->event)
			return reject(why, "unknown event handle",
				      CUDA_ERROR_INVALID_HANDLE);
		op->handle = q->handle;
		return CUDA_SUCCESS;

	case VGPU_OP_EVENT_ELAPSED:
		op->elapsed.start = handle_table_get(&s->h.events, q->handle);
		op->elapsed.end = q->a[0] > UINT32_MAX
					  ? NULL
					  : handle_table_get(&s->h.events,
							     (uint32_t)q->a[0]);
		if (!op->elapsed.start || !op->elapsed.end)
			return reject(why, "unknown event handle",
				      CUDA_ERROR_INVALID_HANDLE);
		return CUDA_SUCCESS;

	case VGPU_OP_HOST_REGION_CREATE:
		return validate_region_create(s, q, op, why);

	case VGPU_OP_HOST_REGION_DESTROY:
	case VGPU_OP_HOST_REGION_ADDRESS:
		op->region = handle_table_get(&s->h.regions, q->handle);
		if (!op->region)
			return reject(why, "unknown host region handle",
				      CUDA_ERROR_INVALID_HANDLE);
		op->handle = q->handle;
		return CUDA_SUCCESS;

	case VGPU_OP_MEMCPY_REGION_HTOD:
	case VGPU_OP_MEMCPY_REGION_DTOH:
		return validate_region_copy(s, q, op, why);
	}
	return reject(why, "unknown opcode", CUDA_ERROR_NOT_SUPPORTED);
}

/* ---- execution ------------------------------------------------------- */

static void count_bytes(struct worker_session *s, uint64_t n)
{
	__atomic_store_n(&s->bytes_copied, s->bytes_copied + n,
			 __ATOMIC_RELAXED);
}

/* Wait for one stream; its watchdog queue learns at once that it is idle. */
static int stream_sync(struct worker_session *s, struct worker_stream *st)
{
	struct worker *w = s->w;
	int rc;

	worker_watchdog_sync_begin(w, st->wd);
	rc = worker_check(w, w->ops->stream_sync(w->be, st->bs), "stream_sync");
	worker_watchdog_sync_end(w, st->wd, rc == CUDA_SUCCESS);
	return rc;
}

/* Wait for every stream of this client; returns the first error. */
static int session_sync_all(struct worker_session *s)
{
	struct worker_stream *st;
	uint32_t pos = 0, h;
	int rc, first = 0;

	if (s->default_stream_ok)
		first = stream_sync(s, &s->default_stream);
	while ((st = handle_table_next(&s->h.streams, &pos, &h))) {
		rc = stream_sync(s, st);
		if (rc && !first)
			first = rc;
	}
	return first;
}

/* The device description as it is now: a resize rewrites it. */
void worker_info_copy(struct worker *w, struct vgpu_device_info *out)
{
	pthread_mutex_lock(&w->info_lock);
	memcpy(out, &w->info, sizeof(*out));
	pthread_mutex_unlock(&w->info_lock);
}

/* Synchronise and free one stream (already out of the table). */
static void stream_teardown(struct worker_session *s, struct worker_stream *st)
{
	struct worker *w = s->w;

	worker_gate_open_stream(s, st); /* or the sync could never end */
	worker_check(w, w->ops->stream_sync(w->be, st->bs), "stream_sync");
	worker_watchdog_queue_destroy(w, st->wd);
	w->ops->stream_destroy(w->be, st->bs);
	worker_gate_forget_stream(s, st);
}

static int exec_alloc(struct worker_session *s, uint64_t bytes, uint64_t *r)
{
	struct worker *w = s->w;
	uint64_t addr = 0;
	int rc;

	pthread_rwlock_wrlock(&w->mem_lock);
	rc = suballoc_alloc(&w->mem, bytes, s->owner, &addr);
	pthread_rwlock_unlock(&w->mem_lock);
	if (rc == -ENOMEM)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (rc < 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (rc > 0)
		return worker_check(w, rc, "mem_map");
	r[0] = addr;
	return CUDA_SUCCESS;
}

/* cuMemFree synchronises: the memory may still be in use by the GPU. */
static int exec_free(struct worker_session *s, uint64_t ptr)
{
	struct worker *w = s->w;
	int rc;

	rc = session_sync_all(s);
	if (rc && worker_error_is_fatal(rc))
		return rc;
	pthread_rwlock_wrlock(&w->mem_lock);
	rc = suballoc_free(&w->mem, ptr, s->owner);
	pthread_rwlock_unlock(&w->mem_lock);
	if (rc < 0)
		return CUDA_ERROR_INVALID_VALUE;
	return worker_check(w, rc, "mem_unmap");
}

/* Every client of a vGPU together may stage this much host memory. */
#define WORKER_STAGE_TOTAL_MAX (2ull * VGPU_MAX_IMAGE_BYTES)

static int exec_stage(struct worker_session *s, const struct worker_op *op)
{
	uint64_t end = op->stage.offset + op->stage.bytes, ncap, grow, total;
	uint8_t *p;

	if (end > s->stage_cap) {
		ncap = s->stage_cap ? s->stage_cap : WORKER_STAGE_MIN;
		while (ncap < end)
			ncap *= 2;
		if (ncap > VGPU_MAX_IMAGE_BYTES)
			ncap = VGPU_MAX_IMAGE_BYTES;
		grow = ncap - s->stage_cap;
		total = __atomic_add_fetch(&s->w->staged_bytes, grow,
					   __ATOMIC_RELAXED);
		p = total <= WORKER_STAGE_TOTAL_MAX ? realloc(s->stage, ncap)
						    : NULL;
		if (!p) {
			__atomic_sub_fetch(&s->w->staged_bytes, grow,
					   __ATOMIC_RELAXED);
			return CUDA_ERROR_OUT_OF_MEMORY;
		}
		s->stage = p;
		s->stage_cap = ncap;
	}
	memcpy(s->stage + op->stage.offset, op->stage.src, op->stage.bytes);
	if (end > s->stage_len)
		s->stage_len = end;
	return CUDA_SUCCESS;
}

static void stage_free(struct worker_session *s)
{
	__atomic_sub_fetch(&s->w->staged_bytes, s->stage_cap, __ATOMIC_RELAXED);
	free(s->stage);
	s->stage = NULL;
	s->stage_len = s->stage_cap = 0;
}

static int exec_library_load(struct worker_session *s, uint64_t bytes,
			     uint64_t *r)
{
	struct worker *w = s->w;
	struct backend_library *bl;
	struct worker_library *lib;
	uint32_t h;
	int rc;

	rc = w->ops->library_load(w->be, s->stage, bytes, &bl);
	if (rc) {
		stage_free(s);
		return worker_check(w, rc, "library_load");
	}
	lib = calloc(1, sizeof(*lib));
	if (!lib || handle_table_add(&s->h.libraries, lib, &h)) {
		stage_free(s);
		free(lib);
		w->ops->library_unload(w->be, bl);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	lib->bl = bl;
	/* a copy for state files (worker_state.h), within a bound */
	if (__atomic_add_fetch(&w->image_bytes, bytes, __ATOMIC_RELAXED) <=
		    WORKER_IMAGE_TOTAL_MAX &&
	    (lib->image = malloc(bytes))) {
		memcpy(lib->image, s->stage, bytes);
		lib->image_len = bytes;
	} else {
		__atomic_sub_fetch(&w->image_bytes, bytes, __ATOMIC_RELAXED);
	}
	stage_free(s);
	r[0] = h;
	return CUDA_SUCCESS;
}

/* Drop the kernels of library lib_handle from the table. */
static void drop_kernels(struct worker_session *s, uint32_t lib_handle)
{
	struct worker_kernel *k;
	uint32_t pos = 0, h;

	while ((k = handle_table_next(&s->h.kernels, &pos, &h))) {
		if (k->library == lib_handle) {
			handle_table_remove(&s->h.kernels, h);
			free(k);
		}
	}
}

static int exec_library_unload(struct worker_session *s,
			       const struct worker_op *op)
{
	struct worker *w = s->w;
	int rc;

	/* kernels of the library may still run on this client's streams */
	rc = session_sync_all(s);
	if (rc && worker_error_is_fatal(rc))
		return rc;
	drop_kernels(s, op->handle);
	worker_globals_drop(&s->h.globals, op->handle);
	handle_table_remove(&s->h.libraries, op->handle);
	w->ops->library_unload(w->be, op->lib->bl);
	__atomic_sub_fetch(&w->image_bytes, op->lib->image_len,
			   __ATOMIC_RELAXED);
	free(op->lib->image);
	free(op->lib);
	return CUDA_SUCCESS;
}

/* The backend's layout must fit the protocol before a client sees it. */
static int kernel_info_ok(const struct vgpu_kernel_info *info)
{
	uint32_t i;

	if (info->nparams > VGPU_MAX_PARAMS ||
	    info->param_bytes > VGPU_MAX_PARAM_BYTES)
		return 0;
	for (i = 0; i < info->nparams; i++)
		if (!ring_range_ok(info->params[i].offset, info->params[i].size,
				   info->param_bytes))
			return 0;
	return 1;
}

static int exec_get_kernel(struct worker_session *s, const struct worker_op *op,
			   uint64_t *r)
{
	struct worker *w = s->w;
	struct vgpu_kernel_info info;
	struct backend_kernel *bk;
	struct worker_kernel *k;
	uint32_t pos = 0, h, i;
	int rc;

	memset(&info, 0, sizeof(info));
	rc = w->ops->library_get_kernel(w->be, op->get_kernel.lib->bl, s->name,
					&bk, &info);
	if (rc)
		return worker_check(w, rc, "library_get_kernel");
	if (!kernel_info_ok(&info)) {
		worker_log(w,
			   "kernel %s: %u parameters, %u bytes: beyond "
			   "what vgpu supports",
			   s->name, info.nparams, info.param_bytes);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	/* asking twice for a kernel gives the same handle */
	while ((k = handle_table_next(&s->h.kernels, &pos, &h)))
		if (k->bk == bk && k->library == op->handle)
			goto found;
	k = calloc(1, sizeof(*k));
	if (!k)
		return CUDA_ERROR_OUT_OF_MEMORY;
	k->bk = bk;
	k->library = op->handle;
	k->info = info;
	for (i = 0; i < info.nparams; i++)
		k->params[i] = s->param_buf + info.params[i].offset;
	if (handle_table_add(&s->h.kernels, k, &h)) {
		free(k);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
found:
	memcpy(op->get_kernel.out, &k->info, sizeof(k->info));
	r[0] = h;
	return CUDA_SUCCESS;
}

/*
 * A module-scope variable: its address and size for the client, and the
 * range recorded so that this client's copies may reach it until the
 * library is unloaded.
 */
static int exec_get_global(struct worker_session *s, const struct worker_op *op,
			   uint64_t *r)
{
	struct worker *w = s->w;
	uint64_t addr = 0, bytes = 0;
	int rc;

	if (!w->ops->library_get_global)
		return CUDA_ERROR_NOT_SUPPORTED;
	rc = w->ops->library_get_global(w->be, op->lib->bl, s->name, &addr,
					&bytes);
	if (rc)
		return worker_check(w, rc, "library_get_global");
	if (bytes) {
		rc = worker_globals_add(&s->h.globals, op->handle, addr, bytes);
		if (rc == -EINVAL) {
			worker_log(w,
				   "module variable %s: range 0x%llx + %llu "
				   "wraps around",
				   s->name, (unsigned long long)addr,
				   (unsigned long long)bytes);
			return CUDA_ERROR_NOT_SUPPORTED;
		}
		if (rc)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r[0] = addr;
	r[1] = bytes;
	return CUDA_SUCCESS;
}

/*
 * A cooperative launch: every block resident at once on the slice, as
 * many as its SMs hold of this kernel (the driver also checks it on the
 * GPU; the simulator relies on this). The marker follows the launch.
 */
static int exec_launch_cooperative(struct worker_session *s,
				   const struct worker_op *op)
{
	struct worker *w = s->w;
	struct worker_stream *st = op->stream;
	struct worker_kernel *k = op->launch.k;
	const uint32_t *g = op->launch.grid, *b = op->launch.block;
	uint64_t blocks = (uint64_t)g[0] * g[1] * g[2];
	uint32_t sms;
	int per_sm = 0, rc;

	if (!w->ops->launch_cooperative || !w->ops->kernel_occupancy)
		return CUDA_ERROR_NOT_SUPPORTED;
	/* no resize between the check and the launch, nor under the
	 * kernel (worker_coop.c) */
	worker_coop_hold(w);
	rc = w->ops->kernel_occupancy(w->be, k->bk, (int)(b[0] * b[1] * b[2]),
				      op->launch.shared, 0, &per_sm);
	if (rc) {
		worker_coop_release(w, st->bs, 0);
		return worker_check(w, rc, "kernel_occupancy (cooperative)");
	}
	pthread_mutex_lock(&w->info_lock);
	sms = w->info.sm_count;
	pthread_mutex_unlock(&w->info_lock);
	if (per_sm <= 0 || blocks > (uint64_t)per_sm * sms) {
		worker_coop_release(w, st->bs, 0);
		return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
	}
	rc = w->ops->launch_cooperative(w->be, k->bk, g, b, op->launch.shared,
					st->bs, k->params);
	worker_coop_release(w, st->bs, rc == CUDA_SUCCESS);
	if (rc)
		return worker_check(w, rc, "launch_cooperative");
	worker_note_launch(w);
	__atomic_store_n(&s->kernels, s->kernels + 1, __ATOMIC_RELAXED);
	if (st->wd)
		worker_watchdog_track(w, st->wd, st->bs, BACKEND_MARKED_NOT);
	return CUDA_SUCCESS;
}

static int exec_launch(struct worker_session *s, const struct worker_op *op)
{
	struct worker *w = s->w;
	struct worker_stream *st = op->stream;
	struct worker_kernel *k = op->launch.k;
	const uint32_t *cluster =
		op->launch.cluster[0] ? op->launch.cluster : NULL;
	struct backend_event *marker;
	int marked = BACKEND_MARKED_NOT;
	int rc;

	if (op->launch.cooperative)
		return exec_launch_cooperative(s, op);
	marker = worker_watchdog_marker(w, st->wd);
	if (marker)
		rc = w->ops->launch_marked(w->be, k->bk, op->launch.grid,
					   op->launch.block, op->launch.shared,
					   st->bs, k->params, cluster, marker,
					   &marked);
	else
		rc = w->ops->launch(w->be, k->bk, op->launch.grid,
				    op->launch.block, op->launch.shared, st->bs,
				    k->params, cluster);
	if (rc)
		return worker_check(w, rc, "launch");
	worker_note_launch(w); /* for save points */
	__atomic_store_n(&s->kernels, s->kernels + 1, __ATOMIC_RELAXED);
	/* the launch is queued: its status is the client's even when the
	 * watchdog cannot track it (a fatal error there faults the vGPU) */
	if (st->wd)
		worker_watchdog_track(w, st->wd, st->bs, marked);
	return CUDA_SUCCESS;
}

static int exec_kernel_attr(struct worker_session *s,
			    const struct worker_op *op, uint64_t *r)
{
	const struct backend_ops *ops = s->w->ops;
	struct backend_kernel *bk = op->kattr.k->bk;
	struct backend *be = s->w->be;
	int v = 0, rc;

	switch (op->opcode) {
	case VGPU_OP_KERNEL_GET_ATTRIBUTE:
		if (!ops->kernel_get_attribute)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = ops->kernel_get_attribute(be, bk, (int)op->kattr.a[0], &v);
		break;
	case VGPU_OP_KERNEL_SET_ATTRIBUTE:
		if (!ops->kernel_set_attribute)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = ops->kernel_set_attribute(be, bk, (int)op->kattr.a[0],
					       (int)op->kattr.a[1]);
		break;
	default:
		if (!ops->kernel_occupancy)
			return CUDA_ERROR_NOT_SUPPORTED;
		rc = ops->kernel_occupancy(be, bk, (int)op->kattr.a[0],
					   (size_t)op->kattr.a[1],
					   (unsigned int)op->kattr.a[2], &v);
		break;
	}
	if (rc)
		return worker_check(s->w, rc, "kernel attribute");
	r[0] = (uint64_t)(int64_t)v;
	return CUDA_SUCCESS;
}

/* A library's kernel count, and one kernel's name when there is room. A
 * name longer than a client may ask for (VGPU_KERNEL_NAME_MAX) is counted
 * but never written: the client could not look it up. */
static int exec_kernel_name(struct worker_session *s,
			    const struct worker_op *op, uint64_t *r)
{
	const struct backend_ops *ops = s->w->ops;
	const char *name = NULL;
	uint32_t count = 0;
	size_t len;
	int rc;

	if (!ops->library_kernel_name)
		return CUDA_ERROR_NOT_SUPPORTED;
	rc = ops->library_kernel_name(s->w->be, op->kname.lib->bl,
				      op->kname.index, &name, &count);
	if (rc)
		return worker_check(s->w, rc, "library kernel name");
	r[0] = count;
	if (!name)
		return CUDA_SUCCESS;
	len = strnlen(name, VGPU_KERNEL_NAME_MAX) + 1;
	if (len > VGPU_KERNEL_NAME_MAX)
		return CUDA_ERROR_NOT_SUPPORTED;
	r[1] = len;
	if (len <= op->kname.room)
		memcpy(op->kname.out, name, len);
	return CUDA_SUCCESS;
}

static int exec_limit(struct worker_session *s, const struct worker_op *op,
		      uint64_t *r)
{
	const struct backend_ops *ops = s->w->ops;
	int rc;

	if (!ops->ctx_limit)
		return CUDA_ERROR_NOT_SUPPORTED;
	rc = ops->ctx_limit(s->w->be, op->limit.limit, op->limit.set,
			    op->limit.value, &r[0]);
	if (rc)
		return worker_check(s->w, rc, "context limit");
	if (op->limit.set)
		worker_log(s->w, "client %u set limit %d to %" PRIu64, s->owner,
			   op->limit.limit, r[0]);
	return CUDA_SUCCESS;
}

static int exec_kernel_clusters(struct worker_session *s,
				const struct worker_op *op, uint64_t *r)
{
	const struct backend_ops *ops = s->w->ops;
	int v = 0, rc;

	if (!ops->kernel_clusters)
		return CUDA_ERROR_NOT_SUPPORTED;
	rc = ops->kernel_clusters(s->w->be, op->clusters.k->bk, &op->clusters.q,
				  &v);
	if (rc)
		return worker_check(s->w, rc, "kernel clusters");
	r[0] = (uint64_t)(int64_t)v;
	return CUDA_SUCCESS;
}

static int exec_stream_create(struct worker_session *s, uint64_t *r)
{
	struct worker *w = s->w;
	struct worker_stream *st;
	uint32_t h;
	int rc;

	st = calloc(1, sizeof(*st));
	if (!st)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = w->ops->stream_create(w->be, &st->bs);
	if (rc) {
		free(st);
		return worker_check(w, rc, "stream_create");
	}
	if (worker_watchdog_queue_create(w, st->bs, &st->wd) ||
	    handle_table_add(&s->h.streams, st, &h)) {
		worker_watchdog_queue_destroy(w, st->wd);
		w->ops->stream_destroy(w->be, st->bs);
		free(st);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r[0] = h;
	return CUDA_SUCCESS;
}

static int exec_event_create(struct worker_session *s, uint32_t flags,
			     uint64_t *r)
{
	struct worker *w = s->w;
	struct worker_event *ev;
	uint32_t h;
	int rc;

	ev = calloc(1, sizeof(*ev));
	if (!ev)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = w->ops->event_create(w->be, flags, &ev->be);
	if (rc) {
		free(ev);
		return worker_check(w, rc, "event_create");
	}
	if (handle_table_add(&s->h.events, ev, &h)) {
		w->ops->event_destroy(w->be, ev->be);
		free(ev);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r[0] = h;
	return CUDA_SUCCESS;
}

void worker_regions_cap_init(struct worker *w)
{
	char err[160];
	uint64_t n;

	w->region_total_max = 0;
	if (env_number("VGPU_SIM_REGIONS_TOTAL_MAX", 0, 1, 1,
		       WORKER_REGIONS_TOTAL_MAX, &n, err, sizeof(err))) {
		worker_log(w, "%s: ignored", err);
		return;
	}
	if (!n)
		return; /* unset */
	w->region_total_max = n;
	worker_log(w, "host regions capped at %llu bytes per vGPU (test)",
		   (unsigned long long)n);
}

static uint64_t regions_cap(const struct worker *w)
{
	return w->region_total_max ? w->region_total_max
				   : WORKER_REGIONS_TOTAL_MAX;
}

/*
 * Reserve size bytes and one region of the vGPU's region budget,
 * atomically: clients' threads create regions at the same time, so the
 * check and the addition must be one step (validation, which runs
 * earlier, cannot hold the budget). -1 when the regions of all clients
 * would exceed either cap.
 */
static int region_reserve(struct worker *w, uint64_t size)
{
	uint64_t cap = regions_cap(w);
	uint64_t cur = __atomic_load_n(&w->region_total, __ATOMIC_ACQUIRE);

	do {
		if (size > cap || cur > cap - size)
			return -1;
	} while (!__atomic_compare_exchange_n(&w->region_total, &cur,
					      cur + size, 0, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	if (__atomic_add_fetch(&w->region_count, 1, __ATOMIC_ACQ_REL) >
	    WORKER_REGIONS_COUNT_MAX) {
		__atomic_fetch_sub(&w->region_count, 1, __ATOMIC_ACQ_REL);
		__atomic_fetch_sub(&w->region_total, size, __ATOMIC_ACQ_REL);
		return -1;
	}
	return 0;
}

static void region_unreserve(struct worker *w, uint64_t size)
{
	__atomic_fetch_sub(&w->region_total, size, __ATOMIC_ACQ_REL);
	__atomic_fetch_sub(&w->region_count, 1, __ATOMIC_ACQ_REL);
}

/* Unpin (before unmapping: the driver must not keep a stale pinning),
 * unmap and free a region that is out of the table; its bytes go back
 * to the client's and the vGPU's budgets. */
static void region_free(struct worker_session *s, struct worker_region *r)
{
	struct worker *w = s->w;

	if (r->pinned)
		w->ops->host_unregister(w->be, r->base);
	/* free the pages now: the client's fd or mapping (or one still
	 * queued on its socket) must not keep memory the worker faulted in
	 * (pinning) beyond VGPU_HOST_REGIONS_MAX_BYTES */
	madvise(r->base, r->size, MADV_REMOVE);
	munmap(r->base, r->size);
	s->region_bytes -= r->size;
	region_unreserve(w, r->size);
	free(r);
}

/*
 * Send the region message with the memfd on the client socket, never
 * blocking (a client that does not read its socket must not stall the
 * worker) and never raising SIGPIPE. 0 or a negative errno (-EAGAIN:
 * the client's queue is full). Not ctl_send_fds: ctl_msg.o is not part
 * of the worker core the unit tests link.
 */
static int region_send(int sock, const struct vgpu_region_msg *m, int fd)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int))];
	} cbuf;
	struct iovec iov = {.iov_base = (void *)m, .iov_len = sizeof(*m)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *cm;
	ssize_t n;

	memset(&cbuf, 0, sizeof(cbuf));
	msg.msg_control = cbuf.buf;
	msg.msg_controllen = sizeof(cbuf.buf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(fd));
	do {
		n = sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return (size_t)n == sizeof(*m) ? 0 : -EIO;
}

/*
 * HOST_REGION_CREATE: a sealed memfd of op->bytes, mapped here, pinned
 * when the backend can, and passed to the client before the completion.
 * On any failure everything is undone and the client gets
 * CUDA_ERROR_OUT_OF_MEMORY; so does a region over the vGPU's cap (the
 * client library then hands out plain memory instead).
 */
static int exec_region_create(struct worker_session *s, uint64_t size,
			      uint64_t *res)
{
	struct worker *w = s->w;
	struct vgpu_region_msg m;
	struct worker_region *r;
	uint32_t h;
	int fd = -1, rc;

	if (region_reserve(w, size)) {
		if (s->nlogged < WORKER_LOG_REJECTS) {
			s->nlogged++;
			worker_log(w,
				   "client %u: host region of %llu bytes "
				   "refused: the vGPU's host regions would "
				   "exceed their cap of %llu bytes "
				   "(WORKER_REGIONS_TOTAL_MAX) or of %u "
				   "regions (WORKER_REGIONS_COUNT_MAX)",
				   s->owner, (unsigned long long)size,
				   (unsigned long long)regions_cap(w),
				   WORKER_REGIONS_COUNT_MAX);
		}
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		region_unreserve(w, size);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	fd = memfd_create("vgpu-region", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		goto fail_log;
	/* sealed: the client cannot shrink it under our mapping (SIGBUS) */
	if (ftruncate(fd, (off_t)size) < 0 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) <
		    0)
		goto fail_log;
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r->base == MAP_FAILED)
		goto fail_log;
	r->size = size;
	if (w->ops->host_register) {
		rc = w->ops->host_register(w->be, r->base, size);
		if (rc)
			worker_log(
				w,
				"client %u: host region of %llu bytes not "
				"pinned (CUresult %d): its copies are staged",
				s->owner, (unsigned long long)size, rc);
		r->pinned = rc == 0;
	}
	s->region_bytes += size;
	if (handle_table_add(&s->h.regions, r, &h)) {
		region_free(s, r);
		close(fd);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memset(&m, 0, sizeof(m));
	m.magic = VGPU_REGION_MSG_MAGIC;
	m.handle = h;
	m.size = size;
	rc = region_send(s->sock, &m, fd);
	close(fd); /* the mapping (and the client's copy) keep it */
	if (rc) {
		/* the client can repeat this at will: same budget as rejects */
		if (s->nlogged < WORKER_LOG_REJECTS) {
			s->nlogged++;
			worker_log(w,
				   "client %u: cannot pass a host region on "
				   "its socket: %s",
				   s->owner, strerror(-rc));
		}
		handle_table_remove(&s->h.regions, h);
		region_free(s, r);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	res[0] = h;
	res[1] = size;
	return CUDA_SUCCESS;

fail_log:
	worker_log(w, "client %u: host region of %llu bytes: %s", s->owner,
		   (unsigned long long)size, strerror(errno));
	if (fd >= 0)
		close(fd);
	free(r);
	region_unreserve(w, size);
	return CUDA_ERROR_OUT_OF_MEMORY;
}

/*
 * HOST_REGION_ADDRESS: where kernels find the region (mapped host
 * memory). Only a region the backend pinned: the cuda backend registers
 * regions DEVICEMAP, and one it could not pin is not mapped either.
 * Kernels that use it are the client's own: HOST_REGION_DESTROY waits for
 * all of the client's work before the region goes.
 */
static int exec_region_address(struct worker_session *s,
			       const struct worker_op *op, uint64_t r[2])
{
	struct worker *w = s->w;
	struct worker_region *reg = op->region;
	uint64_t dev = 0;
	int rc;

	if (!w->ops->host_device_ptr || (w->ops->host_register && !reg->pinned))
		return CUDA_ERROR_NOT_SUPPORTED;
	rc = w->ops->host_device_ptr(w->be, reg->base, &dev);
	if (rc)
		return rc;
	r[0] = dev;
	r[1] = reg->size;
	return CUDA_SUCCESS;
}

/* Like cuMemFreeHost: copies from or to the region may still run. */
static int exec_region_destroy(struct worker_session *s,
			       const struct worker_op *op)
{
	int rc;

	rc = session_sync_all(s);
	if (rc && worker_error_is_fatal(rc))
		return rc;
	handle_table_remove(&s->h.regions, op->handle);
	region_free(s, op->region);
	return CUDA_SUCCESS;
}

int worker_execute(struct worker_session *s, const struct worker_op *op,
		   uint64_t r[2])
{
	struct worker *w = s->w;
	const struct backend_ops *ops = w->ops;
	struct backend *be = w->be;
	struct backend_stream *bs = op->stream ? op->stream->bs : NULL;
	float ms = 0;
	uint32_t bits;
	int rc;

	switch (op->opcode) {
	case VGPU_OP_NOP:
		return CUDA_SUCCESS;
	case VGPU_OP_GET_DEVICE_INFO: {
		struct vgpu_device_info info;

		worker_info_copy(w, &info);
		memcpy(op->out, &info, sizeof(info));
		r[0] = sizeof(info);
		return CUDA_SUCCESS;
	}

	case VGPU_OP_MEM_ALLOC:
		return exec_alloc(s, op->bytes, r);
	case VGPU_OP_MEM_FREE:
		return exec_free(s, op->ptr);
	case VGPU_OP_MEM_GET_INFO:
		pthread_rwlock_rdlock(&w->mem_lock);
		r[0] = w->mem.quota - w->mem.mapped;
		r[1] = w->mem.quota;
		pthread_rwlock_unlock(&w->mem_lock);
		return CUDA_SUCCESS;
	case VGPU_OP_MEMCPY_HTOD:
	case VGPU_OP_MEMCPY_REGION_HTOD:
		if (!op->copy.bytes)
			return CUDA_SUCCESS;
		rc = ops->memcpy_htod(be, bs, op->copy.dev, op->copy.host,
				      op->copy.bytes);
		if (!rc)
			count_bytes(s, op->copy.bytes);
		worker_note_write(w, op->copy.dev, op->copy.bytes);
		return worker_check(w, rc, "memcpy_htod");
	case VGPU_OP_MEMCPY_DTOH:
	case VGPU_OP_MEMCPY_REGION_DTOH:
		if (!op->copy.bytes)
			return CUDA_SUCCESS;
		rc = ops->memcpy_dtoh(be, bs, op->copy.host, op->copy.dev,
				      op->copy.bytes);
		if (!rc)
			count_bytes(s, op->copy.bytes);
		return worker_check(w, rc, "memcpy_dtoh");
	case VGPU_OP_MEMCPY_DTOD:
		if (!op->dtod.bytes)
			return CUDA_SUCCESS;
		rc = ops->memcpy_dtod(be, bs, op->dtod.dst, op->dtod.src,
				      op->dtod.bytes);
		if (!rc)
			count_bytes(s, op->dtod.bytes);
		worker_note_write(w, op->dtod.dst, op->dtod.bytes);
		return worker_check(w, rc, "memcpy_dtod");
	case VGPU_OP_MEMSET:
		if (!op->memset.count)
			return CUDA_SUCCESS;
		worker_note_write(w, op->memset.dst,
				  op->memset.count * op->memset.elem);
		return worker_check(
			w,
			ops->memset(be, bs, op->memset.dst, op->memset.value,
				    op->memset.elem, op->memset.count),
			"memset");

	case VGPU_OP_STAGE_WRITE:
		return exec_stage(s, op);
	case VGPU_OP_LIBRARY_LOAD:
		return exec_library_load(s, op->bytes, r);
	case VGPU_OP_LIBRARY_UNLOAD:
		return exec_library_unload(s, op);
	case VGPU_OP_LIBRARY_GET_KERNEL:
		return exec_get_kernel(s, op, r);
	case VGPU_OP_LIBRARY_GET_GLOBAL:
		return exec_get_global(s, op, r);
	case VGPU_OP_LAUNCH:
		return exec_launch(s, op);

	case VGPU_OP_STREAM_CREATE:
		return exec_stream_create(s, r);
	case VGPU_OP_STREAM_DESTROY:
		handle_table_remove(&s->h.streams, op->handle);
		stream_teardown(s, op->stream);
		free(op->stream);
		return CUDA_SUCCESS;
	case VGPU_OP_STREAM_SYNC:
		return stream_sync(s, op->stream);
	case VGPU_OP_STREAM_QUERY:
		return worker_check(w, ops->stream_query(be, bs),
				    "stream_query");
	case VGPU_OP_CTX_SYNC:
		return session_sync_all(s);

	case VGPU_OP_EVENT_CREATE:
		return exec_event_create(s, op->event_flags, r);
	case VGPU_OP_EVENT_RECORD:
		return worker_check(w, ops->event_record(be, op->event->be, bs),
				    "event_record");
	case VGPU_OP_EVENT_SYNC:
		return worker_check(w, ops->event_sync(be, op->event->be),
				    "event_sync");
	case VGPU_OP_EVENT_QUERY:
		return worker_check(w, ops->event_query(be, op->event->be),
				    "event_query");
	case VGPU_OP_EVENT_ELAPSED:
		rc = ops->event_elapsed(be, op->elapsed.start->be,
					op->elapsed.end->be, &ms);
		if (rc)
			return worker_check(w, rc, "event_elapsed");
		memcpy(&bits, &ms, sizeof(bits));
		r[0] = bits;
		return CUDA_SUCCESS;
	case VGPU_OP_EVENT_DESTROY:
		handle_table_remove(&s->h.events, op->handle);
		ops->event_destroy(be, op->event->be);
		free(op->event);
		return CUDA_SUCCESS;
	case VGPU_OP_STREAM_WAIT_EVENT:
		rc = worker_check(w,
				  ops->stream_wait_event(be, bs, op->event->be),
				  "stream_wait_event");
		/* the wait is not the next kernel's run time: a marker after
		 * it starts that kernel's clock (worker_watchdog.c) */
		if (!rc && op->stream->wd)
			worker_watchdog_track_wait(w, op->stream->wd, bs);
		return rc;
	case VGPU_OP_STREAM_GATE: /* worker_defer_route takes every one */
		return CUDA_ERROR_NOT_SUPPORTED;
	case VGPU_OP_KERNEL_GET_ATTRIBUTE:
	case VGPU_OP_KERNEL_SET_ATTRIBUTE:
	case VGPU_OP_KERNEL_OCCUPANCY:
		return exec_kernel_attr(s, op, r);
	case VGPU_OP_KERNEL_CLUSTERS:
		return exec_kernel_clusters(s, op, r);
	case VGPU_OP_LIBRARY_KERNEL_NAME:
		return exec_kernel_name(s, op, r);
	case VGPU_OP_CTX_LIMIT:
		return exec_limit(s, op, r);
	case VGPU_OP_TENSOR_MAP:
		return worker_tensor_map_exec(s, op);

	case VGPU_OP_HOST_REGION_CREATE:
		return exec_region_create(s, op->bytes, r);
	case VGPU_OP_HOST_REGION_DESTROY:
		return exec_region_destroy(s, op);
	case VGPU_OP_HOST_REGION_ADDRESS:
		return exec_region_address(s, op, r);
	}
	return CUDA_ERROR_NOT_SUPPORTED; /* worker_validate let none through */
}

void worker_exec(struct worker_session *s, const struct vgpu_sqe *sqe,
		 struct vgpu_cqe *cqe)
{
	struct worker_op op;
	const char *why = NULL;
	uint64_t r[2] = {0, 0};
	int rc;

	rc = worker_validate(s, sqe, &op, &why);
	if (rc) {
		if (s->nlogged < WORKER_LOG_REJECTS) {
			s->nlogged++;
			worker_log(s->w,
				   "client %u (pid %d): opcode %u tag %u "
				   "rejected: %s (CUDA error %d)%s",
				   s->owner, (int)s->pid, sqe->opcode, sqe->tag,
				   why ? why : "?", rc,
				   s->nlogged == WORKER_LOG_REJECTS
					   ? "; not logging more"
					   : "");
		}
	} else if (!worker_defer_route(s, &op, &rc) && rc == CUDA_SUCCESS) {
		rc = worker_execute(s, &op, r);
	}
	cqe->tag = sqe->tag;
	cqe->status = rc;
	cqe->r[0] = r[0];
	cqe->r[1] = r[1];
	cqe->reserved = 0;
}

/* ---- session lifetime ------------------------------------------------ */

int worker_session_init(struct worker_session *s, struct worker *w,
			uint32_t owner, uint8_t *data, uint64_t data_size)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->sock = -1;
	s->wake_fd = -1;
	s->w = w;
	s->owner = owner;
	s->data = data;
	s->data_size = data_size;
	worker_handles_init(&s->h);
	s->param_buf = aligned_alloc(64, WORKER_PARAM_BUF_BYTES);
	if (!s->param_buf)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = w->ops->stream_create(w->be, &s->default_stream.bs);
	if (rc) {
		free(s->param_buf);
		s->param_buf = NULL;
		return worker_check(w, rc, "stream_create");
	}
	if (worker_watchdog_queue_create(w, s->default_stream.bs,
					 &s->default_stream.wd)) {
		w->ops->stream_destroy(w->be, s->default_stream.bs);
		free(s->param_buf);
		s->param_buf = NULL;
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	s->default_stream_ok = 1;
	return CUDA_SUCCESS;
}

void worker_session_fini(struct worker_session *s)
{
	struct worker *w = s->w;
	struct worker_stream *st;
	struct worker_event *ev;
	struct worker_library *lib;
	struct worker_kernel *k;
	struct worker_region *r;
	uint32_t pos, h;
	int rc;

	/* what was held back behind its host functions will not run */
	worker_defer_discard(s);
	/* streams first: nothing of this client may still run */
	pos = 0;
	while ((st = handle_table_next(&s->h.streams, &pos, &h))) {
		handle_table_remove(&s->h.streams, h);
		stream_teardown(s, st);
		free(st);
	}
	if (s->default_stream_ok) {
		stream_teardown(s, &s->default_stream);
		s->default_stream_ok = 0;
	}
	worker_gate_session_fini(s); /* no stream waits on a gate now */
	pos = 0;
	while ((ev = handle_table_next(&s->h.events, &pos, &h))) {
		handle_table_remove(&s->h.events, h);
		w->ops->event_destroy(w->be, ev->be);
		free(ev);
	}
	pos = 0;
	while ((k = handle_table_next(&s->h.kernels, &pos, &h))) {
		handle_table_remove(&s->h.kernels, h);
		free(k);
	}
	pos = 0;
	while ((lib = handle_table_next(&s->h.libraries, &pos, &h))) {
		handle_table_remove(&s->h.libraries, h);
		w->ops->library_unload(w->be, lib->bl);
		__atomic_sub_fetch(&w->image_bytes, lib->image_len,
				   __ATOMIC_RELAXED);
		free(lib->image);
		free(lib);
	}
	/* the streams are synchronised: no copy uses a region any more */
	pos = 0;
	while ((r = handle_table_next(&s->h.regions, &pos, &h))) {
		handle_table_remove(&s->h.regions, h);
		region_free(s, r);
	}

	pthread_rwlock_wrlock(&w->mem_lock);
	rc = suballoc_free_owner(&w->mem, s->owner);
	pthread_rwlock_unlock(&w->mem_lock);
	if (rc < 0)
		worker_log(w, "client %u: freeing its memory: error %d",
			   s->owner, rc);
	else
		worker_check(w, rc, "mem_unmap");

	stage_free(s);
	free(s->param_buf);
	s->param_buf = NULL;
	worker_handles_fini(&s->h);
}
