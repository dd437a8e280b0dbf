/* SPDX-License-Identifier: MIT */
/*
 * vgpud's part of save, restore and migration (docs/DESIGN.md, "Save,
 * restore and migration"; daemon_state_ops.c): vgpu-admin suspend,
 * resume and migrate; the workers' VGPU_CTL_SAVED and PROGRESS; the
 * periodic save points' memfds and the recovery of a restarted worker.
 * All of it runs in vgpud's one loop.
 */
#ifndef VGPU_DAEMON_STATE_OPS_H
#define VGPU_DAEMON_STATE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include <vgpu/admin.h>
#include <vgpu/control.h>

#include "daemon.h"
#include "daemon_swap.h"
#include "plan_move.h"

/* A worker that makes no progress on a SAVE or RESTORE for this long:
 * the admin is told (the vGPU stays as it is until the answer comes). */
#define DAEMON_STATE_TIMEOUT_MS 60000
/* Save intervals a blueprint may ask for */
#define DAEMON_SAVE_INTERVAL_MIN_MS 100u
#define DAEMON_SAVE_INTERVAL_MAX_MS (24u * 3600 * 1000)

/* Per vGPU (v->st), made on first use. */
struct daemon_vgpu_state {
	bool suspended; /* its state saved, no groups or memory held */
	/* the SAVE or RESTORE in flight */
	bool busy;
	uint32_t seq, op;
	struct daemon_conn *waiter; /* the admin, or NULL */
	bool progress;		    /* the admin wants progress packets */
	int64_t deadline;	    /* ms; 0 once the admin was answered */
	int64_t started_ms;
	bool holding; /* move's groups and memory are held */
	struct plan_move move;
	uint32_t from_gpu;
	/* save points */
	int sp_fd; /* the latest save point's memfd; -1: none */
	uint64_t sp_count;
	int64_t sp_last_ms;
	uint64_t sp_last_bytes, sp_last_blackout_ns;
	bool recovering; /* a RECOVER was sent to the new worker */
	/* swapped out by vgpud to make room (daemon_swap.h) */
	struct daemon_swap_vgpu swap;
};

/* v's part, made on first use (NULL without memory). */
struct daemon_vgpu_state *daemon_state_of(struct daemon_vgpu *v);
/*
 * Swapping (daemon_swap.c): suspend running v to fd (a new file; vgpud
 * keeps nothing of it), its clients' calls failing after wait_ms; resume
 * suspended v onto m from the file its worker kept. Nobody is waiting:
 * SAVED goes to daemon_swap_saved. 0, or -1 with a sentence in err.
 */
int daemon_state_swap_out(struct daemon *d, struct daemon_vgpu *v, int fd,
			  uint32_t wait_ms, char *err, size_t errlen);
int daemon_state_swap_in(struct daemon *d, struct daemon_vgpu *v,
			 const struct plan_move *m, char *err, size_t errlen);

/* vgpu-admin suspend / resume / migrate (fd: a descriptor that came with
 * the request, or -1; taken over). */
void daemon_state_admin(struct daemon *d, struct daemon_conn *c,
			const struct vgpu_admin_request *req, int fd);
/* CREATE with VGPU_ADMIN_CREATE_RECOVERY: the save interval, checked
 * (answers c and returns false when it is out of range). */
bool daemon_state_create(struct daemon *d, struct daemon_conn *c,
			 struct daemon_vgpu *v,
			 const struct vgpu_admin_request *req);
/* The worker's VGPU_CTL_SAVED (fd: attached, or -1; taken over) and
 * VGPU_CTL_PROGRESS. */
void daemon_state_saved(struct daemon *d, struct daemon_vgpu *v,
			struct vgpu_ctl_saved *r, int fd);
void daemon_state_progress(struct daemon *d, struct daemon_vgpu *v,
			   const struct vgpu_ctl_progress *p);
/* CONFIG went to a (re)started worker: RECOVER follows when there is a
 * save point. */
void daemon_state_started(struct daemon *d, struct daemon_vgpu *v);
/* v's worker is gone: what was in flight fails (the plan keeps what v
 * held before it). */
void daemon_state_abort(struct daemon *d, struct daemon_vgpu *v,
			const char *why);
/* A suspended vGPU's worker is gone: v stays suspended, without worker
 * (a resume starts a new one, empty). */
void daemon_state_worker_gone(struct daemon *d, struct daemon_vgpu *v);
/* An adopted worker (daemon_state.c): v's state from what was recorded. */
void daemon_state_adopted(struct daemon *d, struct daemon_vgpu *v);
bool daemon_state_suspended(const struct daemon_vgpu *v);
/* A SAVE or RESTORE is in flight (a resize must wait). */
bool daemon_state_busy(const struct daemon_vgpu *v);
int64_t daemon_state_deadline(const struct daemon_vgpu *v);
void daemon_state_timers(struct daemon *d, int64_t now);
/* v goes away: close and free its part. */
void daemon_state_vgpu_free(struct daemon *d, struct daemon_vgpu *v);
/* vgpud exits: answer every admin still waiting. */
void daemon_state_close_waiters(struct daemon *d);

/* The state file (daemon_state.c): v's "state" object, or NULL when
 * there is nothing to record; and back. */
struct json_t;
struct json_t *daemon_state_vgpu_json(const struct daemon_vgpu *v);
/* Whether a "state" object says suspended (NULL: no). */
bool daemon_state_json_suspended(struct json_t *st);
/* Apply a checked "state" object to a loaded v. 0 or -1 with err. */
int daemon_state_vgpu_from_json(struct daemon *d, struct daemon_vgpu *v,
				struct json_t *st, char *err, size_t errlen);

#endif /* VGPU_DAEMON_STATE_OPS_H */
