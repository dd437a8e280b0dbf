/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of resizes and moves in the planner (host-daemon/
 * plan_resize.c), on an H100-like GPU: 15 groups of 8 SMs plus the 12 SMs
 * the split leaves over (group 15: alone, or with groups as the scheduler
 * lends it), 80 GiB.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan_fixture.h"
#include "plan_resize.h"

/* One H100. */
static int setup(void **state)
{
	return plan_fixture_setup(state, plan_fixture_h100(), 1);
}

/* A vGPU of sms SMs and 1 GiB on GPU 0. */
static const struct plan_grant *take(struct plan *p, const char *name,
				     uint32_t sms)
{
	return plan_fixture_take(p, name, sms, GiB, 0);
}

/* Choose, hold and finish (ok) in one go, as vgpud does on success. */
static void resize_ok(struct plan *p, const char *name, uint32_t sms,
		      uint64_t mask, struct plan_resize *r)
{
	char err[256];

	assert_int_equal(
		plan_resize_choose(p, name, sms, mask, r, err, sizeof(err)), 0);
	assert_int_equal(plan_resize_hold(p, name, r), 0);
	plan_resize_finish(p, name, r, true);
}

static void resize_grows_keeping_its_groups(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *a = take(p, "a", 16);
	struct plan_resize r;

	take(p, "b", 8); /* group 2 */
	resize_ok(p, "a", 32, 0, &r);
	assert_int_equal(r.ngroups, 4);
	assert_int_equal(r.groups[0], 0);
	assert_int_equal(r.groups[1], 1);
	assert_int_equal(r.groups[2], 3);
	assert_int_equal(r.groups[3], 4);
	assert_int_equal(r.add_mask, (1ull << 3) | (1ull << 4));
	assert_int_equal(r.drop_mask, 0);
	assert_int_equal(a->sms, 32);
	assert_int_equal(p->gpus[0].groups_used, 0x1f);
}

static void resize_shrinks_to_its_lowest_groups(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *a = take(p, "a", 32);
	struct plan_resize r;

	resize_ok(p, "a", 16, 0, &r);
	assert_int_equal(r.ngroups, 2);
	assert_int_equal(r.groups[0], 0);
	assert_int_equal(r.groups[1], 1);
	assert_int_equal(r.drop_mask, (1ull << 2) | (1ull << 3));
	assert_int_equal(a->sms, 16);
	assert_int_equal(p->gpus[0].groups_used, 0x3);
}

static void resize_to_the_same_groups_changes_nothing(void **state)
{
	struct plan *p = *state;
	struct plan_resize r;
	char err[256];

	take(p, "a", 16);
	assert_int_equal(
		plan_resize_choose(p, "a", 13, 0, &r, err, sizeof(err)), 0);
	assert_true(plan_resize_same(&r));
}

static void resize_takes_the_leftover_when_it_fits_better(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *a = take(p, "a", 16);
	struct plan_resize r;

	resize_ok(p, "a", 12, 0, &r);
	assert_int_equal(r.ngroups, 1);
	assert_int_equal(r.groups[0], 15);
	assert_int_equal(a->sms, 12);
	assert_int_equal(p->gpus[0].groups_used, 1ull << 15);
	/* and leaves it again when it no longer fits */
	resize_ok(p, "a", 24, 0, &r);
	assert_int_equal(r.ngroups, 3);
	assert_int_equal(r.drop_mask, 1ull << 15);
	assert_int_equal(p->gpus[0].groups_used, 0x7);
}

static void resize_refuses_more_than_is_free(void **state)
{
	struct plan *p = *state;
	struct plan_resize r;
	char err[256];

	take(p, "a", 16);
	take(p, "b", 96); /* groups 2-13 */
	assert_int_equal(
		plan_resize_choose(p, "a", 40, 0, &r, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "asked for 40 SMs"));
	assert_non_null(strstr(err, "are free on GPU 0"));
	/* 24 fits: its two groups and the last free one */
	assert_int_equal(
		plan_resize_choose(p, "a", 24, 0, &r, err, sizeof(err)), 0);
	assert_int_equal(r.groups[2], 14);
}

static void resize_refuses_zero_and_unknown_names(void **state)
{
	struct plan *p = *state;
	struct plan_resize r;
	char err[256];

	take(p, "a", 16);
	assert_int_equal(plan_resize_choose(p, "a", 0, 0, &r, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "at least 1 SM"));
	assert_int_equal(
		plan_resize_choose(p, "nosuch", 8, 0, &r, err, sizeof(err)),
		-1);
	assert_non_null(strstr(err, "no vGPU named"));
}

static void move_takes_exactly_the_groups_asked(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *a = take(p, "a", 16);
	struct plan_resize r;

	resize_ok(p, "a", 0, (1ull << 7) | (1ull << 9), &r);
	assert_int_equal(r.ngroups, 2);
	assert_int_equal(r.groups[0], 7);
	assert_int_equal(r.groups[1], 9);
	assert_int_equal(r.drop_mask, 0x3);
	assert_int_equal(a->groups[0], 7);
	assert_int_equal(p->gpus[0].groups_used, (1ull << 7) | (1ull << 9));
}

static void move_refuses_another_vgpus_group(void **state)
{
	struct plan *p = *state;
	struct plan_resize r;
	char err[256];

	take(p, "a", 16);
	take(p, "bee", 8); /* group 2 */
	assert_int_equal(plan_resize_choose(p, "a", 0, (1ull << 2) | 1, &r, err,
					    sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "belongs to vGPU bee"));
	assert_int_equal(
		plan_resize_choose(p, "a", 0, 1ull << 20, &r, err, sizeof(err)),
		-1);
	assert_non_null(strstr(err, "has no SM group 20"));
	/* the leftover slice may come with groups (the scheduler lends it) */
	assert_int_equal(plan_resize_choose(p, "a", 0, (1ull << 15) | 1, &r,
					    err, sizeof(err)),
			 0);
	assert_int_equal(r.sms, 8 + 12);
}

static void held_groups_are_taken_until_the_worker_answers(void **state)
{
	struct plan *p = *state;
	struct plan_request req = {
		.name = "c", .sms = 104, .memory = GiB, .gpu = 0};
	const struct plan_grant *a = take(p, "a", 16);
	struct plan_resize r;
	char err[256];

	assert_int_equal(
		plan_resize_choose(p, "a", 32, 0, &r, err, sizeof(err)), 0);
	assert_int_equal(plan_resize_hold(p, "a", &r), 0);
	/* 13 groups free before, 11 while a holds 2 more: 104 does not fit */
	assert_null(plan_reserve(p, &req, err, sizeof(err)));
	plan_resize_finish(p, "a", &r, false); /* the worker said no */
	assert_int_equal(a->sms, 16);
	assert_int_equal(p->gpus[0].groups_used, 0x3);
	assert_non_null(plan_reserve(p, &req, err, sizeof(err)));
	/* and now a cannot grow: nothing is free but the leftover */
	assert_int_equal(
		plan_resize_choose(p, "a", 32, 0, &r, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, plan_fixture_teardown)
		T(resize_grows_keeping_its_groups),
		T(resize_shrinks_to_its_lowest_groups),
		T(resize_to_the_same_groups_changes_nothing),
		T(resize_takes_the_leftover_when_it_fits_better),
		T(resize_refuses_more_than_is_free),
		T(resize_refuses_zero_and_unknown_names),
		T(move_takes_exactly_the_groups_asked),
		T(move_refuses_another_vgpus_group),
		T(held_groups_are_taken_until_the_worker_answers),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
