/* SPDX-License-Identifier: MIT */
/*
 * vgpud's part of dynamic partitioning (docs/DESIGN.md):
 *
 *   daemon_resize.c  vgpu-admin resize/move: plan the new groups, send
 *                    VGPU_CTL_RESIZE, apply VGPU_CTL_RESIZED (plan, config,
 *                    state file), answer the admin
 *   daemon_load.c    the workers' VGPU_CTL_LOAD, GPU power and energy from
 *                    NVML (read-only), vgpu-admin top
 *   nvml_sym.c       libnvidia-ml.so.1 through dlopen
 *
 * All of it runs in vgpud's one loop.
 */
#ifndef VGPU_DAEMON_PART_H
#define VGPU_DAEMON_PART_H

#include <stdbool.h>
#include <stdint.h>

#include "daemon.h"
#include "plan_resize.h"

/* A worker answers a RESIZE within this, or the admin is told it did not
 * (the plan keeps both sets until the worker answers or exits). */
#define DAEMON_RESIZE_TIMEOUT_MS 10000
/* NVML is read at most this often per GPU. */
#define DAEMON_NVML_PERIOD_MS 500

/* Per vGPU (v->part), made on first use. */
struct daemon_vgpu_part {
	/* the latest load window */
	bool have_load;
	struct vgpu_ctl_load load;
	int64_t load_ms; /* when it came */
	/* from NVML */
	uint32_t sm_util, mem_util; /* %, or VGPU_ADMIN_NA */
	uint32_t bw_class;	    /* enum vgpu_admin_bw_class */
	uint32_t power_mw;	    /* its share, or VGPU_ADMIN_NA */
	uint64_t energy_mj;	    /* its share since vgpud started */
	bool energy_known;
	/* resizes */
	uint32_t change_count;
	uint32_t resizes;
	uint32_t last_switch_ns, last_build_us, last_waits;
	bool resizing;		    /* a RESIZE was sent, no answer yet */
	uint32_t seq;		    /* of that RESIZE */
	struct daemon_conn *waiter; /* the admin waiting for it, or NULL */
	int64_t deadline;	    /* ms; 0 after the admin was answered */
	struct plan_resize plan;    /* what it moves to */
};

struct nvml_sym;

/* vgpud-wide (d->part), made on first use. */
struct daemon_part {
	uint32_t resize_seq;
	struct nvml_sym *nvml; /* NULL: not loaded (yet, or at all) */
	bool nvml_tried;
	struct {
		void *dev; /* nvmlDevice_t of our GPU i, NULL if none */
		int64_t at_ms;
		uint64_t energy_mj; /* the counter at at_ms */
		bool energy_ok;
		uint32_t power_mw;	    /* or VGPU_ADMIN_NA */
		unsigned long long util_ts; /* last process sample seen */
	} gpu[VGPU_MAX_GPUS];
};

/* ---- daemon_resize.c ---- */
void daemon_resize_admin(struct daemon *d, struct daemon_conn *c,
			 const struct vgpu_admin_request *req);
/*
 * Move v (running, not being resized) onto r's groups (from
 * plan_resize_choose): held in the plan, RESIZE sent; waiter (NULL: the
 * scheduler's) is answered with the outcome. 0, or -1 with an admin
 * status and a sentence.
 */
int daemon_resize_start(struct daemon *d, struct daemon_vgpu *v,
			const struct plan_resize *r, struct daemon_conn *waiter,
			int32_t *status, char *err, size_t errlen);
void daemon_resize_done(struct daemon *d, struct daemon_vgpu *v,
			struct vgpu_ctl_resized *r);
/* v's worker is gone (or v is going): a pending resize fails. */
void daemon_resize_abort(struct daemon *d, struct daemon_vgpu *v,
			 const char *why);
/* Deadlines of pending resizes: the earliest (0 = none), and their turn. */
int64_t daemon_resize_deadline(const struct daemon_vgpu *v);
void daemon_resize_timers(struct daemon *d, int64_t now);
/* vgpud shuts down: answer every admin waiting for a resize. */
void daemon_resize_close_waiters(struct daemon *d);

/* ---- daemon_load.c ---- */
void daemon_load_update(struct daemon *d, struct daemon_vgpu *v,
			const struct vgpu_ctl_load *l);
void daemon_load_top(struct daemon *d, struct daemon_conn *c,
		     const struct vgpu_admin_request *req);
/* The per-vGPU part, made on first use (NULL without memory). */
struct daemon_vgpu_part *daemon_vgpu_part(struct daemon_vgpu *v);
/* v goes away: a pending resize fails, its part is freed. */
void daemon_part_vgpu_free(struct daemon *d, struct daemon_vgpu *v);
/* vgpud exits. */
void daemon_part_fini(struct daemon *d);

#endif /* VGPU_DAEMON_PART_H */
