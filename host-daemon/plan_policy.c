/* SPDX-License-Identifier: MIT */
/*
 * Scheduling policies (see plan_policy.h for the rules). Everything is
 * counted in whole SM groups and done one group at a time: a GPU has at
 * most 64 groups and a few dozen vGPUs, so the simple loops are cheap
 * and their result is easy to state and to test.
 */
#include <stdio.h>
#include <string.h>

#include "plan_policy.h"

#define N POLICY_MAX_VGPUS

static uint32_t sat_sub(uint32_t a, uint32_t b)
{
	return a > b ? a - b : 0;
}

static uint32_t prio_of(const struct policy_vgpu *v)
{
	return v->prio >= POLICY_LOW && v->prio <= POLICY_HIGH ? v->prio
							       : POLICY_NORMAL;
}

static uint32_t weight_of(const struct policy_vgpu *v)
{
	return v->weight ? v->weight : 1;
}

/*
 * Whether a should get the next group before b: the one with less per
 * unit of weight; on a tie the one that already holds that group (so
 * nothing moves), then the lower index.
 */
static bool before(const struct policy_vgpu *v, const uint32_t *alloc,
		   uint32_t a, uint32_t b)
{
	uint64_t la = (uint64_t)alloc[a] * weight_of(&v[b]);
	uint64_t lb = (uint64_t)alloc[b] * weight_of(&v[a]);
	bool ha = alloc[a] < v[a].cur, hb = alloc[b] < v[b].cur;

	if (la != lb)
		return la < lb;
	if (ha != hb)
		return ha;
	return a < b;
}

/* Deal out left groups, one at a time, to the eligible vGPUs below their
 * limit, each time to the one furthest below its weighted share. */
static uint32_t deal(const struct policy_vgpu *v, uint32_t n, const bool *ok,
		     const uint32_t *limit, uint32_t *alloc, uint32_t left)
{
	uint32_t i;
	int best;

	while (left) {
		best = -1;
		for (i = 0; i < n; i++) {
			if (!ok[i] || alloc[i] >= limit[i])
				continue;
			if (best < 0 || before(v, alloc, i, (uint32_t)best))
				best = (int)i;
		}
		if (best < 0)
			break;
		alloc[best]++;
		left--;
	}
	return left;
}

/*
 * What each vGPU in `in` holds when cap groups are shared: its floor,
 * then (priority) the wanting ones raised to their base, class by class,
 * then the wanting ones by weight up to their max.
 */
static void fill(const struct policy_gpu *g, const struct policy_vgpu *v,
		 uint32_t n, const bool *in, const bool *want,
		 const uint32_t *floor, uint32_t cap, uint32_t *out)
{
	uint32_t limit[N], total = 0, left, i, p;
	bool ok[N];

	for (i = 0; i < n; i++) {
		out[i] = in[i] ? floor[i] : 0;
		total += out[i];
	}
	left = sat_sub(cap, total);
	if (g->mode == POLICY_PRIORITY) {
		for (p = POLICY_HIGH; p >= POLICY_LOW; p--) {
			for (i = 0; i < n; i++) {
				ok[i] = in[i] && want[i] && prio_of(&v[i]) == p;
				limit[i] = v[i].base < v[i].max ? v[i].base
								: v[i].max;
			}
			left = deal(v, n, ok, limit, out, left);
		}
	}
	for (i = 0; i < n; i++) {
		ok[i] = in[i] && want[i];
		limit[i] = v[i].max;
	}
	deal(v, n, ok, limit, out, left);
}

static uint64_t served(int64_t ms, const struct policy_vgpu *v)
{
	return ms > 0 ? (uint64_t)ms * 1000u / weight_of(v) : 0;
}

/* Order of candidates for a turn: high priority, a turn not yet over,
 * least weighted service, waiting, index. */
static bool turn_before(const struct policy_vgpu *v, const bool *over,
			uint32_t a, uint32_t b)
{
	bool ca = v[a].active && !over[a], cb = v[b].active && !over[b];

	if ((prio_of(&v[a]) == POLICY_HIGH) != (prio_of(&v[b]) == POLICY_HIGH))
		return prio_of(&v[a]) == POLICY_HIGH;
	if (ca != cb)
		return ca;
	if (v[a].vtime != v[b].vtime)
		return v[a].vtime < v[b].vtime;
	if (v[a].active != v[b].active) /* a tie: the one waiting first */
		return !v[a].active;
	return a < b;
}

/*
 * Who runs: everyone with work, unless the over-committed GPU cannot
 * give each its min; then idle vGPUs park on one group, and if that is
 * not enough, turns are taken. Sets active, hold and the floors.
 */
static void turns(const struct policy_gpu *g, struct policy_vgpu *v, uint32_t n,
		  const bool *in, uint32_t *floor, uint32_t cap, int64_t now)
{
	uint32_t sum = 0, nin = 0, budget, extra, i, j, k = 0, order[N];
	uint64_t minv = UINT64_MAX;
	bool over[N], pick[N], waited[N];

	for (i = 0; i < n; i++) {
		waited[i] = v[i].hold; /* held by the last plan: in the queue */
		v[i].hold = false;
		if (!in[i])
			continue;
		sum += floor[i];
		nin++;
	}
	if (g->overcommit && sum > cap) {
		for (i = 0, sum = 0; i < n; i++) {
			if (in[i] && !v[i].runnable)
				floor[i] = 1;
			sum += in[i] ? floor[i] : 0;
		}
	}
	if (!g->overcommit || sum <= cap) {
		for (i = 0; i < n; i++) {
			if (!in[i])
				continue;
			if (v[i].runnable && !v[i].active)
				v[i].turn_ms = now;
			v[i].active = v[i].runnable;
		}
		return;
	}
	/* turns: those whose turn is over are charged for it */
	for (i = 0; i < n; i++) {
		over[i] = pick[i] = false;
		if (!in[i] || !v[i].runnable) {
			if (in[i] && v[i].active)
				v[i].vtime += served(now - v[i].turn_ms, &v[i]);
			if (in[i])
				v[i].active = false;
			continue;
		}
		if (v[i].active &&
		    now - v[i].turn_ms >= (int64_t)g->quantum_ms) {
			v[i].vtime += served(now - v[i].turn_ms, &v[i]);
			v[i].turn_ms = now;
			over[i] = true;
		}
		if (v[i].active && v[i].vtime < minv)
			minv = v[i].vtime;
		order[k++] = i;
	}
	/*
	 * One that comes back from idle starts level with the others, not
	 * ahead (idle time is no credit). One that waited in the queue keeps
	 * its service: levelling it too would tie it with those that ran in
	 * its place, and it would lose every tie on its index for ever.
	 */
	for (i = 0; i < k && minv != UINT64_MAX; i++) {
		j = order[i];
		if (!v[j].active && !waited[j] && v[j].vtime < minv)
			v[j].vtime = minv;
	}
	for (i = 1; i < k; i++)
		for (j = i;
		     j > 0 && turn_before(v, over, order[j], order[j - 1]);
		     j--) {
			uint32_t t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	budget = sat_sub(cap, nin); /* each holds one group in any case */
	for (i = 0; i < k; i++) {
		j = order[i];
		extra = floor[j] - 1;
		if (prio_of(&v[j]) == POLICY_HIGH || extra <= budget) {
			pick[j] = true;
			budget = sat_sub(budget, extra);
		}
	}
	for (i = 0; i < k; i++) {
		j = order[i];
		if (pick[j]) {
			if (!v[j].active)
				v[j].turn_ms = now;
			v[j].active = true;
			continue;
		}
		if (v[j].active)
			v[j].vtime += served(now - v[j].turn_ms, &v[j]);
		v[j].active = false;
		v[j].hold = true;
		floor[j] = 1;
	}
}

enum take_kind {
	TAKE_EXCESS,  /* over capacity: from anyone above its ideal */
	TAKE_RECLAIM, /* for a guarantee: from anyone above its ideal */
	TAKE_BORROW,  /* for more: only what the dwell allows */
};

/* What an idle vGPU gets back as soon as it has work: the lesser of its
 * base and its share when every vGPU is busy. Below it, it has lent. */
static uint32_t due(const struct policy_vgpu *x)
{
	return x->base < x->share ? x->base : x->share;
}

/* Whether r would keep lent groups past the reclaim bound. */
static bool slow_to_give_back(const struct policy_gpu *g,
			      const struct policy_vgpu *r)
{
	return g->reclaim_bound_ms != POLICY_NO_BOUND &&
	       r->drain_ms > g->reclaim_bound_ms;
}

/*
 * The vGPU to take one group from for receiver r (or -1): above its
 * ideal; for a reclaim vGPUs with work first (they hold what was lent),
 * for a borrow idle ones first (lending idle capacity) and only those
 * the dwell lets go, and an idle one only to a receiver that can give
 * the group back within the reclaim bound.
 */
static int donor(const struct policy_gpu *g, const struct policy_vgpu *v,
		 uint32_t n, const bool *in, const uint32_t *t,
		 const uint32_t *ideal, const bool *dwell_ok,
		 enum take_kind kind, int r)
{
	int best = -1, bscore = -1, score;
	uint32_t i;

	for (i = 0; i < n; i++) {
		if (!in[i] || (int)i == r || t[i] <= ideal[i])
			continue;
		if (kind == TAKE_BORROW) {
			if (!dwell_ok[i])
				continue;
			if (!v[i].runnable && r >= 0 &&
			    slow_to_give_back(g, &v[r]))
				continue;
			score = v[i].runnable ? 0 : 2;
		} else {
			score = (v[i].runnable ? 2 : 0) + (dwell_ok[i] ? 1 : 0);
		}
		score = score * 1000 + (int)(t[i] - ideal[i]);
		if (score > bscore) {
			bscore = score;
			best = (int)i;
		}
	}
	return best;
}

/* The static mode: everyone back to its base, growing only into what
 * is free once the others are at theirs. */
static void plan_static(struct policy_vgpu *v, uint32_t n, const bool *in,
			uint32_t cap)
{
	uint32_t i, sum = 0, free_;

	for (i = 0; i < n; i++) {
		v[i].hold = false;
		v[i].active = in[i] ? v[i].runnable : v[i].active;
		if (!in[i])
			continue;
		v[i].ideal = v[i].base;
		v[i].target = v[i].base < v[i].cur ? v[i].base : v[i].cur;
		sum += v[i].target;
	}
	free_ = sat_sub(cap, sum);
	for (i = 0; i < n; i++) {
		uint32_t add;

		if (!in[i] || v[i].base <= v[i].target)
			continue;
		add = v[i].base - v[i].target;
		add = add < free_ ? add : free_;
		v[i].target += add;
		free_ -= add;
	}
	for (i = 0; i < n; i++)
		if (in[i] && v[i].target != v[i].cur)
			v[i].why = POLICY_BASE;
}

/* Turn ideals into the next targets, moving only what the rules allow. */
static void moves(const struct policy_gpu *g, struct policy_vgpu *v, uint32_t n,
		  const bool *in, const uint32_t *floor, const uint32_t *ideal,
		  uint32_t cap, int64_t now)
{
	uint32_t t[N], gl[N], sum = 0, free_, owed = 0, i, k, ord[N];
	bool dwell_ok[N], want[N], slow;
	int d;

	for (i = 0; i < n; i++) {
		t[i] = v[i].cur;
		if (!in[i])
			continue;
		sum += t[i];
		want[i] = v[i].runnable && !v[i].hold;
		dwell_ok[i] = now - v[i].changed_ms >= (int64_t)g->dwell_ms &&
			      (v[i].runnable || v[i].gap_known ||
			       now - v[i].idle_ms >= (int64_t)g->dwell_ms);
		/* lending more of a known gap moves the same way: no
		 * dwell between its steps (below what it holds when all
		 * are busy: it has lent already) */
		if (v[i].gap_known && v[i].cur < due(&v[i]))
			dwell_ok[i] = true;
		gl[i] = want[i] && v[i].share < ideal[i] ? v[i].share
							 : ideal[i];
		if (gl[i] < floor[i])
			gl[i] = floor[i];
	}
	/* holds take effect at once */
	for (i = 0; i < n; i++) {
		if (in[i] && v[i].hold && t[i] > 1) {
			sum -= t[i] - 1;
			t[i] = 1;
		}
	}
	/* over capacity (a reserve, a new min): shrink, dwell or not */
	while (sum > cap) {
		d = donor(g, v, n, in, t, ideal, dwell_ok, TAKE_EXCESS, -1);
		if (d < 0) /* nobody above the ideal: anyone above the floor */
			for (i = 0; i < n && d < 0; i++)
				if (in[i] && t[i] > floor[i])
					d = (int)i;
		if (d < 0)
			break;
		t[d]--;
		sum--;
	}
	free_ = sat_sub(cap, sum);
	/* reclaims: up to the guarantee, priority first, largest gap first */
	for (i = 0, k = 0; i < n; i++)
		if (in[i] && t[i] < gl[i])
			ord[k++] = i;
	for (i = 1; i < k; i++)
		for (uint32_t j = i; j > 0; j--) {
			uint32_t a = ord[j], b = ord[j - 1];

			if (prio_of(&v[a]) < prio_of(&v[b]) ||
			    (prio_of(&v[a]) == prio_of(&v[b]) &&
			     gl[a] - t[a] <= gl[b] - t[b]))
				break;
			ord[j] = b;
			ord[j - 1] = a;
		}
	for (i = 0; i < k; i++) {
		uint32_t r = ord[i];

		while (t[r] < gl[r]) {
			if (free_) {
				free_--;
			} else {
				d = donor(g, v, n, in, t, ideal, dwell_ok,
					  TAKE_RECLAIM, (int)r);
				if (d < 0)
					break;
				t[d]--;
			}
			t[r]++;
		}
	}
	/* free groups an idle vGPU lent (below its base and share) are
	 * owed to it: only a receiver that can give them back within the
	 * bound takes them, as from the idle vGPU itself (donor) */
	for (i = 0; i < n; i++)
		if (in[i] && !v[i].runnable && t[i] < due(&v[i]))
			owed += due(&v[i]) - t[i];
	/* borrowing: one group at a time to the neediest by weight */
	for (;;) {
		int r = -1;

		for (i = 0; i < n; i++) {
			if (!in[i] || !want[i] || t[i] >= ideal[i])
				continue;
			if (r < 0 || before(v, t, i, (uint32_t)r))
				r = (int)i;
		}
		if (r < 0)
			break;
		slow = slow_to_give_back(g, &v[r]);
		if (free_ && !(slow && free_ <= owed)) {
			if (!slow && owed)
				owed--;
			free_--;
		} else { /* none free, or only owed ones: from a donor */
			d = donor(g, v, n, in, t, ideal, dwell_ok, TAKE_BORROW,
				  r);
			if (d < 0) {
				/* r cannot get more now; let the others try */
				want[r] = false;
				continue;
			}
			t[d]--;
		}
		t[r]++;
	}
	for (i = 0; i < n; i++) {
		if (!in[i])
			continue;
		v[i].target = t[i];
		if (t[i] < v[i].cur)
			v[i].why = v[i].hold	   ? POLICY_TURN_OUT
				   : v[i].runnable ? POLICY_GIVE_BACK
						   : POLICY_LEND;
		else if (t[i] > v[i].cur)
			v[i].why = v[i].cur < floor[i] && !v[i].runnable
					   ? POLICY_FLOOR
				   : t[i] <= gl[i] ? POLICY_RECLAIM
						   : POLICY_BORROW;
	}
}

int policy_plan(const struct policy_gpu *g, struct policy_vgpu *v, uint32_t n,
		int64_t now_ms)
{
	uint32_t floor[N] = {0}, ideal[N], share[N], cap, fixed = 0, i;
	bool in[N] = {false}, want[N] = {false};

	if (n > N)
		return -1;
	for (i = 0; i < n; i++) {
		struct policy_vgpu *x = &v[i];

		x->target = x->ideal = x->share = x->cur;
		x->why = POLICY_KEEP;
		in[i] = !x->fixed;
		if (x->fixed)
			fixed += x->cur;
		floor[i] = x->min ? x->min : 1;
	}
	cap = sat_sub(sat_sub(g->capacity, g->reserve), fixed);
	fill(g, v, n, in, in, floor, cap, share);
	for (i = 0; i < n; i++)
		if (in[i])
			v[i].share = share[i];
	if (g->mode == POLICY_STATIC) {
		plan_static(v, n, in, cap);
		return 0;
	}
	turns(g, v, n, in, floor, cap, now_ms);
	for (i = 0; i < n; i++)
		want[i] = in[i] && v[i].runnable && !v[i].hold;
	fill(g, v, n, in, want, floor, cap, ideal);
	for (i = 0; i < n; i++)
		if (in[i])
			v[i].ideal = ideal[i];
	moves(g, v, n, in, floor, ideal, cap, now_ms);
	return 0;
}

int policy_admit(const struct policy_gpu *g, const struct policy_vgpu *v,
		 uint32_t n, uint32_t sms_per_group, uint32_t gpu, char *err,
		 size_t errlen)
{
	uint32_t spg = sms_per_group ? sms_per_group : 1, i, base = 0, mins = 0,
		 high = 0, others = 0, need;

	for (i = 0; i < n; i++) {
		const struct policy_vgpu *x = &v[i];
		const char *name = x->name ? x->name : "?";

		if (x->min > g->capacity) {
			snprintf(err, errlen,
				 "vGPU %s: min_sms %u is more than GPU %u has "
				 "in SM groups (%u)",
				 name, x->min * spg, gpu, g->capacity * spg);
			return -1;
		}
		base += x->base;
		mins += x->min;
		if (prio_of(x) == POLICY_HIGH)
			high += x->base;
		else
			others += g->overcommit ? 1 : x->min;
	}
	switch (g->mode) {
	case POLICY_STATIC:
		if (base <= g->capacity)
			return 0;
		snprintf(err, errlen,
			 "static: the vGPUs of GPU %u need %u SMs at their "
			 "sizes, more than its %u SMs in SM groups",
			 gpu, base * spg, g->capacity * spg);
		return -1;
	case POLICY_PRIORITY:
		need = high + others;
		if (need <= g->capacity)
			return 0;
		snprintf(err, errlen,
			 "priority: GPU %u keeps its high-priority vGPUs at "
			 "their sizes and %s: %u SMs, more than its %u SMs in "
			 "SM groups; lower a size or a min_sms%s",
			 gpu,
			 g->overcommit ? "one SM group for each other"
				       : "the others at their min_sms",
			 need * spg, g->capacity * spg,
			 g->overcommit ? "" : ", or allow over-commit");
		return -1;
	default:
		if (!g->overcommit && mins <= g->capacity)
			return 0;
		if (g->overcommit && n <= g->capacity)
			return 0;
		if (g->overcommit)
			snprintf(err, errlen,
				 "fair: GPU %u has %u SM groups and each vGPU "
				 "keeps one, even over-committed: %u vGPUs do "
				 "not fit",
				 gpu, g->capacity, n);
		else
			snprintf(
				err, errlen,
				"fair: GPU %u guarantees each vGPU its "
				"min_sms: %u SMs, more than its %u SMs in SM "
				"groups; lower a min_sms, or allow over-commit "
				"(vgpu-admin policy --gpu %u --overcommit on)",
				gpu, mins * spg, g->capacity * spg, gpu);
		return -1;
	}
}

void policy_room(const struct policy_gpu *g, const struct policy_vgpu *v,
		 uint32_t n, uint32_t *free_groups, uint32_t *reclaimable)
{
	uint32_t used = 0, back = 0, i, fl;

	for (i = 0; i < n; i++) {
		used += v[i].cur;
		if (v[i].fixed || g->mode == POLICY_STATIC)
			continue;
		fl = g->overcommit ? 1 : (v[i].min ? v[i].min : 1);
		back += sat_sub(v[i].cur, fl);
	}
	*free_groups = sat_sub(sat_sub(g->capacity, g->reserve), used);
	*reclaimable = back;
}

/* Drop the highest groups of m in pick until have is target. */
static uint32_t drop_highest(uint64_t *m, uint64_t pick, uint32_t ngroups,
			     uint32_t have, uint32_t target)
{
	for (uint32_t i = ngroups; have > target && i-- > 0;)
		if (*m & pick & (1ull << i)) {
			*m &= ~(1ull << i);
			have--;
		}
	return have;
}

/* Add the lowest groups of pick that no one holds until have is target. */
static uint32_t add_lowest(uint64_t *m, uint64_t pick, uint64_t used,
			   uint32_t ngroups, uint32_t have, uint32_t target)
{
	for (uint32_t i = 0; have < target && i < ngroups; i++)
		if ((pick & (1ull << i)) && !((used | *m) & (1ull << i))) {
			*m |= 1ull << i;
			have++;
		}
	return have;
}

uint64_t policy_mask(uint64_t own, uint64_t used, uint32_t ngroups,
		     uint32_t target, uint64_t home)
{
	uint64_t m = own;
	uint32_t have = (uint32_t)__builtin_popcountll(own);

	if (!target || target > ngroups || ngroups > 64)
		return 0;
	have = drop_highest(&m, ~home, ngroups, have, target);
	have = drop_highest(&m, home, ngroups, have, target);
	have = add_lowest(&m, home, used, ngroups, have, target);
	have = add_lowest(&m, ~0ull, used, ngroups, have, target);
	return have == target ? m : 0;
}

const char *policy_mode_name(uint32_t mode)
{
	switch (mode) {
	case POLICY_STATIC:
		return "static";
	case POLICY_FAIR:
		return "fair";
	case POLICY_PRIORITY:
		return "priority";
	}
	return "unknown";
}

const char *policy_prio_name(uint32_t prio)
{
	switch (prio) {
	case POLICY_LOW:
		return "low";
	case POLICY_NORMAL:
		return "normal";
	case POLICY_HIGH:
		return "high";
	}
	return "unknown";
}

const char *policy_why_name(uint32_t why)
{
	static const char *const names[] = {
		[POLICY_KEEP] = "keep",
		[POLICY_RECLAIM] = "reclaim",
		[POLICY_BORROW] = "borrow",
		[POLICY_LEND] = "lend",
		[POLICY_GIVE_BACK] = "give back",
		[POLICY_TURN_OUT] = "turn out",
		[POLICY_BASE] = "base",
		[POLICY_FLOOR] = "floor",
	};

	return why < sizeof(names) / sizeof(names[0]) ? names[why] : "?";
}
