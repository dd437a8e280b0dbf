/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the swap victim choice (host-daemon/plan_swap.c) on two
 * small GPUs (4 groups of 8 SMs, 10 GiB each; the planner keeps 512 MiB
 * of each for the driver, so 9.5 GiB are usable).
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
#include "plan_move.h"
#include "plan_swap.h"

/* Two small simulated GPUs: 4 groups of 8 SMs, 10 GiB each. */
static int setup(void **state)
{
	return plan_fixture_setup(
		state,
		plan_fixture_gpu(VGPU_BACKEND_SIM, "sim", 32, 4, 10 * GiB), 2);
}

static struct plan_swap_need create_need(const char *name, uint32_t sms,
					 uint64_t mem, uint32_t gpu)
{
	struct plan_swap_need n = {
		.name = name, .sms = sms, .memory = mem, .gpu = gpu};

	return n;
}

/* plan_swap_choose that must succeed, for the candidates c[0..nc). */
static void choose_ok(const struct plan *p, const struct plan_swap_cand *c,
		      uint32_t nc, const struct plan_swap_need *n,
		      struct plan_swap_choice *out)
{
	char err[256];

	if (plan_swap_choose(p, c, nc, n, out, err, sizeof(err)))
		fail_msg("plan_swap_choose: %s", err);
}

static void swap_not_needed_when_it_fits(void **state)
{
	struct plan *p = *state;
	struct plan_swap_cand c[] = {{"a", 5000}};
	struct plan_swap_need n = create_need("x", 8, 1 * GiB, 0);
	struct plan_swap_choice out;

	plan_fixture_take(p, "a", 8, 4 * GiB, 0);
	choose_ok(p, c, 1, &n, &out);
	assert_int_equal(out.n, 0);
	assert_int_equal(out.gpu, 0);
}

static void swap_takes_the_longest_idle(void **state)
{
	struct plan *p = *state;
	struct plan_swap_cand c[] = {{"a", 1000}, {"b", 9000}, {"c", 3000}};
	struct plan_swap_need n = create_need("x", 8, 3 * GiB, 0);
	struct plan_swap_choice out;

	plan_fixture_take(p, "a", 8, 3 * GiB, 0);
	plan_fixture_take(p, "b", 8, 3 * GiB, 0);
	plan_fixture_take(p, "c", 8, 3 * GiB, 0);
	choose_ok(p, c, 3, &n, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(c[out.idx[0]].name, "b");
	assert_int_equal(out.bytes, 3 * GiB);
	assert_int_equal(out.gpu, 0);
}

static void swap_takes_no_more_than_needed(void **state)
{
	struct plan *p = *state;
	/* longest idle first: a (1 GiB) is not enough, b (6 GiB) is; a is
	 * then kept in since b alone makes room */
	struct plan_swap_cand c[] = {{"a", 9000}, {"b", 5000}, {"c", 100}};
	struct plan_swap_need n = create_need("x", 8, 5 * GiB, 0);
	struct plan_swap_choice out;

	plan_fixture_take(p, "a", 8, 1 * GiB, 0);
	plan_fixture_take(p, "b", 8, 6 * GiB, 0);
	plan_fixture_take(p, "c", 8, 2 * GiB, 0);
	choose_ok(p, c, 3, &n, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(c[out.idx[0]].name, "b");
}

static void swap_takes_several_when_one_is_not_enough(void **state)
{
	struct plan *p = *state;
	struct plan_swap_cand c[] = {{"a", 300}, {"b", 200}, {"c", 100}};
	struct plan_swap_need n = create_need("x", 8, 6 * GiB, 0);
	struct plan_swap_choice out;

	plan_fixture_take(p, "a", 8, 3 * GiB, 0);
	plan_fixture_take(p, "b", 8, 3 * GiB, 0);
	plan_fixture_take(p, "c", 8, 3 * GiB, 0);
	choose_ok(p, c, 3, &n, &out);
	assert_int_equal(out.n, 2);
	assert_string_equal(c[out.idx[0]].name, "a");
	assert_string_equal(c[out.idx[1]].name, "b");
	assert_int_equal(out.bytes, 6 * GiB);
}

static void swap_frees_sm_groups_too(void **state)
{
	struct plan *p = *state;
	struct plan_swap_cand c[] = {{"a", 500}, {"b", 900}};
	struct plan_swap_need n = create_need("x", 16, 1 * GiB, 0);
	struct plan_swap_choice out;

	plan_fixture_take(p, "a", 16, 1 * GiB, 0);
	plan_fixture_take(p, "b", 16, 1 * GiB, 0);
	choose_ok(p, c, 2, &n, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(c[out.idx[0]].name, "b");
}

static void swap_refuses_when_even_all_would_not_do(void **state)
{
	struct plan *p = *state;
	struct plan_swap_cand c[] = {{"a", 500}};
	struct plan_swap_need n = create_need("x", 8, 8 * GiB, 0);
	struct plan_swap_choice out;
	char err[256] = "";

	plan_fixture_take(p, "a", 8, 3 * GiB, 0);
	plan_fixture_take(p, "busy", 8, 3 * GiB, 0); /* not a candidate */
	assert_int_equal(plan_swap_choose(p, c, 1, &n, &out, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "GiB"));
	assert_int_equal(out.n, 0);
}

static void swap_refuses_without_candidates(void **state)
{
	struct plan *p = *state;
	struct plan_swap_need n = create_need("x", 8, 8 * GiB, 0);
	struct plan_swap_choice out;
	char err[256] = "";

	plan_fixture_take(p, "a", 8, 6 * GiB, 0);
	assert_int_equal(
		plan_swap_choose(p, NULL, 0, &n, &out, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no vGPU may be swapped out"));
}

static void swap_only_from_the_gpu_asked(void **state)
{
	struct plan *p = *state;
	/* b on GPU 1 is idle longer, but the create asks for GPU 0 */
	struct plan_swap_cand c[] = {{"a", 100}, {"b", 9000}};
	struct plan_swap_need n = create_need("x", 8, 6 * GiB, 0);
	struct plan_swap_choice out;

	plan_fixture_take(p, "a", 8, 6 * GiB, 0);
	plan_fixture_take(p, "b", 8, 6 * GiB, 1);
	plan_fixture_take(p, "b2", 8, 3 * GiB, 1);
	choose_ok(p, c, 2, &n, &out);
	assert_int_equal(out.gpu, 0);
	assert_int_equal(out.n, 1);
	assert_string_equal(c[out.idx[0]].name, "a");
}

static void swap_any_gpu_takes_the_first_that_works(void **state)
{
	struct plan *p = *state;
	struct plan_swap_cand c[] = {{"b", 100}};
	struct plan_swap_need n = create_need("x", 8, 6 * GiB, PLAN_GPU_ANY);
	struct plan_swap_choice out;
	char err[256];

	plan_fixture_take(p, "a", 8, 6 * GiB,
			  0); /* not a candidate: GPU 0 stays full */
	plan_fixture_take(p, "b", 8, 6 * GiB, 1);
	choose_ok(p, c, 1, &n, &out);
	assert_int_equal(out.gpu, 1);
	assert_int_equal(out.n, 1);
	n.gpu_exclude = 1ull << 1; /* GPU 1 may not be chosen */
	assert_int_equal(plan_swap_choose(p, c, 1, &n, &out, err, sizeof(err)),
			 -1);
}

static void swap_makes_room_for_a_resume(void **state)
{
	struct plan *p = *state;
	struct plan_swap_cand c[] = {{"b", 700}, {"c", 800}};
	struct plan_swap_need n = {.name = "a",
				   .existing = true,
				   .gpu = 0,
				   .sms = 8,
				   .memory = 4 * GiB};
	struct plan_swap_choice out;

	plan_fixture_take(p, "a", 8, 4 * GiB, 0);
	assert_int_equal(plan_suspend(p, "a"), 0);
	plan_fixture_take(p, "b", 8, 4 * GiB, 0);
	plan_fixture_take(p, "c", 8, 4 * GiB, 0);
	choose_ok(p, c, 2, &n, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(c[out.idx[0]].name, "c");
	/* nothing changed in the plan itself */
	assert_int_equal(plan_find(p, "c")->memory, 4 * GiB);
	assert_int_equal(plan_find(p, "a")->memory, 0);
}

static void swap_skips_suspended_candidates(void **state)
{
	struct plan *p = *state;
	/* a is suspended already: it frees nothing, so b must go */
	struct plan_swap_cand c[] = {{"a", 9000}, {"b", 100}};
	struct plan_swap_need n = create_need("x", 8, 6 * GiB, 0);
	struct plan_swap_choice out;

	plan_fixture_take(p, "a", 8, 3 * GiB, 0);
	plan_fixture_take(p, "b", 8, 6 * GiB, 0);
	assert_int_equal(plan_suspend(p, "a"), 0);
	plan_fixture_take(p, "c", 8, 3 * GiB, 0);
	choose_ok(p, c, 2, &n, &out);
	assert_int_equal(out.n, 1);
	assert_string_equal(c[out.idx[0]].name, "b");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(swap_not_needed_when_it_fits,
						setup, plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(swap_takes_the_longest_idle,
						setup, plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(swap_takes_no_more_than_needed,
						setup, plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			swap_takes_several_when_one_is_not_enough, setup,
			plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(swap_frees_sm_groups_too, setup,
						plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			swap_refuses_when_even_all_would_not_do, setup,
			plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(swap_refuses_without_candidates,
						setup, plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(swap_only_from_the_gpu_asked,
						setup, plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(
			swap_any_gpu_takes_the_first_that_works, setup,
			plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(swap_makes_room_for_a_resume,
						setup, plan_fixture_teardown),
		cmocka_unit_test_setup_teardown(swap_skips_suspended_candidates,
						setup, plan_fixture_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
