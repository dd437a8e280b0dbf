/* SPDX-License-Identifier: MIT */
/*
 * vgpud swaps idle vGPUs out to make room (docs/DESIGN.md, "Swap"):
 *
 *   daemon_swap.c        a create (or a resume) that does not fit swaps
 *                        out idle vGPUs of its GPU that may go out
 *                        (plan_swap.c chooses them), parked until they
 *                        are out, then runs again; a swapped-out vGPU
 *                        whose client has work (its busy edge, or its
 *                        load window's queue) or connects (its hello
 *                        waits here) comes back in, making room the
 *                        same way when it must
 *   daemon_swap_admin.c  SWAP (the settings, the view) and the state
 *                        file's part
 *
 * A swap-out is a suspend (daemon_state_ops.c) to DIR/swap/NAME.state
 * (0600, the state-file format) with a bound for the clients' calls;
 * a swap-in is a resume from it, after which the file goes. Everything
 * runs in vgpud's loop.
 */
#ifndef VGPU_DAEMON_SWAP_H
#define VGPU_DAEMON_SWAP_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include <vgpu/admin.h>
#include <vgpu/control.h>

#include "plan_swap.h"

struct daemon;
struct daemon_conn;
struct daemon_vgpu;

/* A GPU's defaults and limits (vgpu-admin policy --gpu N --swap ...) */
#define SWAP_IDLE_MS_DEFAULT 60000u /* idle this long: may go out */
#define SWAP_IDLE_MS_MIN     100u
#define SWAP_IDLE_MS_MAX     (24u * 3600 * 1000)
#define SWAP_WAIT_MS_DEFAULT 10000u /* a call waits this long for it */
#define SWAP_WAIT_MS_MIN     100u
#define SWAP_WAIT_MS_MAX     60000u
/* A new client's hello waits at most this for the swap-in (the guest
 * library gives up on vgpud after 30 s). */
#define SWAP_HELLO_WAIT_MAX_MS 25000u
#define SWAP_HELLOS_MAX	       32u /* hellos parked per vGPU */
/* A vGPU with work that cannot come back yet tries again this often. */
#define SWAP_RETRY_MS 100
/* A create or resume waits at most this for its victims to go out. */
#define SWAP_ROOM_TIMEOUT_MS 70000

/* What a vGPU's SAVE or RESTORE in flight is for, when it is ours. */
enum swap_op {
	SWAP_OP_NONE = 0,
	SWAP_OP_OUT = 1,
	SWAP_OP_IN = 2,
};

/* Per vGPU, in its struct daemon_vgpu_state (st->swap). */
struct daemon_swap_vgpu {
	uint32_t mode;	     /* VGPU_ADMIN_SWAP_OFF, _ON, _GPU (0: _GPU) */
	bool swapped;	     /* out: suspended to its swap file */
	bool failed;	     /* its swap-in failed; resume retries */
	uint32_t op;	     /* enum swap_op in flight */
	int64_t op_ms;	     /* when that op was sent */
	int64_t out_ms;	     /* out since (monotonic ms) */
	int64_t out_unix;    /* the same, wall clock (seconds) */
	uint64_t bytes;	     /* in its swap file */
	int64_t want_ms;     /* has work since; 0: none */
	int64_t quiet_ms;    /* work seen before this is old news */
	int64_t next_try_ms; /* its next swap-in attempt */
	bool told_wait;	     /* logged that it must wait */
	bool told_bound;     /* logged that its calls fail */
	uint32_t swap_outs, swap_ins;
	char why[VGPU_MESSAGE_MAX]; /* why it is out (or came not back) */
	/* activity edges asked for on a static GPU (daemon_sched.c asks
	 * only under a dynamic policy) */
	int32_t edges_pid;
	uint32_t edges_seq; /* the scheduler's seq when we asked */
};

/* A GPU's settings and counts (d->swap->gpu[i]). */
struct daemon_swap_gpu {
	bool on;
	uint32_t idle_ms, wait_ms;
	uint32_t swap_outs, swap_ins;
};

struct daemon_swap_room;
struct daemon_swap_hello;

/* vgpud-wide (d->swap), made on first use. */
struct daemon_swap {
	struct daemon_swap_gpu gpu[VGPU_MAX_GPUS];
	struct daemon_swap_room *rooms;	  /* creates/resumes waiting */
	struct daemon_swap_hello *hellos; /* clients waiting for a swap-in */
	bool retrying; /* a parked request runs again: no second swap */
};

/* ---- daemon_swap.c ---- */
/* d->swap, made on first use with the defaults (NULL: no memory). */
struct daemon_swap *daemon_swap_of(struct daemon *d);
/* vgpud exits: its files stay for the next vgpud with --keep-workers. */
void daemon_swap_fini(struct daemon *d);
/* Whether v's settings let vgpud swap it out. */
bool daemon_swap_allowed(struct daemon *d, const struct daemon_vgpu *v);
/* Whether v is swapped out now. */
bool daemon_swap_swapped(const struct daemon_vgpu *v);
/* DIR/swap/NAME.state into buf. */
void daemon_swap_path(const struct daemon *d, const struct daemon_vgpu *v,
		      char *buf, size_t len);

/*
 * CREATE that the planner refused (err: its sentence): swap idle vGPUs
 * out and park c until they are out, then create. true when it took c
 * over (parked or answered); false: the caller refuses with err.
 */
bool daemon_swap_create(struct daemon *d, struct daemon_conn *c,
			const struct vgpu_admin_request *req, const char *err);
/* RESUME of v that does not fit: the same (fd: the request's file or
 * -1; duplicated when parked). */
bool daemon_swap_resume(struct daemon *d, struct daemon_conn *c,
			struct daemon_vgpu *v,
			const struct vgpu_admin_request *req, int fd,
			const char *err);
/* A client's hello for v (checked, allowed): when v is swapped out it
 * waits here for the swap-in (or gets a sentence). true: taken over. */
bool daemon_swap_hello(struct daemon *d, struct daemon_conn *c,
		       struct daemon_vgpu *v,
		       const struct vgpu_ctl_client *who);

/* From daemon_state_ops.c: v's SAVE or RESTORE was answered (applied
 * already when r->status is 0), or failed without an answer. */
void daemon_swap_saved(struct daemon *d, struct daemon_vgpu *v,
		       const struct vgpu_ctl_saved *r);
void daemon_swap_aborted(struct daemon *d, struct daemon_vgpu *v,
			 const char *why);
/* v's worker is gone while v was suspended; an adopted v. */
void daemon_swap_worker_gone(struct daemon *d, struct daemon_vgpu *v);
void daemon_swap_adopted(struct daemon *d, struct daemon_vgpu *v);
/* v goes away (destroy, exit). */
void daemon_swap_vgpu_free(struct daemon *d, struct daemon_vgpu *v);
/* The loop: what is due; v's next deadline (0: none). */
void daemon_swap_timers(struct daemon *d, int64_t now);
int64_t daemon_swap_deadline(const struct daemon_vgpu *v);
/* The earliest deadline of a waiting request or hello (0: none), so
 * that it is answered in time even when nothing else wakes the loop. */
int64_t daemon_swap_next_deadline(const struct daemon *d);
/* vgpud shuts down: answer whoever waits. */
void daemon_swap_close_waiters(struct daemon *d);

/* ---- daemon_swap_admin.c ---- */
void daemon_swap_admin(struct daemon *d, struct daemon_conn *c,
		       const struct vgpu_admin_request *req);
/* CREATE and PLAN_CHECK: the swap flags, checked (answers c when both
 * are set). */
bool daemon_swap_flags_ok(struct daemon *d, struct daemon_conn *c,
			  const struct vgpu_admin_request *req);
/* A vGPU just created (req: its CREATE, checked): its swap mode. */
void daemon_swap_vgpu_new(struct daemon *d, struct daemon_vgpu *v,
			  const struct vgpu_admin_request *req);
/* "allowed", "never", "gpu" / "on", "off" */
const char *daemon_swap_mode_name(uint32_t mode, bool gpu);
/* The state file: the GPUs' settings (NULL: all defaults) and back; a
 * vGPU's "swap" object (NULL: nothing to record) and back. */
json_t *daemon_swap_json(struct daemon *d);
int daemon_swap_from_json(struct daemon *d, json_t *j, char *err,
			  size_t errlen);
json_t *daemon_swap_vgpu_json(const struct daemon_vgpu *v);
int daemon_swap_vgpu_from_json(struct daemon *d, struct daemon_vgpu *v,
			       json_t *j, char *err, size_t errlen);

#endif /* VGPU_DAEMON_SWAP_H */
