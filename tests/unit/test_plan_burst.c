/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of regular bursts (host-daemon/plan_burst.c): a steady period
 * of busy edges is found and the next burst expected a lead ahead; jitter
 * within the tolerance is steady, more is not; too short or too long
 * periods are not expected; a burst that did not come stops being
 * expected.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "plan_burst.h"

#define T0 1000000 /* ms: a clock far from 0 */

static void edges(struct plan_burst *b, const int64_t *at, int n)
{
	int i;

	for (i = 0; i < n; i++)
		burst_busy_edge(b, T0 + at[i]);
}

static void steady_bursts_are_expected_ahead(void **state)
{
	static const int64_t at[] = {0, 200, 400};
	struct plan_burst b = {0};

	(void)state;
	edges(&b, at, 3);
	assert_int_equal(burst_period(&b), 200);
	/* the next is due at 600: expected from 585 with a 15 ms lead */
	assert_false(burst_expected(&b, T0 + 584, 15));
	assert_true(burst_expected(&b, T0 + 585, 15));
	assert_true(burst_expected(&b, T0 + 640, 15));
	/* not come by 600 + 200 / 4: no longer */
	assert_false(burst_expected(&b, T0 + 650, 15));
	assert_int_equal(burst_next_lead(&b, T0 + 450, 15), T0 + 585);
	assert_int_equal(burst_next_lead(&b, T0 + 590, 15), 0);
}

static void two_edges_are_not_a_period(void **state)
{
	static const int64_t at[] = {0, 200};
	struct plan_burst b = {0};

	(void)state;
	edges(&b, at, 2);
	assert_int_equal(burst_period(&b), 0);
	assert_false(burst_expected(&b, T0 + 390, 15));
	assert_int_equal(burst_next_lead(&b, T0 + 300, 15), 0);
}

static void jitter_within_tolerance_is_steady(void **state)
{
	static const int64_t ok[] = {0, 200, 418}; /* 18 <= 10 % of 200 */
	static const int64_t bad[] = {0, 200, 430};
	static const int64_t small[] = {0, 30, 34}; /* 26 vs 4 */
	struct plan_burst b = {0};

	(void)state;
	edges(&b, ok, 3);
	assert_int_equal(burst_period(&b), 209);
	b.n = 0;
	edges(&b, bad, 3);
	assert_int_equal(burst_period(&b), 0);
	b.n = 0;
	edges(&b, small, 3);
	assert_int_equal(burst_period(&b), 0);
}

static void periods_out_of_bounds_are_not_expected(void **state)
{
	static const int64_t fast[] = {0, 10, 20};
	static const int64_t slow[] = {0, 20000, 40000};
	struct plan_burst b = {0};

	(void)state;
	edges(&b, fast, 3);
	assert_int_equal(burst_period(&b), 0);
	b.n = 0;
	edges(&b, slow, 3);
	assert_int_equal(burst_period(&b), 0);
}

static void only_the_last_three_edges_count(void **state)
{
	static const int64_t at[] = {0, 50, 400, 600, 800};
	struct plan_burst b = {0};

	(void)state;
	edges(&b, at, 5);
	assert_int_equal(b.n, BURST_EDGES);
	assert_int_equal(burst_period(&b), 200);
	/* an irregular edge ends it until the edges are steady again */
	burst_busy_edge(&b, T0 + 850);
	assert_int_equal(burst_period(&b), 0);
	burst_busy_edge(&b, T0 + 900);
	assert_int_equal(burst_period(&b), 50);
}

static void a_clock_going_back_starts_again(void **state)
{
	static const int64_t at[] = {0, 200, 400};
	struct plan_burst b = {0};

	(void)state;
	edges(&b, at, 3);
	burst_busy_edge(&b, T0 + 100);
	assert_int_equal(b.n, 1);
	assert_int_equal(burst_period(&b), 0);
}

/* The lead follows the borrowers' drain and the resizes, within its
 * bounds; no period, no lead. */
static void the_lead_covers_the_drain_within_bounds(void **state)
{
	static const int64_t at[] = {0, 200, 400};
	struct plan_burst b = {0};

	(void)state;
	assert_int_equal(burst_lead_ms(&b, 15, 30, 3, 0), 0);
	edges(&b, at, 3);
	assert_int_equal(burst_lead_ms(&b, 15, 0, 0, 0), 15);	 /* floor */
	assert_int_equal(burst_lead_ms(&b, 15, 30, 3, 0), 36);	 /* drain */
	assert_int_equal(burst_lead_ms(&b, 15, 500, 3, 0), 100); /* p / 2 */
	/* busy 120 of 200 ms: half the 80 ms gap at most */
	assert_int_equal(burst_lead_ms(&b, 15, 500, 3, 120), 40);
	assert_int_equal(burst_lead_ms(&b, 15, 30, 3, 120), 36);
	/* a burst as long as the period: no gap known, half the period */
	assert_int_equal(burst_lead_ms(&b, 15, 500, 3, 250), 100);
	/* expected until a quarter period after it is due */
	assert_int_equal(burst_due_end(&b), T0 + 650);
	/* a 36 ms lead: expected from 564 on, not at 563 */
	assert_false(burst_expected(&b, T0 + 563, 36));
	assert_true(burst_expected(&b, T0 + 564, 36));
	assert_int_equal(burst_next_lead(&b, T0 + 500, 36), T0 + 564);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(steady_bursts_are_expected_ahead),
		cmocka_unit_test(two_edges_are_not_a_period),
		cmocka_unit_test(jitter_within_tolerance_is_steady),
		cmocka_unit_test(periods_out_of_bounds_are_not_expected),
		cmocka_unit_test(only_the_last_three_edges_count),
		cmocka_unit_test(a_clock_going_back_starts_again),
		cmocka_unit_test(the_lead_covers_the_drain_within_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
