/* SPDX-License-Identifier: MIT */
/*
 * The scheduling policies as pure logic (host-daemon/plan_policy.c):
 * given loads, weights, min/max and the dwell, the plan the scheduler
 * chooses. A small simulator applies each plan at once (as if every
 * resize took no time) and steps the clock, so sequences of loads can be
 * checked too: lend to busy, reclaim from idle, priority first, never
 * below min or above max, no thrashing within the dwell, turns when
 * over-committed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "plan_policy.h"

#define T0 1000000 /* ms: a clock far from 0 */

struct sim {
	struct policy_gpu g;
	struct policy_vgpu v[8];
	uint32_t n;
	int64_t now;
	uint32_t moves[8]; /* target != cur, per vGPU */
};

static void sim_init(struct sim *s, uint32_t mode, uint32_t capacity)
{
	memset(s, 0, sizeof(*s));
	s->g.mode = mode;
	s->g.capacity = capacity;
	s->g.dwell_ms = 100;
	s->g.quantum_ms = 50;
	s->g.reclaim_bound_ms = POLICY_NO_BOUND;
	s->now = T0;
}

/* A vGPU holding cur groups (base = cur), idle for long. */
static struct policy_vgpu *sim_add(struct sim *s, const char *name,
				   uint32_t cur, uint32_t min, uint32_t max,
				   uint32_t weight)
{
	struct policy_vgpu *v = &s->v[s->n++];

	v->name = name;
	v->cur = v->base = cur;
	v->min = min;
	v->max = max;
	v->weight = weight;
	v->prio = POLICY_NORMAL;
	v->idle_ms = 0;
	return v;
}

static void sim_busy(struct sim *s, uint32_t i, bool busy)
{
	if (s->v[i].runnable && !busy)
		s->v[i].idle_ms = s->now;
	s->v[i].runnable = busy;
}

/* Plan, then apply every target at once; the clock moves by ms. */
static void sim_step(struct sim *s, int64_t ms)
{
	uint32_t i, sum = 0;

	assert_int_equal(policy_plan(&s->g, s->v, s->n, s->now), 0);
	for (i = 0; i < s->n; i++) {
		struct policy_vgpu *v = &s->v[i];

		if (v->target != v->cur) {
			v->cur = v->target;
			v->changed_ms = s->now;
			s->moves[i]++;
		}
		sum += v->cur;
		/* never below min (unless waiting for a turn) or above max */
		if (!v->hold && !(s->g.overcommit && !v->runnable))
			assert_true(v->cur >= v->min);
		assert_true(v->cur <= v->max);
		assert_true(v->cur >= 1);
	}
	assert_true(sum <= s->g.capacity);
	s->now += ms;
}

/* Fair on 15 groups: lc (4 groups), a (6) and b (5), a and b busy. */
static void sim_lc_ab(struct sim *s)
{
	sim_init(s, POLICY_FAIR, 15);
	sim_add(s, "lc", 4, 1, 15, 4);
	sim_add(s, "a", 6, 1, 15, 6);
	sim_add(s, "b", 5, 1, 15, 5);
	sim_busy(s, 1, true);
	sim_busy(s, 2, true);
}

/* ---- fair ------------------------------------------------------------- */

static void fair_lends_idle_groups_to_busy_after_the_dwell(void **state)
{
	struct sim s;

	(void)state;
	sim_lc_ab(&s);
	s.v[0].runnable = true;
	sim_step(&s, 10);
	sim_busy(&s, 0, false);		 /* lc goes idle now */
	sim_step(&s, 50);		 /* plans at 0 ms idle */
	sim_step(&s, 50);		 /* at 50 ms */
	assert_int_equal(s.v[0].cur, 4); /* kept within the dwell */
	sim_step(&s, 1);		 /* at 100 ms idle: lent */
	assert_int_equal(s.v[0].cur, 1);
	assert_int_equal(s.v[0].why, POLICY_LEND);
	/* lent by weight: a (6) and b (5) share lc's 3 groups */
	assert_int_equal(s.v[1].cur + s.v[2].cur, 14);
	assert_true(s.v[1].cur >= 7 && s.v[2].cur >= 6);
	assert_int_equal(s.v[1].why, POLICY_BORROW);
}

/* A predicted gap (regular bursts, the next one far off) lends at once;
 * the same vGPU without it waits out its dwell. */
static void fair_lends_a_predicted_gap_before_the_dwell(void **state)
{
	struct sim s;

	(void)state;
	sim_lc_ab(&s);
	s.v[0].runnable = true;
	sim_step(&s, 200);
	sim_busy(&s, 0, false); /* idle now, no gap known */
	sim_step(&s, 1);
	assert_int_equal(s.v[0].cur, 4);
	s.v[0].gap_known = true; /* the caller predicts a long gap */
	sim_step(&s, 1);	 /* 1 ms idle: lent */
	assert_int_equal(s.v[0].cur, 1);
	assert_int_equal(s.v[0].why, POLICY_LEND);
	assert_int_equal(s.v[1].cur + s.v[2].cur, 14);
	/* the dwell after a change still holds: a borrower changed just now
	 * keeps what it got even if lc says its gap is known */
	s.v[0].gap_known = false;
	sim_busy(&s, 0, true);
	sim_step(&s, 1); /* the owner busy: reclaimed at once */
	assert_int_equal(s.v[0].cur, 4);
	sim_busy(&s, 0, false);
	s.v[0].gap_known = true;
	sim_step(&s, 1); /* lc changed 1 ms ago: no lend within its dwell */
	assert_int_equal(s.v[0].cur, 4);
	/* but once it lends, its next steps need no dwell (a receiver that
	 * was busy being resized takes the rest a moment later) */
	s.now += 200;
	s.v[0].cur = 3;
	s.v[1].cur = 7;
	s.v[0].changed_ms = s.v[1].changed_ms = s.now;
	sim_step(&s, 1);
	assert_int_equal(s.v[0].cur, 1);
}

static void fair_reclaims_at_once_when_the_owner_is_busy(void **state)
{
	struct sim s;

	(void)state;
	sim_lc_ab(&s);
	sim_step(&s, 200); /* lc idle for long: lent */
	assert_int_equal(s.v[0].cur, 1);
	sim_busy(&s, 0, true);
	sim_step(&s, 1); /* a and b changed 1 ms ago: no dwell for this */
	assert_int_equal(s.v[0].cur, 4);
	assert_int_equal(s.v[0].why, POLICY_RECLAIM);
	assert_int_equal(s.v[1].cur, 6);
	assert_int_equal(s.v[2].cur, 5);
	assert_int_equal(s.v[1].why, POLICY_GIVE_BACK);
}

static void fair_keeps_idle_groups_when_nobody_needs_them(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 16);
	sim_add(&s, "a", 8, 1, 16, 8);
	sim_add(&s, "b", 8, 1, 16, 8);
	sim_step(&s, 1000);
	sim_step(&s, 1000);
	assert_int_equal(s.v[0].cur, 8);
	assert_int_equal(s.v[1].cur, 8);
	assert_int_equal(s.moves[0] + s.moves[1], 0);
}

static void fair_gives_free_groups_to_the_busy_at_once(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 15);
	sim_add(&s, "a", 4, 1, 15, 1);
	sim_add(&s, "b", 4, 1, 15, 1);
	s.v[0].changed_ms = s.now; /* just resized: free groups still go */
	sim_busy(&s, 0, true);
	sim_busy(&s, 1, true);
	sim_step(&s, 1);
	assert_int_equal(s.v[0].cur + s.v[1].cur, 15);
	assert_true(s.v[0].cur >= 7 && s.v[1].cur >= 7);
}

static void fair_shares_by_weight_within_min_and_max(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 16);
	sim_add(&s, "heavy", 1, 1, 16, 3);
	sim_add(&s, "light", 1, 1, 16, 1);
	sim_add(&s, "capped", 1, 1, 2, 10);
	sim_add(&s, "floor", 5, 5, 16, 1);
	sim_busy(&s, 0, true);
	sim_busy(&s, 1, true);
	sim_busy(&s, 2, true);
	sim_busy(&s, 3, true);
	sim_step(&s, 1);
	/* capped stops at its max 2, floor keeps its min 5; 9 left for
	 * heavy and light at 3:1 */
	assert_int_equal(s.v[2].cur, 2);
	assert_int_equal(s.v[3].cur, 5);
	assert_int_equal(s.v[0].cur + s.v[1].cur, 9);
	assert_true(s.v[0].cur >= 6 && s.v[0].cur <= 7);
	assert_int_equal(s.v[0].share, s.v[0].cur);
}

static void fair_raises_a_vgpu_below_its_min(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 8);
	sim_add(&s, "a", 6, 1, 8, 1);
	sim_add(&s, "b", 2, 1, 8, 1);
	sim_busy(&s, 0, true);
	s.v[1].min = 4; /* its min was raised; it is idle */
	s.v[0].changed_ms = s.now;
	sim_step(&s, 1);
	assert_int_equal(s.v[1].cur, 4);
	assert_int_equal(s.v[1].why, POLICY_FLOOR);
	assert_int_equal(s.v[0].cur, 4);
}

/* Loads that flap faster than the dwell never move a vGPU twice within
 * it, except for reclaims by the owner's own work. */
static void fair_never_thrashes_within_the_dwell(void **state)
{
	int64_t last_lend = 0, last_borrow = 0;
	uint32_t i, lends = 0;
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 12);
	sim_add(&s, "flappy", 4, 1, 12, 4);
	sim_add(&s, "batch", 8, 1, 12, 8);
	sim_busy(&s, 1, true);
	for (i = 0; i < 2000; i++) {
		/* flappy: 30 ms on, 30 ms off (shorter than the dwell),
		 * then 300 ms off, and again */
		uint32_t ph = i % 420;

		sim_busy(&s, 0, ph < 120 && (ph / 30) % 2 == 0);
		assert_int_equal(policy_plan(&s.g, s.v, s.n, s.now), 0);
		if (s.v[0].why == POLICY_LEND) {
			assert_true(s.now - last_lend >= s.g.dwell_ms);
			last_lend = s.now;
			lends++;
		}
		if (s.v[1].why == POLICY_BORROW) {
			assert_true(s.now - last_borrow >= s.g.dwell_ms);
			last_borrow = s.now;
		}
		sim_step(&s, 1);
	}
	/* it did lend in the long idle stretches */
	assert_true(lends >= 4);
}

static void fair_lends_only_within_the_reclaim_bound(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 12);
	s.g.reclaim_bound_ms = 5;
	sim_add(&s, "owner", 4, 1, 12, 4);
	sim_add(&s, "slow", 6, 1, 12, 6);
	sim_busy(&s, 1, true);
	s.v[1].drain_ms = 50; /* its queue would keep lent SMs 50 ms */
	sim_step(&s, 500);
	/* the 2 free groups are anyone's; owner's idle groups are not lent */
	assert_int_equal(s.v[1].cur, 8);
	assert_int_equal(s.v[0].cur, 4);
	s.v[1].drain_ms = 2;
	sim_step(&s, 1);
	assert_int_equal(s.v[0].cur, 1);
	assert_int_equal(s.v[1].cur, 11);
}

/* Groups an idle vGPU already lent and another gave back are free but
 * owed to it: a receiver past the bound does not get them either. */
static void fair_keeps_owed_free_groups_within_the_bound(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 10);
	s.g.reclaim_bound_ms = 5;
	sim_add(&s, "owner", 4, 1, 10, 4);
	sim_add(&s, "slow", 6, 1, 10, 6);
	sim_busy(&s, 1, true);
	s.v[0].cur = 1; /* lent 3 earlier; the borrower gave them back */
	s.v[0].changed_ms = s.now;
	s.v[1].drain_ms = 50;
	sim_step(&s, 1);
	assert_int_equal(s.v[1].cur, 6); /* the 3 free ones are owed */
	s.v[1].drain_ms = 2;
	sim_step(&s, 1);
	assert_int_equal(s.v[1].cur, 9);
}

/* Only owed free groups: a receiver past the bound still takes from a
 * busy vGPU above its ideal (the free pool alone is off limits). */
static void fair_slow_receiver_still_rebalances_from_the_busy(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 15);
	s.g.reclaim_bound_ms = 5;
	s.g.dwell_ms = 0;
	sim_add(&s, "idle", 4, 1, 15, 4);
	sim_add(&s, "fat", 6, 1, 15, 6);
	sim_add(&s, "slow", 6, 1, 15, 8);
	sim_busy(&s, 1, true);
	sim_busy(&s, 2, true);
	s.v[0].cur = 1; /* lent 3, now free and owed to it */
	s.v[1].cur = 7; /* one above its ideal of 6 */
	s.v[2].drain_ms = 50;
	sim_step(&s, 1);
	assert_int_equal(s.v[2].cur, 7); /* one from fat, none owed */
	assert_int_equal(s.v[1].cur, 6);
}

/* The step waiver is for a vGPU that has lent already: one just
 * changed, still at its share, keeps its dwell even with a known gap. */
static void gap_known_first_lend_keeps_the_change_dwell(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 15);
	sim_add(&s, "lc", 8, 1, 15, 8);
	sim_add(&s, "a", 8, 1, 15, 8);
	sim_add(&s, "b", 8, 1, 15, 8);
	s.v[0].cur = 5; /* 15 groups, three bases of 8: shares of 5 */
	s.v[1].cur = 5;
	s.v[2].cur = 5;
	sim_busy(&s, 1, true);
	sim_busy(&s, 2, true);
	s.v[0].runnable = true;
	sim_busy(&s, 0, false);
	s.v[0].changed_ms = s.now; /* just changed */
	s.v[0].gap_known = true;
	sim_step(&s, 1);
	assert_int_equal(s.v[0].cur, 5);
}

static void fair_reclaim_takes_from_borrowers_first(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 12);
	sim_add(&s, "owner", 4, 1, 12, 4);
	sim_add(&s, "borrower", 4, 1, 12, 4);
	sim_add(&s, "sleeper", 4, 2, 12, 4);
	sim_busy(&s, 1, true);
	sim_step(&s, 500); /* owner and sleeper lend to borrower */
	assert_int_equal(s.v[1].cur, 9);
	assert_int_equal(s.v[0].cur, 1);
	assert_int_equal(s.v[2].cur, 2);
	sim_busy(&s, 0, true);
	sim_step(&s, 1);
	/* owner and borrower split what the sleeper does not use; it all
	 * comes from the borrower (whose dwell is over), the sleeper keeps
	 * its min */
	assert_int_equal(s.v[0].cur, 5);
	assert_int_equal(s.v[1].cur, 5);
	assert_int_equal(s.v[2].cur, 2);
	assert_int_equal(s.v[0].why, POLICY_BORROW);
}

/* ---- priority ----------------------------------------------------------- */

static void priority_serves_high_first_under_contention(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_PRIORITY, 12);
	sim_add(&s, "lc", 6, 2, 12, 1)->prio = POLICY_HIGH;
	sim_add(&s, "a", 6, 1, 12, 10);
	sim_add(&s, "b", 6, 1, 12, 10);
	s.v[1].cur = 6;
	s.v[2].cur = 4;
	s.v[0].cur = 2;
	sim_busy(&s, 0, true);
	sim_busy(&s, 1, true);
	sim_busy(&s, 2, true);
	sim_step(&s, 1);
	/* lc (weight 1) still gets its base 6 first; a and b share the
	 * rest. Under fair its weight would give it about 1 group. */
	assert_int_equal(s.v[0].cur, 6);
	assert_int_equal(s.v[1].cur + s.v[2].cur, 6);
	assert_int_equal(s.v[0].why, POLICY_RECLAIM);

	sim_init(&s, POLICY_FAIR, 12);
	sim_add(&s, "lc", 2, 1, 12, 1)->prio = POLICY_HIGH;
	sim_add(&s, "a", 6, 1, 12, 10);
	sim_add(&s, "b", 4, 1, 12, 10);
	s.v[0].base = 6;
	sim_busy(&s, 0, true);
	sim_busy(&s, 1, true);
	sim_busy(&s, 2, true);
	sim_step(&s, 1);
	assert_true(s.v[0].cur <= 2);
}

static void priority_high_lends_when_idle_and_takes_back(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_PRIORITY, 15);
	sim_add(&s, "lc", 4, 2, 4, 4)->prio = POLICY_HIGH;
	sim_add(&s, "a", 6, 1, 15, 6)->prio = POLICY_LOW;
	sim_add(&s, "b", 5, 1, 15, 5)->prio = POLICY_LOW;
	sim_busy(&s, 1, true);
	sim_busy(&s, 2, true);
	sim_step(&s, 200);
	assert_int_equal(s.v[0].cur, 2); /* down to its min */
	assert_int_equal(s.v[1].cur + s.v[2].cur, 13);
	sim_busy(&s, 0, true);
	sim_step(&s, 1);
	assert_int_equal(s.v[0].cur, 4); /* its max: never above */
	assert_int_equal(s.v[1].cur + s.v[2].cur, 11);
}

/* ---- static ----------------------------------------------------------- */

static void static_keeps_every_base(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_STATIC, 15);
	sim_add(&s, "a", 4, 1, 15, 1);
	sim_add(&s, "b", 4, 1, 15, 1);
	sim_busy(&s, 0, true);
	sim_step(&s, 500);
	sim_step(&s, 500);
	assert_int_equal(s.v[0].cur, 4);
	assert_int_equal(s.v[1].cur, 4);
	/* after fair moved them: back to their bases */
	s.v[0].cur = 9;
	s.v[1].cur = 1;
	sim_step(&s, 1);
	assert_int_equal(s.v[0].cur, 4);
	assert_int_equal(s.v[1].cur, 4);
	assert_int_equal(s.v[1].why, POLICY_BASE);
}

static void fixed_vgpus_keep_what_they_hold(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 10);
	sim_add(&s, "resizing", 5, 1, 10, 1)->fixed = true;
	sim_add(&s, "busy", 5, 1, 10, 1);
	sim_busy(&s, 0, false);
	sim_busy(&s, 1, true);
	sim_step(&s, 1000);
	assert_int_equal(s.v[0].cur, 5);
	assert_int_equal(s.v[1].cur, 5);
	assert_int_equal(s.moves[0], 0);
}

static void a_reserve_frees_groups_for_a_create(void **state)
{
	uint32_t free_, back;
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 12);
	sim_add(&s, "a", 6, 2, 12, 1);
	sim_add(&s, "b", 6, 1, 12, 1);
	sim_busy(&s, 0, true);
	sim_busy(&s, 1, true);
	policy_room(&s.g, s.v, s.n, &free_, &back);
	assert_int_equal(free_, 0);
	assert_int_equal(back, 9);
	s.g.reserve = 4;
	s.v[0].changed_ms = s.v[1].changed_ms = s.now; /* dwell or not */
	sim_step(&s, 1);
	assert_int_equal(s.v[0].cur + s.v[1].cur, 8);
	s.g.mode = POLICY_STATIC;
	policy_room(&s.g, s.v, s.n, &free_, &back);
	assert_int_equal(back, 0);
}

/* ---- time-slicing ------------------------------------------------------ */

static void overcommit_takes_turns_by_weight(void **state)
{
	uint32_t runs[3] = {0}, i, j, holds;
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 17);
	s.g.overcommit = true;
	sim_add(&s, "a", 8, 8, 16, 2);
	sim_add(&s, "b", 4, 8, 16, 1);
	sim_add(&s, "c", 4, 8, 16, 1);
	s.v[1].base = s.v[2].base = 8;
	for (i = 0; i < 3; i++)
		sim_busy(&s, i, true);
	for (i = 0; i < 600; i++) {
		sim_step(&s, 5);
		holds = 0;
		for (j = 0; j < 3; j++) {
			if (s.v[j].hold) {
				holds++;
				assert_int_equal(s.v[j].cur, 1);
			} else {
				runs[j]++;
				assert_true(s.v[j].cur >= 8);
			}
		}
		/* two of the three fit their min of 8 beside one group */
		assert_int_equal(holds, 1);
	}
	/* each made progress; a (weight 2) ran about twice b's or c's */
	for (j = 0; j < 3; j++)
		assert_true(runs[j] > 100);
	assert_true(runs[0] > runs[1] + runs[1] / 2);
	assert_true(runs[0] > runs[2] + runs[2] / 2);
}

/*
 * Equal weights starting together: the two that ran first are charged the
 * same service, so a waiting third ties with them. It must still get its
 * turn (it used to be levelled up to them and lose every tie forever).
 */
static void overcommit_equal_weights_all_take_turns(void **state)
{
	uint32_t runs[3] = {0}, i, j;
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 16);
	s.g.overcommit = true;
	s.g.quantum_ms = 300;
	for (j = 0; j < 3; j++)
		sim_add(&s, j == 0 ? "d" : j == 1 ? "e" : "f", 6, 6, 16, 6);
	for (j = 0; j < 3; j++)
		sim_busy(&s, j, true);
	for (i = 0; i < 400; i++) { /* 8 s in 20 ms ticks */
		sim_step(&s, 20);
		for (j = 0; j < 3; j++)
			runs[j] += !s.v[j].hold;
	}
	/* about two thirds of the ticks each; starved would be ~0 */
	for (j = 0; j < 3; j++)
		assert_true(runs[j] > 400 / 2);
}

static void overcommit_never_holds_high_priority(void **state)
{
	struct sim s;
	uint32_t i;

	(void)state;
	sim_init(&s, POLICY_PRIORITY, 17);
	s.g.overcommit = true;
	sim_add(&s, "lc", 8, 8, 8, 1)->prio = POLICY_HIGH;
	sim_add(&s, "a", 4, 8, 16, 1);
	sim_add(&s, "b", 4, 8, 16, 1);
	s.v[1].base = s.v[2].base = 8;
	for (i = 0; i < 3; i++)
		sim_busy(&s, i, true);
	for (i = 0; i < 200; i++) {
		sim_step(&s, 10);
		assert_false(s.v[0].hold);
		assert_int_equal(s.v[0].cur, 8);
		assert_true(s.v[1].hold != s.v[2].hold);
	}
}

static void overcommit_without_contention_holds_nobody(void **state)
{
	struct sim s;

	(void)state;
	sim_init(&s, POLICY_FAIR, 17);
	s.g.overcommit = true;
	sim_add(&s, "a", 8, 8, 16, 1);
	sim_add(&s, "b", 4, 8, 16, 1);
	sim_add(&s, "c", 4, 8, 16, 1);
	sim_busy(&s, 0, true);
	sim_busy(&s, 1, true);
	sim_step(&s, 500);
	sim_step(&s, 1);
	/* c idle parks on one group (below its min: over-committed) */
	assert_false(s.v[0].hold || s.v[1].hold || s.v[2].hold);
	assert_int_equal(s.v[2].cur, 1);
	assert_int_equal(s.v[0].cur + s.v[1].cur, 16);
}

/* ---- admission ---------------------------------------------------------- */

static void admission_follows_the_mode(void **state)
{
	struct policy_gpu g = {.mode = POLICY_STATIC, .capacity = 15};
	struct policy_vgpu v[3] = {
		{.name = "a", .min = 2, .base = 8, .max = 15, .weight = 1},
		{.name = "b", .min = 2, .base = 8, .max = 15, .weight = 1},
		{.name = "c", .min = 12, .base = 12, .max = 15, .weight = 1},
	};
	char err[256];

	(void)state;
	assert_int_equal(policy_admit(&g, v, 2, 8, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "static: the vGPUs of GPU 0 need 128 SMs "
				    "at their sizes, more than its 120"));
	g.mode = POLICY_FAIR; /* mins 4 of 15: fine */
	assert_int_equal(policy_admit(&g, v, 2, 8, 0, err, sizeof(err)), 0);
	assert_int_equal(policy_admit(&g, v, 3, 8, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "fair: GPU 0 guarantees each vGPU its "
				    "min_sms: 128 SMs"));
	assert_non_null(strstr(err, "--overcommit on"));
	g.overcommit = true;
	assert_int_equal(policy_admit(&g, v, 3, 8, 0, err, sizeof(err)), 0);
	g.overcommit = false;
	g.mode = POLICY_PRIORITY;
	v[0].prio = POLICY_HIGH; /* 8 + 2 + 12 > 15 */
	assert_int_equal(policy_admit(&g, v, 3, 8, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "priority: GPU 0 keeps its high-priority "
				    "vGPUs at their sizes"));
	v[2].min = 5;
	assert_int_equal(policy_admit(&g, v, 3, 8, 0, err, sizeof(err)), 0);
	v[2].min = 16;
	assert_int_equal(policy_admit(&g, v, 3, 8, 0, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "vGPU c: min_sms 128 is more than GPU 0 "
				    "has in SM groups (120)"));
	g.capacity = 2;
	g.overcommit = true;
	g.mode = POLICY_FAIR;
	v[2].min = 1;
	assert_int_equal(policy_admit(&g, v, 3, 8, 1, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "each vGPU keeps one"));
}

/* ---- masks -------------------------------------------------------------- */

static void masks_drop_the_highest_and_add_the_lowest_free(void **state)
{
	(void)state;
	assert_int_equal(policy_mask(0x0f, 0xff, 15, 2, 0), 0x03);
	assert_int_equal(policy_mask(0x30, 0x3f, 15, 4, 0), 0xf0);
	assert_int_equal(policy_mask(0x30, 0x3f, 15, 3, 0), 0x70);
	assert_int_equal(policy_mask(0x01, 0x7fff, 15, 2, 0), 0);
	assert_int_equal(policy_mask(0x01, 0x01, 15, 0, 0), 0);
	assert_int_equal(policy_mask(0x01, 0x01, 15, 16, 0), 0);
	assert_int_equal(policy_mask(0x05, 0x05, 4, 4, 0), 0x0f);
	/* home first: borrowed groups (outside home 0x32) go first, highest
	 * first, however low they are */
	assert_int_equal(policy_mask(0x3f, 0x3f, 15, 3, 0x32), 0x32);
	assert_int_equal(policy_mask(0x3f, 0x3f, 15, 5, 0x32), 0x37);
	/* shrinking below home: home's highest go */
	assert_int_equal(policy_mask(0x32, 0x32, 15, 2, 0x32), 0x12);
	/* growing: free home groups first (0x20), then the lowest (0x04) */
	assert_int_equal(policy_mask(0x12, 0x13, 15, 4, 0x32), 0x36);
	/* a home group held by another is skipped */
	assert_int_equal(policy_mask(0x12, 0x33, 15, 3, 0x32), 0x16);
}

static void names_name_every_value(void **state)
{
	uint32_t i;

	(void)state;
	assert_string_equal(policy_mode_name(POLICY_FAIR), "fair");
	assert_string_equal(policy_prio_name(POLICY_HIGH), "high");
	for (i = POLICY_KEEP; i <= POLICY_FLOOR; i++)
		assert_string_not_equal(policy_why_name(i), "?");
	assert_string_equal(policy_why_name(99), "?");
}

static void too_many_vgpus_are_refused(void **state)
{
	static struct policy_vgpu v[POLICY_MAX_VGPUS + 1];
	struct policy_gpu g = {.mode = POLICY_FAIR, .capacity = 8};

	(void)state;
	assert_int_equal(policy_plan(&g, v, POLICY_MAX_VGPUS + 1, T0), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			fair_lends_idle_groups_to_busy_after_the_dwell),
		cmocka_unit_test(fair_reclaims_at_once_when_the_owner_is_busy),
		cmocka_unit_test(fair_keeps_idle_groups_when_nobody_needs_them),
		cmocka_unit_test(fair_gives_free_groups_to_the_busy_at_once),
		cmocka_unit_test(fair_shares_by_weight_within_min_and_max),
		cmocka_unit_test(fair_raises_a_vgpu_below_its_min),
		cmocka_unit_test(fair_lends_a_predicted_gap_before_the_dwell),
		cmocka_unit_test(fair_keeps_owed_free_groups_within_the_bound),
		cmocka_unit_test(
			fair_slow_receiver_still_rebalances_from_the_busy),
		cmocka_unit_test(gap_known_first_lend_keeps_the_change_dwell),
		cmocka_unit_test(fair_never_thrashes_within_the_dwell),
		cmocka_unit_test(fair_lends_only_within_the_reclaim_bound),
		cmocka_unit_test(fair_reclaim_takes_from_borrowers_first),
		cmocka_unit_test(priority_serves_high_first_under_contention),
		cmocka_unit_test(priority_high_lends_when_idle_and_takes_back),
		cmocka_unit_test(static_keeps_every_base),
		cmocka_unit_test(fixed_vgpus_keep_what_they_hold),
		cmocka_unit_test(a_reserve_frees_groups_for_a_create),
		cmocka_unit_test(overcommit_takes_turns_by_weight),
		cmocka_unit_test(overcommit_equal_weights_all_take_turns),
		cmocka_unit_test(overcommit_never_holds_high_priority),
		cmocka_unit_test(overcommit_without_contention_holds_nobody),
		cmocka_unit_test(admission_follows_the_mode),
		cmocka_unit_test(
			masks_drop_the_highest_and_add_the_lowest_free),
		cmocka_unit_test(names_name_every_value),
		cmocka_unit_test(too_many_vgpus_are_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
