/* SPDX-License-Identifier: MIT */
/*
 * Liveness: a worker that stops serving is replaced.
 *
 * A worker's main loop sends VGPU_CTL_STATS every second. A running worker
 * that has sent none for DAEMON_WORKER_SILENT_MS (its main loop is wedged:
 * stopped, deadlocked, blocked in the driver) is killed and started again:
 * only it, not its fault domain, since nothing says the GPU failed
 * (DAEMON_STOP_LIVENESS in worker_exited). Its other clients get a CUDA
 * error; its memory comes back from the last save point when the
 * blueprint has save points (as after a fault), else it is lost.
 *
 * A client that leaves inside a call is cleaned up by the worker itself
 * first (worker_depart.c opens its host functions' gates). Its thread may
 * still be in a call for long after that without anything being wrong:
 * its queued kernels run to their end (a chain of kernels each under the
 * time limit may take minutes), and the driver makes frees and unloads
 * wait for other clients' kernels. Such a thread is reported (the stats'
 * stuck_clients, one log line per report). One in a single call for more
 * than 2 s while nothing of the vGPU's runs on the GPU waits for nothing
 * that will come: the worker counts it as wedged (worker_client.c,
 * client_wedged), and the worker is replaced as when it is silent.
 *
 * Not while a resize or a save, restore or migration is in flight: those
 * run on the worker's main loop and have deadlines of their own. A turn
 * of vgpud's own loop that took long before its timers (a slow disk, a
 * slow user database) moves every clock on by that much, so that stats
 * still unread in the sockets do not count as missing.
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
	/* how long this turn of the loop has run before the timers */
	int64_t gap = d->loop_woke_ms && now > d->loop_woke_ms
			      ? now - d->loop_woke_ms
			      : 0;
	char why[128];

	for (v = d->vgpus; v && !d->stopping; v = v->next) {
		if (!liveness_watched(d, v)) {
			v->stats_ms = 0; /* the clock starts when watched */
			continue;
		}
		if (!v->stats_ms)
			v->stats_ms = now;
		/* vgpud itself did not look for a while: nor could it read */
		if (gap > d->silent_ms / 2)
			v->stats_ms += gap;
		if (v->stats.stuck_clients && !v->stuck_logged) {
			daemon_log("vGPU %s: worker pid %d has %u client "
				   "thread%s still in a call more than 2 s "
				   "after the client left (its queued work, "
				   "or other clients' kernels); replaced only "
				   "if it waits with nothing on the GPU",
				   v->cfg.name, (int)v->pid,
				   v->stats.stuck_clients,
				   v->stats.stuck_clients == 1 ? "" : "s");
			v->stuck_logged = true;
		} else if (!v->stats.stuck_clients) {
			v->stuck_logged = false;
		}
		if (v->stats.wedged_clients) {
			snprintf(why, sizeof(why),
				 "has %u thread%s of departed clients stuck "
				 "in a call with nothing on the GPU: it "
				 "stopped serving",
				 v->stats.wedged_clients,
				 v->stats.wedged_clients == 1 ? "" : "s");
			v->stats.wedged_clients = 0; /* said once */
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
