/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of suspend, resume and migration in the planner
 * (host-daemon/plan_move.c) on two H100-like GPUs (15 groups of 8 SMs and
 * 12 left over, 80 GiB each), and of the sub-allocator's calls that
 * bring allocations back (suballoc_alloc_at, suballoc_next).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mem_suballoc.h"
#include "plan_fixture.h"
#include "plan_move.h"

/* Two H100s. */
static int setup(void **state)
{
	return plan_fixture_setup(state, plan_fixture_h100(), 2);
}

static void suspend_gives_back_and_resume_keeps_window(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *a = plan_fixture_take(p, "a", 16, 10 * GiB, 0);
	uint64_t va = a->va_base;
	struct plan_move m;
	char err[256];

	assert_int_equal(plan_suspend(p, "a"), 0);
	assert_int_equal(p->gpus[0].groups_used, 0);
	assert_int_equal(p->gpus[0].memory_used, 0);
	a = plan_find(p, "a");
	assert_non_null(a);
	assert_int_equal(a->ngroups, 0);
	assert_int_equal(a->va_base, va);
	/* another vGPU takes groups 0-1 meanwhile */
	plan_fixture_take(p, "b", 16, GiB, 0);
	assert_int_equal(plan_move_choose(p, "a", 0, PLAN_GPU_ANY, 16, 10 * GiB,
					  &m, err, sizeof(err)),
			 0);
	assert_int_equal(m.gpu, 0);
	assert_int_equal(m.ngroups, 2);
	assert_int_equal(m.groups[0], 2);
	assert_int_equal(m.groups[1], 3);
	assert_int_equal(plan_move_hold(p, &m), 0);
	assert_int_equal(plan_move_finish(p, "a", &m), 0);
	a = plan_find(p, "a");
	assert_int_equal(a->va_base, va);
	assert_int_equal(a->sms, 16);
	assert_int_equal(p->gpus[0].memory_used, 11 * GiB);
	assert_int_equal(p->gpus[0].groups_used, 0xf);
	/* and gone entirely: nothing left held */
	assert_int_equal(plan_release(p, "a"), 0);
	assert_int_equal(plan_release(p, "b"), 0);
	assert_int_equal(p->gpus[0].groups_used, 0);
	assert_int_equal(p->gpus[0].memory_used, 0);
}

static void migrate_holds_both_then_one(void **state)
{
	struct plan *p = *state;
	struct plan_move m;
	char err[256];

	plan_fixture_take(p, "a", 24, 20 * GiB, 0);
	/* the same GPU is no migration */
	assert_int_equal(plan_move_choose(p, "a", 0, 0, 24, 20 * GiB, &m, err,
					  sizeof(err)),
			 -1);
	assert_string_equal(err, "vGPU a is on GPU 0 already");
	/* ANY: not the one it is on */
	assert_int_equal(plan_move_choose(p, "a", PLAN_GPU_ANY, 0, 24, 20 * GiB,
					  &m, err, sizeof(err)),
			 0);
	assert_int_equal(m.gpu, 1);
	assert_int_equal(plan_move_hold(p, &m), 0);
	assert_int_equal(p->gpus[0].memory_used, 20 * GiB);
	assert_int_equal(p->gpus[1].memory_used, 20 * GiB);
	assert_int_equal(p->gpus[1].groups_used, 0x7);
	assert_int_equal(plan_move_finish(p, "a", &m), 0);
	assert_int_equal(p->gpus[0].memory_used, 0);
	assert_int_equal(p->gpus[0].groups_used, 0);
	assert_int_equal(plan_find(p, "a")->gpu, 1);
	/* a failed one gives the target back */
	assert_int_equal(plan_move_choose(p, "a", 0, 1, 24, 20 * GiB, &m, err,
					  sizeof(err)),
			 0);
	assert_int_equal(plan_move_hold(p, &m), 0);
	plan_move_unhold(p, &m);
	assert_int_equal(p->gpus[0].memory_used, 0);
	assert_int_equal(p->gpus[0].groups_used, 0);
	assert_int_equal(plan_find(p, "a")->gpu, 1);
}

static void migrate_refused_without_room(void **state)
{
	struct plan *p = *state;
	struct plan_move m;
	char err[256];

	plan_fixture_take(p, "a", 8, 40 * GiB, 0);
	plan_fixture_take(p, "big", 8, 70 * GiB, 1);
	assert_int_equal(plan_move_choose(p, "a", 1, 0, 8, 40 * GiB, &m, err,
					  sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "of memory"));
	assert_non_null(strstr(err, "free on GPU 1"));
	plan_fixture_take(p, "wide", 112, GiB, 1);
	assert_int_equal(
		plan_move_choose(p, "a", 1, 0, 16, GiB, &m, err, sizeof(err)),
		-1);
	assert_non_null(strstr(err, "SMs"));
	/* and nothing changed */
	assert_int_equal(p->gpus[0].memory_used, 40 * GiB);
	assert_int_equal(plan_find(p, "a")->gpu, 0);
}

static void suspended_in_the_state_file(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g;
	char err[256];

	g = plan_restore_suspended(p, "s", 1, VA_BASE + 3 * (1ull << 40), err,
				   sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->ngroups, 0);
	assert_int_equal(g->memory, 0);
	assert_null(plan_restore_suspended(
		p, "t", 0, VA_BASE + 3 * (1ull << 40), err, sizeof(err)));
	assert_non_null(strstr(err, "not a free window"));
	assert_null(
		plan_restore_suspended(p, "s", 0, VA_BASE, err, sizeof(err)));
	assert_non_null(strstr(err, "twice"));
	assert_int_equal(plan_release(p, "s"), 0);
}

static int maps, unmaps;

static int map_cb(void *ctx, uint64_t va, uint64_t len)
{
	(void)ctx;
	(void)va;
	(void)len;
	maps++;
	return 0;
}

static int unmap_cb(void *ctx, uint64_t va, uint64_t len)
{
	(void)ctx;
	(void)va;
	(void)len;
	unmaps++;
	return 0;
}

static void suballoc_brings_allocations_back(void **state)
{
	struct suballoc sa;
	uint64_t pos = 0, s, sz, a;
	uint32_t owner, n = 0;

	(void)state;
	assert_int_equal(suballoc_init(&sa, VA_BASE, 1ull << 40, 2 * MiB, GiB,
				       0, map_cb, unmap_cb, NULL),
			 0);
	assert_int_equal(
		suballoc_alloc_at(&sa, VA_BASE + 4 * MiB + 256, 1000, 7), 0);
	assert_int_equal(suballoc_alloc_at(&sa, VA_BASE + 3 * MiB, 4096, 7), 0);
	assert_int_equal(
		suballoc_alloc_at(&sa, VA_BASE + 3 * MiB + 256, 256, 8),
		-EEXIST);
	assert_int_equal(suballoc_alloc_at(&sa, VA_BASE + 100, 256, 8),
			 -EINVAL);
	assert_int_equal(sa.mapped, 4 * MiB);
	/* a normal allocation fills the lowest free space around them */
	assert_int_equal(suballoc_alloc(&sa, 256, 9, &a), 0);
	assert_int_equal(a, VA_BASE);
	while (suballoc_next(&sa, &pos, &s, &sz, &owner)) {
		n++;
		if (n == 1)
			assert_true(s == VA_BASE && owner == 9);
		if (n == 2)
			assert_true(s == VA_BASE + 3 * MiB && sz == 4096);
		if (n == 3)
			assert_true(s == VA_BASE + 4 * MiB + 256 &&
				    sz == 1024 && owner == 7);
	}
	assert_int_equal(n, 3);
	assert_int_equal(suballoc_free_owner(&sa, 7), 0);
	assert_int_equal(suballoc_free(&sa, a, 9), 0);
	assert_int_equal(sa.mapped, 0);
	assert_int_equal(maps, unmaps);
	suballoc_destroy(&sa);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			suspend_gives_back_and_resume_keeps_window, setup,
			plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(migrate_holds_both_then_one,
						setup, plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(migrate_refused_without_room,
						setup, plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(suspended_in_the_state_file,
						setup, plan_fixture_teardown),
		cmocka_unit_test(suballoc_brings_allocations_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
