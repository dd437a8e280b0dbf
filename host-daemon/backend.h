/* SPDX-License-Identifier: MIT */
/*
 * The GPU as vgpu-worker sees it: a table of operations with two
 * implementations, "cuda" (libcuda.so.1 through dlopen; green contexts,
 * the virtual memory API, libraries) and "sim" (a CPU simulator for CI).
 * The worker never asks which one it has.
 *
 * Every operation returns a CUresult value (0 = CUDA_SUCCESS). Inputs are
 * already validated by the worker: pointers lie inside mapped memory of
 * this vGPU, handles are live, sizes are within limits.
 *
 * Threads: the worker serves each client from its own thread. A backend
 * must allow concurrent calls from several threads; thread_attach() is
 * called once on each such thread before any other call.
 */
#ifndef VGPU_BACKEND_H
#define VGPU_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <vgpu/control.h>
#include <vgpu/protocol.h>

struct backend;	       /* one vGPU slice on one GPU */
struct backend_stream; /* in-order queue of work */
struct backend_event;
struct backend_library;
struct backend_kernel;

/* What a resize did: for the log, VGPU_CTL_RESIZED and the benchmark. */
struct backend_resize_info {
	uint32_t sms;	    /* SMs of the new slice */
	uint32_t streams;   /* streams switched */
	uint32_t waits;	    /* of them, with work pending: an event wait */
	uint64_t build_ns;  /* the new context, built beside the clients */
	uint64_t switch_ns; /* the switch: new submissions waited this */
	uint64_t after_ns;  /* after it, before resize returns */
};

/* A migration being prepared (backend-private). */
struct backend_move;

/* What a migration did (migrate_commit). */
struct backend_move_info {
	uint32_t sms;	     /* SMs of the new slice */
	uint32_t peer;	     /* 1: copied GPU to GPU; 0: through the host */
	uint64_t bytes;	     /* memory copied */
	uint64_t prepare_ns; /* migrate_prepare (the clients ran on) */
	uint64_t prepare_slice_ns;  /* of which: the target's context */
	uint64_t prepare_create_ns; /* of which: target memory made, mapped */
	uint64_t prepare_access_ns; /* of which: its access set */
	uint64_t copy_ns;	    /* commit: the copy */
	uint64_t remap_ns;	    /* commit: unmap the old, map the new */
	uint64_t switch_ns; /* commit: streams, events, module variables */
	uint64_t commit_ns; /* commit, all of it */
};

/* KERNEL_CLUSTERS, checked by the worker (worker_exec.c). cluster[] all
 * 0: none given, the kernel's own required size applies. */
struct backend_cluster_query {
	uint32_t grid[3], block[3], shared;
	uint32_t cluster[3];
	int policy; /* CUclusterSchedulingPolicy */
	int query;  /* enum vgpu_cluster_query */
};

/* How launch_marked recorded its marker. */
enum backend_marked {
	BACKEND_MARKED_NOT = 0,	  /* not recorded: the worker records it */
	BACKEND_MARKED_AFTER = 1, /* recorded after the kernel */
	/* recorded by the launch: completes when every block has ended or
	 * has triggered its dependents (programmatic launch), maybe early */
	BACKEND_MARKED_EARLY = 2,
};

struct backend_ops {
	const char *name; /* "cuda" or "sim" */
	uint32_t kind;	  /* enum vgpu_backend_kind */

	/* Describe up to max GPUs; returns the count, or -1 with err set. */
	int (*probe)(struct vgpu_gpu_info *gpus, int max, char *err,
		     size_t errlen);

	/* Bring up a slice: device, SM groups (green context), VA range
	 * reserved at exactly cfg->va_base. On failure returns a CUresult
	 * and a sentence in err. */
	int (*open)(struct backend **out, const struct vgpu_worker_config *cfg,
		    char *err, size_t errlen);
	void (*close)(struct backend *b);
	int (*thread_attach)(struct backend *b);
	void (*device_info)(struct backend *b, struct vgpu_device_info *info);

	/* Physical memory: back [va, va + size) (granule aligned, inside
	 * the reserved range) with memory, or release it. */
	uint64_t (*granularity)(struct backend *b);
	int (*mem_map)(struct backend *b, uint64_t va, uint64_t size);
	int (*mem_unmap)(struct backend *b, uint64_t va, uint64_t size);

	/* Optional (NULL when not needed): pin host memory that copies go
	 * through (a client's ring data area), so they are DMA rather than
	 * staged by the driver. Called on a thread_attach()ed thread. */
	int (*host_register)(struct backend *b, void *p, size_t n);
	void (*host_unregister)(struct backend *b, void *p);
	/* Optional (NULL: NOT_SUPPORTED): the device address of host memory
	 * at p that host_register pinned (the sim: any), for kernels to read
	 * and write it (mapped host memory). */
	int (*host_device_ptr)(struct backend *b, void *p, uint64_t *dev);

	/* Copies are ordered on the stream; the host-side ones return once
	 * the host buffer may be reused (htod) or holds the data (dtoh). */
	int (*memcpy_htod)(struct backend *b, struct backend_stream *s,
			   uint64_t dst, const void *src, size_t n);
	int (*memcpy_dtoh)(struct backend *b, struct backend_stream *s,
			   void *dst, uint64_t src, size_t n);
	int (*memcpy_dtod)(struct backend *b, struct backend_stream *s,
			   uint64_t dst, uint64_t src, size_t n);
	int (*memset)(struct backend *b, struct backend_stream *s, uint64_t dst,
		      uint32_t value, uint32_t elem_size, size_t count);

	/* Code. library_get_kernel fills the parameter layout (from
	 * cuKernelGetParamInfo on cuda, from the twin table on sim). */
	int (*library_load)(struct backend *b, const void *image, size_t len,
			    struct backend_library **out);
	void (*library_unload)(struct backend *b, struct backend_library *l);
	int (*library_get_kernel)(struct backend *b, struct backend_library *l,
				  const char *name, struct backend_kernel **out,
				  struct vgpu_kernel_info *layout);
	/* A module-scope variable (__device__, __constant__) of l: its
	 * address and size. Not inside the VA window: the worker allows the
	 * owning client's copies to it while l is loaded. */
	int (*library_get_global)(struct backend *b, struct backend_library *l,
				  const char *name, uint64_t *dptr,
				  uint64_t *bytes);
	/* Optional (NULL: NOT_SUPPORTED). How many kernels l has, and the
	 * name of kernel index (NULL past the end; the backend's, valid
	 * while l is loaded). */
	int (*library_kernel_name)(struct backend *b, struct backend_library *l,
				   uint32_t index, const char **name,
				   uint32_t *count);
	/* Optional (NULL: NOT_SUPPORTED). A kernel's attributes
	 * (CUfunction_attribute; set: the worker allows only the dynamic
	 * shared memory limit and the carveout) and its occupancy on this
	 * slice: resident blocks per SM. */
	int (*kernel_get_attribute)(struct backend *b, struct backend_kernel *k,
				    int attr, int *value);
	int (*kernel_set_attribute)(struct backend *b, struct backend_kernel *k,
				    int attr, int value);
	int (*kernel_occupancy)(struct backend *b, struct backend_kernel *k,
				int block, size_t dyn_smem, unsigned int flags,
				int *blocks);
	/* Optional (NULL: NOT_SUPPORTED). A limit (CUlimit) of the slice's
	 * context: set to value first when set, then read into *out. The
	 * worker checked limit and value. */
	int (*ctx_limit)(struct backend *b, int limit, int set, uint64_t value,
			 uint64_t *out);
	/* Optional (NULL: NOT_SUPPORTED). Thread-block clusters of k on
	 * this slice: as many as can be resident at once, or the largest
	 * cluster that can be (q->query). */
	int (*kernel_clusters)(struct backend *b, struct backend_kernel *k,
			       const struct backend_cluster_query *q, int *out);
	/* Optional (NULL: NOT_SUPPORTED). A tensor map encoded as the
	 * request says (its kind and rank checked): 128 bytes into map. */
	int (*tensor_map)(struct backend *b, const struct vgpu_tensor_map *req,
			  uint8_t *map);
	/* cluster: the thread-block cluster shape, or NULL (none); the
	 * worker checked its edges, size and that the grid is a multiple */
	int (*launch)(struct backend *b, struct backend_kernel *k,
		      const uint32_t grid[3], const uint32_t block[3],
		      uint32_t shared_bytes, struct backend_stream *s,
		      void **params, const uint32_t *cluster);
	/* Optional (NULL: NOT_SUPPORTED). A cooperative launch: every block
	 * resident at once (cuLaunchCooperativeKernel); the worker checked
	 * that the slice holds them. */
	int (*launch_cooperative)(struct backend *b, struct backend_kernel *k,
				  const uint32_t grid[3],
				  const uint32_t block[3],
				  uint32_t shared_bytes,
				  struct backend_stream *s, void **params);
	/* Optional (NULL: the worker records e after a launch). launch, with
	 * e recorded on s behind the kernel in the same call: *marked says
	 * whether and how it was (enum backend_marked; a queued kernel whose
	 * marker failed is still a successful launch). */
	int (*launch_marked)(struct backend *b, struct backend_kernel *k,
			     const uint32_t grid[3], const uint32_t block[3],
			     uint32_t shared_bytes, struct backend_stream *s,
			     void **params, const uint32_t *cluster,
			     struct backend_event *e, int *marked);

	/* Streams and events, with CUDA's semantics. */
	int (*stream_create)(struct backend *b, struct backend_stream **out);
	void (*stream_destroy)(struct backend *b, struct backend_stream *s);
	int (*stream_sync)(struct backend *b, struct backend_stream *s);
	int (*stream_query)(struct backend *b, struct backend_stream *s);
	int (*stream_wait_event)(struct backend *b, struct backend_stream *s,
				 struct backend_event *e);
	int (*event_create)(struct backend *b, uint32_t flags,
			    struct backend_event **out);
	void (*event_destroy)(struct backend *b, struct backend_event *e);
	int (*event_record)(struct backend *b, struct backend_event *e,
			    struct backend_stream *s);
	int (*event_sync)(struct backend *b, struct backend_event *e);
	int (*event_query)(struct backend *b, struct backend_event *e);
	int (*event_elapsed)(struct backend *b, struct backend_event *start,
			     struct backend_event *end, float *ms);

	/*
	 * Optional (NULL: no STREAM_GATE): write value to *p once everything
	 * before it on s is done. p lies in a data area that host_register
	 * pinned (any host memory when host_register is NULL). The stream
	 * never waits on the host: the worker holds back what follows a
	 * gate (worker_defer.c).
	 */
	int (*stream_write_host)(struct backend *b, struct backend_stream *s,
				 uint64_t *p, uint64_t value);

	/*
	 * Dynamic partitioning; each optional (NULL: not supported).
	 *
	 * resize: move the slice onto ngroups SM groups (indices as in the
	 * config) while clients keep submitting. The new execution context
	 * is built first; then every stream switches to it between two
	 * operations: work already queued finishes where it is, work
	 * submitted afterwards runs on the new groups, after everything
	 * submitted before it on the same stream. No operation is lost,
	 * repeated or reordered; streams, events, libraries, kernels and
	 * memory stay valid. On success device_info describes the new slice.
	 * On failure the slice is unchanged (after a fatal CUresult the
	 * context is lost) and err says why. One call at a time, on a
	 * thread_attach()ed thread.
	 */
	int (*resize)(struct backend *b, const uint32_t *groups,
		      uint32_t ngroups, struct backend_resize_info *out,
		      char *err, size_t errlen);
	/*
	 * Free what earlier resizes left behind (old contexts) once the work
	 * queued there is done. Never waits for the device: returns
	 * CUDA_ERROR_NOT_READY while something is left, CUDA_SUCCESS when
	 * nothing is, or another CUresult. Same thread rules as resize.
	 */
	int (*resize_reclaim)(struct backend *b);
	/*
	 * Nanoseconds since open during which the slice had at least one
	 * kernel running: the backend's own exact count (any thread).
	 */
	uint64_t (*busy_ns)(struct backend *b);

	/*
	 * Migration (docs/DESIGN.md, "Save, restore and migration"); each
	 * optional (NULL: not supported). Move the slice to SM groups
	 * groups[ngroups] of GPU gpu (the same GPU: a new context there)
	 * keeping every device address: mapped memory is copied to the
	 * target and mapped at the same addresses; streams, events,
	 * libraries and kernels stay valid; a module-scope variable keeps
	 * the address its client was given (its contents are copied).
	 *
	 * prepare runs while the clients go on: the target context, its
	 * streams, physical memory for what is mapped now. commit runs at a
	 * kernel boundary: the worker has stopped every client thread
	 * between two descriptors and drained every stream, so nothing
	 * runs and nothing is submitted; it copies, remaps and switches,
	 * and frees m whether it succeeds or not. On failure nothing
	 * changed (after a fatal CUresult the context is lost) and err says
	 * why ("the target lacks memory"). abort frees an uncommitted m.
	 * What the source held is freed by resize_reclaim. Main thread,
	 * thread_attach()ed.
	 */
	int (*migrate_prepare)(struct backend *b, uint32_t gpu,
			       const uint32_t *groups, uint32_t ngroups,
			       struct backend_move **m, char *err,
			       size_t errlen);
	int (*migrate_commit)(struct backend *b, struct backend_move *m,
			      struct backend_move_info *out, char *err,
			      size_t errlen);
	void (*migrate_abort)(struct backend *b, struct backend_move *m);
};

extern const struct backend_ops backend_cuda_ops;
extern const struct backend_ops backend_sim_ops;

/* The table for a kind, or NULL. */
const struct backend_ops *backend_by_kind(uint32_t kind);
/* "cuda" / "sim" / "auto" -> kind; auto = cuda when a GPU is found. */
int backend_kind_from_name(const char *name, uint32_t *kind);

#endif /* VGPU_BACKEND_H */
