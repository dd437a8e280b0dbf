/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of vgpu-worker's descriptor edge (host-daemon/worker_exec.c):
 * crafted descriptors go through worker_exec() against a stub backend that
 * records what reaches it. A rejected descriptor must get the right
 * CUresult and must not reach the backend; an accepted one must reach it
 * with exactly the checked values. Also: handles, per-client ownership,
 * clean-up, sticky-error faults, the kernel watchdog and host regions.
 */
#include <cuda.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "worker.h"
#include "worker_part.h"

#define MiB	  (1ull << 20)
#define TiB	  (1ull << 40)
#define BASE	  0x500000000000ull
#define QUOTA	  (64 * MiB)
#define DATA_SIZE (64u << 10)

/* ---- stub backend ----------------------------------------------------- */

struct backend {
	int unused;
};
struct backend_stream {
	int unused;
};
struct backend_event {
	uint32_t flags;
	int seq; /* st.ops when it was last recorded: the work it follows */
};
struct backend_library {
	int unused;
};
struct backend_kernel {
	const char *name;
};

static struct backend_kernel k_saxpy = {"saxpy"}, k_noargs = {"noargs"};

static struct {
	int htod, dtoh, dtod, memsets, launches, syncs, maps, unmaps, globals;
	int cluster_queries;		   /* kernel_clusters calls */
	int limit_calls, limit, limit_set; /* ctx_limit calls, the last's */
	uint64_t limit_value;
	struct backend_cluster_query cq; /* the last one */
	uint64_t dev, src;
	const void *host;
	size_t n;
	uint32_t value, elem;
	uint32_t grid[3], block[3], shared, cluster[3];
	void **params;
	float p_a;
	uint64_t p_x;
	int32_t p_n;
	int streams, events, libraries; /* live objects */
	int copy_rc;
	int event_query_rc;
	int stream_query_rc;
	int records; /* event_record calls, and markers launches recorded */
	int marked_launches; /* launch_marked calls that recorded */
	int unmark;	     /* launch_marked launches but does not record */
	int early;	     /* launch_marked's markers may complete early */
	int coop_launches;   /* launch_cooperative calls */
	int tensor_maps;     /* tensor_map calls */
	int queries;	     /* event_query calls */
	int sync_ms;	     /* a stream sync waits this long, */
	int hang; /* and then the kernel is done, unless this is set */
	int faults_in_sync; /* faults seen when a hung sync returned */
	/* ordered: the first `done` of the ops queued (launches and waits:
	 * one stream's work, finishing in order) are complete, and so is
	 * an event recorded after them; otherwise event_query_rc and
	 * stream_query_rc say */
	int ordered, ops, done;
	int faults;
	uint32_t fault_kind;
	int32_t fault_status;
} st;

static int stub_attach(struct backend *b)
{
	return 0;
}

static uint64_t stub_granularity(struct backend *b)
{
	return 2 * MiB;
}

static int stub_map(struct backend *b, uint64_t va, uint64_t size)
{
	st.maps++;
	return 0;
}

static int stub_unmap(struct backend *b, uint64_t va, uint64_t size)
{
	st.unmaps++;
	return 0;
}

static int stub_htod(struct backend *b, struct backend_stream *s, uint64_t dst,
		     const void *src, size_t n)
{
	st.htod++;
	st.dev = dst;
	st.host = src;
	st.n = n;
	return st.copy_rc;
}

static int stub_dtoh(struct backend *b, struct backend_stream *s, void *dst,
		     uint64_t src, size_t n)
{
	st.dtoh++;
	st.dev = src;
	st.host = dst;
	st.n = n;
	return st.copy_rc;
}

static int stub_dtod(struct backend *b, struct backend_stream *s, uint64_t dst,
		     uint64_t src, size_t n)
{
	st.dtod++;
	st.dev = dst;
	st.src = src;
	st.n = n;
	return st.copy_rc;
}

static int stub_memset(struct backend *b, struct backend_stream *s,
		       uint64_t dst, uint32_t value, uint32_t elem,
		       size_t count)
{
	st.memsets++;
	st.dev = dst;
	st.value = value;
	st.elem = elem;
	st.n = count;
	return 0;
}

static int stub_library_load(struct backend *b, const void *image, size_t len,
			     struct backend_library **out)
{
	if (len >= 3 && !memcmp(image, "BAD", 3))
		return CUDA_ERROR_INVALID_IMAGE;
	*out = calloc(1, sizeof(**out));
	st.libraries++;
	return 0;
}

static void stub_library_unload(struct backend *b, struct backend_library *l)
{
	free(l);
	st.libraries--;
}

/* The two kernels every stub library has. */
static int stub_kernel_name(struct backend *b, struct backend_library *l,
			    uint32_t index, const char **name, uint32_t *count)
{
	static const char *const names[] = {"saxpy", "noargs"};

	*count = 2;
	*name = index < 2 ? names[index] : NULL;
	return 0;
}

/* A map of 0xab bytes, counted. */
static const uint8_t *stub_data; /* the fixture's data area, if set */

static int stub_tensor_map(struct backend *b, const struct vgpu_tensor_map *t,
			   uint8_t *map)
{
	/* the worker's own copy, never the client's data area */
	if (stub_data && (const uint8_t *)t >= stub_data &&
	    (const uint8_t *)t < stub_data + DATA_SIZE)
		return CUDA_ERROR_ILLEGAL_STATE;
	st.tensor_maps++;
	memset(map, 0xab, VGPU_TENSOR_MAP_BYTES);
	return 0;
}

static int stub_ctx_limit(struct backend *b, int limit, int set, uint64_t value,
			  uint64_t *out)
{
	st.limit_calls++;
	st.limit = limit;
	st.limit_set = set;
	st.limit_value = value;
	*out = set ? value : 1024;
	return 0;
}

static int stub_kernel_clusters(struct backend *b, struct backend_kernel *k,
				const struct backend_cluster_query *q, int *out)
{
	st.cluster_queries++;
	st.cq = *q;
	*out = 7;
	return 0;
}

static int stub_get_kernel(struct backend *b, struct backend_library *l,
			   const char *name, struct backend_kernel **out,
			   struct vgpu_kernel_info *info)
{
	if (!strcmp(name, "saxpy")) {
		/* (float a, float *x, int n) */
		info->nparams = 3;
		info->params[0] = (struct vgpu_param){0, 4};
		info->params[1] = (struct vgpu_param){8, 8};
		info->params[2] = (struct vgpu_param){16, 4};
		info->param_bytes = 20;
		*out = &k_saxpy;
		return 0;
	}
	if (!strcmp(name, "noargs")) {
		info->nparams = 0;
		info->param_bytes = 0;
		*out = &k_noargs;
		return 0;
	}
	return CUDA_ERROR_NOT_FOUND;
}

/* Module variables live outside the VA window, where the driver puts
 * them: "gvar" (64 bytes), and "gwrap" whose range would wrap. */
#define GVAR_ADDR  0x7f0000001000ull
#define GVAR_BYTES 64u

static int stub_get_global(struct backend *b, struct backend_library *l,
			   const char *name, uint64_t *dptr, uint64_t *bytes)
{
	st.globals++;
	if (!strcmp(name, "gvar")) {
		*dptr = GVAR_ADDR;
		*bytes = GVAR_BYTES;
		return 0;
	}
	if (!strcmp(name, "gwrap")) {
		*dptr = UINT64_MAX - 15;
		*bytes = 64;
		return 0;
	}
	return CUDA_ERROR_NOT_FOUND;
}

static int stub_launch(struct backend *b, struct backend_kernel *k,
		       const uint32_t grid[3], const uint32_t block[3],
		       uint32_t shared, struct backend_stream *s, void **params,
		       const uint32_t *cluster)
{
	st.launches++;
	if (cluster)
		memcpy(st.cluster, cluster, sizeof(st.cluster));
	else
		memset(st.cluster, 0, sizeof(st.cluster));
	__atomic_add_fetch(&st.ops, 1, __ATOMIC_SEQ_CST);
	memcpy(st.grid, grid, sizeof(st.grid));
	memcpy(st.block, block, sizeof(st.block));
	st.shared = shared;
	st.params = params;
	if (k == &k_saxpy) {
		memcpy(&st.p_a, params[0], 4);
		memcpy(&st.p_x, params[1], 8);
		memcpy(&st.p_n, params[2], 4);
	}
	return 0;
}

static int stub_stream_create(struct backend *b, struct backend_stream **out)
{
	*out = calloc(1, sizeof(**out));
	st.streams++;
	return 0;
}

static void stub_stream_destroy(struct backend *b, struct backend_stream *s)
{
	free(s);
	st.streams--;
}

static int stub_stream_sync(struct backend *b, struct backend_stream *s)
{
	int ms = __atomic_load_n(&st.sync_ms, __ATOMIC_SEQ_CST);
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	st.syncs++;
	if (ms) {
		nanosleep(&ts, NULL);
		/* the watchdog's, not the owner's check after the wait */
		if (__atomic_load_n(&st.hang, __ATOMIC_SEQ_CST))
			__atomic_store_n(
				&st.faults_in_sync,
				__atomic_load_n(&st.faults, __ATOMIC_SEQ_CST),
				__ATOMIC_SEQ_CST);
		else
			__atomic_store_n(&st.event_query_rc, CUDA_SUCCESS,
					 __ATOMIC_SEQ_CST);
	}
	return 0;
}

static int stub_stream_query(struct backend *b, struct backend_stream *s)
{
	if (__atomic_load_n(&st.ordered, __ATOMIC_SEQ_CST))
		return __atomic_load_n(&st.done, __ATOMIC_SEQ_CST) >=
				       __atomic_load_n(&st.ops,
						       __ATOMIC_SEQ_CST)
			       ? CUDA_SUCCESS
			       : CUDA_ERROR_NOT_READY;
	return __atomic_load_n(&st.stream_query_rc, __ATOMIC_SEQ_CST);
}

static int stub_wait_event(struct backend *b, struct backend_stream *s,
			   struct backend_event *e)
{
	__atomic_add_fetch(&st.ops, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int stub_event_create(struct backend *b, uint32_t flags,
			     struct backend_event **out)
{
	*out = calloc(1, sizeof(**out));
	(*out)->flags = flags;
	__atomic_add_fetch(&st.events, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static void stub_event_destroy(struct backend *b, struct backend_event *e)
{
	free(e);
	__atomic_sub_fetch(&st.events, 1, __ATOMIC_SEQ_CST);
}

static int stub_event_record(struct backend *b, struct backend_event *e,
			     struct backend_stream *s)
{
	__atomic_add_fetch(&st.records, 1, __ATOMIC_SEQ_CST);
	e->seq = __atomic_load_n(&st.ops, __ATOMIC_SEQ_CST);
	return 0;
}

/* Four blocks of any kernel fit on an SM of the stub. */
static int stub_occupancy(struct backend *b, struct backend_kernel *k,
			  int block, size_t dyn_smem, unsigned int flags,
			  int *blocks)
{
	*blocks = 4;
	return 0;
}

static int stub_launch_cooperative(struct backend *b, struct backend_kernel *k,
				   const uint32_t grid[3],
				   const uint32_t block[3], uint32_t shared,
				   struct backend_stream *s, void **params)
{
	st.coop_launches++;
	return stub_launch(b, k, grid, block, shared, s, params, NULL);
}

/* A launch with its marker in the same call (the cuda backend's event
 * attribute); with st.unmark the marker fails and the launch stands. */
static int stub_launch_marked(struct backend *b, struct backend_kernel *k,
			      const uint32_t grid[3], const uint32_t block[3],
			      uint32_t shared, struct backend_stream *s,
			      void **params, const uint32_t *cluster,
			      struct backend_event *e, int *marked)
{
	int rc = stub_launch(b, k, grid, block, shared, s, params, cluster);

	*marked = BACKEND_MARKED_NOT;
	if (rc || st.unmark)
		return rc;
	st.marked_launches++;
	/* early: as the cuda backend's launch attribute */
	*marked = st.early ? BACKEND_MARKED_EARLY : BACKEND_MARKED_AFTER;
	return stub_event_record(b, e, s);
}

static int stub_event_sync(struct backend *b, struct backend_event *e)
{
	return 0;
}

static int stub_event_query(struct backend *b, struct backend_event *e)
{
	__atomic_add_fetch(&st.queries, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&st.ordered, __ATOMIC_SEQ_CST))
		return e->seq <= __atomic_load_n(&st.done, __ATOMIC_SEQ_CST)
			       ? CUDA_SUCCESS
			       : CUDA_ERROR_NOT_READY;
	return __atomic_load_n(&st.event_query_rc, __ATOMIC_SEQ_CST);
}

static int stub_event_elapsed(struct backend *b, struct backend_event *start,
			      struct backend_event *end, float *ms)
{
	*ms = 1.5f;
	return 0;
}

/* Stream gates: the stub does the write at once. */
static struct {
	uint64_t *write_p, write_v;
	int writes;
} gst;

static int stub_write_host(struct backend *b, struct backend_stream *s,
			   uint64_t *p, uint64_t v)
{
	gst.write_p = p;
	gst.write_v = v;
	gst.writes++;
	*p = v;
	return 0;
}

static const struct backend_ops stub_ops = {
	.name = "stub",
	.kind = VGPU_BACKEND_SIM,
	.thread_attach = stub_attach,
	.granularity = stub_granularity,
	.mem_map = stub_map,
	.mem_unmap = stub_unmap,
	.memcpy_htod = stub_htod,
	.memcpy_dtoh = stub_dtoh,
	.memcpy_dtod = stub_dtod,
	.memset = stub_memset,
	.library_load = stub_library_load,
	.library_unload = stub_library_unload,
	.library_get_kernel = stub_get_kernel,
	.library_get_global = stub_get_global,
	.library_kernel_name = stub_kernel_name,
	.kernel_clusters = stub_kernel_clusters,
	.ctx_limit = stub_ctx_limit,
	.tensor_map = stub_tensor_map,
	.launch = stub_launch,
	.launch_marked = stub_launch_marked,
	.launch_cooperative = stub_launch_cooperative,
	.kernel_occupancy = stub_occupancy,
	.stream_create = stub_stream_create,
	.stream_destroy = stub_stream_destroy,
	.stream_sync = stub_stream_sync,
	.stream_query = stub_stream_query,
	.stream_wait_event = stub_wait_event,
	.event_create = stub_event_create,
	.event_destroy = stub_event_destroy,
	.event_record = stub_event_record,
	.event_sync = stub_event_sync,
	.event_query = stub_event_query,
	.event_elapsed = stub_event_elapsed,
	.stream_write_host = stub_write_host,
};

static struct backend the_backend;

static void record_fault(struct worker *w, uint32_t kind, int32_t status,
			 const char *msg)
{
	__atomic_store_n(&st.fault_kind, kind, __ATOMIC_SEQ_CST);
	__atomic_store_n(&st.fault_status, status, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&st.faults, 1, __ATOMIC_SEQ_CST);
}

/* ---- fixture ---------------------------------------------------------- */

struct fx {
	struct worker w;
	struct worker_session s;
	uint8_t data[DATA_SIZE];
};

static struct fx *fx_new(uint32_t time_limit_ms)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	memset(&st, 0, sizeof(st));
	f->w.ops = &stub_ops;
	f->w.be = &the_backend;
	f->w.fault = record_fault;
	f->w.ctl_fd = -1;
	snprintf(f->w.cfg.name, sizeof(f->w.cfg.name), "test");
	f->w.cfg.kernel_time_limit_ms = time_limit_ms;
	snprintf(f->w.info.name, sizeof(f->w.info.name), "stub device");
	f->w.info.sm_count = 8;
	pthread_rwlock_init(&f->w.mem_lock, NULL);
	pthread_mutex_init(&f->w.clients_lock, NULL);
	assert_int_equal(suballoc_init(&f->w.mem, BASE, TiB, 2 * MiB, QUOTA, 0,
				       worker_mem_map, worker_mem_unmap, &f->w),
			 0);
	assert_int_equal(worker_watchdog_start(&f->w), 0);
	assert_int_equal(
		worker_session_init(&f->s, &f->w, 1, f->data, DATA_SIZE),
		CUDA_SUCCESS);
	return f;
}

static void fx_free(struct fx *f)
{
	worker_session_fini(&f->s);
	worker_watchdog_stop(&f->w);
	worker_gate_fini(&f->w);
	/* nothing of the client is left anywhere */
	assert_int_equal(f->w.mem.nallocs, 0);
	assert_int_equal(f->w.mem.mapped, 0);
	assert_int_equal(st.maps, st.unmaps);
	assert_int_equal(st.streams, 0);
	assert_int_equal(st.events, 0);
	assert_int_equal(st.libraries, 0);
	assert_int_equal(f->w.region_total, 0); /* every region gave back */
	suballoc_destroy(&f->w.mem);
	pthread_rwlock_destroy(&f->w.mem_lock);
	pthread_mutex_destroy(&f->w.clients_lock);
	free(f);
}

static struct vgpu_sqe sqe(uint16_t opcode)
{
	struct vgpu_sqe q;

	memset(&q, 0, sizeof(q));
	q.opcode = opcode;
	q.tag = 0x5151;
	return q;
}

/* Run one descriptor; returns the completion status, r[] in *r. */
static int run(struct worker_session *s, struct vgpu_sqe q, uint64_t *r)
{
	struct vgpu_cqe c;

	memset(&c, 0xee, sizeof(c));
	worker_exec(s, &q, &c);
	assert_int_equal(c.tag, q.tag);
	assert_int_equal(c.reserved, 0);
	if (r) {
		r[0] = c.r[0];
		r[1] = c.r[1];
	}
	return c.status;
}

static uint64_t alloc(struct worker_session *s, uint64_t bytes)
{
	struct vgpu_sqe q = sqe(VGPU_OP_MEM_ALLOC);
	uint64_t r[2];

	q.a[0] = bytes;
	assert_int_equal(run(s, q, r), CUDA_SUCCESS);
	return r[0];
}

static uint32_t create(struct worker_session *s, uint16_t opcode)
{
	uint64_t r[2];

	assert_int_equal(run(s, sqe(opcode), r), CUDA_SUCCESS);
	assert_true(r[0] && r[0] <= UINT32_MAX);
	return (uint32_t)r[0];
}

/* Stage an image, load it, return the library handle. */
static uint32_t load_library(struct fx *f, const char *image)
{
	struct vgpu_sqe q = sqe(VGPU_OP_STAGE_WRITE);
	size_t n = strlen(image) + 1;
	uint64_t r[2];

	memcpy(f->data + 4096, image, n);
	q.a[0] = 0;
	q.a[1] = 4096;
	q.a[2] = n;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q = sqe(VGPU_OP_LIBRARY_LOAD);
	q.a[0] = n;
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	return (uint32_t)r[0];
}

static struct vgpu_sqe get_kernel_sqe(struct fx *f, uint32_t lib,
				      const char *name)
{
	struct vgpu_sqe q = sqe(VGPU_OP_LIBRARY_GET_KERNEL);

	strcpy((char *)f->data + 8192, name);
	q.handle = lib;
	q.a[0] = 8192;
	q.a[1] = strlen(name) + 1;
	q.a[2] = 16384;
	q.a[3] = sizeof(struct vgpu_kernel_info);
	return q;
}

static uint32_t get_kernel(struct fx *f, uint32_t lib, const char *name)
{
	uint64_t r[2];

	assert_int_equal(run(&f->s, get_kernel_sqe(f, lib, name), r),
			 CUDA_SUCCESS);
	return (uint32_t)r[0];
}

static struct vgpu_sqe get_global_sqe(struct fx *f, uint32_t lib,
				      const char *name)
{
	struct vgpu_sqe q = sqe(VGPU_OP_LIBRARY_GET_GLOBAL);

	strcpy((char *)f->data + 8192, name);
	q.handle = lib;
	q.a[0] = 8192;
	q.a[1] = strlen(name) + 1;
	return q;
}

/* A copy of n bytes to dev (HTOD from data offset 0). */
static int htod(struct worker_session *s, uint64_t dev, uint64_t n)
{
	struct vgpu_sqe q = sqe(VGPU_OP_MEMCPY_HTOD);

	q.a[0] = dev;
	q.a[1] = 0;
	q.a[2] = n;
	return run(s, q, NULL);
}

static struct vgpu_sqe launch_sqe(uint32_t kernel, uint32_t gx, uint32_t gy,
				  uint32_t gz, uint32_t bx, uint32_t by,
				  uint32_t bz)
{
	struct vgpu_sqe q = sqe(VGPU_OP_LAUNCH);

	q.handle = kernel;
	q.a[0] = gx | (uint64_t)gy << 32;
	q.a[1] = gz | (uint64_t)bx << 32;
	q.a[2] = by | (uint64_t)bz << 32;
	return q;
}

/* ---- tests ------------------------------------------------------------ */

static void exec_completes_a_nop_with_its_tag(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_NOP);

	q.tag = 0xabcdef;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	fx_free(f);
}

static void exec_rejects_unknown_opcodes(void **state)
{
	struct fx *f = fx_new(0);

	assert_int_equal(run(&f->s, sqe(2), NULL), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(run(&f->s, sqe(VGPU_OP_COUNT_), NULL),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(run(&f->s, sqe(0xffff), NULL),
			 CUDA_ERROR_NOT_SUPPORTED);
	fx_free(f);
}

static void exec_rejects_nonzero_flags(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_NOP);

	q.flags = 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = sqe(VGPU_OP_MEM_ALLOC);
	q.a[0] = 256;
	q.flags = 0x8000;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(f->w.mem.nallocs, 0);
	fx_free(f);
}

static void copy_rejects_data_ranges_outside_the_data_area(void **state)
{
	struct fx *f = fx_new(0);
	uint64_t p = alloc(&f->s, 1 * MiB);
	struct vgpu_sqe q = sqe(VGPU_OP_MEMCPY_HTOD);

	q.a[0] = p;
	q.a[1] = DATA_SIZE;
	q.a[2] = 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = DATA_SIZE - 10;
	q.a[2] = 11;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = 8; /* 8 + (2^64 - 5) wraps to 3 */
	q.a[2] = UINT64_MAX - 4;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.opcode = VGPU_OP_MEMCPY_DTOH;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = UINT64_MAX;
	q.a[2] = 2;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.htod + st.dtoh, 0);

	/* the last bytes of the data area are fine */
	q.opcode = VGPU_OP_MEMCPY_HTOD;
	q.a[1] = DATA_SIZE - 16;
	q.a[2] = 16;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.htod, 1);
	assert_ptr_equal(st.host, f->data + DATA_SIZE - 16);
	assert_int_equal(st.dev, p);
	assert_int_equal(st.n, 16);
	assert_int_equal(f->s.bytes_copied, 16);
	fx_free(f);
}

static void copy_rejects_device_ranges_outside_one_allocation(void **state)
{
	struct fx *f = fx_new(0);
	uint64_t p = alloc(&f->s, 1024), p2 = alloc(&f->s, 1024);
	struct vgpu_sqe q = sqe(VGPU_OP_MEMCPY_HTOD);

	assert_int_equal(p2, p + 1024);
	q.a[1] = 0;
	q.a[0] = p + 1000; /* runs into the next allocation */
	q.a[2] = 100;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = p - 1;
	q.a[2] = 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = BASE + TiB / 2; /* in the window, never allocated */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = 0x1000; /* outside the window */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.opcode = VGPU_OP_MEMCPY_DTOD;
	q.a[0] = p;
	q.a[1] = p2 + 512;
	q.a[2] = 1024;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = p2 + 1;
	q.a[1] = p;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.htod + st.dtod, 0);

	q.a[0] = p2;
	q.a[1] = p;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.dtod, 1);
	assert_int_equal(st.dev, p2);
	assert_int_equal(st.src, p);
	assert_int_equal(st.n, 1024);
	q.opcode = VGPU_OP_MEMCPY_HTOD;
	q.a[0] = p + 1024 - 16;
	q.a[1] = 0;
	q.a[2] = 16;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	fx_free(f);
}

static void copy_of_zero_bytes_does_not_reach_the_backend(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_MEMCPY_DTOH);

	q.a[0] = 0xdead;
	q.a[1] = 0;
	q.a[2] = 0;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.dtoh, 0);
	fx_free(f);
}

static void exec_refuses_another_clients_memory(void **state)
{
	struct fx *f = fx_new(0);
	struct worker_session *s2 = calloc(1, sizeof(*s2));
	static uint8_t data2[DATA_SIZE];
	struct vgpu_sqe q;
	uint64_t theirs, mine;

	assert_int_equal(worker_session_init(s2, &f->w, 2, data2, DATA_SIZE),
			 0);
	theirs = alloc(s2, 4096);
	mine = alloc(&f->s, 4096);

	q = sqe(VGPU_OP_MEMCPY_HTOD);
	q.a[0] = theirs;
	q.a[2] = 16;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = sqe(VGPU_OP_MEMCPY_DTOD);
	q.a[0] = mine;
	q.a[1] = theirs;
	q.a[2] = 16;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = sqe(VGPU_OP_MEMSET);
	q.a[0] = theirs;
	q.a[2] = 16;
	q.a[3] = 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = sqe(VGPU_OP_MEM_FREE);
	q.a[0] = theirs;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.htod + st.dtod + st.memsets, 0);

	/* the owner still has it; when client 1 ends, client 2 keeps it */
	q = sqe(VGPU_OP_MEMCPY_DTOH);
	q.a[0] = theirs;
	q.a[2] = 16;
	assert_int_equal(run(s2, q, NULL), CUDA_SUCCESS);
	worker_session_fini(&f->s);
	assert_int_equal(f->w.mem.nallocs, 1);
	assert_int_equal(run(s2, q, NULL), CUDA_SUCCESS);
	assert_int_equal(
		worker_session_init(&f->s, &f->w, 1, f->data, DATA_SIZE), 0);
	worker_session_fini(s2);
	free(s2);
	fx_free(f);
}

static void exec_rejects_unknown_and_stale_handles(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q;
	uint32_t h, h2, ev;

	q = sqe(VGPU_OP_STREAM_SYNC);
	q.stream = 12345;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);

	h = create(&f->s, VGPU_OP_STREAM_CREATE);
	q.stream = h;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.opcode = VGPU_OP_STREAM_DESTROY;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	q.opcode = VGPU_OP_STREAM_SYNC;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	h2 = create(&f->s, VGPU_OP_STREAM_CREATE);
	assert_int_not_equal(h2, h);
	q.stream = h2 ^ 0x10000; /* right slot, wrong generation */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);

	q = sqe(VGPU_OP_STREAM_DESTROY); /* the default stream */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);

	q = sqe(VGPU_OP_EVENT_QUERY);
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	ev = create(&f->s, VGPU_OP_EVENT_CREATE);
	q.handle = ev;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.opcode = VGPU_OP_EVENT_DESTROY;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.opcode = VGPU_OP_EVENT_RECORD;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	q = sqe(VGPU_OP_STREAM_WAIT_EVENT);
	q.handle = ev;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);

	q = launch_sqe(0, 1, 1, 1, 1, 1, 1);
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	q = sqe(VGPU_OP_LIBRARY_UNLOAD);
	q.handle = 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	fx_free(f);
}

static void handles_are_not_reused_quickly(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t seen[200];
	struct vgpu_sqe q = sqe(VGPU_OP_EVENT_DESTROY);
	int i, j;

	for (i = 0; i < 200; i++) {
		seen[i] = create(&f->s, VGPU_OP_EVENT_CREATE);
		for (j = 0; j < i; j++)
			assert_int_not_equal(seen[i], seen[j]);
		q.handle = seen[i];
		assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	}
	fx_free(f);
}

static void stream_create_stops_at_the_per_client_limit(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t i;

	for (i = 0; i < WORKER_MAX_STREAMS; i++)
		create(&f->s, VGPU_OP_STREAM_CREATE);
	assert_int_equal(run(&f->s, sqe(VGPU_OP_STREAM_CREATE), NULL),
			 CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(st.streams, WORKER_MAX_STREAMS + 1);
	fx_free(f);
}

static void stream_ops_take_the_stream_from_either_field(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t h = create(&f->s, VGPU_OP_STREAM_CREATE);
	uint32_t h2 = create(&f->s, VGPU_OP_STREAM_CREATE);
	struct vgpu_sqe q = sqe(VGPU_OP_STREAM_QUERY);

	q.handle = h;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.handle = 0;
	q.stream = h;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.handle = h2;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.stream = 0;
	q.handle = 0; /* the default stream */
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.opcode = VGPU_OP_STREAM_DESTROY;
	q.handle = h;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	fx_free(f);
}

static void launch_rejects_bad_dimensions(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	static const uint32_t bad[][6] = {
		{0, 1, 1, 1, 1, 1},	      {1, 0, 1, 1, 1, 1},
		{1, 1, 0, 1, 1, 1},	      {1, 1, 1, 0, 1, 1},
		{1, 1, 1, 1, 0, 1},	      {1, 1, 1, 1, 1, 0},
		{0x80000000u, 1, 1, 1, 1, 1}, {1, 65536, 1, 1, 1, 1},
		{1, 1, 65536, 1, 1, 1},	      {1, 1, 1, 1025, 1, 1},
		{1, 1, 1, 1, 1025, 1},	      {1, 1, 1, 1, 1, 65},
		{1, 1, 1, 32, 32, 2},	      {1, 1, 1, 0xffffffffu, 1, 1},
	};
	struct vgpu_sqe q;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q = launch_sqe(k, bad[i][0], bad[i][1], bad[i][2], bad[i][3],
			       bad[i][4], bad[i][5]);
		assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	}
	q = launch_sqe(k, 1, 1, 1, 1, 1, 1);
	q.a[3] = 1u << 20; /* shared memory */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.stream = 77;
	q.a[3] = 0;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(st.launches, 0);

	q = launch_sqe(k, 0x7fffffffu, 65535, 65535, 32, 32, 1);
	q.a[3] = 48 << 10;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.launches, 1);
	assert_int_equal(st.grid[0], 0x7fffffffu);
	assert_int_equal(st.grid[1], 65535);
	assert_int_equal(st.grid[2], 65535);
	assert_int_equal(st.block[0], 32);
	assert_int_equal(st.block[1], 32);
	assert_int_equal(st.block[2], 1);
	assert_int_equal(st.shared, 48 << 10);
	assert_int_equal(f->s.kernels, 1);
	fx_free(f);
}

/* LAUNCH's cluster shape in a3's upper half: checked, then passed on. */
static void launch_checks_and_passes_a_cluster_shape(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	static const struct {
		uint32_t grid, x, y, z;
		uint64_t extra;
		int err;
	} bad[] = {
		{8, 2, 0, 1, 0, CUDA_ERROR_INVALID_CLUSTER_SIZE}, /* partly 0 */
		{32, 17, 1, 1, 0, CUDA_ERROR_INVALID_CLUSTER_SIZE}, /* edge */
		{32, 4, 4, 2, 0,
		 CUDA_ERROR_INVALID_CLUSTER_SIZE}, /* 32 blocks */
		{9, 2, 1, 1, 0, CUDA_ERROR_INVALID_CLUSTER_SIZE}, /* 9 % 2 */
		/* bits no protocol defines (56 is the cooperative one) */
		{8, 2, 1, 1, 1ull << 57, CUDA_ERROR_INVALID_VALUE},
		{8, 255, 255, 255, 0, CUDA_ERROR_INVALID_CLUSTER_SIZE},
		{8, 1, 4, 1, 0, CUDA_ERROR_INVALID_CLUSTER_SIZE}, /* grid y 2 */
		/* shared bytes above the maximum, with a cluster: still
		 * refused for the shared bytes */
		{8, 2, 1, 1, 1u << 20, CUDA_ERROR_INVALID_VALUE},
	};
	struct vgpu_sqe q;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		q = launch_sqe(k, bad[i].grid, 2, 1, 32, 1, 1);
		q.a[3] = (uint64_t)bad[i].x << 32 | (uint64_t)bad[i].y << 40 |
			 (uint64_t)bad[i].z << 48 | bad[i].extra;
		assert_int_equal(run(&f->s, q, NULL), bad[i].err);
	}
	assert_int_equal(st.launches, 0);
	q = launch_sqe(k, 8, 4, 1, 32, 1, 1);
	q.a[3] = 1024 | 2ull << 32 | 2ull << 40 | 1ull << 48;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.launches, 1);
	assert_int_equal(st.shared, 1024);
	assert_int_equal(st.cluster[0], 2);
	assert_int_equal(st.cluster[1], 2);
	assert_int_equal(st.cluster[2], 1);
	q = launch_sqe(k, 16, 1, 1, 32, 1, 1); /* the largest, 16x1x1 */
	q.a[3] = 16ull << 32 | 1ull << 40 | 1ull << 48;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.cluster[0], 16);
	q = launch_sqe(k, 8, 4, 1, 32, 1, 1); /* no cluster: none passed */
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.cluster[0], 0);
	fx_free(f);
}

static void launch_rejects_a_parameter_buffer_of_the_wrong_size(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "saxpy"),
		 k = get_kernel(f, lib, "saxpy");
	struct vgpu_sqe q = launch_sqe(k, 1, 1, 1, 1, 1, 1);

	q.a[4] = 100;
	q.a[5] = 16;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[5] = 24;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[5] = 20;
	q.a[4] = DATA_SIZE - 10;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[4] = UINT64_MAX - 3;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.launches, 0);
	q.a[4] = 100;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	fx_free(f);
}

static void launch_passes_a_private_copy_of_the_parameters(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "saxpy"),
		 k = get_kernel(f, lib, "saxpy");
	struct vgpu_sqe q = launch_sqe(k, 4, 1, 1, 256, 1, 1);
	float a = 2.5f;
	uint64_t x = 0x500000001000ull;
	int32_t n = 77;
	int i;

	memcpy(f->data + 200, &a, 4);
	memcpy(f->data + 208, &x, 8);
	memcpy(f->data + 216, &n, 4);
	q.a[4] = 200;
	q.a[5] = 20;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_true(st.p_a == 2.5f);
	assert_int_equal(st.p_x, x);
	assert_int_equal(st.p_n, 77);
	for (i = 0; i < 3; i++)
		assert_true((uint8_t *)st.params[i] < f->data ||
			    (uint8_t *)st.params[i] >= f->data + DATA_SIZE);
	fx_free(f);
}

static void memset_checks_element_size_value_and_alignment(void **state)
{
	struct fx *f = fx_new(0);
	uint64_t p = alloc(&f->s, 4096);
	struct vgpu_sqe q = sqe(VGPU_OP_MEMSET);
	static const uint64_t bad_elem[] = {0, 3, 8, 1ull << 32};
	size_t i;

	q.a[0] = p;
	q.a[2] = 16;
	for (i = 0; i < 4; i++) {
		q.a[3] = bad_elem[i];
		assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	}
	q.a[3] = 1;
	q.a[1] = 0x100;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[3] = 2;
	q.a[1] = 0x10000;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[3] = 4;
	q.a[1] = 0x100000000ull;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = 0;
	q.a[0] = p + 2; /* not 4-byte aligned */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = p;
	q.a[2] = 1025; /* 4100 bytes > 4096 */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[2] = UINT64_MAX / 2; /* count * 4 overflows */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.memsets, 0);

	q.a[1] = 0xdeadbeef;
	q.a[2] = 1024;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.memsets, 1);
	assert_int_equal(st.value, 0xdeadbeef);
	assert_int_equal(st.elem, 4);
	assert_int_equal(st.n, 1024);
	fx_free(f);
}

static void get_kernel_checks_the_name_and_the_info_buffer(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "saxpy noargs"), k, k2;
	struct vgpu_sqe q;
	struct vgpu_kernel_info info;
	uint64_t r[2];

	q = get_kernel_sqe(f, lib, "saxpy");
	q.a[1] = 5; /* "saxpy" without its NUL */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = 0;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = VGPU_KERNEL_NAME_MAX + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = DATA_SIZE - 3;
	q.a[1] = 6;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = get_kernel_sqe(f, lib, "");
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = get_kernel_sqe(f, lib, "saxpy");
	q.a[3] = sizeof(struct vgpu_kernel_info) - 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[3] = sizeof(struct vgpu_kernel_info);
	q.a[2] = DATA_SIZE - 8;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = get_kernel_sqe(f, lib, "saxpy");
	q.handle = lib + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	q = get_kernel_sqe(f, lib, "nosuchkernel");
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_NOT_FOUND);

	q = get_kernel_sqe(f, lib, "saxpy");
	memset(f->data + 16384, 0xff, sizeof(info));
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	k = (uint32_t)r[0];
	memcpy(&info, f->data + 16384, sizeof(info));
	assert_int_equal(info.nparams, 3);
	assert_int_equal(info.param_bytes, 20);
	assert_int_equal(info.params[1].offset, 8);
	assert_int_equal(info.params[1].size, 8);
	assert_int_equal(info.params[3].size, 0);
	k2 = get_kernel(f, lib, "saxpy");
	assert_int_equal(k, k2);
	assert_int_not_equal(get_kernel(f, lib, "noargs"), k);
	fx_free(f);
}

static void library_unload_invalidates_its_kernels(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	uint32_t lib2 = load_library(f, "noargs");
	uint32_t k2 = get_kernel(f, lib2, "noargs");
	struct vgpu_sqe q = sqe(VGPU_OP_LIBRARY_UNLOAD);

	assert_int_equal(st.libraries, 2);
	q.handle = lib;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.libraries, 1);
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	/* the other library's kernel lives on */
	assert_int_equal(run(&f->s, launch_sqe(k2, 1, 1, 1, 1, 1, 1), NULL),
			 CUDA_SUCCESS);
	fx_free(f);
}

static struct vgpu_sqe clusters_sqe(uint32_t k)
{
	struct vgpu_sqe q = sqe(VGPU_OP_KERNEL_CLUSTERS);

	q.handle = k;
	q.a[0] = 64 | 1ull << 32;	      /* grid 64 x 1 */
	q.a[1] = 1 | 128ull << 32;	      /* x 1, block 128 */
	q.a[2] = 1 | 1ull << 32;	      /* x 1 x 1 */
	q.a[3] = 0;			      /* no dynamic shared memory */
	q.a[4] = 2 | 1ull << 16 | 1ull << 32; /* clusters of 2 x 1 x 1 */
	q.a[5] = (uint64_t)VGPU_CLUSTERS_ACTIVE << 32;
	return q;
}

static void kernel_clusters_are_checked(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t k = get_kernel(f, load_library(f, "saxpy"), "saxpy");
	struct vgpu_sqe q;
	uint64_t r[2];

	q = clusters_sqe(k);
	q.handle = k + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	q = clusters_sqe(k);
	q.a[0] = 0; /* a grid of 0 */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = clusters_sqe(k);
	q.a[2] = 8 | 8ull << 32; /* 128 x 8 x 8 threads */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = clusters_sqe(k);
	q.a[4] = 17 | 1ull << 16 | 1ull << 32;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
	q.a[4] = 2; /* 2 x 0 x 0 */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_CLUSTER_SIZE);
	q.a[4] = 1ull << 48;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = clusters_sqe(k);
	q.a[5] = 3; /* no such scheduling policy */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[5] = 2ull << 32; /* no such query */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.cluster_queries, 0); /* none reached the backend */

	q = clusters_sqe(k);
	q.a[5] = CU_CLUSTER_SCHEDULING_POLICY_SPREAD |
		 (uint64_t)VGPU_CLUSTERS_MAX_SIZE << 32;
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	assert_int_equal(r[0], 7);
	assert_int_equal(st.cluster_queries, 1);
	assert_int_equal(st.cq.grid[0], 64);
	assert_int_equal(st.cq.block[0], 128);
	assert_int_equal(st.cq.cluster[0], 2);
	assert_int_equal(st.cq.cluster[2], 1);
	assert_int_equal(st.cq.policy, CU_CLUSTER_SCHEDULING_POLICY_SPREAD);
	assert_int_equal(st.cq.query, VGPU_CLUSTERS_MAX_SIZE);
	q = sqe(VGPU_OP_KERNEL_SET_ATTRIBUTE);
	q.handle = k;
	q.a[0] = CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED;
	q.a[1] = 2;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH;
	q.a[1] = 17;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = CU_FUNC_ATTRIBUTE_NUM_REGS; /* the compiled kernel's */
	q.a[1] = 32;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_NOT_SUPPORTED);
	fx_free(f);
}

static struct vgpu_sqe limit_sqe(uint64_t limit, uint64_t set, uint64_t v)
{
	struct vgpu_sqe q = sqe(VGPU_OP_CTX_LIMIT);

	q.a[0] = limit;
	q.a[1] = set;
	q.a[2] = v;
	return q;
}

/* A vGPU of 1 GiB and 8 SMs: a quarter is 256 MiB; 8 x 2048 threads. */
static void limits_are_checked(void **state)
{
	struct fx *f = fx_new(0);
	uint64_t r[2];

	f->w.cfg.memory_quota = 1ull << 30;
	f->w.info.attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT] = 8;
	assert_int_equal(run(&f->s, limit_sqe(CU_LIMIT_MAX, 0, 0), NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s, limit_sqe(0, 2, 0), NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
		run(&f->s,
		    limit_sqe(CU_LIMIT_MALLOC_HEAP_SIZE, 1, (256ull << 20) + 1),
		    NULL),
		CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
		run(&f->s, limit_sqe(CU_LIMIT_PRINTF_FIFO_SIZE, 1, UINT64_MAX),
		    NULL),
		CUDA_ERROR_INVALID_VALUE);
	/* 16 KiB x 8 SMs x 2048 threads = 256 MiB: fits; 16 KiB + 1 not */
	assert_int_equal(run(&f->s,
			     limit_sqe(CU_LIMIT_STACK_SIZE, 1, (16 << 10) + 1),
			     NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
		run(&f->s, limit_sqe(CU_LIMIT_STACK_SIZE, 1, 1ull << 40), NULL),
		CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s,
			     limit_sqe(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 1, 0),
			     NULL),
			 CUDA_ERROR_UNSUPPORTED_LIMIT);
	assert_int_equal(
		run(&f->s, limit_sqe(CU_LIMIT_CIG_ENABLED, 1, 1), NULL),
		CUDA_ERROR_UNSUPPORTED_LIMIT);
	assert_int_equal(
		run(&f->s, limit_sqe(CU_LIMIT_MAX_L2_FETCH_GRANULARITY, 1, 129),
		    NULL),
		CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.limit_calls, 0); /* none reached the backend */

	assert_int_equal(
		run(&f->s, limit_sqe(CU_LIMIT_STACK_SIZE, 1, 16 << 10), r),
		CUDA_SUCCESS);
	assert_int_equal(st.limit_calls, 1);
	assert_int_equal(st.limit, CU_LIMIT_STACK_SIZE);
	assert_int_equal(st.limit_set, 1);
	assert_int_equal(r[0], 16 << 10);
	assert_int_equal(run(&f->s,
			     limit_sqe(CU_LIMIT_PERSISTING_L2_CACHE_SIZE, 0, 5),
			     r),
			 CUDA_SUCCESS); /* reading it is fine */
	assert_int_equal(st.limit_set, 0);
	assert_int_equal(r[0], 1024);
	fx_free(f);
}

/* TENSOR_MAP: the request's place and size, then its kind and rank
 * (the arrays hold no more); a good one gets the backend's 128 bytes. */
static void tensor_maps_are_checked(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_TENSOR_MAP);
	struct vgpu_tensor_map t = {.kind = VGPU_TENSOR_MAP_TILED, .rank = 2};
	const size_t map_off = offsetof(struct vgpu_tensor_map, map);

	st.tensor_maps = 0;
	q.a[0] = 8192;
	q.a[1] = sizeof(t) - 1; /* not the struct's size */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = sizeof(t);
	q.a[0] = 8196; /* not 8-byte aligned */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = DATA_SIZE - 8; /* past the data area */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = 8192;
	t.kind = 0;
	memcpy(f->data + 8192, &t, sizeof(t));
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	t.kind = VGPU_TENSOR_MAP_REPLACE_ADDRESS + 1;
	memcpy(f->data + 8192, &t, sizeof(t));
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	t.kind = VGPU_TENSOR_MAP_TILED;
	t.rank = VGPU_TENSOR_MAP_RANK_MAX + 1;
	memcpy(f->data + 8192, &t, sizeof(t));
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	t.rank = 0;
	memcpy(f->data + 8192, &t, sizeof(t));
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	t.kind = VGPU_TENSOR_MAP_IM2COL;
	t.rank = 2; /* im2col needs 3 to 5 */
	memcpy(f->data + 8192, &t, sizeof(t));
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	t.rank = VGPU_TENSOR_MAP_RANK_MAX + 1;
	memcpy(f->data + 8192, &t, sizeof(t));
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	t.kind = VGPU_TENSOR_MAP_IM2COL_WIDE;
	t.rank = 2;
	memcpy(f->data + 8192, &t, sizeof(t));
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.tensor_maps, 0);
	stub_data = f->data;

	t.kind = VGPU_TENSOR_MAP_TILED;
	memcpy(f->data + 8192, &t, sizeof(t));
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.tensor_maps, 1);
	assert_int_equal(f->data[8192 + map_off], 0xab);
	assert_int_equal(f->data[8192 + map_off + VGPU_TENSOR_MAP_BYTES - 1],
			 0xab);
	assert_int_equal(f->data[8192], VGPU_TENSOR_MAP_TILED); /* kept */
	stub_data = NULL;
	fx_free(f);
}

static void kernel_names_are_checked(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "saxpy");
	struct vgpu_sqe q = sqe(VGPU_OP_LIBRARY_KERNEL_NAME);
	uint64_t r[2];

	q.handle = lib + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	q.handle = lib;
	q.a[0] = 1ull << 32; /* an index beyond 32 bits */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = 1;
	q.a[1] = DATA_SIZE - 3; /* the name would run past the data area */
	q.a[2] = 16;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = 8192;
	q.a[2] = VGPU_KERNEL_NAME_MAX + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);

	q.a[2] = 0; /* the count alone */
	memset(f->data + 8192, 0x55, 16);
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	assert_int_equal(r[0], 2);
	assert_int_equal(r[1], 7); /* "noargs" and its NUL, not written */
	assert_int_equal(f->data[8192], 0x55);
	q.a[2] = 6; /* one byte short */
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	assert_int_equal(f->data[8192], 0x55);
	q.a[2] = 7;
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	assert_string_equal((char *)f->data + 8192, "noargs");
	q.a[0] = 2; /* past the end */
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	assert_int_equal(r[0], 2);
	assert_int_equal(r[1], 0);
	fx_free(f);
}

static void get_global_checks_the_name_and_the_library(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "gvar");
	struct vgpu_sqe q;
	uint64_t r[2];

	q = get_global_sqe(f, lib, "gvar");
	q.a[1] = 4; /* "gvar" without its NUL */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = 0;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = VGPU_KERNEL_NAME_MAX + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = DATA_SIZE - 3; /* runs past the data area */
	q.a[1] = 5;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = UINT64_MAX - 1; /* offset + bytes wraps */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = get_global_sqe(f, lib, "");
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = get_global_sqe(f, lib, "gvar");
	q.handle = lib + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	q.handle = 0;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(st.globals, 0); /* none reached the backend */

	q = get_global_sqe(f, lib, "nosuchvar");
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_NOT_FOUND);
	assert_int_equal(f->s.h.globals.n, 0);
	q = get_global_sqe(f, lib, "gwrap"); /* a backend bug: refused */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(f->s.h.globals.n, 0);

	/* a NUL early within a1 bytes is fine, as for kernel names */
	q = get_global_sqe(f, lib, "gvar");
	q.a[1] = 64;
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	assert_int_equal(r[0], GVAR_ADDR);
	assert_int_equal(r[1], GVAR_BYTES);
	/* asking again records nothing new */
	assert_int_equal(run(&f->s, get_global_sqe(f, lib, "gvar"), r),
			 CUDA_SUCCESS);
	assert_int_equal(f->s.h.globals.n, 1);
	fx_free(f);
}

static void copies_reach_a_module_variable_while_it_is_loaded(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "gvar"), lib2 = load_library(f, "gvar");
	uint64_t p = alloc(&f->s, 4096);
	struct vgpu_sqe q;

	/* not before the client asked for it */
	assert_int_equal(htod(&f->s, GVAR_ADDR, 4), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s, get_global_sqe(f, lib, "gvar"), NULL),
			 CUDA_SUCCESS);

	assert_int_equal(htod(&f->s, GVAR_ADDR, GVAR_BYTES), CUDA_SUCCESS);
	assert_int_equal(st.htod, 1);
	assert_int_equal(st.dev, GVAR_ADDR);
	assert_int_equal(htod(&f->s, GVAR_ADDR + GVAR_BYTES - 8, 8),
			 CUDA_SUCCESS);
	/* one byte past it, or before it: refused */
	assert_int_equal(htod(&f->s, GVAR_ADDR, GVAR_BYTES + 1),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(htod(&f->s, GVAR_ADDR + GVAR_BYTES, 1),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(htod(&f->s, GVAR_ADDR - 1, 2),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(htod(&f->s, GVAR_ADDR + 8, UINT64_MAX - 4),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.htod, 2);

	q = sqe(VGPU_OP_MEMCPY_DTOH);
	q.a[0] = GVAR_ADDR + 16;
	q.a[2] = 16;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q = sqe(VGPU_OP_MEMCPY_DTOD); /* allocation -> variable and back */
	q.a[0] = GVAR_ADDR;
	q.a[1] = p;
	q.a[2] = GVAR_BYTES;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.a[0] = p;
	q.a[1] = GVAR_ADDR;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.a[2] = GVAR_BYTES + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = sqe(VGPU_OP_MEMSET);
	q.a[0] = GVAR_ADDR;
	q.a[1] = 7;
	q.a[2] = GVAR_BYTES / 4;
	q.a[3] = 4;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.a[2]++;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.dtoh + st.dtod + st.memsets, 4);

	/* the same variable through a second library: each keeps its own */
	assert_int_equal(run(&f->s, get_global_sqe(f, lib2, "gvar"), NULL),
			 CUDA_SUCCESS);
	q = sqe(VGPU_OP_LIBRARY_UNLOAD);
	q.handle = lib;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(htod(&f->s, GVAR_ADDR, GVAR_BYTES), CUDA_SUCCESS);
	q.handle = lib2;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(f->s.h.globals.n, 0);
	assert_int_equal(htod(&f->s, GVAR_ADDR, 1), CUDA_ERROR_INVALID_VALUE);
	q = sqe(VGPU_OP_MEMSET);
	q.a[0] = GVAR_ADDR;
	q.a[2] = 1;
	q.a[3] = 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	/* allocations are unaffected */
	assert_int_equal(htod(&f->s, p, 4096), CUDA_SUCCESS);
	fx_free(f);
}

static void module_variables_belong_to_their_client(void **state)
{
	struct fx *f = fx_new(0);
	struct worker_session *s2 = calloc(1, sizeof(*s2));
	static uint8_t data2[DATA_SIZE];
	uint32_t lib = load_library(f, "gvar");
	struct vgpu_sqe q;

	assert_int_equal(worker_session_init(s2, &f->w, 2, data2, DATA_SIZE),
			 0);
	assert_int_equal(run(&f->s, get_global_sqe(f, lib, "gvar"), NULL),
			 CUDA_SUCCESS);
	assert_int_equal(htod(&f->s, GVAR_ADDR, GVAR_BYTES), CUDA_SUCCESS);
	/* client 2 neither asked nor holds the library: the number names
	 * nothing of its own */
	assert_int_equal(htod(s2, GVAR_ADDR, GVAR_BYTES),
			 CUDA_ERROR_INVALID_VALUE);
	q = sqe(VGPU_OP_MEMCPY_DTOH);
	q.a[0] = GVAR_ADDR;
	q.a[2] = 4;
	assert_int_equal(run(s2, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q = sqe(VGPU_OP_LIBRARY_GET_GLOBAL);
	memcpy(data2 + 8192, "gvar", 5);
	q.handle = lib; /* client 1's library handle */
	q.a[0] = 8192;
	q.a[1] = 5;
	assert_int_equal(run(s2, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(st.htod, 1);

	/* client exit drops its ranges with its libraries */
	worker_session_fini(&f->s);
	assert_int_equal(st.libraries, 0);
	assert_int_equal(
		worker_session_init(&f->s, &f->w, 1, f->data, DATA_SIZE), 0);
	assert_int_equal(htod(&f->s, GVAR_ADDR, 1), CUDA_ERROR_INVALID_VALUE);
	worker_session_fini(s2);
	free(s2);
	fx_free(f);
}

static void staging_rejects_gaps_and_oversized_images(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_STAGE_WRITE);

	memcpy(f->data, "noargs", 7);
	q.a[1] = 0;
	q.a[2] = 100;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q.a[0] = 200; /* gap after byte 100 */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = VGPU_MAX_IMAGE_BYTES - 50; /* beyond the staged bytes too */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = 100;
	q.a[1] = DATA_SIZE - 50; /* source outside the data area */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(f->s.stage_len, 100);

	q = sqe(VGPU_OP_LIBRARY_LOAD);
	q.a[0] = 101;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = 0;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = 100;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	/* the stage is gone after a load */
	assert_int_equal(f->s.stage_len, 0);
	assert_null(f->s.stage);
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	fx_free(f);
}

static void staging_rejects_pieces_past_the_image_size_limit(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_STAGE_WRITE);

	/* staging 256 MiB through a 64 KiB data area is slow: pretend */
	f->s.stage_len = VGPU_MAX_IMAGE_BYTES - 10;
	q.a[0] = VGPU_MAX_IMAGE_BYTES - 10;
	q.a[2] = 11;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = UINT64_MAX - 5;
	q.a[2] = 10;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	f->s.stage_len = 0;
	fx_free(f);
}

static void failed_library_load_still_frees_the_stage(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_STAGE_WRITE);

	memcpy(f->data, "BAD image", 10);
	q.a[2] = 10;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q = sqe(VGPU_OP_LIBRARY_LOAD);
	q.a[0] = 10;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_IMAGE);
	assert_int_equal(f->s.stage_len, 0);
	assert_int_equal(st.faults, 0);
	fx_free(f);
}

static void mem_alloc_and_free_are_checked(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_MEM_ALLOC);
	uint64_t p, r[2];

	q.a[0] = 0;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = QUOTA + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	q.a[0] = UINT64_MAX;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_OUT_OF_MEMORY);
	p = alloc(&f->s, 3 * MiB);
	assert_int_equal(p % (2 * MiB), 0);

	assert_int_equal(run(&f->s, sqe(VGPU_OP_MEM_GET_INFO), r),
			 CUDA_SUCCESS);
	assert_int_equal(r[1], QUOTA);
	assert_int_equal(r[0], QUOTA - 4 * MiB);

	q = sqe(VGPU_OP_MEM_FREE);
	q.a[0] = p + 256;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = 0;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = p;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_true(st.syncs > 0); /* cuMemFree waits for the GPU */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(f->w.mem.mapped, 0);
	fx_free(f);
}

static void events_check_flags_and_report_elapsed_time_bits(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_EVENT_CREATE);
	uint32_t a, b, bits;
	uint64_t r[2];
	float ms;

	q.a[0] = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_NOT_SUPPORTED);
	q.a[0] = 8;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING;
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	q = sqe(VGPU_OP_EVENT_DESTROY);
	q.handle = (uint32_t)r[0];
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);

	a = create(&f->s, VGPU_OP_EVENT_CREATE);
	b = create(&f->s, VGPU_OP_EVENT_CREATE);
	q = sqe(VGPU_OP_EVENT_ELAPSED);
	q.handle = a;
	q.a[0] = (uint64_t)b | 1ull << 32; /* not a 32-bit handle */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_HANDLE);
	q.a[0] = b;
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	bits = (uint32_t)r[0];
	memcpy(&ms, &bits, sizeof(ms));
	assert_true(ms == 1.5f);
	/* events are freed with the client */
	fx_free(f);
}

static void device_info_needs_a_large_enough_buffer(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_sqe q = sqe(VGPU_OP_GET_DEVICE_INFO);
	struct vgpu_device_info info;

	q.a[0] = 0;
	q.a[1] = sizeof(info) - 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[1] = sizeof(info);
	q.a[0] = DATA_SIZE - sizeof(info) + 1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	q.a[0] = 64;
	q.a[1] = 1 << 20; /* more than needed is fine */
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	memcpy(&info, f->data + 64, sizeof(info));
	assert_string_equal(info.name, "stub device");
	assert_int_equal(info.sm_count, 8);
	fx_free(f);
}

static void sticky_backend_errors_raise_a_gpu_fault(void **state)
{
	struct fx *f = fx_new(0);
	uint64_t p = alloc(&f->s, 4096);
	struct vgpu_sqe q = sqe(VGPU_OP_MEMCPY_HTOD);

	q.a[0] = p;
	q.a[2] = 64;
	st.copy_rc = CUDA_ERROR_INVALID_VALUE; /* an ordinary error */
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.faults, 0);
	st.copy_rc = CUDA_ERROR_ILLEGAL_ADDRESS;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_ILLEGAL_ADDRESS);
	assert_int_equal(st.faults, 1);
	assert_int_equal(st.fault_kind, VGPU_FAULT_GPU);
	assert_int_equal(st.fault_status, CUDA_ERROR_ILLEGAL_ADDRESS);
	st.copy_rc = 0;
	assert_true(worker_error_is_fatal(CUDA_ERROR_LAUNCH_FAILED));
	assert_true(worker_error_is_fatal(CUDA_ERROR_MISALIGNED_ADDRESS));
	assert_false(worker_error_is_fatal(CUDA_ERROR_NOT_READY));
	assert_false(worker_error_is_fatal(CUDA_ERROR_OUT_OF_MEMORY));
	fx_free(f);
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void watchdog_faults_a_kernel_past_the_time_limit(void **state)
{
	struct fx *f = fx_new(30);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");

	st.event_query_rc = CUDA_ERROR_NOT_READY; /* the kernel never ends */
	assert_int_equal(run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			 CUDA_SUCCESS);
	sleep_ms(10);
	assert_int_equal(__atomic_load_n(&st.faults, __ATOMIC_SEQ_CST), 0);
	sleep_ms(200);
	assert_true(__atomic_load_n(&st.faults, __ATOMIC_SEQ_CST) >= 1);
	assert_int_equal(st.fault_kind, VGPU_FAULT_WATCHDOG);
	assert_int_equal(st.fault_status, CUDA_ERROR_LAUNCH_TIMEOUT);
	__atomic_store_n(&st.event_query_rc, 0, __ATOMIC_SEQ_CST);
	fx_free(f);
}

static void watchdog_keeps_up_with_many_short_kernels(void **state)
{
	struct fx *f = fx_new(1000);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	uint32_t s2 = create(&f->s, VGPU_OP_STREAM_CREATE);
	struct vgpu_sqe q;
	int i;

	/* more launches than a stream's in-flight ring holds */
	for (i = 0; i < 1000; i++) {
		q = launch_sqe(k, 1, 1, 1, 1, 1, 1);
		q.stream = i % 2 ? s2 : 0;
		assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	}
	sleep_ms(50);
	assert_int_equal(st.faults, 0);
	assert_int_equal(f->s.kernels, 1000);
	/* the watchdog's events are recycled: at most a full ring's worth
	 * per stream (1024 markers) */
	assert_true(st.events <= 2 * 1024);
	fx_free(f);
}

/*
 * The watchdog never records on a stream by itself: one marker after each
 * launch, recorded by the launching thread, and none from its polls. (A
 * record the client never queued, landing on a stream whose work was all
 * done, would make cuStreamQuery say NOT_READY there.)
 */
static void watchdog_records_a_marker_per_launch_and_none_itself(void **state)
{
	struct fx *f = fx_new(100); /* polls every 10 ms */
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	int i;

	for (i = 0; i < 2; i++) {
		__atomic_store_n(&st.records, 0, __ATOMIC_SEQ_CST);
		__atomic_store_n(&st.event_query_rc, CUDA_ERROR_NOT_READY,
				 __ATOMIC_SEQ_CST);
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
		assert_int_equal(__atomic_load_n(&st.records, __ATOMIC_SEQ_CST),
				 2);
		sleep_ms(30); /* polls while both are pending */
		/* i == 0: the stream drained; i == 1: still busy */
		__atomic_store_n(&st.stream_query_rc,
				 i ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS,
				 __ATOMIC_SEQ_CST);
		__atomic_store_n(&st.event_query_rc, CUDA_SUCCESS,
				 __ATOMIC_SEQ_CST);
		sleep_ms(60);
		assert_int_equal(__atomic_load_n(&st.records, __ATOMIC_SEQ_CST),
				 2);
		assert_int_equal(worker_watchdog_pending(&f->w), 0);
	}
	assert_int_equal(st.faults, 0);
	__atomic_store_n(&st.stream_query_rc, CUDA_SUCCESS, __ATOMIC_SEQ_CST);
	fx_free(f);
}

static struct vgpu_sqe gate_sqe(uint32_t stream, uint64_t off, uint64_t seq);

/* The stub's ordered completion: the first n ops are done. */
static void finish_upto(int n)
{
	__atomic_store_n(&st.done, n, __ATOMIC_SEQ_CST);
}

static int faults_now(void)
{
	return __atomic_load_n(&st.faults, __ATOMIC_SEQ_CST);
}

/*
 * A backend that records a launch's marker in the launch call gets the
 * marker's event before it; one whose marker fails has it recorded after
 * the launch instead. Either way one marker per launch, each kernel timed:
 * a hang after them is stopped.
 */
static void watchdog_marks_in_the_launch_or_after_it(void **state)
{
	struct fx *f = fx_new(100);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	int i;

	__atomic_store_n(&st.ordered, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 4; i++) {
		st.unmark = i >= 2;
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
	}
	st.unmark = 0;
	assert_int_equal(st.marked_launches, 2);
	assert_int_equal(__atomic_load_n(&st.records, __ATOMIC_SEQ_CST), 4);
	sleep_ms(60);
	finish_upto(3); /* the fourth never ends */
	sleep_ms(60);
	assert_int_equal(faults_now(), 0);
	sleep_ms(150);
	assert_true(faults_now() >= 1);
	assert_int_equal(st.fault_kind, VGPU_FAULT_WATCHDOG);
	finish_upto(4);
	fx_free(f);
}

/*
 * A kernel that signals its completion early (a programmatic launch
 * trigger completes its marker) and runs on: every marker is done, the
 * stream still busy. Idle again within the limit: no fault; busy past it:
 * stopped.
 */
static void watchdog_stops_a_kernel_running_past_its_marker(void **state)
{
	struct fx *f = fx_new(100); /* polls every 10 ms */
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	int i;

	st.early = 1;
	for (i = 0; i < 2; i++) {
		__atomic_store_n(&st.stream_query_rc, CUDA_ERROR_NOT_READY,
				 __ATOMIC_SEQ_CST);
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
		sleep_ms(70);
		assert_int_equal(faults_now(), 0);
		if (i == 0) { /* it ends in time */
			__atomic_store_n(&st.stream_query_rc, CUDA_SUCCESS,
					 __ATOMIC_SEQ_CST);
			sleep_ms(150);
			assert_int_equal(faults_now(), 0);
		}
	}
	sleep_ms(150);
	assert_true(faults_now() >= 1);
	assert_int_equal(st.fault_kind, VGPU_FAULT_WATCHDOG);
	assert_int_equal(st.fault_status, CUDA_ERROR_LAUNCH_TIMEOUT);
	__atomic_store_n(&st.stream_query_rc, CUDA_SUCCESS, __ATOMIC_SEQ_CST);
	fx_free(f);
}

/*
 * After a marker that may have completed early, the kernel before it may
 * still run for up to a limit: the next kernel is allowed that on top of
 * its own. Two kernels of 100 ms limits, the first's marker done at once:
 * not stopped at 150 ms, stopped by 260 ms. A marker recorded after its
 * kernel gets no such allowance (watchdog_stops_a_hang_in_a_chain...).
 */
static void watchdog_allows_the_tail_of_an_early_marker(void **state)
{
	struct fx *f = fx_new(100);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	int i;

	st.early = 1;
	__atomic_store_n(&st.ordered, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 2; i++)
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
	finish_upto(1); /* the first triggered at its start */
	sleep_ms(150);
	assert_int_equal(faults_now(), 0);
	sleep_ms(110);
	assert_true(faults_now() >= 1);
	assert_int_equal(st.fault_kind, VGPU_FAULT_WATCHDOG);
	finish_upto(2);
	fx_free(f);
}

/*
 * A cooperative launch (LAUNCH a3 bit 56) goes to launch_cooperative when
 * the slice holds every block at once (8 SMs of 4 blocks: 32), else it
 * is CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE; in clusters it is not
 * supported, and the bits above it are refused.
 */
static void launch_cooperative_is_bounded_by_the_slice(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	struct vgpu_sqe q = launch_sqe(k, 32, 1, 1, 64, 1, 1);

	q.a[3] = VGPU_LAUNCH_COOPERATIVE;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.coop_launches, 1);
	q = launch_sqe(k, 33, 1, 1, 64, 1, 1);
	q.a[3] = VGPU_LAUNCH_COOPERATIVE;
	assert_int_equal(run(&f->s, q, NULL),
			 CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE);
	assert_int_equal(st.coop_launches, 1);
	q = launch_sqe(k, 32, 1, 1, 64, 1, 1);
	q.a[3] = VGPU_LAUNCH_COOPERATIVE | 2ull << 32 | 1ull << 40 | 1ull << 48;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_NOT_SUPPORTED);
	q.a[3] = 1ull << 57;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(st.coop_launches, 1);
	fx_free(f);
}

/*
 * Issue 16, bug 3: five kernels of 60 ms each queued at once run 300 ms in
 * all, three times the 100 ms limit. Each is timed from the end of the one
 * before: no fault.
 */
static void watchdog_times_each_kernel_of_a_chain_on_its_own(void **state)
{
	struct fx *f = fx_new(100); /* polls every 10 ms */
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	int i;

	__atomic_store_n(&st.ordered, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 5; i++)
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
	for (i = 1; i <= 5; i++) {
		sleep_ms(60);
		finish_upto(i);
	}
	sleep_ms(30);
	assert_int_equal(faults_now(), 0);
	assert_int_equal(worker_watchdog_pending(&f->w), 0);
	assert_int_equal(f->s.kernels, 5);
	fx_free(f);
}

/*
 * A hang in the middle of a chain is still stopped at about its own limit:
 * the second kernel starts when the first ends (60 ms), so it is not
 * stopped at 140 ms (80 ms of its own), and it is by 260 ms.
 */
static void watchdog_stops_a_hang_in_a_chain_at_its_own_limit(void **state)
{
	struct fx *f = fx_new(100);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	int i;

	__atomic_store_n(&st.ordered, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3; i++)
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
	sleep_ms(60);
	finish_upto(1); /* the second never ends */
	sleep_ms(80);
	assert_int_equal(faults_now(), 0);
	sleep_ms(120);
	assert_true(faults_now() >= 1);
	assert_int_equal(st.fault_kind, VGPU_FAULT_WATCHDOG);
	assert_int_equal(st.fault_status, CUDA_ERROR_LAUNCH_TIMEOUT);
	finish_upto(3);
	fx_free(f);
}

/*
 * Stream waits are not run time. A kernel queued behind a host function
 * (a stream gate) that runs 250 ms is held in the worker meanwhile
 * (worker_defer.c) and reaches the GPU, and its clock, only when the
 * function is done; a kernel behind a wait for an event that another
 * stream records 250 ms later is timed from the wait's end (a marker
 * follows the wait).
 */
static int gate_open_and_flush(struct fx *f, uint64_t off, uint64_t seq);

static void watchdog_does_not_count_a_streams_waits(void **state)
{
	struct fx *f = fx_new(100);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs"), ev;
	struct vgpu_sqe q;

	memset(&gst, 0, sizeof(gst));
	assert_int_equal(worker_gate_init(&f->w), 0);
	f->s.data_gpu_ok = 1;
	ev = create(&f->s, VGPU_OP_EVENT_CREATE);
	__atomic_store_n(&st.ordered, 1, __ATOMIC_SEQ_CST);

	/* the host function: the gate's marker only, the kernel held */
	assert_int_equal(run(&f->s, gate_sqe(0, 4096, 1), NULL), CUDA_SUCCESS);
	assert_int_equal(run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			 CUDA_SUCCESS);
	assert_int_equal(__atomic_load_n(&st.records, __ATOMIC_SEQ_CST), 1);
	sleep_ms(250); /* the function runs */
	assert_true(gate_open_and_flush(f, 4096, 1));
	assert_int_equal(__atomic_load_n(&st.records, __ATOMIC_SEQ_CST), 2);
	sleep_ms(60); /* the kernel */
	assert_int_equal(faults_now(), 0);
	finish_upto(1);
	sleep_ms(30);
	assert_int_equal(worker_watchdog_pending(&f->w), 0);

	/* the event: the wait's marker, then the kernel's */
	q = sqe(VGPU_OP_STREAM_WAIT_EVENT);
	q.handle = ev;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			 CUDA_SUCCESS);
	assert_int_equal(__atomic_load_n(&st.records, __ATOMIC_SEQ_CST), 4);
	sleep_ms(250); /* the wait */
	finish_upto(2);
	sleep_ms(60); /* the kernel */
	assert_int_equal(faults_now(), 0);
	finish_upto(3);
	sleep_ms(30);
	assert_int_equal(worker_watchdog_pending(&f->w), 0);
	assert_int_equal(faults_now(), 0);
	fx_free(f);
}

/*
 * A stream far behind the client: 3000 launches queued at once, more than
 * a stream's ring of markers holds (1024), never make the launching thread
 * wait; each is still followed by a record (the ring's newest marker takes
 * the rest along, as a group allowed n limits), and a backlog that drains
 * at 100 kernels per 20 ms (each far under the limit, 600 ms in all) is
 * not stopped.
 */
static void watchdog_groups_a_backlog_beyond_its_ring(void **state)
{
	struct fx *f = fx_new(100);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	int i;

	/* nothing completes before the last launch: a launch that waited
	 * for the GPU would never get there */
	__atomic_store_n(&st.ordered, 1, __ATOMIC_SEQ_CST);
	for (i = 0; i < 3000; i++)
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
	assert_int_equal(__atomic_load_n(&st.records, __ATOMIC_SEQ_CST), 3000);
	assert_true(st.events <= 1024); /* the ring's, recycled */
	for (i = 1; i <= 30; i++) {
		sleep_ms(20);
		finish_upto(100 * i);
	}
	sleep_ms(30);
	assert_int_equal(faults_now(), 0);
	assert_int_equal(worker_watchdog_pending(&f->w), 0);
	fx_free(f);
}

/*
 * While the stream's owner waits for it, the watchdog leaves the stream
 * alone for a normal period (the owner pops it when the wait returns; a
 * query then only disturbs the waiter), but a hang in a longer wait is
 * still caught.
 */
static void watchdog_leaves_a_waited_stream_alone(void **state)
{
	struct fx *f = fx_new(1000); /* polls every 20 ms */
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs");
	struct vgpu_sqe q = {.opcode = VGPU_OP_STREAM_SYNC};
	int i;

	/* five waits of 10 ms: without the rule, a 20 ms poll falls into
	 * each with a chance of one in two */
	__atomic_store_n(&st.sync_ms, 10, __ATOMIC_SEQ_CST);
	for (i = 0; i < 5; i++) {
		__atomic_store_n(&st.event_query_rc, CUDA_ERROR_NOT_READY,
				 __ATOMIC_SEQ_CST);
		assert_int_equal(
			run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			CUDA_SUCCESS);
		__atomic_store_n(&st.queries, 0, __ATOMIC_SEQ_CST);
		assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
		/* nothing queried: the watchdog left the waited stream
		 * alone, and the owner pops it without asking (its wait
		 * returned, so every marker there is done) */
		assert_int_equal(__atomic_load_n(&st.queries, __ATOMIC_SEQ_CST),
				 0);
		assert_int_equal(worker_watchdog_pending(&f->w), 0);
	}
	assert_int_equal(st.faults, 0);
	__atomic_store_n(&st.sync_ms, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&st.event_query_rc, CUDA_SUCCESS, __ATOMIC_SEQ_CST);
	fx_free(f);

	/* a kernel that never ends, waited for far past the 30 ms limit */
	f = fx_new(30); /* polls every 3 ms */
	lib = load_library(f, "noargs");
	k = get_kernel(f, lib, "noargs");
	__atomic_store_n(&st.event_query_rc, CUDA_ERROR_NOT_READY,
			 __ATOMIC_SEQ_CST);
	__atomic_store_n(&st.sync_ms, 200, __ATOMIC_SEQ_CST);
	__atomic_store_n(&st.hang, 1, __ATOMIC_SEQ_CST);
	assert_int_equal(run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			 CUDA_SUCCESS);
	run(&f->s, q, NULL);
	/* caught by the watchdog while the owner still waited */
	assert_true(__atomic_load_n(&st.faults_in_sync, __ATOMIC_SEQ_CST) >= 1);
	assert_int_equal(st.fault_kind, VGPU_FAULT_WATCHDOG);
	__atomic_store_n(&st.sync_ms, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&st.event_query_rc, CUDA_SUCCESS, __ATOMIC_SEQ_CST);
	fx_free(f);
}

/* ---- host regions ----------------------------------------------------- */

static int pins, unpins;

static int stub_host_register(struct backend *b, void *p, size_t n)
{
	pins++;
	return 0;
}

/* Unpinning must come before the mapping goes away. */
static void stub_host_unregister(struct backend *b, void *p)
{
	unsigned char vec[1];

	assert_int_equal(mincore(p, 1, vec), 0);
	unpins++;
}

static struct backend_ops pin_ops;

/* Give the session one end of a SOCK_SEQPACKET pair as its client socket;
 * the other end (the client's) in *peer. */
static void give_socket(struct worker_session *s, int *peer)
{
	int sv[2];

	assert_int_equal(
		socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	s->sock = sv[0];
	*peer = sv[1];
}

static void close_socket(struct worker_session *s, int peer)
{
	close(s->sock);
	s->sock = -1;
	close(peer);
}

/* Receive one region packet without blocking: its fd, or -1 if none. */
static int recv_region(int peer, struct vgpu_region_msg *m)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * 4)];
	} cbuf;
	struct iovec iov = {.iov_base = m, .iov_len = sizeof(*m)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf.buf,
			     .msg_controllen = sizeof(cbuf.buf)};
	struct cmsghdr *cm;
	ssize_t n;
	int fd = -1;

	n = recvmsg(peer, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -1;
	assert_int_equal(n, sizeof(*m));
	assert_false(msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC));
	cm = CMSG_FIRSTHDR(&msg);
	assert_non_null(cm);
	assert_int_equal(cm->cmsg_level, SOL_SOCKET);
	assert_int_equal(cm->cmsg_type, SCM_RIGHTS);
	assert_int_equal(cm->cmsg_len, CMSG_LEN(sizeof(int)));
	memcpy(&fd, CMSG_DATA(cm), sizeof(fd));
	return fd;
}

static struct vgpu_sqe region_create_sqe(uint64_t bytes)
{
	struct vgpu_sqe q = sqe(VGPU_OP_HOST_REGION_CREATE);

	q.a[0] = bytes;
	return q;
}

/* Create a region, take its packet off the socket; returns the handle. */
static uint32_t region_create(struct worker_session *s, int peer,
			      uint64_t bytes)
{
	struct vgpu_region_msg m;
	uint64_t r[2];
	int fd;

	assert_int_equal(run(s, region_create_sqe(bytes), r), CUDA_SUCCESS);
	fd = recv_region(peer, &m);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(m.handle, r[0]);
	return (uint32_t)r[0];
}

static struct vgpu_sqe region_copy_sqe(uint16_t opcode, uint32_t region,
				       uint64_t dev, uint64_t off,
				       uint64_t bytes)
{
	struct vgpu_sqe q = sqe(opcode);

	q.handle = region;
	q.a[0] = dev;
	q.a[1] = off;
	q.a[2] = bytes;
	return q;
}

static void region_create_checks_sizes_and_the_socket(void **state)
{
	struct fx *f = fx_new(0);
	uint64_t r[2];
	int peer;

	assert_int_equal(run(&f->s, region_create_sqe(0), r),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s,
			     region_create_sqe(VGPU_HOST_REGION_MAX_BYTES + 1),
			     r),
			 CUDA_ERROR_OUT_OF_MEMORY);
	/* no client socket (s->sock is -1 after init) */
	assert_int_equal(f->s.sock, -1);
	assert_int_equal(run(&f->s, region_create_sqe(4096), r),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(f->s.region_bytes, 0);

	/* the per-client total: 4 regions of the largest size fill it */
	give_socket(&f->s, &peer);
	for (int i = 0; i < 4; i++)
		region_create(&f->s, peer, VGPU_HOST_REGION_MAX_BYTES);
	assert_int_equal(f->s.region_bytes, VGPU_HOST_REGIONS_MAX_BYTES);
	assert_int_equal(run(&f->s, region_create_sqe(1), r),
			 CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(f->s.h.regions.live, 4);
	close_socket(&f->s, peer);
	fx_free(f); /* frees the regions */
}

static void region_create_passes_one_sealed_memfd(void **state)
{
	struct fx *f = fx_new(0);
	long page = sysconf(_SC_PAGESIZE);
	struct vgpu_region_msg m;
	struct worker_region *reg;
	struct stat sb;
	uint64_t r[2];
	uint8_t *p;
	int peer, fd, seals;

	give_socket(&f->s, &peer);
	assert_int_equal(run(&f->s, region_create_sqe(page + 1), r),
			 CUDA_SUCCESS);
	assert_true(r[0] && r[0] <= UINT32_MAX);
	assert_int_equal(r[1], 2 * page);
	assert_int_equal(f->s.region_bytes, 2 * page);

	fd = recv_region(peer, &m);
	assert_true(fd >= 0);
	assert_int_equal(recv_region(peer, &m), -1); /* exactly one packet */
	assert_int_equal(m.magic, VGPU_REGION_MSG_MAGIC);
	assert_int_equal(m.handle, r[0]);
	assert_int_equal(m.size, 2 * page);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, 2 * page);
	seals = fcntl(fd, F_GET_SEALS);
	assert_true(seals >= 0);
	assert_int_equal(seals & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL),
			 F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL);
	assert_int_equal(ftruncate(fd, 0), -1);
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE), -1);

	/* the client's mapping and the worker's are the same memory */
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(p != MAP_FAILED);
	close(fd);
	reg = handle_table_get(&f->s.h.regions, (uint32_t)r[0]);
	assert_non_null(reg);
	p[page + 7] = 0x5a;
	assert_int_equal(((uint8_t *)reg->base)[page + 7], 0x5a);
	munmap(p, 2 * page);
	close_socket(&f->s, peer);
	fx_free(f);
}

static void region_copies_use_the_region_in_one_call(void **state)
{
	struct fx *f = fx_new(0);
	const uint64_t big = 4 * DATA_SIZE; /* more than the data area */
	struct worker_region *reg;
	uint64_t dev;
	uint32_t h;
	int peer;

	give_socket(&f->s, &peer);
	dev = alloc(&f->s, big);
	h = region_create(&f->s, peer, big);
	reg = handle_table_get(&f->s.h.regions, h);
	assert_non_null(reg);

	assert_int_equal(run(&f->s,
			     region_copy_sqe(VGPU_OP_MEMCPY_REGION_HTOD, h,
					     dev + 16, 100, big - 200),
			     NULL),
			 CUDA_SUCCESS);
	assert_int_equal(st.htod, 1);
	assert_ptr_equal(st.host, (uint8_t *)reg->base + 100);
	assert_int_equal(st.dev, dev + 16);
	assert_int_equal(st.n, big - 200);
	assert_int_equal(
		run(&f->s,
		    region_copy_sqe(VGPU_OP_MEMCPY_REGION_DTOH, h, dev, 0, big),
		    NULL),
		CUDA_SUCCESS);
	assert_int_equal(st.dtoh, 1);
	assert_ptr_equal(st.host, reg->base);
	assert_int_equal(st.dev, dev);
	assert_int_equal(st.n, big);
	assert_int_equal(f->s.bytes_copied, 2 * big - 200);

	/* past the region's end, wrapping, outside the allocation */
	assert_int_equal(
		run(&f->s,
		    region_copy_sqe(VGPU_OP_MEMCPY_REGION_HTOD, h, dev, 1, big),
		    NULL),
		CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s,
			     region_copy_sqe(VGPU_OP_MEMCPY_REGION_DTOH, h, dev,
					     UINT64_MAX - 8, 16),
			     NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s,
			     region_copy_sqe(VGPU_OP_MEMCPY_REGION_HTOD, h,
					     dev + 64, 0, big),
			     NULL),
			 CUDA_ERROR_INVALID_VALUE);
	/* unknown handle, unknown stream */
	assert_int_equal(run(&f->s,
			     region_copy_sqe(VGPU_OP_MEMCPY_REGION_HTOD, h + 1,
					     dev, 0, 16),
			     NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	{
		struct vgpu_sqe q = region_copy_sqe(VGPU_OP_MEMCPY_REGION_HTOD,
						    h, dev, 0, 16);

		q.stream = 77;
		assert_int_equal(run(&f->s, q, NULL),
				 CUDA_ERROR_INVALID_HANDLE);
	}
	assert_int_equal(st.htod + st.dtoh, 2);

	/* destroyed: the handle is stale; the bytes are given back */
	{
		struct vgpu_sqe q = sqe(VGPU_OP_HOST_REGION_DESTROY);

		q.handle = h;
		assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
		assert_int_equal(run(&f->s, q, NULL),
				 CUDA_ERROR_INVALID_HANDLE);
	}
	assert_int_equal(f->s.region_bytes, 0);
	assert_int_equal(
		run(&f->s,
		    region_copy_sqe(VGPU_OP_MEMCPY_REGION_HTOD, h, dev, 0, 16),
		    NULL),
		CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(st.htod + st.dtoh, 2);
	close_socket(&f->s, peer);
	fx_free(f);
}

static void regions_belong_to_their_client(void **state)
{
	struct fx *f = fx_new(0);
	struct worker_session *s2 = calloc(1, sizeof(*s2));
	static uint8_t data2[DATA_SIZE];
	uint64_t dev;
	uint32_t theirs;
	int peer, peer2;

	give_socket(&f->s, &peer);
	assert_int_equal(worker_session_init(s2, &f->w, 2, data2, DATA_SIZE),
			 0);
	give_socket(s2, &peer2);
	dev = alloc(&f->s, 4096);
	theirs = region_create(s2, peer2, 4096);
	assert_int_equal(run(&f->s,
			     region_copy_sqe(VGPU_OP_MEMCPY_REGION_HTOD, theirs,
					     dev, 0, 16),
			     NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	{
		struct vgpu_sqe q = sqe(VGPU_OP_HOST_REGION_DESTROY);

		q.handle = theirs;
		assert_int_equal(run(&f->s, q, NULL),
				 CUDA_ERROR_INVALID_HANDLE);
	}
	assert_int_equal(st.htod, 0);
	assert_int_equal(s2->h.regions.live, 1);
	worker_session_fini(s2);
	close_socket(s2, peer2);
	free(s2);
	close_socket(&f->s, peer);
	fx_free(f);
}

static int stub_host_device_ptr(struct backend *b, void *p, uint64_t *dev)
{
	*dev = (uint64_t)(uintptr_t)p + 0x1000; /* any: told as it is */
	return 0;
}

/* HOST_REGION_ADDRESS: the backend's device address of the client's own
 * region; NOT_SUPPORTED without one, or for a region it did not pin. */
static void region_address_is_the_backends_for_own_regions(void **state)
{
	struct fx *f = fx_new(0);
	struct worker_session *s2 = calloc(1, sizeof(*s2));
	static uint8_t data2[DATA_SIZE];
	struct vgpu_sqe q = sqe(VGPU_OP_HOST_REGION_ADDRESS);
	struct worker_region *reg;
	uint32_t mine, theirs;
	uint64_t r[2] = {0, 0};
	int peer, peer2;

	give_socket(&f->s, &peer);
	assert_int_equal(worker_session_init(s2, &f->w, 2, data2, DATA_SIZE),
			 0);
	give_socket(s2, &peer2);
	mine = region_create(&f->s, peer, 8192);
	region_create(s2, peer2, 4096);
	theirs = region_create(s2, peer2, 4096); /* a handle f->s lacks */
	assert_int_not_equal(theirs, mine);
	q.handle = mine; /* the stub backend has no host_device_ptr */
	assert_int_equal(run(&f->s, q, r), CUDA_ERROR_NOT_SUPPORTED);
	pin_ops = stub_ops;
	pin_ops.host_device_ptr = stub_host_device_ptr;
	f->w.ops = &pin_ops;
	assert_int_equal(run(&f->s, q, r), CUDA_SUCCESS);
	reg = handle_table_get(&f->s.h.regions, mine);
	assert_non_null(reg);
	assert_int_equal(r[0], (uint64_t)(uintptr_t)reg->base + 0x1000);
	assert_int_equal(r[1], 8192);
	q.handle = theirs;
	assert_int_equal(run(&f->s, q, r), CUDA_ERROR_INVALID_HANDLE);
	q.handle = 0;
	assert_int_equal(run(&f->s, q, r), CUDA_ERROR_INVALID_HANDLE);
	q.handle = 0xdeadbeef;
	assert_int_equal(run(&f->s, q, r), CUDA_ERROR_INVALID_HANDLE);
	/* a backend that pins regions maps only those it pinned */
	pin_ops.host_register = stub_host_register;
	pin_ops.host_unregister = stub_host_unregister;
	reg->pinned = 0;
	q.handle = mine;
	assert_int_equal(run(&f->s, q, r), CUDA_ERROR_NOT_SUPPORTED);
	f->w.ops = &stub_ops;
	worker_session_fini(s2);
	close_socket(s2, peer2);
	free(s2);
	close_socket(&f->s, peer);
	fx_free(f);
}

/*
 * The vGPU's cap on all clients' regions together (lowered here to three
 * pages): reserved at creation, whichever client asks, and given back
 * when a region is destroyed or its session ends.
 */
static void regions_are_capped_per_vgpu(void **state)
{
	struct fx *f = fx_new(0);
	struct worker_session *s2 = calloc(1, sizeof(*s2));
	static uint8_t data2[DATA_SIZE];
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), r[2];
	uint32_t mine;
	int peer, peer2;

	f->w.region_total_max = 3 * page;
	give_socket(&f->s, &peer);
	assert_int_equal(worker_session_init(s2, &f->w, 2, data2, DATA_SIZE),
			 0);
	give_socket(s2, &peer2);
	mine = region_create(&f->s, peer, 2 * page);
	assert_int_equal(f->w.region_total, 2 * page);
	/* the other client's two pages do not fit, one does */
	assert_int_equal(run(s2, region_create_sqe(2 * page), r),
			 CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(f->w.region_total, 2 * page);
	region_create(s2, peer2, page);
	assert_int_equal(f->w.region_total, 3 * page);
	assert_int_equal(run(&f->s, region_create_sqe(1), r),
			 CUDA_ERROR_OUT_OF_MEMORY);
	{
		struct vgpu_sqe q = sqe(VGPU_OP_HOST_REGION_DESTROY);

		q.handle = mine;
		assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	}
	assert_int_equal(f->w.region_total, page);
	region_create(s2, peer2, 2 * page);
	assert_int_equal(f->w.region_total, 3 * page);
	worker_session_fini(s2); /* its regions go with it */
	assert_int_equal(f->w.region_total, 0);
	assert_int_equal(f->w.region_count, 0);
	/* in number too: a vGPU whose regions are at the count cap gets no
	 * more, however small */
	f->w.region_count = WORKER_REGIONS_COUNT_MAX;
	assert_int_equal(run(&f->s, region_create_sqe(1), r),
			 CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(f->w.region_count, WORKER_REGIONS_COUNT_MAX);
	assert_int_equal(f->w.region_total, 0);
	f->w.region_count = 0;
	close_socket(s2, peer2);
	free(s2);
	close_socket(&f->s, peer);
	fx_free(f);
}

static void
region_create_fails_cleanly_when_the_client_does_not_read(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_region_msg m;
	int peer, fd, sndbuf = 1, rc = CUDA_SUCCESS;
	uint32_t made = 0, got = 0;
	uint64_t r[2];

	pin_ops = stub_ops;
	pin_ops.host_register = stub_host_register;
	pin_ops.host_unregister = stub_host_unregister;
	f->w.ops = &pin_ops;
	pins = unpins = 0;
	give_socket(&f->s, &peer);
	assert_int_equal(setsockopt(f->s.sock, SOL_SOCKET, SO_SNDBUF, &sndbuf,
				    sizeof(sndbuf)),
			 0);
	while (made < 10000) {
		rc = run(&f->s, region_create_sqe(4096), r);
		if (rc)
			break;
		made++;
	}
	assert_int_equal(rc, CUDA_ERROR_OUT_OF_MEMORY);
	assert_true(made > 0);
	/* the failed one was undone: unpinned, unmapped, out of the table */
	assert_int_equal(f->s.h.regions.live, made);
	assert_int_equal(f->s.region_bytes, (uint64_t)made * 4096);
	assert_int_equal(pins, made + 1);
	assert_int_equal(unpins, 1);
	while ((fd = recv_region(peer, &m)) >= 0) {
		close(fd);
		got++;
	}
	assert_int_equal(got, made);
	/* the client reads again: regions work again */
	region_create(&f->s, peer, 4096);
	close_socket(&f->s, peer);
	fx_free(f); /* unpins every region before unmapping it */
	assert_int_equal(pins, unpins);
}

static struct vgpu_sqe gate_sqe(uint32_t stream, uint64_t off, uint64_t seq)
{
	struct vgpu_sqe q = sqe(VGPU_OP_STREAM_GATE);

	q.stream = stream;
	q.a[0] = off;
	q.a[1] = seq;
	return q;
}

/*
 * The client opens gate seq of stream handle h (at off in the data area);
 * waits (up to 2 s) for the pump to copy it and the worker to hand on
 * what the gate held. Returns whether nothing is held any more.
 */
static int gate_open_and_flush(struct fx *f, uint64_t off, uint64_t seq)
{
	struct vgpu_gate *g = (struct vgpu_gate *)(f->data + off);

	__atomic_store_n(&g->open, seq, __ATOMIC_RELEASE);
	for (int i = 0; i < 2000; i++) {
		worker_defer_flush(&f->s);
		if (!f->s.held)
			return 1;
		usleep(1000);
	}
	return 0;
}

static void
stream_gates_check_their_input_and_never_trust_the_client(void **state)
{
	struct fx *f = fx_new(0);
	struct vgpu_gate *g = (struct vgpu_gate *)(f->data + 4096);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs"), s1;
	struct vgpu_sqe q;
	int launches;

	memset(&gst, 0, sizeof(gst));
	/* no pump, or a data area the GPU cannot reach: not supported */
	assert_int_equal(run(&f->s, gate_sqe(0, 4096, 1), NULL),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(worker_gate_init(&f->w), 0);
	assert_int_equal(run(&f->s, gate_sqe(0, 4096, 1), NULL),
			 CUDA_ERROR_NOT_SUPPORTED);
	f->s.data_gpu_ok = 1;

	/* bad offsets, sequence 0, unknown stream */
	assert_int_equal(run(&f->s, gate_sqe(0, 4100, 1), NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s, gate_sqe(0, DATA_SIZE - 8, 1), NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s, gate_sqe(0, UINT64_MAX - 7, 1), NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s, gate_sqe(0, 4096, 0), NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s, gate_sqe(77, 4096, 1), NULL),
			 CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(gst.writes, 0);

	/* a good one: reached is written in the data area at once; what
	 * follows on the stream is held in the worker, not given to the
	 * GPU, and the stream answers "not ready" */
	s1 = create(&f->s, VGPU_OP_STREAM_CREATE);
	assert_int_equal(run(&f->s, gate_sqe(s1, 4096, 5), NULL), CUDA_SUCCESS);
	assert_ptr_equal(gst.write_p, &g->reached);
	assert_int_equal(gst.write_v, 5);
	launches = st.launches;
	q = launch_sqe(k, 1, 1, 1, 1, 1, 1);
	q.stream = s1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.launches, launches);
	q = sqe(VGPU_OP_STREAM_QUERY);
	q.stream = s1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_NOT_READY);
	/* other streams go on */
	assert_int_equal(run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			 CUDA_SUCCESS);
	assert_int_equal(st.launches, launches + 1);
	/* the same or a smaller number again is refused */
	assert_int_equal(run(&f->s, gate_sqe(s1, 4096, 5), NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(run(&f->s, gate_sqe(s1, 4096, 3), NULL),
			 CUDA_ERROR_INVALID_VALUE);
	/* a second gate queues behind the first: not reached yet */
	assert_int_equal(run(&f->s, gate_sqe(s1, 4096, 6), NULL), CUDA_SUCCESS);
	assert_int_equal(gst.write_v, 5);

	/* the client opens beyond what was issued: the pump copies no
	 * further than 6; the launch goes, then the second gate is reached
	 * and passes */
	assert_true(gate_open_and_flush(f, 4096, 1000));
	assert_int_equal(st.launches, launches + 2);
	assert_int_equal(gst.write_v, 6);
	/* moved backwards: ignored */
	__atomic_store_n(&g->open, 0, __ATOMIC_RELEASE);
	usleep(20000);
	q = launch_sqe(k, 1, 1, 1, 1, 1, 1);
	q.stream = s1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.launches, launches + 3);

	/* a closed gate is opened when its stream is destroyed, and what
	 * it held goes first */
	assert_int_equal(run(&f->s, gate_sqe(s1, 4096, 9), NULL), CUDA_SUCCESS);
	q = launch_sqe(k, 1, 1, 1, 1, 1, 1);
	q.stream = s1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.launches, launches + 3);
	q = sqe(VGPU_OP_STREAM_DESTROY);
	q.handle = s1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.launches, launches + 4);
	assert_null(f->s.held);
	/* and what a gate of the default stream holds is dropped when the
	 * client goes */
	assert_int_equal(run(&f->s, gate_sqe(0, 4096 + 16, 2), NULL),
			 CUDA_SUCCESS);
	assert_int_equal(run(&f->s, launch_sqe(k, 1, 1, 1, 1, 1, 1), NULL),
			 CUDA_SUCCESS);
	assert_non_null(f->s.held);
	assert_int_equal(st.launches, launches + 4);
	fx_free(f);
	assert_int_equal(st.launches, launches + 4);
}

/*
 * Work held behind a host function keeps CUDA's order across streams: an
 * event recorded behind the gate holds a stream that waits for it, a
 * query of the event says "not ready", a synchronise of the waiting
 * stream hands everything on once the gate opens, and records of one
 * event reach the backend in the order they were made.
 */
static void deferred_work_keeps_event_order(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "noargs"),
		 k = get_kernel(f, lib, "noargs"), s1, s2, ev;
	struct vgpu_sqe q;
	int launches, records;

	memset(&gst, 0, sizeof(gst));
	assert_int_equal(worker_gate_init(&f->w), 0);
	f->s.data_gpu_ok = 1;
	s1 = create(&f->s, VGPU_OP_STREAM_CREATE);
	s2 = create(&f->s, VGPU_OP_STREAM_CREATE);
	ev = create(&f->s, VGPU_OP_EVENT_CREATE);
	launches = st.launches;
	records = st.records;

	/* s1: gate, record ev; s2: wait for ev, launch */
	assert_int_equal(run(&f->s, gate_sqe(s1, 4096, 1), NULL), CUDA_SUCCESS);
	q = sqe(VGPU_OP_EVENT_RECORD);
	q.handle = ev;
	q.stream = s1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.records, records);
	q = sqe(VGPU_OP_EVENT_QUERY);
	q.handle = ev;
	assert_int_equal(run(&f->s, q, NULL), CUDA_ERROR_NOT_READY);
	q = sqe(VGPU_OP_STREAM_WAIT_EVENT);
	q.handle = ev;
	q.stream = s2;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q = launch_sqe(k, 1, 1, 1, 1, 1, 1);
	q.stream = s2;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.launches, launches); /* s2 is held too */

	/* a record of ev on a free stream comes after the held one: it is
	 * held too; the client opens the gate, a synchronise of s2 hands
	 * everything on */
	q = sqe(VGPU_OP_EVENT_RECORD);
	q.handle = ev;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.records, records);
	{
		struct vgpu_gate *g = (struct vgpu_gate *)(f->data + 4096);

		__atomic_store_n(&g->open, 1, __ATOMIC_RELEASE);
	}
	q = sqe(VGPU_OP_STREAM_SYNC);
	q.stream = s2;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.launches, launches + 1);
	q = sqe(VGPU_OP_CTX_SYNC);
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.records, records + 2);
	assert_null(f->s.held);
	fx_free(f);
}

static uint64_t ms_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000ull + t.tv_nsec / 1000000;
}

/* Opens the gate at arg after 300 ms: a host function that runs long. */
static void *open_later(void *arg)
{
	usleep(300000);
	__atomic_store_n((uint64_t *)arg, 1, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Found in review: a launch that has to wait for room (the client holds
 * back WORKER_DEFER_MAX entries) runs with its own parameters, not the
 * last replayed launch's.
 */
static void a_launch_that_waits_for_room_keeps_its_parameters(void **state)
{
	struct fx *f = fx_new(0);
	uint32_t lib = load_library(f, "saxpy"),
		 k = get_kernel(f, lib, "saxpy"), s1;
	float a = 1.0f;
	uint64_t x = 0x500000001000ull;
	struct vgpu_sqe q;
	int32_t n = 1000;
	int i;

	memset(&gst, 0, sizeof(gst));
	assert_int_equal(worker_gate_init(&f->w), 0);
	f->s.data_gpu_ok = 1;
	s1 = create(&f->s, VGPU_OP_STREAM_CREATE);
	assert_int_equal(run(&f->s, gate_sqe(s1, 4096, 1), NULL), CUDA_SUCCESS);
	memcpy(f->data + 200, &a, 4);
	memcpy(f->data + 208, &x, 8);
	memcpy(f->data + 216, &n, 4);
	for (i = 0; i < 65535; i++) {
		q = launch_sqe(k, 1, 1, 1, 1, 1, 1);
		q.a[4] = 200;
		q.a[5] = 20;
		q.stream = s1;
		assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	}
	__atomic_store_n(&((struct vgpu_gate *)(f->data + 4096))->open, 1,
			 __ATOMIC_RELEASE);
	n = 42;
	memcpy(f->data + 216, &n, 4);
	q = launch_sqe(k, 1, 1, 1, 1, 1, 1);
	q.a[4] = 200;
	q.a[5] = 20;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(st.p_n, 42);
	assert_null(f->s.held);
	fx_free(f);
}

/*
 * Found in review: a record of an event whose earlier record is held
 * behind a host function, on a stream with nothing held, and a destroy of
 * that event, return at once (the client's other calls go on); the
 * records still reach the backend in order once the function has run,
 * and the event goes after them.
 */
static void
records_and_destroys_behind_a_host_function_do_not_wait(void **state)
{
	struct fx *f = fx_new(0);
	uint64_t *open = &((struct vgpu_gate *)(f->data + 4096))->open;
	uint32_t s1, s2, ev;
	struct vgpu_sqe q;
	int records, events;
	pthread_t t;
	uint64_t t0;

	memset(&gst, 0, sizeof(gst));
	assert_int_equal(worker_gate_init(&f->w), 0);
	f->s.data_gpu_ok = 1;
	s1 = create(&f->s, VGPU_OP_STREAM_CREATE);
	s2 = create(&f->s, VGPU_OP_STREAM_CREATE);
	ev = create(&f->s, VGPU_OP_EVENT_CREATE);
	records = st.records;
	events = st.events;
	assert_int_equal(run(&f->s, gate_sqe(s1, 4096, 1), NULL), CUDA_SUCCESS);
	q = sqe(VGPU_OP_EVENT_RECORD);
	q.handle = ev;
	q.stream = s1;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_int_equal(pthread_create(&t, NULL, open_later, open), 0);
	t0 = ms_now();
	q.stream = s2;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	q = sqe(VGPU_OP_EVENT_DESTROY);
	q.handle = ev;
	assert_int_equal(run(&f->s, q, NULL), CUDA_SUCCESS);
	assert_true(ms_now() - t0 < 200);
	assert_int_equal(st.records, records);
	assert_int_equal(st.events, events); /* not yet */
	pthread_join(t, NULL);
	assert_true(gate_open_and_flush(f, 4096, 1));
	assert_int_equal(st.records, records + 2);
	assert_int_equal(st.events, events - 1);
	fx_free(f);
}

static int failing_write_host(struct backend *b, struct backend_stream *s,
			      uint64_t *p, uint64_t v)
{
	return CUDA_ERROR_NOT_SUPPORTED;
}

/* Found in review: a gate whose "reached" write cannot be queued is the
 * client's error (its library then calls the function itself). */
static void a_gate_that_cannot_be_reached_is_an_error(void **state)
{
	struct fx *f = fx_new(0);
	static struct backend_ops ops;

	ops = stub_ops;
	ops.stream_write_host = failing_write_host;
	f->w.ops = &ops;
	assert_int_equal(worker_gate_init(&f->w), 0);
	f->s.data_gpu_ok = 1;
	assert_int_equal(run(&f->s, gate_sqe(0, 4096, 1), NULL),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_null(f->s.held);
	f->w.ops = &stub_ops;
	fx_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(exec_completes_a_nop_with_its_tag),
		cmocka_unit_test(exec_rejects_unknown_opcodes),
		cmocka_unit_test(exec_rejects_nonzero_flags),
		cmocka_unit_test(
			copy_rejects_data_ranges_outside_the_data_area),
		cmocka_unit_test(
			copy_rejects_device_ranges_outside_one_allocation),
		cmocka_unit_test(copy_of_zero_bytes_does_not_reach_the_backend),
		cmocka_unit_test(exec_refuses_another_clients_memory),
		cmocka_unit_test(exec_rejects_unknown_and_stale_handles),
		cmocka_unit_test(handles_are_not_reused_quickly),
		cmocka_unit_test(stream_create_stops_at_the_per_client_limit),
		cmocka_unit_test(stream_ops_take_the_stream_from_either_field),
		cmocka_unit_test(launch_rejects_bad_dimensions),
		cmocka_unit_test(launch_checks_and_passes_a_cluster_shape),
		cmocka_unit_test(
			launch_rejects_a_parameter_buffer_of_the_wrong_size),
		cmocka_unit_test(
			launch_passes_a_private_copy_of_the_parameters),
		cmocka_unit_test(
			memset_checks_element_size_value_and_alignment),
		cmocka_unit_test(
			get_kernel_checks_the_name_and_the_info_buffer),
		cmocka_unit_test(library_unload_invalidates_its_kernels),
		cmocka_unit_test(get_global_checks_the_name_and_the_library),
		cmocka_unit_test(kernel_clusters_are_checked),
		cmocka_unit_test(kernel_names_are_checked),
		cmocka_unit_test(tensor_maps_are_checked),
		cmocka_unit_test(limits_are_checked),
		cmocka_unit_test(
			copies_reach_a_module_variable_while_it_is_loaded),
		cmocka_unit_test(module_variables_belong_to_their_client),
		cmocka_unit_test(staging_rejects_gaps_and_oversized_images),
		cmocka_unit_test(
			staging_rejects_pieces_past_the_image_size_limit),
		cmocka_unit_test(failed_library_load_still_frees_the_stage),
		cmocka_unit_test(mem_alloc_and_free_are_checked),
		cmocka_unit_test(
			events_check_flags_and_report_elapsed_time_bits),
		cmocka_unit_test(device_info_needs_a_large_enough_buffer),
		cmocka_unit_test(sticky_backend_errors_raise_a_gpu_fault),
		cmocka_unit_test(watchdog_faults_a_kernel_past_the_time_limit),
		cmocka_unit_test(watchdog_keeps_up_with_many_short_kernels),
		cmocka_unit_test(
			watchdog_records_a_marker_per_launch_and_none_itself),
		cmocka_unit_test(
			watchdog_times_each_kernel_of_a_chain_on_its_own),
		cmocka_unit_test(
			watchdog_stops_a_hang_in_a_chain_at_its_own_limit),
		cmocka_unit_test(watchdog_does_not_count_a_streams_waits),
		cmocka_unit_test(watchdog_marks_in_the_launch_or_after_it),
		cmocka_unit_test(
			watchdog_stops_a_kernel_running_past_its_marker),
		cmocka_unit_test(watchdog_allows_the_tail_of_an_early_marker),
		cmocka_unit_test(launch_cooperative_is_bounded_by_the_slice),
		cmocka_unit_test(watchdog_groups_a_backlog_beyond_its_ring),
		cmocka_unit_test(watchdog_leaves_a_waited_stream_alone),
		cmocka_unit_test(region_create_checks_sizes_and_the_socket),
		cmocka_unit_test(region_create_passes_one_sealed_memfd),
		cmocka_unit_test(region_copies_use_the_region_in_one_call),
		cmocka_unit_test(regions_belong_to_their_client),
		cmocka_unit_test(
			region_address_is_the_backends_for_own_regions),
		cmocka_unit_test(regions_are_capped_per_vgpu),
		cmocka_unit_test(
			region_create_fails_cleanly_when_the_client_does_not_read),
		cmocka_unit_test(
			stream_gates_check_their_input_and_never_trust_the_client),
		cmocka_unit_test(deferred_work_keeps_event_order),
		cmocka_unit_test(
			a_launch_that_waits_for_room_keeps_its_parameters),
		cmocka_unit_test(
			records_and_destroys_behind_a_host_function_do_not_wait),
		cmocka_unit_test(a_gate_that_cannot_be_reached_is_an_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
