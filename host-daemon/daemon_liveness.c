/* SPDX-License-Identifier: MIT */
/*
 * Liveness: a worker that stops serving is replaced.
 *
 * A worker's main loop sends VGPU_CTL_STATS every second; its stats say
 * how many of its client threads are still inside a call more than 2 s
 * after their client left (the worker opened their host functions' gates
 * when they left: worker_depart.c, so such a thread is stuck for good).
 * A running worker that has sent no stats for DAEMON_WORKER_SILENT_MS
 * (its main loop is wedged: stopped, deadlocked, blocked in the driver),
 * or that reports a stuck client, is killed and started again: only it,
 * not its fault domain, since nothing says the GPU failed (DAEMON_STOP_
 * LIVENESS in worker_exited). Its other clients get a CUDA error; its
 * memory comes back from the last save point when the blueprint has save
 * points (as after a fault), else it is lost.
 *
 * Not while a resize or a save, restore or migration is in flight: those
 * run on the worker's main loop and have deadlines of their own.
 */
#include <signal.h>
#include <stdio.h>

#include "daemon.h"
#include "daemon_part.h"
#include "daemon_state_ops.h"

void daemon_liveness_stats(struct daemon_vgpu *v)
{
	v->stats_ms = daemon_now_ms();
}

/* Whether v's worker is expected to send stats now. */
static bool liveness_watched(const struct daemon *d,
			     const struct daemon_vgpu *v)
{
	return d->silent_ms > 0 && v->pid && v->ready && v->ctl_fd >= 0 &&
	       v->state == VGPU_ADMIN_STATE_RUNNING &&
	       v->stop == DAEMON_STOP_NONE && !v->destroying &&
	       !daemon_resize_deadline(v) && !daemon_state_deadline(v);
}

static void liveness_replace(struct daemon *d, struct daemon_vgpu *v,
			     const char *why)
{
	daemon_log("vGPU %s: worker pid %d %s; replacing it (its clients get "
		   "a CUDA error; its memory %s)",
		   v->cfg.name, (int)v->pid, why,
		   v->cfg.save_interval_ms ? "comes back from the last save "
					     "point"
					   : "is lost: no save points");
	v->stop = DAEMON_STOP_LIVENESS;
	v->state = VGPU_ADMIN_STATE_RESTARTING;
	daemon_vgpu_kill(v, SIGKILL);
	d->state_dirty = true;
}

void daemon_liveness_check(struct daemon *d, int64_t now)
{
	struct daemon_vgpu *v;
	char why[128];

	for (v = d->vgpus; v && !d->stopping; v = v->next) {
		if (!liveness_watched(d, v)) {
			v->stats_ms = 0; /* the clock starts when watched */
			continue;
		}
		if (!v->stats_ms)
			v->stats_ms = now;
		if (v->stats.stuck_clients) {
			snprintf(why, sizeof(why),
				 "has %u client thread%s stuck in a call "
				 "after the client left",
				 v->stats.stuck_clients,
				 v->stats.stuck_clients == 1 ? "" : "s");
			liveness_replace(d, v, why);
		} else if (now - v->stats_ms > d->silent_ms) {
			snprintf(why, sizeof(why),
				 "sent no statistics for %lld ms: it stopped "
				 "serving",
				 (long long)(now - v->stats_ms));
			liveness_replace(d, v, why);
		}
	}
}

int64_t daemon_liveness_deadline(const struct daemon *d,
				 const struct daemon_vgpu *v)
{
	if (!v->stats_ms || !liveness_watched(d, v))
		return 0;
	return v->stats_ms + d->silent_ms + 1;
}
