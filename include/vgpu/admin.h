/* SPDX-License-Identifier: MIT */
/*
 * vgpu-admin <-> vgpud: the admin socket (DIR/admin.sock, root only).
 *
 * Transport: AF_UNIX SOCK_SEQPACKET. One connection carries one request
 * and one response, each a single packet of exactly the struct's size.
 * vgpud checks the peer's uid (SO_PEERCRED, must be 0), the size, magic,
 * version, op and every string before it acts; a bad request gets a
 * response with VGPU_ADMIN_BAD_REQUEST and a sentence saying what was
 * wrong. Both structs are fixed-size; new fields go into the reserved
 * space and bump the minor version.
 *
 * Ops:
 *   CREATE  name, sms, memory, uid, time_limit_ms, gpu -> entries[0] is
 *           the new vGPU (real SM count, groups, rounded memory quota).
 *           vgpud answers once the worker is ready (or has failed).
 *   DESTROY name -> answered once the worker has exited.
 *   LIST    first -> entries[first ...], count in this packet, total in
 *           all; vgpu-admin asks again with first += count until done.
 *
 * Since 1.1:
 *   CREATE     also isolation (enum vgpu_isolation) and the consumer:
 *              consumer_kind (enum vgpu_admin_consumer) with uid or gid.
 *   GPUS       -> gpus[0 .. count), one per GPU (the union below), with
 *              what is free; fault domains are read from LIST.
 *   SHOW       name -> entries[0].
 *   PLAN_CHECK the fields of CREATE -> entries[0] as the vGPU would be
 *              placed (groups, SMs, quota, GPU; pid 0, state 0), or the
 *              refusal CREATE would give. Creates nothing.
 * A 1.0 peer sends zeros in the new fields: shared, consumer by uid.
 *
 * Since 1.2 (the VM path, docs/DESIGN.md):
 *   CREATE     flags VGPU_ADMIN_CREATE_MDEV: bind the new vGPU to the mdev
 *              UUID mdev_uuid (all zero: vgpud makes one up), so that an
 *              instance of vgpu_mdev.ko's "custom" type with that UUID
 *              is this vGPU; the response's mdev_uuid says which UUID.
 *   DESTROY    refused (BUSY) while an mdev instance of the vGPU exists
 *              (removing the instance destroys the vGPU).
 *   MDEVS      name (empty: every vGPU), first -> mdevs[0 .. count): the
 *              vGPUs bound to an mdev UUID, their instance and its state;
 *              total in all, paged like LIST.
 *
 * Since 1.2 (dynamic partitioning, docs/DESIGN.md):
 *   RESIZE     name, sms -> entries[0] with the vGPU's new groups and SMs,
 *              once its worker has switched to them (its programs go on);
 *              with slice_mask != 0 the vGPU moves onto exactly those
 *              groups instead (sms ignored); TOP's last_* fields say
 *              what the switch cost. Refused (BUSY) unless it is running.
 *   TOP        first -> loads[first ...], paged like LIST: each vGPU's
 *              latest workload window and its share of GPU power.
 *
 * Since 1.3 (scheduling policies, docs/DESIGN.md "Scheduling"):
 *   CREATE, PLAN_CHECK  flags VGPU_ADMIN_CREATE_POLICY: policy holds the
 *              vGPU's min_sms, max_sms, weight and priority (0 each: the
 *              default); admission follows its GPU's policy mode.
 *   POLICY     name and policy: change that vGPU's (0 = unchanged) ->
 *              entries[0]; or, name empty: gpu and gpu_policy, a GPU's
 *              mode, quantum, dwell, over-commit and reclaim bound (0 =
 *              unchanged). Refused with a sentence when the vGPUs of
 *              the GPU would no longer be admitted.
 *   SCHED      first -> sched: every GPU's policy and, paged like LIST,
 *              each vGPU's share, lent and borrowed SMs, and holds.
 *   RESIZE     (1.3) refused outside the vGPU's min_sms .. max_sms.
 *
 * Since 1.3 (save, restore and migration, docs/DESIGN.md):
 *   CREATE     flags VGPU_ADMIN_CREATE_RECOVERY: first holds the vGPU's
 *              save interval in ms (periodic save points of its memory,
 *              restored after a shared-domain fault; 0: none).
 *   SUSPEND    name; flags VGPU_ADMIN_STATE_FILE with one descriptor
 *              passed with the request (SCM_RIGHTS): a regular file open
 *              for writing, which gets the vGPU's state (without it: host
 *              memory). The vGPU's SMs and memory go back to the plan; it
 *              is SUSPENDED, its clients' calls wait. -> entries[0],
 *              result.
 *   RESUME     name, gpu (_GPU_ANY: the first with room); flags
 *              VGPU_ADMIN_STATE_FILE with a descriptor open for reading:
 *              the state from that file (without it: what SUSPEND
 *              wrote). -> entries[0], result. A bad file is refused with
 *              a sentence and the vGPU stays suspended.
 *   MIGRATE    name, gpu: a running vGPU moves to that GPU (its memory
 *              copied, the same device addresses) -> entries[0], result.
 *   SUSPEND, RESUME, MIGRATE with flags VGPU_ADMIN_PROGRESS: vgpud may
 *              send responses with status VGPU_ADMIN_IN_PROGRESS
 *              (progress: bytes done of total) before the answer.
 *
 * Since 1.4 (swapping idle vGPUs out, docs/DESIGN.md "Swap"):
 *   SWAP       name empty: GPU gpu's swap: mode (enum
 *              vgpu_admin_swap_mode, OFF or ON), idle_ms, wait_ms; a
 *              name: that vGPU's swap.mode (OFF: never, ON: allowed,
 *              GPU: as its GPU says; idle_ms and wait_ms 0). 0 in a
 *              field: unchanged; nothing to change: a query (gpu
 *              _GPU_ANY). -> swap: every GPU's settings and, paged like
 *              LIST from first, each vGPU's (swapped out, why).
 *   CREATE     flags VGPU_ADMIN_CREATE_SWAP_ALLOW or _NEVER: the vGPU's
 *              swap mode (neither: as its GPU says).
 *   entries, TOP, SCHED: state VGPU_ADMIN_STATE_SWAPPED, a vGPU vgpud
 *              swapped out; SUSPEND, RESUME and MIGRATE treat it as
 *              SUSPENDED (RESUME brings it back from its swap file).
 */
#ifndef VGPU_ADMIN_H
#define VGPU_ADMIN_H

#include <stdint.h>

#include "control.h"
#include "protocol.h"

#define VGPU_ADMIN_MAGIC 0x44414756u /* "VGAD" little-endian */
#define VGPU_ADMIN_MAJOR 1
#define VGPU_ADMIN_MINOR 4

#define VGPU_ADMIN_LIST_MAX 32 /* entries per LIST response */

/* Request field values that mean "vgpud chooses": the first GPU with
 * room, the admin's own uid, the default kernel time limit (10 s). */
#define VGPU_ADMIN_GPU_ANY		 0xffffffffu
#define VGPU_ADMIN_UID_PEER		 0xffffffffu
#define VGPU_ADMIN_TIME_DEFAULT		 0xffffffffu
#define VGPU_ADMIN_TIME_LIMIT_DEFAULT_MS 10000u

enum vgpu_admin_op {
	VGPU_ADMIN_CREATE = 1,
	VGPU_ADMIN_DESTROY = 2,
	VGPU_ADMIN_LIST = 3,
	VGPU_ADMIN_GPUS = 4,	   /* 1.1 */
	VGPU_ADMIN_SHOW = 5,	   /* 1.1 */
	VGPU_ADMIN_PLAN_CHECK = 6, /* 1.1 */
	VGPU_ADMIN_MDEVS = 7,	   /* 1.2 */
	VGPU_ADMIN_RESIZE = 16,	   /* 1.2 */
	VGPU_ADMIN_TOP = 17,	   /* 1.2 */
	VGPU_ADMIN_SUSPEND = 18,   /* 1.3 */
	VGPU_ADMIN_RESUME = 19,	   /* 1.3 */
	VGPU_ADMIN_MIGRATE = 20,   /* 1.3 */
	VGPU_ADMIN_POLICY = 21,	   /* 1.3 */
	VGPU_ADMIN_SCHED = 22,	   /* 1.3 */
	VGPU_ADMIN_SWAP = 23,	   /* 1.4 */
};

/* Request flags (1.2); any other bit is refused. */
#define VGPU_ADMIN_CREATE_MDEV	     0x1u  /* CREATE: bind to mdev_uuid */
#define VGPU_ADMIN_CREATE_POLICY     0x2u  /* CREATE, PLAN_CHECK: policy set */
#define VGPU_ADMIN_CREATE_RECOVERY   0x4u  /* CREATE: first = save interval */
#define VGPU_ADMIN_STATE_FILE	     0x8u  /* SUSPEND, RESUME: a file comes */
#define VGPU_ADMIN_PROGRESS	     0x10u /* SUSPEND, RESUME, MIGRATE */
#define VGPU_ADMIN_CREATE_SWAP_ALLOW 0x20u /* CREATE: may be swapped out */
#define VGPU_ADMIN_CREATE_SWAP_NEVER 0x40u /* CREATE: never swapped out */

/* A GPU's scheduling policy (1.3). */
enum vgpu_admin_mode {
	VGPU_ADMIN_MODE_STATIC = 1,   /* blueprint sizes fixed */
	VGPU_ADMIN_MODE_FAIR = 2,     /* weighted shares, idle SMs lent */
	VGPU_ADMIN_MODE_PRIORITY = 3, /* high priority served first */
};

enum vgpu_admin_priority {
	VGPU_ADMIN_PRIO_LOW = 1,
	VGPU_ADMIN_PRIO_NORMAL = 2,
	VGPU_ADMIN_PRIO_HIGH = 3,
};

/* A vGPU's policy in a request (1.3): 0 in a field = the default
 * (CREATE) or unchanged (POLICY). */
struct vgpu_admin_policy {
	uint16_t min_sms; /* default: one SM group */
	uint16_t max_sms; /* default: every SM group of its GPU */
	uint16_t weight;  /* 1..1000; default: its size in SM groups */
	uint8_t priority; /* enum vgpu_admin_priority; default normal */
	uint8_t reserved;
};

/* A GPU's policy in a POLICY request (1.3): 0 = unchanged. */
struct vgpu_admin_gpu_policy {
	uint8_t mode;		   /* enum vgpu_admin_mode */
	uint8_t overcommit;	   /* 1: off, 2: on (time-slice when needed) */
	uint16_t quantum_ms;	   /* a turn when time-slicing */
	uint16_t dwell_ms;	   /* least time between two moves of a vGPU */
	uint16_t reclaim_bound_ms; /* lend only to vGPUs that can give it
				      back this fast; 0xffff: no bound */
};

/* Swapping idle vGPUs out to make room (1.4). */
enum vgpu_admin_swap_mode {
	VGPU_ADMIN_SWAP_OFF = 1, /* GPU: off (default); vGPU: never */
	VGPU_ADMIN_SWAP_ON = 2,	 /* GPU: on; vGPU: allowed */
	VGPU_ADMIN_SWAP_GPU = 3, /* vGPU: as its GPU says (default) */
};

/* SWAP's settings in a request (1.4): 0 in a field = unchanged. */
struct vgpu_admin_swap {
	uint8_t mode;	  /* enum vgpu_admin_swap_mode */
	uint8_t reserved; /* 0 */
	uint16_t wait_ms; /* GPU: a call waits this long for a swap-in */
	uint32_t idle_ms; /* GPU: idle this long before a swap-out */
};

_Static_assert(sizeof(struct vgpu_admin_swap) == 8,
	       "swap settings must fit the request's reserved space");
_Static_assert(sizeof(struct vgpu_admin_policy) == 8 &&
		       sizeof(struct vgpu_admin_gpu_policy) == 8,
	       "policies must fit the request's reserved space");

/* Who may use a vGPU (CREATE, entries). */
enum vgpu_admin_consumer {
	VGPU_ADMIN_CONSUMER_USER = 0,  /* the user uid (or the peer's) */
	VGPU_ADMIN_CONSUMER_GROUP = 1, /* members of group gid */
};

struct vgpu_admin_request {
	uint32_t magic;
	uint16_t major;
	uint16_t minor;
	uint32_t op;		  /* enum vgpu_admin_op */
	uint32_t flags;		  /* VGPU_ADMIN_CREATE_MDEV, else 0 */
	char name[VGPU_NAME_MAX]; /* CREATE, DESTROY; NUL-terminated */
	uint32_t sms;		  /* CREATE: SMs asked for (rounded up) */
	uint32_t gpu;		  /* CREATE: ordinal or _GPU_ANY */
	uint64_t memory;	  /* CREATE: quota in bytes */
	uint32_t uid;		  /* CREATE: user or VGPU_ADMIN_UID_PEER */
	uint32_t time_limit_ms;	  /* CREATE: 0 = none; _TIME_DEFAULT */
	uint32_t first;		  /* LIST: index of the first entry;
				     CREATE_RECOVERY: save interval, ms */
	uint32_t isolation;	  /* CREATE: enum vgpu_isolation (1.1) */
	uint32_t consumer_kind;	  /* CREATE: enum vgpu_admin_consumer */
	uint32_t gid;		  /* CREATE: group, for CONSUMER_GROUP */
	uint8_t mdev_uuid[16];	  /* CREATE_MDEV: the UUID; 0 = any (1.2) */
	union {
		uint32_t reserved[2];
		uint64_t slice_mask; /* RESIZE: bit i = SM group i; 0 =
					vgpud picks groups for sms (1.2) */
		/* CREATE_POLICY, POLICY with a name (1.3) */
		struct vgpu_admin_policy policy;
		/* POLICY without a name: GPU gpu's (1.3) */
		struct vgpu_admin_gpu_policy gpu_policy;
		struct vgpu_admin_swap swap; /* SWAP (1.4) */
	};
};

enum vgpu_admin_status {
	VGPU_ADMIN_OK = 0,
	VGPU_ADMIN_BAD_REQUEST = 1, /* size, magic, op, field values */
	VGPU_ADMIN_BAD_VERSION = 2, /* major version differs */
	VGPU_ADMIN_PERMISSION = 3,  /* peer is not root */
	VGPU_ADMIN_NO_SUCH_VGPU = 4,
	VGPU_ADMIN_EXISTS = 5,	      /* name taken */
	VGPU_ADMIN_NO_ROOM = 6,	      /* not enough SMs, memory, VA */
	VGPU_ADMIN_WORKER_FAILED = 7, /* the worker did not come up */
	VGPU_ADMIN_BUSY = 8,	      /* destroying, recovering, exiting */
	VGPU_ADMIN_INTERNAL = 9,
	VGPU_ADMIN_IN_PROGRESS = 10, /* not the answer yet: progress (1.3) */
};

enum vgpu_admin_state {
	VGPU_ADMIN_STATE_STARTING = 1,
	VGPU_ADMIN_STATE_RUNNING = 2,
	VGPU_ADMIN_STATE_RESTARTING = 3, /* its fault domain is restarting */
	VGPU_ADMIN_STATE_FAILED = 4,	 /* gave up restarting it */
	VGPU_ADMIN_STATE_STOPPING = 5,	 /* being destroyed */
	VGPU_ADMIN_STATE_SUSPENDED = 6,	 /* its state saved, GPU freed (1.3) */
	VGPU_ADMIN_STATE_SWAPPED = 7,	 /* swapped out by vgpud (1.4) */
};

/* One vGPU as LIST (and CREATE) report it. */
struct vgpu_admin_entry {
	char name[VGPU_NAME_MAX];
	char gpu_name[128]; /* the physical GPU, or the simulator's name */
	uint32_t gpu;
	uint32_t backend; /* enum vgpu_backend_kind */
	uint32_t sms;	  /* SMs of the slice (sum of its groups) */
	uint32_t ngroups;
	uint32_t groups[VGPU_MAX_SM_GROUPS];
	uint64_t memory_quota; /* bytes */
	uint64_t memory_used;  /* bytes, from the worker's latest stats */
	uint64_t va_base;
	uint32_t clients;
	uint32_t uid;
	uint32_t state; /* enum vgpu_admin_state */
	uint32_t restarts;
	int32_t pid; /* of the worker; 0 when none */
	uint32_t time_limit_ms;
	uint32_t min_partition; /* SMs per group on this GPU */
	uint32_t isolation;	/* enum vgpu_isolation (1.1) */
	uint32_t consumer_kind; /* enum vgpu_admin_consumer (1.1) */
	uint32_t gid;		/* CONSUMER_GROUP: the group (1.1) */
	uint32_t leftover;	/* 1: groups[0] is the leftover slice (1.1) */
	uint32_t save_interval_ms; /* periodic save points; 0: none (1.3) */
	uint32_t save_points;	   /* taken since vgpud started (1.3) */
	uint32_t save_last_kib;	   /* copied by the last one (1.3) */
};

/*
 * What SUSPEND, RESUME and MIGRATE did (1.3), after entries[0] of their
 * answer (result in the response's union).
 */
struct vgpu_admin_state_result {
	uint32_t op;
	uint32_t from_gpu, to_gpu;
	uint32_t peer;	/* MIGRATE: 1 GPU to GPU, 0 through the host */
	uint64_t bytes; /* memory saved, restored or moved */
	uint64_t quiesce_ns, prepare_ns, copy_ns, remap_ns;
	uint64_t blackout_ns; /* the clients' calls waited this */
	uint64_t total_ns;
	uint32_t reserved[8];
};

/* A progress packet's payload (status VGPU_ADMIN_IN_PROGRESS, 1.3). */
struct vgpu_admin_progress {
	uint32_t op;
	uint32_t reserved;
	uint64_t done, total; /* bytes */
};

/* One vGPU bound to an mdev UUID, as MDEVS reports it (1.2). */
struct vgpu_admin_mdev {
	char name[VGPU_NAME_MAX]; /* the vGPU */
	uint8_t uuid[16];
	uint32_t flags;	   /* VGPU_ADMIN_MDEV_* */
	uint32_t instance; /* vgpu_mdev.ko's id while CREATED, else 0 */
	char type[32];	   /* sysfs name of its mdev type, e.g. "custom" */
	uint32_t reserved[4];
};

#define VGPU_ADMIN_MDEV_CREATED 0x1u /* the mdev instance exists */
#define VGPU_ADMIN_MDEV_OPEN	0x2u /* a VFIO user (a VM) has it open */
#define VGPU_ADMIN_MDEV_OWNED                                                  \
	0x4u			   /* composed by vgpud for an instance        \
				      of a catalogue type (else bound by       \
				      vgpu-admin create --mdev) */
#define VGPU_ADMIN_MDEV_READY 0x8u /* the device is READY (pci.h) */

/* A figure TOP does not have (no NVML, not measured). */
#define VGPU_ADMIN_NA	 0xffffffffu
#define VGPU_ADMIN_NA_64 0xffffffffffffffffull

/* Compute- or memory-bound, as TOP classifies a vGPU (1.2). */
enum vgpu_admin_bw_class {
	VGPU_ADMIN_BW_NA = 0,	   /* not known (no NVML, the simulator) */
	VGPU_ADMIN_BW_IDLE = 1,	   /* too little work to tell */
	VGPU_ADMIN_BW_COMPUTE = 2, /* SMs busier than device memory */
	VGPU_ADMIN_BW_MEMORY = 3,  /* device memory the bottleneck */
};

/*
 * One vGPU as TOP reports it (1.2): its worker's latest window (counts,
 * not rates: window_ns says over how long) and what vgpud read from NVML.
 */
struct vgpu_admin_load {
	char name[VGPU_NAME_MAX];
	uint32_t gpu;
	uint32_t backend; /* enum vgpu_backend_kind */
	uint32_t state;	  /* enum vgpu_admin_state */
	uint32_t sms;
	uint32_t clients;
	uint32_t change_count; /* of the composition (resizes, moves) */
	uint32_t busy_source;  /* enum vgpu_busy_source (control.h) */
	uint32_t queue_depth;
	uint64_t window_ns; /* 0: no window yet */
	uint64_t busy_ns;
	uint64_t kernels;
	uint64_t bytes_copied;
	uint64_t barrier_ns; /* resize barriers in the window */
	uint64_t memory_used;
	uint64_t memory_quota;
	uint32_t age_ms;	 /* since the window ended */
	uint32_t bw_class;	 /* enum vgpu_admin_bw_class */
	uint32_t sm_util;	 /* % from NVML, or VGPU_ADMIN_NA */
	uint32_t mem_util;	 /* % from NVML, or VGPU_ADMIN_NA */
	uint32_t power_mw;	 /* its share of the GPU's power, or NA */
	uint32_t gpu_power_mw;	 /* the whole GPU's, or NA */
	uint64_t energy_mj;	 /* its share since vgpud started, or NA_64 */
	uint32_t resizes;	 /* since vgpud started */
	uint32_t last_switch_ns; /* the last resize's barrier */
	uint32_t last_build_us;	 /* the last resize's new context */
	uint32_t last_waits;	 /* streams that waited at the last one */
	uint32_t reserved[4];
};

/* A GPU's scheduler as SCHED reports it (1.3); mode 0: no such GPU. */
struct vgpu_admin_sched_gpu {
	uint32_t index;
	uint32_t mode; /* enum vgpu_admin_mode */
	uint32_t overcommit;
	uint32_t quantum_ms, dwell_ms;
	uint32_t reclaim_bound_ms; /* 0xffff: none */
	uint32_t sms;		   /* in the SM groups it deals out */
	uint32_t guaranteed_sms;   /* its vGPUs' min_sms, summed */
	uint32_t runnable;	   /* vGPUs with work now */
	uint32_t timeslicing;	   /* 1: they take turns now */
	uint32_t resizes;	   /* the scheduler's, since vgpud started */
	uint32_t reserved[5];
};

/* A vGPU as SCHED reports it (1.3): its policy and what it holds. */
struct vgpu_admin_sched_vgpu {
	char name[VGPU_NAME_MAX];
	uint32_t gpu;
	uint32_t state;				     /* enum vgpu_admin_state */
	uint32_t min_sms, max_sms, weight, priority; /* in effect */
	uint32_t weight_default; /* 1: weight is its size in groups */
	uint32_t base_sms;	 /* its size: blueprint, create, resize */
	uint32_t sms;		 /* now */
	uint32_t share_sms;	 /* its share when every vGPU is busy */
	uint32_t target_sms;	 /* where the scheduler takes it */
	uint32_t lent_sms;	 /* of its share, lent to others now */
	uint32_t borrowed_sms;	 /* beyond its share, held now */
	uint32_t runnable;	 /* has work */
	uint32_t held;		 /* waits for its turn (time-slicing) */
	uint32_t turns;		 /* turns it got */
	uint32_t reclaims;	 /* times it took its SMs back */
	uint32_t last_reclaim_us, max_reclaim_us; /* busy -> SMs back */
	uint32_t last_drain_us;	  /* a hold's drain: its kernels ending */
	uint64_t lent_sm_ms;	  /* SMs lent x ms, since vgpud started */
	uint64_t borrowed_sm_ms;  /* SMs borrowed x ms, since then */
	uint32_t burst_period_ms; /* its bursts' steady period; 0: none */
	uint32_t burst_expected;  /* 1: its next burst is due (SMs back) */
	uint32_t reserved[2];
};

/* A GPU's swap settings as SWAP reports them (1.4); mode 0: no GPU. */
struct vgpu_admin_swap_gpu {
	uint32_t index;
	uint32_t mode;		      /* VGPU_ADMIN_SWAP_OFF or _ON */
	uint32_t idle_ms;	      /* idle this long: may go out */
	uint32_t wait_ms;	      /* a call waits this long for it */
	uint32_t swapped;	      /* its vGPUs out now */
	uint32_t swap_outs, swap_ins; /* since vgpud started */
	uint32_t reserved[5];
};

/* A vGPU as SWAP reports it (1.4). */
struct vgpu_admin_swap_vgpu {
	char name[VGPU_NAME_MAX];
	uint32_t gpu;
	uint32_t mode;	     /* its own: VGPU_ADMIN_SWAP_OFF, _ON or _GPU */
	uint32_t allowed;    /* 1: its settings let vgpud swap it out */
	uint32_t swapped;    /* 1: out (state SWAPPED) */
	uint32_t failed;     /* 1: its swap-in failed; RESUME retries */
	uint32_t idle_ms;    /* idle this long; VGPU_ADMIN_NA: busy or
				not known */
	uint32_t out_ms;     /* swapped out this long ago */
	uint32_t waiting_ms; /* has work and waits to come back: this
				long; 0: not */
	uint64_t bytes;	     /* in its swap file */
	uint32_t swap_outs, swap_ins; /* since vgpud started */
	uint32_t reserved[4];
	char why[VGPU_MESSAGE_MAX]; /* why it is out, or its swap-in failed */
};

/* One GPU as GPUS reports it (1.1). */
struct vgpu_admin_gpu {
	char name[128];
	uint32_t index;
	uint32_t backend; /* enum vgpu_backend_kind */
	uint32_t sm_count;
	uint32_t min_partition; /* minSmPartitionSize */
	uint32_t alignment;	/* smCoscheduledAlignment */
	uint32_t ngroups;	/* regular groups of the split */
	uint32_t groups_free;	/* regular groups no vGPU holds */
	uint32_t leftover_sms;	/* SMs outside the split (group ngroups) */
	uint32_t leftover_free; /* 1: no vGPU holds the leftover slice */
	uint32_t cc_major, cc_minor;
	uint32_t vgpus;	      /* vGPUs on this GPU */
	uint64_t groups_used; /* bit i: group i held (bit ngroups: left) */
	uint64_t memory_total;
	uint64_t memory_reserved; /* kept for the driver */
	uint64_t memory_used;	  /* sum of the vGPUs' quotas */
	uint64_t granularity;
	uint32_t group_sms[VGPU_MAX_SM_GROUPS];
	uint32_t reserved[8];
};

struct vgpu_admin_response {
	uint32_t magic;
	uint16_t major; /* vgpud's version */
	uint16_t minor;
	uint32_t op;			/* echoed */
	int32_t status;			/* enum vgpu_admin_status */
	char message[VGPU_MESSAGE_MAX]; /* a sentence; NUL-terminated */
	uint32_t total;			/* LIST: vGPUs in all */
	uint32_t count;			/* entries in this response */
	uint8_t mdev_uuid[16]; /* CREATE with CREATE_MDEV: the UUID (1.2) */
	uint32_t reserved[2];
	union {
		struct vgpu_admin_entry entries[VGPU_ADMIN_LIST_MAX];
		struct vgpu_admin_gpu gpus[VGPU_MAX_GPUS]; /* GPUS (1.1) */
		/* MDEVS (1.2) */
		struct vgpu_admin_mdev mdevs[VGPU_ADMIN_LIST_MAX];
		struct vgpu_admin_load loads[VGPU_ADMIN_LIST_MAX]; /* TOP */
		struct { /* SUSPEND, RESUME, MIGRATE (1.3) */
			struct vgpu_admin_entry entry; /* = entries[0] */
			struct vgpu_admin_state_result result;
			struct vgpu_admin_progress progress;
		} state;
		struct { /* SCHED (1.3) */
			struct vgpu_admin_sched_gpu gpus[VGPU_MAX_GPUS];
			struct vgpu_admin_sched_vgpu vgpus[VGPU_ADMIN_LIST_MAX];
		} sched;
		struct { /* SWAP (1.4) */
			struct vgpu_admin_swap_gpu gpus[VGPU_MAX_GPUS];
			struct vgpu_admin_swap_vgpu vgpus[VGPU_ADMIN_LIST_MAX];
		} swap;
	};
};

_Static_assert(sizeof(struct vgpu_admin_gpu) * VGPU_MAX_GPUS <=
		       sizeof(struct vgpu_admin_entry) * VGPU_ADMIN_LIST_MAX,
	       "GPUS must not grow the admin response");
_Static_assert(sizeof(struct vgpu_admin_load) <=
		       sizeof(struct vgpu_admin_entry),
	       "TOP must not grow the admin response");
_Static_assert(sizeof(struct vgpu_admin_sched_gpu) * VGPU_MAX_GPUS +
			       sizeof(struct vgpu_admin_sched_vgpu) *
				       VGPU_ADMIN_LIST_MAX <=
		       sizeof(struct vgpu_admin_entry) * VGPU_ADMIN_LIST_MAX,
	       "SCHED must not grow the admin response");
_Static_assert(sizeof(struct vgpu_admin_swap_gpu) * VGPU_MAX_GPUS +
			       sizeof(struct vgpu_admin_swap_vgpu) *
				       VGPU_ADMIN_LIST_MAX <=
		       sizeof(struct vgpu_admin_entry) * VGPU_ADMIN_LIST_MAX,
	       "SWAP must not grow the admin response");
_Static_assert(sizeof(struct vgpu_admin_mdev) <=
		       sizeof(struct vgpu_admin_entry),
	       "MDEVS must not grow the admin response");

#endif /* VGPU_ADMIN_H */
