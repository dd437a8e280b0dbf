/* SPDX-License-Identifier: MIT */
/*
 * The simulator's execution engine: what the sim backend uses to run work
 * on a slice the way a GPU would, with CPU threads.
 *
 *   - a stream is an in-order queue served by its own thread;
 *   - a launch is run by the slice's pool of SM threads (thread i plays
 *     SM smids[i]), which take blocks from the grid's atomic counter; the
 *     stream thread waits for the whole grid before its next item;
 *   - events are queue markers, completed (with a CLOCK_MONOTONIC stamp)
 *     when their stream reaches them.
 *
 * This file defines struct backend_stream and struct backend_event for the
 * sim backend. Every call is thread-safe. A NULL stream means the engine's
 * own default stream. Return values are CUresult codes.
 */
#ifndef VGPU_SIM_EXEC_H
#define VGPU_SIM_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "sim_kernel.h"

struct sim_exec;

/* Start the SM threads (one per entry of smids) and the default stream. */
int sim_exec_create(struct sim_exec **out, const uint32_t *smids, uint32_t nsms,
		    char *err, size_t errlen);
/* Stop running blocks, abandon queued work, join every thread, free
 * every stream and event. Nothing may use the engine concurrently. */
void sim_exec_destroy(struct sim_exec *x);

int sim_stream_create(struct sim_exec *x, struct backend_stream **out);
/* CUDA semantics: returns at once; queued work still runs, then the
 * stream's thread exits and is reaped later. */
void sim_stream_destroy(struct sim_exec *x, struct backend_stream *s);
int sim_stream_sync(struct sim_exec *x, struct backend_stream *s);
int sim_stream_query(struct sim_exec *x, struct backend_stream *s);
int sim_stream_wait_event(struct sim_exec *x, struct backend_stream *s,
			  struct backend_event *e);

int sim_event_create(struct sim_exec *x, uint32_t flags,
		     struct backend_event **out);
void sim_event_destroy(struct sim_exec *x, struct backend_event *e);
int sim_event_record(struct sim_exec *x, struct backend_event *e,
		     struct backend_stream *s);
int sim_event_sync(struct sim_exec *x, struct backend_event *e);
int sim_event_query(struct sim_exec *x, struct backend_event *e);
int sim_event_elapsed(struct sim_exec *x, struct backend_event *start,
		      struct backend_event *end, float *ms);

/* Copy n bytes on stream s. With wait set, returns once the copy has run
 * (after everything queued before it); otherwise only queues it. */
int sim_copy(struct sim_exec *x, struct backend_stream *s, void *dst,
	     const void *src, size_t n, int wait);
/* Dynamic shared memory per block: without and with a kernel's opt-in
 * (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES), as on an H100. */
#define SIM_SHARED_DEFAULT 49152
#define SIM_SHARED_OPTIN   232448

/* Stream memory operations on host memory (the backend's stream gates):
 * wait = 0: *p = value once the work before it is done; wait = 1: hold
 * the stream until *p >= value (signed distance, as the GPU compares). */
int sim_host_op(struct sim_exec *x, struct backend_stream *s, uint64_t *p,
		uint64_t value, int wait);
int sim_memset(struct sim_exec *x, struct backend_stream *s, void *dst,
	       uint32_t value, uint32_t elem_size, size_t count);
/*
 * What a grid runs: the twin, and how its blocks find the module-scope
 * variables of the library it came from (copied into sim_block.global and
 * sim_block.library; global may be NULL when there are none). The library
 * must outlive the grid: the worker synchronises before it unloads one.
 */
struct sim_code {
	const struct sim_kernel_desc *k;
	void *(*global)(const struct sim_block *blk, const char *name);
	const void *library;
};

/* Queue a grid of code->k; the parameters are copied before returning. */
int sim_launch(struct sim_exec *x, struct backend_stream *s,
	       const struct sim_code *code, const uint32_t grid[3],
	       const uint32_t block[3], uint32_t shared_bytes, void **params);

/*
 * Move the slice onto other SMs (one call at a time): a new pool of SM
 * threads is started first, then grids handed out from then on run on it;
 * grids already handed out finish on the old SMs, whose threads then exit.
 * *switch_ns: how long new grids were held back by the swap.
 */
int sim_exec_resize(struct sim_exec *x, const uint32_t *smids, uint32_t nsms,
		    uint64_t *switch_ns, char *err, size_t errlen);
/* Join the old pools whose threads have exited: CUDA_ERROR_NOT_READY while
 * one is still running a grid, else CUDA_SUCCESS. Never blocks. */
int sim_exec_reclaim(struct sim_exec *x);
/* Nanoseconds since create during which at least one grid was running. */
uint64_t sim_exec_busy_ns(struct sim_exec *x);

/* The parameter layout of a twin: natural alignment, min(size, 8). */
void sim_param_layout(const struct sim_kernel_desc *k,
		      struct vgpu_kernel_info *layout);

#endif /* VGPU_SIM_EXEC_H */
