/* SPDX-License-Identifier: MIT */
/*
 * vgpu-worker: the process that owns one vGPU. Internal interfaces between
 * its files:
 *
 *   worker_main.c      process: arguments, config, ctl socket, stats, faults
 *   worker_client.c    one thread per client: its ring, doorbells, lifetime
 *   worker_channel.c   checks of a VM channel (VGPU_CTL_CHANNEL)
 *   worker_exec.c      descriptor validation (trusted form) and execution
 *   worker_handles.c   per-client handle tables
 *   worker_watchdog.c  kernel time limit: a marker per launch and wait
 *   worker_resize.c    resize / slice moves, change counter (worker_part.h)
 *   worker_load.c      the workload analyzer's load reports (worker_part.h)
 *   worker_sched.c     holds and activity edges for vgpud's scheduler
 *   worker_adopt.c     re-adoption by a restarted vgpud (ctl_path)
 *   worker_state*.c    save, restore, migration, save points
 *                      (worker_state.h)
 *   mem_suballoc.c     the VA window's sub-allocator (pure logic)
 *   ctl_msg.c          control-message transport (shared with vgpud)
 *
 * Locks, outermost first: clients_lock (the client list, held only for
 * list work: never across a backend call), the watchdog's registry lock,
 * mem_lock (the sub-allocator; held across the map/unmap callbacks), a
 * watchdog queue's pop_lock. A fault may be raised with any of the inner
 * ones held; the fault path takes only clients_lock.
 */
#ifndef VGPU_WORKER_H
#define VGPU_WORKER_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <vgpu/control.h>
#include <vgpu/protocol.h>
#include <vgpu/ring.h>

#include "backend.h"
#include "mem_suballoc.h"
#include "worker_handles.h"

/* Bound on live allocations per vGPU: caps the bookkeeping's memory. */
#define WORKER_MAX_ALLOCS (1u << 20)
/* Clients per vGPU when the config says 0. */
#define WORKER_DEFAULT_MAX_CLIENTS 64u
#define WORKER_MAX_CLIENTS	   4096u
/* VGPU_CTL_CHANNEL: socket, BAR2 memfd, submit and completion eventfds */
#define WORKER_CHANNEL_FDS 4
/* A channel ring's data area is at least this (worker_channel_check). */
#define WORKER_CHANNEL_MIN_DATA (1u << 20)
/* The owner of allocations brought back from a save point after a fault
 * (worker_state.h): every client of the vGPU may use them. Never a
 * client's id. */
#define WORKER_OWNER_RECOVERED 0xffffffffu
/* Library images kept for state files, per vGPU (worker_state.h) */
#define WORKER_IMAGE_TOTAL_MAX (1ull << 30)
/* Host regions of all clients of a vGPU together: a client may pin
 * VGPU_HOST_REGIONS_MAX_BYTES, but 64 clients must not pin 64 times that */
#define WORKER_REGIONS_TOTAL_MAX (2 * VGPU_HOST_REGIONS_MAX_BYTES)
/* ... and in number: each is a mapping and a memfd of the worker, and
 * small ones would reach vm.max_map_count (65530) long before the bytes */
#define WORKER_REGIONS_COUNT_MAX 16384u

struct worker_client;
struct worker_watchdog;
struct worker_part;
struct worker_sched;

/*
 * Re-adoption by a restarted vgpud (worker_adopt.c): the listener at
 * cfg.ctl_path and the orphan timer. Main thread only, except that the
 * fault path removes the socket file (worker_adopt_unlink).
 */
struct worker_adopt {
	int listen_fd;	      /* -1 without cfg.ctl_path */
	uint64_t dev, ino;    /* the socket file we bound (not a newer one) */
	uint64_t deadline_ns; /* orphan timer; 0 = not running */
};

struct worker {
	struct vgpu_worker_config cfg;
	const struct backend_ops *ops;
	struct backend *be;
	struct vgpu_device_info info; /* from the backend; a resize rewrites
					 it (info_lock; worker_info_copy) */
	int ctl_fd;		      /* -1 while vgpud is gone */
	struct worker_adopt adopt;

	pthread_rwlock_t mem_lock; /* guards mem */
	struct suballoc mem;
	/* mem's figures as the stats last read them (main thread only) */
	uint64_t stats_memory_used, stats_memory_mapped;

	struct worker_watchdog *wd; /* NULL without a time limit */

	pthread_mutex_t clients_lock; /* guards the fields below */
	struct worker_client *clients;
	uint32_t nclients, max_clients, next_client_id;
	uint64_t gone_kernels, gone_bytes; /* counters of clients that left */
	/* host bytes held by all clients' library staging buffers: bounded
	 * per vGPU, not only per client (WORKER_STAGE_TOTAL_MAX) */
	uint64_t staged_bytes;
	int wake_fd; /* eventfd: a client thread has ended */

	/*
	 * A fatal condition (sticky GPU error, watchdog, internal): in
	 * vgpu-worker this reports VGPU_CTL_FAULT, marks the rings dead and
	 * exits without returning. Tests install one that records.
	 */
	void (*fault)(struct worker *w, uint32_t kind, int32_t status,
		      const char *msg);
	int faulting; /* set once by the first fault */

	struct worker_gate_pump *gate_pump; /* worker_gate.c; NULL: no gates */
	struct worker_depart *depart;	    /* worker_depart.c */

	/* dynamic partitioning (worker_part.h): resize, load analyzer */
	struct worker_part *part;  /* NULL until worker_part_init */
	struct worker_coop *coop;  /* worker_coop.c; NULL: not tracked */
	pthread_mutex_t info_lock; /* guards info (clients copy it) */
	uint32_t change_count;	   /* of the composition (atomic) */

	/* scheduling (worker_sched.h): holds, activity edges; NULL until
	 * worker_sched_init */
	struct worker_sched *sched;

	/* save, restore, migration (worker_state.h); state NULL until
	 * worker_state_init */
	struct worker_state *state;
	int frozen;	      /* client threads take no descriptor (atomic) */
	int dirty_all;	      /* a kernel ran since the last save point */
	uint64_t *dirty;      /* granules copies wrote since then; NULL: no
				 save points */
	uint32_t dirty_shift; /* log2 of the granule */
	uint64_t image_bytes; /* library images kept (atomic) */
	/* host regions of all clients, bytes (atomic): reserved before a
	 * region is made, given back when it goes (worker_exec.c) */
	uint64_t region_total;
	uint64_t region_total_max; /* 0: WORKER_REGIONS_TOTAL_MAX */
	uint32_t region_count;	   /* how many (atomic), as region_total */
};

/*
 * One client's execution state: everything worker_exec needs, nothing of
 * the ring or its thread (so tests can drive it directly).
 */
struct worker_session {
	struct worker *w;
	uint32_t owner;	    /* client id: owner of its allocations */
	uint8_t *data;	    /* the ring's data area: the client writes it too */
	uint64_t data_size; /* private copy, never re-read from the ring */
	struct worker_handles h;
	struct worker_stream default_stream; /* stream handle 0 */
	int default_stream_ok;

	/* the client socket, for HOST_REGION_CREATE's memfd (the worker only
	 * sends on it, never blocking); -1: regions are not supported */
	int sock;
	uint64_t region_bytes; /* sum of this client's live regions' sizes */
	/* the GPU can address the data area (pinned, or a backend that needs
	 * no pinning): STREAM_GATE may write there */
	int data_gpu_ok;
	struct worker_gates *gates; /* worker_gate.c; NULL until first used */
	/* the client is gone: its gates stay open (gate pump's lock) */
	int gates_gone;
	/* streams with deferred work (worker_defer.c); how many (atomic:
	 * the gate pump reads it), the first deferred error, and what wakes
	 * the client thread when a gate opens (-1: nothing, it polls) and
	 * tells a wait to give up (NULL: never) */
	struct worker_stream *held;
	uint32_t nheld;
	uint64_t defer_bytes; /* parameters of held launches */
	int defer_error;
	int wake_fd;
	const int *stop;

	uint8_t *stage; /* library image being staged */
	uint64_t stage_len, stage_cap;

	uint8_t *param_buf; /* VGPU_MAX_PARAM_BYTES, 64-byte aligned */
	char name[VGPU_KERNEL_NAME_MAX];

	/* written by the client thread only, read relaxed for stats */
	uint64_t kernels, bytes_copied;
	unsigned int nlogged; /* rejected descriptors logged (rate limit) */
	pid_t pid;	      /* for logs */
};

/* ---- worker_exec.c: the trusted form of a descriptor ----------------- */

struct worker_op {
	uint16_t opcode;
	struct worker_stream *stream; /* where the op runs, when it has one */
	uint32_t handle;	      /* the handle it removes (destroy ops) */
	union {
		uint64_t bytes; /* MEM_ALLOC, LIBRARY_LOAD, REGION_CREATE */
		uint64_t ptr;	/* MEM_FREE */
		uint8_t *out;	/* GET_DEVICE_INFO, TENSOR_MAP */
		uint32_t event_flags;	      /* EVENT_CREATE */
		struct worker_event *event;   /* EVENT_*, STREAM_WAIT_EVENT */
		struct worker_library *lib;   /* LIBRARY_UNLOAD, _GET_GLOBAL
						 (name in session->name) */
		struct worker_region *region; /* HOST_REGION_DESTROY */
		struct {
			uint64_t dev;
			uint8_t *host; /* inside the data area or a region */
			uint64_t bytes;
		} copy; /* MEMCPY_HTOD, MEMCPY_DTOH, MEMCPY_REGION_* */
		struct {
			uint64_t dst, src, bytes;
		} dtod;
		struct {
			uint64_t dst, count;
			uint32_t value, elem;
		} memset;
		struct {
			uint64_t offset;
			const uint8_t *src; /* inside the data area */
			uint64_t bytes;
		} stage;
		struct {
			struct worker_library *lib;
			uint8_t *out; /* struct vgpu_kernel_info in the data
					 area */
		} get_kernel;	      /* the name is in session->name */
		struct {
			struct worker_kernel *k;
			uint32_t grid[3], block[3], shared;
			uint32_t cluster[3]; /* all 0: none */
			bool cooperative;    /* VGPU_LAUNCH_COOPERATIVE */
		} launch; /* the parameters are in session->param_buf */
		struct {
			struct worker_event *start, *end;
		} elapsed;
		struct {
			uint64_t off, seq;
		} gate; /* STREAM_GATE */
		struct {
			struct worker_kernel *k;
			uint64_t a[3];
		} kattr; /* KERNEL_GET/SET_ATTRIBUTE, KERNEL_OCCUPANCY */
		struct {
			struct worker_kernel *k;
			struct backend_cluster_query q;
		} clusters; /* KERNEL_CLUSTERS */
		struct {
			int limit, set;
			uint64_t value;
		} limit; /* CTX_LIMIT */
		struct {
			struct worker_library *lib;
			uint32_t index;
			uint8_t *out; /* in the data area */
			uint64_t room;
		} kname; /* LIBRARY_KERNEL_NAME */
	};
};

/*
 * Check one descriptor (already copied out of the ring) and turn it into
 * the trusted form: handles resolved, ranges checked against this
 * client's allocations (or the module-scope variables of its loaded
 * libraries) and the private data size, names and parameters
 * copied out of the shared data area. Returns CUDA_SUCCESS or the
 * CUresult for the client, with *why naming the problem.
 */
int worker_validate(struct worker_session *s, const struct vgpu_sqe *sqe,
		    struct worker_op *op, const char **why);

/* Run a validated op on the backend. Returns the CUresult; r[] results. */
int worker_execute(struct worker_session *s, const struct worker_op *op,
		   uint64_t r[2]);

/* Validate + execute one descriptor into a completion. */
void worker_exec(struct worker_session *s, const struct vgpu_sqe *sqe,
		 struct vgpu_cqe *cqe);

/* Set up a session: handle tables, parameter buffer, default stream.
 * Call on the client's thread, after ops->thread_attach. s->sock starts
 * at -1 (set it to the client socket to allow host regions). CUresult. */
int worker_session_init(struct worker_session *s, struct worker *w,
			uint32_t owner, uint8_t *data, uint64_t data_size);

/* Free everything of the session: streams (synchronised first), events,
 * libraries, host regions, allocations. Touches nothing of other clients.
 * s->sock is the caller's (not closed). */
void worker_session_fini(struct worker_session *s);

/* The per-vGPU cap on host regions: WORKER_REGIONS_TOTAL_MAX, or lower
 * for tests with VGPU_SIM_REGIONS_TOTAL_MAX (bytes, K/M/G suffix; vgpud
 * passes VGPU_SIM_* on to its workers). Logs a lowered cap. */
void worker_regions_cap_init(struct worker *w);

/* True for the CUDA errors after which the context is unusable. */
int worker_error_is_fatal(int rc);

/* If rc is fatal, raise a GPU fault naming what failed. Returns rc. */
int worker_check(struct worker *w, int rc, const char *what);

/* Sub-allocator callbacks onto the backend (ctx = struct worker). */
int worker_mem_map(void *ctx, uint64_t va, uint64_t len);
int worker_mem_unmap(void *ctx, uint64_t va, uint64_t len);

/* ---- worker_gate.c: stream gates (asynchronous host functions) ----- */

#define WORKER_GATES_PER_SESSION 64 /* streams with gates, per client */

/* The pump (its thread starts on first use). 0 or -errno. */
int worker_gate_init(struct worker *w);
void worker_gate_fini(struct worker *w);
/* STREAM_GATE's checks (a0 = gate offset, a1 = sequence). CUresult. */
/*
 * Cooperative kernels across resizes (worker_coop.c). A client thread
 * holds around a cooperative launch's check and launch, and releases
 * (launched: an event is recorded behind it on bs). The main thread's
 * resize drains first: waits, up to bound_ns, for the cooperative kernels
 * in flight (*left still running: -EBUSY, nothing held), then holds new
 * ones until resume. NULL coop (unit tests): nothing tracked.
 */
int worker_coop_init(struct worker *w);
void worker_coop_fini(struct worker *w);
void worker_coop_hold(struct worker *w);
void worker_coop_release(struct worker *w, struct backend_stream *bs,
			 int launched);
int worker_coop_drain(struct worker *w, uint64_t bound_ns, uint32_t *left,
		      uint64_t *waited_ns);
void worker_coop_resume(struct worker *w);

/* VGPU_OP_TENSOR_MAP (worker_tensor_map.c): the request's place is
 * op->out; exec copies it, has the backend encode it, writes the map. */
int worker_tensor_map_validate(struct worker_session *s,
			       const struct vgpu_sqe *q, struct worker_op *op,
			       const char **why);
int worker_tensor_map_exec(struct worker_session *s,
			   const struct worker_op *op);

int worker_gate_validate(struct worker_session *s, uint64_t off, uint64_t seq,
			 const char **why);
/* Take a slot for st's gates and check that seq is above the last one
 * (when the client enqueues the gate). CUresult. */
int worker_gate_reserve(struct worker_session *s, struct worker_stream *st,
			uint64_t off, uint64_t seq);
/* Enqueue "reached = seq" on st (when the work before it is handed to
 * the backend). CUresult. */
int worker_gate_issue(struct worker_session *s, struct worker_stream *st,
		      uint64_t off, uint64_t seq);
/* The client has opened st's gate seq (or it was opened for it). */
int worker_gate_is_open(struct worker_session *s, struct worker_stream *st,
			uint64_t seq);
/* Open every wait of st (before it is synchronised and destroyed), then
 * give its slot back (after). */
void worker_gate_open_stream(struct worker_session *s,
			     struct worker_stream *st);
void worker_gate_forget_stream(struct worker_session *s,
			       struct worker_stream *st);
/* After every stream of s is gone: free its gate table. */
void worker_gate_session_fini(struct worker_session *s);
/* The client is gone and will run no more host functions: open every
 * gate of s, now and as later ones are enqueued. Any thread. */
void worker_gate_session_gone(struct worker *w, struct worker_session *s);

/* ---- worker_defer.c: work held back behind host functions --------- */

/*
 * Route a validated op: 1 when it was handled here (deferred, or answered
 * NOT_READY: *rc is its status), 0 when it is to run now (after waiting,
 * where it must, for deferred work it depends on; *rc set when that wait
 * failed: the op must not run then). Client thread only.
 */
int worker_defer_route(struct worker_session *s, const struct worker_op *op,
		       int *rc);
/* Hand to the backend what may go now (gates opened). Client thread. */
void worker_defer_flush(struct worker_session *s);
/* Drop every deferred entry (the client is gone). */
void worker_defer_discard(struct worker_session *s);

/* ---- worker_depart.c ------------------------------------------------ */

/* The thread that watches client sockets for a hang-up. 0 or -errno. */
int worker_depart_start(struct worker *w);
void worker_depart_stop(struct worker *w);
/* Watch sock (client id) until it is closed. 0 or -errno. */
int worker_depart_watch(struct worker *w, int sock, uint32_t id);

/* ---- worker_watchdog.c ---------------------------------------------- */

/* Start the watchdog thread when cfg.kernel_time_limit_ms > 0. 0/-errno */
int worker_watchdog_start(struct worker *w);
void worker_watchdog_stop(struct worker *w);

/* Per-stream queue of in-flight launches (NULL *out without watchdog),
 * for bs (NULL: the backend's default stream). */
int worker_watchdog_queue_create(struct worker *w, struct backend_stream *bs,
				 struct worker_wd_queue **out);
/* The stream must be idle (synchronised). Destroys the queue's events. */
void worker_watchdog_queue_destroy(struct worker *w, struct worker_wd_queue *q);
/* The event the next launch on q's stream may record as its marker
 * (ops->launch_marked), or NULL: none (no watchdog, no launch_marked, the
 * ring full, or a marker owed): the launch goes alone. */
struct backend_event *worker_watchdog_marker(struct worker *w,
					     struct worker_wd_queue *q);
/* After a launch on bs: record its marker (never waits), or take the one
 * the launch recorded (marked: enum backend_marked, how the launch
 * recorded the event worker_watchdog_marker gave). CUresult. */
int worker_watchdog_track(struct worker *w, struct worker_wd_queue *q,
			  struct backend_stream *bs, int marked);
/* After a wait was queued on bs (an event, a host function's gate): a
 * marker, so that the next kernel's time starts when the wait ends. */
int worker_watchdog_track_wait(struct worker *w, struct worker_wd_queue *q,
			       struct backend_stream *bs);

/* ---- worker_client.c ------------------------------------------------ */

/* Take over a client socket from vgpud: ring, doorbells, thread, reply.
 * Takes ownership of sock (closed on failure). 0 or -errno. */
int worker_client_start(struct worker *w, int sock,
			const struct vgpu_ctl_client *who);
/* A VM channel as a client (VGPU_CTL_CHANNEL): fds are the socket, the
 * BAR2 memfd, the submit and the completion eventfd, all taken over
 * (closed on failure, with a log line naming what was wrong). 0/-errno */
int worker_channel_start(struct worker *w, int fds[WORKER_CHANNEL_FDS],
			 const struct vgpu_ctl_channel *ch);
/* Client id hung up (worker_depart.c): open its gates, stop its thread. */
void worker_client_departed(struct worker *w, uint32_t id);
/* Join and free client threads that have ended. Returns clients left. */
uint32_t worker_client_reap(struct worker *w);
/* Stop every client (finish, free, join). */
void worker_client_stop_all(struct worker *w);
/* Mark every ring dead with status (fault path; never blocks long). */
void worker_client_mark_dead(struct worker *w, int32_t status);
/* Totals for VGPU_CTL_STATS. */
void worker_client_stats(struct worker *w, struct vgpu_ctl_stats *st);

/* ---- worker_channel.c ----------------------------------------------- */

/*
 * Check a VGPU_CTL_CHANNEL and its descriptors: the socket's kind, the
 * eventfds, the ring window (page-aligned, within a channel stride, room
 * for the default queues and WORKER_CHANNEL_MIN_DATA, inside a memfd
 * sealed against shrinking). On success *lay is the ring's layout (data
 * area filling the window); else -errno and a sentence in why.
 */
int worker_channel_check(const struct vgpu_ctl_channel *ch,
			 const int fds[WORKER_CHANNEL_FDS],
			 struct ring_layout *lay, char *why, size_t len);
/* Whether fd is an eventfd (/proc/self/fd says "anon_inode:[eventfd]"). */
bool worker_fd_is_eventfd(int fd);
/* Whether fd is an AF_UNIX SOCK_SEQPACKET socket (a reply can go there). */
bool worker_channel_sock_ok(int fd);

/* ---- worker_adopt.c ------------------------------------------------- */

/*
 * With cfg.ctl_path set, listen there for a restarted vgpud (replacing a
 * stale socket that nobody answers on). Call before any thread starts.
 * Returns a CUresult with a sentence naming the path in err.
 */
int worker_adopt_listen(struct worker *w, char *err, size_t len);
/* Close the listener and remove its socket file. Idempotent. */
void worker_adopt_close(struct worker *w);
/* Remove the socket file only (the fault path: any thread, then _exit). */
void worker_adopt_unlink(struct worker *w);
/* The control connection closed: drop it. 1 = exit now. */
int worker_adopt_ctl_lost(struct worker *w, uint32_t nclients);
/* Without vgpud, the last client left: start the orphan timer (or, without
 * a listener, exit). 1 = exit now. */
int worker_adopt_idle(struct worker *w);
/* A connection on the listener: refuse it while vgpud is attached, else
 * take a root peer as the new ctl_fd and send VGPU_CTL_ADOPTED. Returns
 * whether a vgpud is attached afterwards. */
int worker_adopt_accept(struct worker *w, int attached);
/* poll() timeout in ms, shortened to the orphan deadline. */
int worker_adopt_poll_timeout(const struct worker *w, int timeout_ms);
/* The orphan timer ran out (no vgpud, no clients): 1 = exit now. */
int worker_adopt_expired(struct worker *w);

/* ---- worker_exec.c: helpers used by every worker file ---------------- */

/* Log one line to stderr, prefixed with the vGPU's name. */
void worker_log(const struct worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Monotonic nanoseconds. */
uint64_t worker_now_ns(void);

#endif /* VGPU_WORKER_H */
