/* SPDX-License-Identifier: MIT */
/*
 * Regular bursts: when a vGPU's busy edges come at a steady period (a
 * latency-critical service polled or fed on a clock, a training step, a
 * frame loop), the next one can be expected. The scheduler gives such a
 * vGPU its SMs back a little before its next burst (daemon_sched.c), so
 * that the burst starts on its own groups with the borrowers' kernels
 * already drained from them, instead of waiting for a reclaim (two resizes
 * and the borrowers' kernels in flight: milliseconds, docs/PERF.md).
 *
 * Pure logic, unit-tested (tests/unit/test_plan_burst.c).
 */
#ifndef VGPU_PLAN_BURST_H
#define VGPU_PLAN_BURST_H

#include <stdint.h>

#define BURST_EDGES	 4     /* busy edges remembered */
#define BURST_MIN_PERIOD 20    /* ms: shorter is not worth lending */
#define BURST_MAX_PERIOD 10000 /* ms */
#define BURST_JITTER_MS	 5     /* periods this close (or within 10 %) */

struct plan_burst {
	int64_t edge[BURST_EDGES]; /* busy edges, oldest first (ms) */
	uint32_t n;
};

/* A busy edge at now_ms (monotonic, not before the last one). */
void burst_busy_edge(struct plan_burst *b, int64_t now_ms);

/*
 * The period of its bursts when the last three busy edges came at a
 * steady one (two intervals within BURST_JITTER_MS or 10 % of each
 * other, both within the MIN..MAX bounds), else 0.
 */
int64_t burst_period(const struct plan_burst *b);

/*
 * Whether a burst is expected within lead_ms of now: a steady period, and
 * now inside [next - lead_ms, next + period / 4), next being the last
 * busy edge plus the period. A burst that did not come by then is no
 * longer expected (until the edges are steady again).
 */
int burst_expected(const struct plan_burst *b, int64_t now_ms, int64_t lead_ms);

/* When burst_expected first becomes true after now_ms, or 0 (none). */
int64_t burst_next_lead(const struct plan_burst *b, int64_t now_ms,
			int64_t lead_ms);

/*
 * How far ahead of a burst the SMs should come back: the borrowers'
 * longest drain estimate (their kernels on the GPU must end before the
 * groups are free) plus the two resizes of a reclaim (resize_ms), at
 * least min_ms, and at most half the idle gap between bursts (the period
 * less busy_ms, the last burst's length, when known and shorter; else
 * half the period), so that something is still lent between bursts. 0
 * when there is no steady period.
 */
int64_t burst_lead_ms(const struct plan_burst *b, int64_t min_ms,
		      uint32_t drain_ms, uint32_t resize_ms, int64_t busy_ms);

/* When the burst expected next stops being expected (see
 * burst_expected: a quarter period after it is due), or 0. */
int64_t burst_due_end(const struct plan_burst *b);

#endif /* VGPU_PLAN_BURST_H */
