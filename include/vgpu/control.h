/* SPDX-License-Identifier: MIT */
/*
 * vgpud <-> vgpu-worker control messages. Both ends are ours and run on the
 * host, but a worker executes untrusted guest work, so vgpud still checks
 * every message it receives from a worker (type, length, strings).
 *
 * Transport: one AF_UNIX SOCK_SEQPACKET socketpair per worker, inherited by
 * the worker as the descriptor named by --ctl-fd. Each message is one
 * packet: struct vgpu_ctl_hdr followed by the payload for its type.
 */
#ifndef VGPU_CONTROL_H
#define VGPU_CONTROL_H

#include <stdint.h>

#include "protocol.h"

#define VGPU_MAX_GPUS	   16
#define VGPU_MAX_SM_GROUPS 64 /* groups per GPU */

enum vgpu_ctl_type {
	/* vgpud -> worker */
	VGPU_CTL_CONFIG = 1,   /* struct vgpu_worker_config; first message */
	VGPU_CTL_CLIENT = 2,   /* struct vgpu_ctl_client + 1 fd (SCM_RIGHTS):
				  the client's socket, hello already read */
	VGPU_CTL_SHUTDOWN = 3, /* no payload: finish, free, exit 0 */
	VGPU_CTL_CHANNEL = 4,  /* struct vgpu_ctl_channel + 4 fds: a client
				  whose ring lies in an mdev's BAR2 */
	VGPU_CTL_RESIZE = 6,   /* struct vgpu_ctl_resize: move the slice onto
				  other SM groups; answered by RESIZED */
	VGPU_CTL_SAVE = 7,     /* struct vgpu_ctl_save (+ a file): write the
				  vGPU's state out (suspend); answered by
				  SAVED */
	VGPU_CTL_RESTORE = 8,  /* struct vgpu_ctl_restore (+ a file): bring
				  it back (resume, recover) or move it to
				  another GPU (migrate); answered by SAVED */
	VGPU_CTL_SCHED = 9,    /* struct vgpu_ctl_sched: the scheduler's
				  orders (hold or take work, activity
				  reports); answered by ACTIVITY */

	/* worker -> vgpud */
	VGPU_CTL_READY = 10, /* struct vgpu_ctl_ready: answer to CONFIG */
	VGPU_CTL_STATS = 11, /* struct vgpu_ctl_stats, about once a second */
	VGPU_CTL_FAULT = 12, /* struct vgpu_ctl_fault, then the worker exits */
	VGPU_CTL_GPU_INFO = 13, /* struct vgpu_gpu_info, one per GPU (--probe),
				   then a VGPU_CTL_READY with ngpus */
	VGPU_CTL_ADOPTED = 14,	/* struct vgpu_ctl_adopted: the first message
				   on a ctl connection that a restarted vgpud
				   made to a running worker's ctl_path */
	VGPU_CTL_RESIZED = 16,	/* struct vgpu_ctl_resized: answer to RESIZE */
	VGPU_CTL_LOAD = 17,	/* struct vgpu_ctl_load, with each STATS */
	VGPU_CTL_SAVED = 18,	/* struct vgpu_ctl_saved: answer to SAVE or
				   RESTORE, or a periodic save point's news
				   (its memfd attached the first time) */
	VGPU_CTL_PROGRESS = 19, /* struct vgpu_ctl_progress: how far a long
				   SAVE or RESTORE has come */
	VGPU_CTL_ACTIVITY = 20, /* struct vgpu_ctl_activity: the vGPU went
				   busy or idle, or a SCHED took effect */
};

struct vgpu_ctl_hdr {
	uint32_t type; /* enum vgpu_ctl_type */
	uint32_t len;  /* payload bytes after this header */
};

/* What a GPU offers, as the backend reads it from the device. */
struct vgpu_gpu_info {
	uint32_t index;
	uint32_t backend; /* enum vgpu_backend_kind */
	char name[128];
	uint8_t uuid[16];
	uint32_t sm_count;
	uint32_t min_partition; /* minSmPartitionSize */
	uint32_t alignment;	/* smCoscheduledAlignment */
	uint32_t cc_major, cc_minor;
	uint64_t memory_total;
	uint64_t granularity; /* physical allocation granularity (2 MiB) */
	/* The device's split into groups of min_partition SMs (the same
	 * split every worker makes): group_sms[i] SMs in group i. */
	uint32_t ngroups;
	uint32_t group_sms[VGPU_MAX_SM_GROUPS];
};

/* VGPU_CTL_CONFIG: everything a worker needs to bring its vGPU up. */
struct vgpu_worker_config {
	char name[VGPU_NAME_MAX];
	uint32_t backend; /* enum vgpu_backend_kind */
	uint32_t gpu;	  /* device ordinal */
	/* SM groups of this vGPU: indices into the split; the index equal to
	 * the GPU's ngroups names the SMs the split left over (H100: 12) as
	 * one more group, which no other group can be combined with. */
	uint32_t ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS];
	uint64_t va_base; /* reserve exactly here, or fail */
	uint64_t va_size;
	uint64_t memory_quota;	       /* bytes */
	uint32_t kernel_time_limit_ms; /* watchdog; 0 = none */
	uint32_t max_clients;
	uint32_t client_uid; /* informational: vgpud already checked it */
	uint32_t isolation;  /* enum vgpu_isolation (host-daemon/blueprint.h) */
	/*
	 * Re-adoption: the worker listens here (SOCK_SEQPACKET, 0600, its own
	 * user; root connects) for a restarted vgpud. When its ctl connection
	 * closes it keeps serving its clients, accepts one root peer here, and
	 * sends VGPU_CTL_ADOPTED first. Empty = no re-adoption.
	 */
	char ctl_path[108];
	/* A worker that vgpud has left exits after this many seconds without
	 * a vgpud and without clients; 0 = at once. */
	uint32_t orphan_timeout_s;
	/* Periodic save points of its memory (fault recovery, docs/DESIGN.md
	 * "Save, restore and migration"): every this many ms, to a memfd
	 * that vgpud keeps; 0 = none (a vgpud before them sends 0 here). */
	uint32_t save_interval_ms;
};

/* VGPU_CTL_READY */
struct vgpu_ctl_ready {
	int32_t status;	   /* 0 = ready; else a CUresult */
	uint32_t sm_count; /* SMs the green context really has */
	uint64_t va_base;  /* where the range was reserved (== config) */
	char message[VGPU_MESSAGE_MAX];
};

/* VGPU_CTL_CLIENT */
struct vgpu_ctl_client {
	int32_t pid;
	uint32_t uid;
	uint16_t major, minor; /* client's protocol version */
	uint32_t reserved;
};

/*
 * VGPU_CTL_CHANNEL: a VM's channel (pci.h) as a client. Attached fds, in
 * order: a socket (vgpud holds the other end), the BAR2 memfd, the submit
 * eventfd (vgpu_mdev.ko signals it on the guest's doorbell write) and the
 * completion eventfd (the worker writes 8 bytes to it where it would ring a
 * local client's doorbell; the module turns that into the interrupt).
 *
 * The worker lays the ring out in [ring_offset, ring_offset + ring_size)
 * of the memfd (ring_layout_compute with the data area filling the range)
 * and answers on the socket with a struct vgpu_hello_reply and no fds.
 * Host regions are not offered (HOST_REGION_CREATE: NOT_SUPPORTED). The
 * channel ends when vgpud shuts its end down (SHUT_WR): the worker frees
 * the client and closes its end, which tells vgpud the ring is free.
 */
struct vgpu_ctl_channel {
	struct vgpu_ctl_client who; /* pid 0, uid 0: a VM */
	uint32_t instance;	    /* for logs */
	uint32_t channel;
	uint64_t ring_offset; /* page-aligned */
	uint64_t ring_size;   /* page multiple, <= VGPU_PCI_CHANNEL_STRIDE */
};

/* VGPU_CTL_STATS */
struct vgpu_ctl_stats {
	uint32_t clients;
	/* clients whose thread is still inside a call more than
	 * WORKER_DEPART_STUCK_NS after they left: reported by vgpud */
	uint32_t stuck_clients;
	/* of them, those whose thread has been in one call (or in its
	 * teardown) for more than WORKER_WEDGED_NS while the kernel
	 * watchdog sees nothing of the vGPU's on the GPU: wedged, and vgpud
	 * replaces the worker (daemon_liveness.c) */
	uint32_t wedged_clients;
	uint32_t reserved;
	uint64_t memory_used;	/* bytes allocated by clients */
	uint64_t memory_mapped; /* physical bytes mapped (granules) */
	uint64_t kernels;	/* launches since start */
	uint64_t bytes_copied;	/* H2D + D2H + D2D since start */
};

/*
 * VGPU_CTL_RESIZE: the SM groups the slice moves onto (indices into the
 * split as in the config; the leftover group alone, or lent by the
 * scheduler on top of groups). The worker
 * builds the new context beside its clients, switches every stream at a
 * kernel boundary (docs/DESIGN.md) and answers VGPU_CTL_RESIZED with the
 * same seq. vgpud sends one at a time.
 */
struct vgpu_ctl_resize {
	uint32_t seq;
	uint32_t ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS];
};

/* VGPU_CTL_RESIZED */
struct vgpu_ctl_resized {
	uint32_t seq;	       /* of the RESIZE */
	int32_t status;	       /* CUresult: 0 = on the new groups now */
	uint32_t sm_count;     /* SMs of the slice now */
	uint32_t change_count; /* the composition's change counter now */
	uint64_t build_ns;     /* building the new context (clients ran on) */
	uint64_t switch_ns;    /* the barrier: new submissions waited this */
	uint64_t delay_ns;     /* held back first by the barrier budget */
	uint32_t streams;      /* streams switched */
	uint32_t waits;	       /* of them, with work pending: an event wait */
	char message[VGPU_MESSAGE_MAX]; /* why, when status != 0 */
};

/*
 * Save, restore and migration (docs/DESIGN.md). vgpud sends one SAVE or
 * RESTORE at a time per worker; each is answered by VGPU_CTL_SAVED with
 * its seq (and VGPU_CTL_PROGRESS on the way). Each waits for a kernel
 * boundary first: the worker stops taking descriptors (a client's call
 * waits meanwhile) and lets what is on the GPU finish, for at most
 * timeout_ms (0: VGPU_STATE_TIMEOUT_MS), else it is refused and nothing
 * changed.
 */
enum vgpu_state_op {
	/* SAVE: the state to the attached file (a regular file or memfd, open
	 * for writing), then the GPU is freed: its memory is unmapped and its
	 * slice idle; the clients stay connected and their calls wait until
	 * RESUME. */
	VGPU_STATE_SUSPEND = 1,
	/* RESTORE: back from the attached file (none: the one SUSPEND wrote,
	 * which the worker keeps), onto gpu and groups; the clients go on. */
	VGPU_STATE_RESUME = 2,
	/* RESTORE: a running vGPU moves to gpu and groups (another GPU, or
	 * other groups of its own in a new context); its memory is copied and
	 * remapped at the same addresses. */
	VGPU_STATE_MIGRATE = 3,
	/* RESTORE: a restarted worker (a shared-domain fault) takes its last
	 * save point (the attached memfd, from SAVED): its clients and their
	 * allocations come back with the contents saved there. */
	VGPU_STATE_RECOVER = 4,
	/* SAVED only: a periodic save point was taken (seq 0). */
	VGPU_STATE_SAVE_POINT = 5,
};

#define VGPU_STATE_TIMEOUT_MS 10000u

/* VGPU_CTL_SAVE */
struct vgpu_ctl_save {
	uint32_t seq;
	uint32_t op;	     /* VGPU_STATE_SUSPEND */
	uint32_t timeout_ms; /* for the kernel boundary; 0: the default */
	/* SUSPEND of a swap-out (vgpud made room; docs/DESIGN.md "Swap"):
	 * while suspended, a client's call that has waited this long fails
	 * with CUDA_ERROR_DEVICE_UNAVAILABLE, and so do the calls queued
	 * behind it; the client's next call waits anew. 0: calls wait
	 * until the resume (an older vgpud sends 0 here). */
	uint32_t wait_ms;
	uint32_t reserved[4];
};

/* VGPU_CTL_RESTORE */
struct vgpu_ctl_restore {
	uint32_t seq;
	uint32_t op;  /* VGPU_STATE_RESUME, _MIGRATE or _RECOVER */
	uint32_t gpu; /* where to (RESUME, MIGRATE) */
	uint32_t ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS];
	uint32_t timeout_ms; /* for the kernel boundary; 0: the default */
	uint32_t reserved;
};

/* VGPU_CTL_SAVED */
struct vgpu_ctl_saved {
	uint32_t seq;	   /* of the SAVE or RESTORE; 0: a save point */
	uint32_t op;	   /* enum vgpu_state_op */
	int32_t status;	   /* CUresult: 0 = done; else nothing changed */
	uint32_t sm_count; /* SMs of the slice now */
	uint32_t gpu;	   /* where it is now */
	uint32_t change_count;
	uint64_t bytes;	      /* memory written, read or copied */
	uint64_t quiesce_ns;  /* until the kernel boundary */
	uint64_t prepare_ns;  /* MIGRATE: target made ready (clients ran) */
	uint64_t copy_ns;     /* the memory copied (or written, read) */
	uint64_t remap_ns;    /* MIGRATE: old memory unmapped, new mapped */
	uint64_t blackout_ns; /* clients' calls waited this, in all */
	uint64_t total_ns;
	uint32_t peer; /* MIGRATE: 1 GPU to GPU, 0 through the host */
	uint32_t reserved;
	char message[VGPU_MESSAGE_MAX]; /* why, when status != 0 */
};

/* VGPU_CTL_PROGRESS */
struct vgpu_ctl_progress {
	uint32_t seq;
	uint32_t op;
	uint64_t done, total; /* bytes */
};

/* Where a load report's busy time comes from. */
enum vgpu_busy_source {
	VGPU_BUSY_NONE = 0,    /* not measured: busy_ns means nothing */
	VGPU_BUSY_BACKEND = 1, /* the backend's own count (sim: exact) */
	VGPU_BUSY_EVENTS = 2,  /* the watchdog's per-stream events */
};

/*
 * VGPU_CTL_LOAD: the workload analyzer's last window (about a second),
 * sent with each STATS. docs/DESIGN.md defines every figure.
 */
struct vgpu_ctl_load {
	uint64_t window_ns;    /* length of the window */
	uint64_t busy_ns;      /* of it, time with kernels in flight */
	uint64_t kernels;      /* launches in the window */
	uint64_t bytes_copied; /* copied in the window */
	uint64_t memory_used;  /* bytes allocated by clients, at its end */
	uint64_t barrier_ns;   /* resize barriers in the window */
	uint32_t queue_depth;  /* at its end: submitted, not finished */
	uint32_t sm_count;     /* SMs of the slice */
	uint32_t change_count; /* of the composition */
	uint32_t busy_source;  /* enum vgpu_busy_source */
	uint32_t clients;
	uint32_t gpu_inflight; /* of queue_depth: launched, not known done */
};

/*
 * VGPU_CTL_SCHED: vgpud's scheduler (docs/DESIGN.md, "Scheduling"). hold
 * 1: the worker takes no more descriptors from its rings (work already
 * on the GPU finishes: a kernel cannot be preempted); hold 0: it takes
 * them again. A hold ends by itself after hold_max_ms (0: the default),
 * so no vGPU stays stopped by a vgpud that is gone. idle_ms > 0 asks for
 * a VGPU_CTL_ACTIVITY at each busy and idle edge (idle: no descriptor
 * waiting or taken, no launch in flight, for idle_ms); 0: no edges.
 * Answered by an ACTIVITY with this seq once it took effect, and (a
 * hold) another with drained = 1 once nothing of the vGPU runs.
 */
struct vgpu_ctl_sched {
	uint32_t seq;
	uint32_t hold;	      /* 1: stop taking work; 0: take it */
	uint32_t hold_max_ms; /* 0: VGPU_SCHED_HOLD_MAX_MS */
	uint32_t idle_ms;     /* 0: no edge reports */
};

#define VGPU_SCHED_HOLD_MAX_MS 60000u

/* VGPU_CTL_ACTIVITY */
struct vgpu_ctl_activity {
	uint32_t seq;	      /* of the SCHED it answers; 0: an edge */
	uint32_t busy;	      /* 1: has work (waiting, taken or in flight) */
	uint32_t held;	      /* 1: holding (takes no descriptor) */
	uint32_t drained;     /* held, and none of its work runs any more */
	uint32_t queue_depth; /* descriptors waiting + launches in flight */
	uint32_t reserved;
	uint64_t drain_ns; /* drained: from the SCHED that held it */
};

/* VGPU_CTL_ADOPTED: who the worker is, for vgpud to check against its
 * state file before it takes the worker back. */
struct vgpu_ctl_adopted {
	int32_t pid;
	uint32_t reserved;
	struct vgpu_worker_config cfg; /* as the worker was configured */
	struct vgpu_ctl_stats stats;
};

enum vgpu_fault_kind {
	VGPU_FAULT_GPU = 1,	 /* sticky CUDA error (illegal address, ...) */
	VGPU_FAULT_WATCHDOG = 2, /* a kernel ran past the time limit */
	VGPU_FAULT_INTERNAL = 3,
};

/* VGPU_CTL_FAULT */
struct vgpu_ctl_fault {
	uint32_t kind;	/* enum vgpu_fault_kind */
	int32_t status; /* CUresult, where there is one */
	char message[VGPU_MESSAGE_MAX];
};

/* Exit codes of vgpu-worker, read by vgpud after the worker is reaped. */
enum vgpu_worker_exit {
	VGPU_WORKER_EXIT_OK = 0,
	VGPU_WORKER_EXIT_CONFIG = 2, /* bad config or bring-up failed */
	VGPU_WORKER_EXIT_GPU_FAULT = 3,
	VGPU_WORKER_EXIT_WATCHDOG = 4,
	VGPU_WORKER_EXIT_INTERNAL = 5,
};

#endif /* VGPU_CONTROL_H */
