/* SPDX-License-Identifier: MIT */
/* Regular bursts (plan_burst.h). */
#include "plan_burst.h"

void burst_busy_edge(struct plan_burst *b, int64_t now_ms)
{
	uint32_t i;

	if (b->n && now_ms < b->edge[b->n - 1])
		b->n = 0; /* the clock went back: start again */
	if (b->n == BURST_EDGES) {
		for (i = 1; i < BURST_EDGES; i++)
			b->edge[i - 1] = b->edge[i];
		b->n--;
	}
	b->edge[b->n++] = now_ms;
}

static int64_t diff(int64_t a, int64_t b)
{
	return a > b ? a - b : b - a;
}

int64_t burst_period(const struct plan_burst *b)
{
	int64_t d1, d2, tol;

	if (b->n < 3)
		return 0;
	d1 = b->edge[b->n - 2] - b->edge[b->n - 3];
	d2 = b->edge[b->n - 1] - b->edge[b->n - 2];
	if (d1 < BURST_MIN_PERIOD || d2 < BURST_MIN_PERIOD ||
	    d1 > BURST_MAX_PERIOD || d2 > BURST_MAX_PERIOD)
		return 0;
	tol = d1 / 10 > BURST_JITTER_MS ? d1 / 10 : BURST_JITTER_MS;
	if (diff(d1, d2) > tol)
		return 0;
	return (d1 + d2) / 2;
}

int burst_expected(const struct plan_burst *b, int64_t now_ms, int64_t lead_ms)
{
	int64_t p = burst_period(b), next;

	if (!p)
		return 0;
	next = b->edge[b->n - 1] + p;
	return now_ms >= next - lead_ms && now_ms < next + p / 4;
}

int64_t burst_next_lead(const struct plan_burst *b, int64_t now_ms,
			int64_t lead_ms)
{
	int64_t p = burst_period(b), at;

	if (!p)
		return 0;
	at = b->edge[b->n - 1] + p - lead_ms;
	return at > now_ms ? at : 0;
}

int64_t burst_lead_ms(const struct plan_burst *b, int64_t min_ms,
		      uint32_t drain_ms, uint32_t resize_ms, int64_t busy_ms)
{
	int64_t p = burst_period(b);
	int64_t lead = (int64_t)drain_ms + 2 * (int64_t)resize_ms;
	int64_t gap = busy_ms > 0 && busy_ms < p ? p - busy_ms : p;

	if (!p)
		return 0;
	if (lead < min_ms)
		lead = min_ms;
	if (lead > gap / 2)
		lead = gap / 2;
	return lead;
}

int64_t burst_due_end(const struct plan_burst *b)
{
	int64_t p = burst_period(b);

	return p ? b->edge[b->n - 1] + p + p / 4 : 0;
}
