/* SPDX-License-Identifier: MIT */
/*
 * Resize and slice moves in the worker (VGPU_CTL_RESIZE).
 *
 * The backend does the switch (backend.h: resize): new context built
 * beside the clients, every stream moved at a kernel boundary, order kept
 * with events. What is left here is the worker's side of it:
 *
 *   - the request is checked like a config (group indices, no repeats);
 *   - the barrier budget: the switch holds new submissions back for its
 *     switch_ns; the sum of those may use WORKER_BARRIER_BUDGET_NS per
 *     WORKER_BARRIER_PERIOD_NS (a token bucket), so that a scheduler that
 *     resizes too often slows its own resizes, never the clients. A
 *     resize that finds the bucket empty is deferred until it refills;
 *   - afterwards: the config's groups (for a restarted vgpud's check),
 *     the device description, then the change counter in every ring
 *     header (in that order: a client that sees the new counter and asks
 *     gets the new description), then VGPU_CTL_RESIZED;
 *   - the old context is reclaimed by later ticks, once its queued work
 *     is done.
 *
 * Main thread only (the ctl socket's thread).
 */
#include <cuda.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_msg.h"
#include "worker_part.h"

/* How long a resize waits for cooperative kernels at most (the kernel
 * time limit and a second when that is less): below vgpud's 10 s for an
 * answer (DAEMON_RESIZE_TIMEOUT_MS), so the refusal is the answer. */
#define COOP_WAIT_MS 8000u

int worker_part_init(struct worker *w)
{
	pthread_mutex_init(&w->info_lock, NULL); /* needed in any case */
	w->part = calloc(1, sizeof(*w->part));
	if (!w->part)
		return -ENOMEM;
	w->part->tokens_ns = (int64_t)WORKER_BARRIER_BUDGET_NS;
	w->part->tokens_at = worker_now_ns();
	w->part->load_at = worker_now_ns();
	return 0;
}

void worker_part_fini(struct worker *w)
{
	/* the backend's close freed what was left of old contexts */
	free(w->part);
	w->part = NULL;
	pthread_mutex_destroy(&w->info_lock);
}

/* Refill the bucket for the time since it was last looked at. */
static void budget_refill(struct worker_part *p, uint64_t now)
{
	uint64_t dt = now - p->tokens_at;
	uint64_t add =
		dt / (WORKER_BARRIER_PERIOD_NS / WORKER_BARRIER_BUDGET_NS);

	if (!add)
		return; /* too short to earn a nanosecond: keep counting */
	p->tokens_ns += (int64_t)add;
	if (p->tokens_ns > (int64_t)WORKER_BARRIER_BUDGET_NS)
		p->tokens_ns = (int64_t)WORKER_BARRIER_BUDGET_NS;
	p->tokens_at = now;
}

static void send_resized(struct worker *w, const struct vgpu_ctl_resized *r)
{
	int fd = __atomic_load_n(&w->ctl_fd, __ATOMIC_ACQUIRE);

	if (fd >= 0)
		ctl_send(fd, VGPU_CTL_RESIZED, r, sizeof(*r), -1);
}

static void refuse(struct worker *w, uint32_t seq, int32_t status,
		   const char *fmt, const char *what)
{
	struct vgpu_ctl_resized r;

	memset(&r, 0, sizeof(r));
	r.seq = seq;
	r.status = status;
	r.sm_count = w->info.sm_count;
	r.change_count = __atomic_load_n(&w->change_count, __ATOMIC_ACQUIRE);
	snprintf(r.message, sizeof(r.message), fmt, what);
	worker_log(w, "resize refused: %s", r.message);
	send_resized(w, &r);
}

/* The request's groups: 1..64 indices below VGPU_MAX_SM_GROUPS, no
 * repeats (the backend checks them against its split). */
static int request_ok(const struct vgpu_ctl_resize *q, char *why, size_t len)
{
	uint64_t seen = 0;
	uint32_t i;

	if (!q->ngroups || q->ngroups > VGPU_MAX_SM_GROUPS) {
		snprintf(why, len, "ngroups %u not in 1..%d", q->ngroups,
			 VGPU_MAX_SM_GROUPS);
		return 0;
	}
	for (i = 0; i < q->ngroups; i++) {
		if (q->groups[i] >= VGPU_MAX_SM_GROUPS ||
		    (seen & (1ull << q->groups[i]))) {
			snprintf(why, len,
				 "SM group %u out of range or repeated",
				 q->groups[i]);
			return 0;
		}
		seen |= 1ull << q->groups[i];
	}
	return 1;
}

uint32_t worker_publish_info(struct worker *w, struct vgpu_device_info *out)
{
	struct vgpu_device_info info;
	uint32_t count;

	memset(&info, 0, sizeof(info));
	w->ops->device_info(w->be, &info);
	info.name[sizeof(info.name) - 1] = 0;
	info.gpu_name[sizeof(info.gpu_name) - 1] = 0;
	info.vgpu_name[sizeof(info.vgpu_name) - 1] = 0;
	count = __atomic_load_n(&w->change_count, __ATOMIC_RELAXED) + 1;
	info.change_count = count;
	pthread_mutex_lock(&w->info_lock);
	w->info = info;
	pthread_mutex_unlock(&w->info_lock);
	__atomic_store_n(&w->change_count, count, __ATOMIC_RELEASE);
	worker_client_publish_change(w, count);
	if (out)
		*out = info;
	return count;
}

/* Run a checked request now (the budget allows it). */
static void resize_run(struct worker *w, const struct vgpu_ctl_resize *q,
		       uint64_t delay_ns)
{
	struct worker_part *p = w->part;
	struct backend_resize_info ri;
	struct vgpu_device_info info;
	struct vgpu_ctl_resized r;
	char err[VGPU_MESSAGE_MAX] = "";
	uint32_t count, old_sms = w->info.sm_count, left, bound_ms;
	uint64_t t0 = worker_now_ns(), waited_ns;
	int rc;

	memset(&r, 0, sizeof(r));
	r.seq = q->seq;
	r.delay_ns = delay_ns;
	/* cooperative kernels in flight end on the slice they were checked
	 * against (worker_coop.c); an endless one refuses the resize */
	bound_ms = COOP_WAIT_MS;
	if (w->cfg.kernel_time_limit_ms &&
	    w->cfg.kernel_time_limit_ms + 1000 < bound_ms)
		bound_ms = w->cfg.kernel_time_limit_ms + 1000;
	if (worker_coop_drain(w, bound_ms * 1000000ull, &left, &waited_ns)) {
		snprintf(err, sizeof(err),
			 "%u cooperative kernel%s of the vGPU still running "
			 "after %u ms; a resize waits for them to end",
			 left, left == 1 ? "" : "s", bound_ms);
		refuse(w, q->seq, CUDA_ERROR_NOT_READY, "%s", err);
		return;
	}
	if (waited_ns)
		worker_log(w,
			   "resize waited %.1f ms for the cooperative "
			   "kernels in flight to end",
			   waited_ns / 1e6);
	rc = w->ops->resize(w->be, q->groups, q->ngroups, &ri, err,
			    sizeof(err));
	if (rc) {
		worker_coop_resume(w);
		r.status = rc;
		r.sm_count = w->info.sm_count;
		r.change_count =
			__atomic_load_n(&w->change_count, __ATOMIC_ACQUIRE);
		snprintf(r.message, sizeof(r.message), "%s",
			 err[0] ? err : "the backend could not resize");
		worker_log(w, "resize to %u group%s failed: %s (CUDA error %d)",
			   q->ngroups, q->ngroups == 1 ? "" : "s", r.message,
			   rc);
		send_resized(w, &r);
		worker_check(w, rc, "resize");
		return;
	}
	w->cfg.ngroups = q->ngroups;
	memset(w->cfg.groups, 0, sizeof(w->cfg.groups));
	memcpy(w->cfg.groups, q->groups, q->ngroups * sizeof(q->groups[0]));
	count = worker_publish_info(w, &info);
	/* after the new SM count is published: a cooperative launch held
	 * until now is checked against it */
	worker_coop_resume(w);

	/* a debt of at most one budget: one slow switch (a loaded host)
	 * holds the next resize back by a period, not for minutes */
	p->tokens_ns -= (int64_t)ri.switch_ns;
	if (p->tokens_ns < -(int64_t)WORKER_BARRIER_BUDGET_NS)
		p->tokens_ns = -(int64_t)WORKER_BARRIER_BUDGET_NS;
	p->barrier_total_ns += ri.switch_ns;
	p->resizes++;
	p->reclaiming = w->ops->resize_reclaim != NULL;
	r.status = CUDA_SUCCESS;
	r.sm_count = info.sm_count;
	r.change_count = count;
	r.build_ns = ri.build_ns;
	r.switch_ns = ri.switch_ns;
	r.streams = ri.streams;
	r.waits = ri.waits;
	worker_log(w,
		   "resized: %u -> %u SMs (%u group%s), new context in %.3f "
		   "ms, switch %.1f us, after it %.3f ms, in all %.3f ms, %u "
		   "of %u streams waited, change %u",
		   old_sms, info.sm_count, q->ngroups,
		   q->ngroups == 1 ? "" : "s", ri.build_ns / 1e6,
		   ri.switch_ns / 1e3, ri.after_ns / 1e6,
		   (worker_now_ns() - t0) / 1e6, ri.waits, ri.streams, count);
	send_resized(w, &r);
	worker_part_tick(w); /* reclaim at once when nothing was queued */
}

void worker_resize_request(struct worker *w, const void *payload, uint32_t len)
{
	struct worker_part *p = w->part;
	struct vgpu_ctl_resize q;
	char why[160];
	uint64_t now;

	if (len != sizeof(q)) {
		worker_log(w, "RESIZE message of %u bytes ignored (needs %zu)",
			   len, sizeof(q));
		return; /* no seq to answer to */
	}
	memcpy(&q, payload, sizeof(q));
	if (!p || __atomic_load_n(&w->faulting, __ATOMIC_ACQUIRE)) {
		refuse(w, q.seq, CUDA_ERROR_ILLEGAL_STATE, "%s",
		       "the vGPU is failing");
		return;
	}
	if (!w->ops->resize) {
		refuse(w, q.seq, CUDA_ERROR_NOT_SUPPORTED,
		       "the %s backend cannot resize a slice", w->ops->name);
		return;
	}
	if (!request_ok(&q, why, sizeof(why))) {
		refuse(w, q.seq, CUDA_ERROR_INVALID_VALUE, "RESIZE: %s", why);
		return;
	}
	if (p->deferred) {
		refuse(w, q.seq, CUDA_ERROR_NOT_READY, "%s",
		       "another resize is waiting for the barrier budget");
		return;
	}
	now = worker_now_ns();
	budget_refill(p, now);
	if (p->tokens_ns < 0) {
		p->deferred = 1;
		p->req = q;
		p->req_at = now;
		return;
	}
	resize_run(w, &q, 0);
}

void worker_part_tick(struct worker *w)
{
	struct worker_part *p = w->part;
	uint64_t now;
	int rc;

	if (!p)
		return;
	if (p->deferred) {
		now = worker_now_ns();
		budget_refill(p, now);
		if (p->tokens_ns >= 0) {
			p->deferred = 0;
			resize_run(w, &p->req, now - p->req_at);
		}
	}
	if (p->reclaiming) {
		rc = w->ops->resize_reclaim(w->be);
		if (rc == CUDA_SUCCESS) {
			p->reclaiming = 0;
		} else if (rc != CUDA_ERROR_NOT_READY) {
			p->reclaiming = 0;
			worker_log(w,
				   "reclaiming the old context: CUDA error "
				   "%d",
				   rc);
			worker_check(w, rc, "resize_reclaim");
		}
	}
}

int worker_part_timeout(const struct worker *w, int timeout_ms)
{
	const struct worker_part *p = w->part;
	int t = timeout_ms;
	uint64_t need;

	if (!p)
		return timeout_ms;
	if (p->reclaiming && (t < 0 || t > WORKER_RECLAIM_POLL_MS))
		t = WORKER_RECLAIM_POLL_MS;
	if (p->deferred) {
		/* when the bucket is back at zero */
		need = (uint64_t)(-p->tokens_ns) *
		       (WORKER_BARRIER_PERIOD_NS / WORKER_BARRIER_BUDGET_NS);
		need = need / 1000000u + 1;
		if (t < 0 || (uint64_t)t > need)
			t = (int)need;
	}
	return t;
}
