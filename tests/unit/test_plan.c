/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the SM-group planner (host-daemon/plan.c), on an
 * H100-like GPU: 132 SMs split into 15 groups of 8 plus the 12 SMs the
 * split leaves over (one more slice, group 15, usable alone), 80 GiB,
 * 2 MiB granularity.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "plan.h"

#define GiB	(1ull << 30)
#define MiB	(1ull << 20)
#define TiB	(1ull << 40)
#define VA_BASE VGPU_VA_FIRST

static struct vgpu_gpu_info h100_info(uint32_t index)
{
	struct vgpu_gpu_info info;
	uint32_t i;

	memset(&info, 0, sizeof(info));
	info.index = index;
	info.backend = VGPU_BACKEND_CUDA;
	snprintf(info.name, sizeof(info.name), "NVIDIA H100 80GB HBM3");
	info.sm_count = 132;
	info.min_partition = 8;
	info.alignment = 8;
	info.memory_total = 80 * GiB;
	info.granularity = 2 * MiB;
	info.ngroups = 15;
	for (i = 0; i < info.ngroups; i++)
		info.group_sms[i] = 8;
	return info;
}

static int setup_one_gpu(void **state)
{
	struct plan *p = calloc(1, sizeof(*p));
	struct vgpu_gpu_info info = h100_info(0);
	char err[256];

	if (!p || plan_init(p, VA_BASE, err, sizeof(err)) ||
	    plan_add_gpu(p, &info, err, sizeof(err)))
		return -1;
	*state = p;
	return 0;
}

static int setup_two_gpus(void **state)
{
	struct vgpu_gpu_info info = h100_info(1);
	char err[256];

	if (setup_one_gpu(state))
		return -1;
	return plan_add_gpu(*state, &info, err, sizeof(err));
}

static int teardown(void **state)
{
	free(*state);
	return 0;
}

static const struct plan_grant *take(struct plan *p, const char *name,
				     uint32_t sms, uint64_t memory,
				     uint32_t gpu, char *err, size_t errlen)
{
	struct plan_request req = {
		.name = name, .sms = sms, .memory = memory, .gpu = gpu};

	return plan_reserve(p, &req, err, errlen);
}

static void plan_gives_disjoint_groups_across_vgpus(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g[3];
	uint64_t seen = 0;
	char err[256];
	uint32_t i, j;

	g[0] = take(p, "a", 16, GiB, PLAN_GPU_ANY, err, sizeof(err));
	g[1] = take(p, "b", 24, GiB, PLAN_GPU_ANY, err, sizeof(err));
	g[2] = take(p, "c", 8, GiB, 0, err, sizeof(err));
	for (i = 0; i < 3; i++) {
		assert_non_null(g[i]);
		assert_int_equal(g[i]->gpu, 0);
		for (j = 0; j < g[i]->ngroups; j++) {
			uint64_t bit = 1ull << g[i]->groups[j];

			assert_false(seen & bit);
			seen |= bit;
		}
	}
	assert_int_equal(g[0]->ngroups, 2);
	assert_int_equal(g[1]->ngroups, 3);
	assert_int_equal(g[2]->ngroups, 1);
	/* lowest free groups first: 0-1, 2-4, 5 */
	assert_int_equal(g[0]->groups[0], 0);
	assert_int_equal(g[1]->groups[0], 2);
	assert_int_equal(g[2]->groups[0], 5);
	assert_int_equal(seen, 0x3f);
}

static void plan_rounds_sms_up_to_whole_groups(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g;
	char err[256];

	g = take(p, "a", 20, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->sms, 24);
	assert_int_equal(g->ngroups, 3);
	g = take(p, "b", 1, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->sms, 8);
}

static void plan_rejects_overcommitted_sms_saying_what_is_free(void **state)
{
	struct plan *p = *state;
	char err[256];

	assert_non_null(
		take(p, "big", 80, GiB, PLAN_GPU_ANY, err, sizeof(err)));
	assert_null(take(p, "more", 48, GiB, PLAN_GPU_ANY, err, sizeof(err)));
	assert_string_equal(err, "asked for 48 SMs, 40 SMs (5 groups of 8) "
				 "are free on GPU 0; so is the leftover slice "
				 "of 12 SMs (usable alone)");
	/* the refusal took nothing: 40 SMs still fit */
	assert_non_null(take(p, "fits", 40, GiB, 0, err, sizeof(err)));
	assert_non_null(take(p, "left", 1, GiB, 0, err, sizeof(err)));
	assert_null(take(p, "none", 1, GiB, 0, err, sizeof(err)));
	assert_string_equal(err, "asked for 1 SMs, 0 SMs (0 groups of 8) "
				 "are free on GPU 0");
}

static void plan_rejects_more_sms_than_the_gpu_slices_hold(void **state)
{
	struct plan *p = *state;
	char err[256];

	assert_null(take(p, "all", 132, GiB, 0, err, sizeof(err)));
	assert_string_equal(err, "asked for 132 SMs, GPU 0 has only 120 SMs "
				 "in slices (15 groups of 8) in all");
	assert_non_null(take(p, "all", 120, GiB, 0, err, sizeof(err)));
}

static void plan_accounts_memory_per_gpu_leaving_a_reserve(void **state)
{
	struct plan *p = *state;
	char err[256];

	/* 80 GiB: 5% is 4 GiB, so the reserve is the 1 GiB cap */
	assert_int_equal(p->gpus[0].memory_reserve, GiB);
	assert_int_equal(plan_gpu_usable(&p->gpus[0]), 79 * GiB);
	assert_non_null(take(p, "a", 8, 40 * GiB, 0, err, sizeof(err)));
	assert_null(take(p, "b", 8, 40 * GiB, 0, err, sizeof(err)));
	assert_string_equal(err, "asked for 40.0 GiB of memory, 39.0 GiB is "
				 "free on GPU 0 (79.0 GiB usable: 80.0 GiB "
				 "minus 1.0 GiB kept for the driver)");
	assert_non_null(take(p, "b", 8, 39 * GiB, 0, err, sizeof(err)));
	assert_int_equal(p->gpus[0].memory_used, 79 * GiB);
	assert_null(take(p, "c", 8, 1, 0, err, sizeof(err)));
}

static void plan_reserve_is_five_percent_on_small_gpus(void **state)
{
	struct plan *p = *state;
	struct vgpu_gpu_info info = h100_info(1);
	char err[256];

	info.memory_total = 16 * GiB;
	assert_int_equal(plan_add_gpu(p, &info, err, sizeof(err)), 0);
	assert_int_equal(p->gpus[1].memory_reserve, 16 * GiB / 20);
	assert_null(take(p, "a", 8, 16 * GiB - 16 * GiB / 20 + 1, 1, err,
			 sizeof(err)));
	assert_non_null(take(p, "a", 8, 15 * GiB, 1, err, sizeof(err)));
}

static void plan_rounds_memory_up_to_granularity(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g;
	char err[256];

	g = take(p, "a", 8, 1, 0, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->memory, 2 * MiB);
	g = take(p, "b", 8, 3 * MiB, 0, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->memory, 4 * MiB);
	assert_int_equal(p->gpus[0].memory_used, 6 * MiB);
}

static void plan_release_returns_groups_and_memory(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g;
	char err[256];

	assert_non_null(take(p, "a", 64, 40 * GiB, 0, err, sizeof(err)));
	assert_non_null(take(p, "b", 56, 39 * GiB, 0, err, sizeof(err)));
	assert_null(take(p, "c", 8, GiB, 0, err, sizeof(err)));
	assert_int_equal(plan_release(p, "a"), 0);
	assert_int_equal(plan_release(p, "a"), -1);
	assert_null(plan_find(p, "a"));
	assert_int_equal(p->gpus[0].memory_used, 39 * GiB);
	g = take(p, "c", 64, 40 * GiB, 0, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->groups[0], 0);
	assert_int_equal(g->groups[7], 7);
	assert_int_equal(plan_release(p, "b"), 0);
	assert_int_equal(plan_release(p, "c"), 0);
	assert_int_equal(p->gpus[0].groups_used, 0);
	assert_int_equal(p->gpus[0].memory_used, 0);
}

static void plan_reuses_the_lowest_free_va_slot(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g;
	char err[256];

	g = take(p, "a", 8, GiB, 0, err, sizeof(err));
	assert_int_equal(g->va_base, VA_BASE);
	assert_int_equal(g->va_size, TiB);
	g = take(p, "b", 8, GiB, 0, err, sizeof(err));
	assert_int_equal(g->va_base, VA_BASE + TiB);
	g = take(p, "c", 8, GiB, 0, err, sizeof(err));
	assert_int_equal(g->va_base, VA_BASE + 2 * TiB);
	assert_int_equal(plan_release(p, "b"), 0);
	g = take(p, "d", 8, GiB, 0, err, sizeof(err));
	assert_int_equal(g->slot, 1);
	assert_int_equal(g->va_base, VA_BASE + TiB);
	g = take(p, "e", 8, GiB, 0, err, sizeof(err));
	assert_int_equal(g->va_base, VA_BASE + 3 * TiB);
}

static void plan_limits_vgpus_to_the_va_windows_that_fit(void **state)
{
	struct plan p;
	struct vgpu_gpu_info info = h100_info(0);
	char err[256];

	assert_int_equal(plan_init(&p, PLAN_VA_TOP - 2 * TiB, err, sizeof(err)),
			 0);
	assert_int_equal(p.nslots, 2);
	assert_int_equal(plan_add_gpu(&p, &info, err, sizeof(err)), 0);
	assert_non_null(take(&p, "a", 8, GiB, 0, err, sizeof(err)));
	assert_non_null(take(&p, "b", 8, GiB, 0, err, sizeof(err)));
	assert_null(take(&p, "c", 8, GiB, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "all 2 VA windows are in use"));
}

static void plan_init_rejects_a_bad_va_base(void **state)
{
	struct plan p;
	char err[256];

	assert_int_equal(plan_init(&p, 0, err, sizeof(err)), -1);
	assert_int_equal(plan_init(&p, VA_BASE + 4096, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "multiple of 2 MiB"));
	assert_int_equal(plan_init(&p, PLAN_VA_TOP, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "no room"));
	/* below the range the clients keep free, or the old default */
	assert_int_equal(plan_init(&p, VGPU_VA_FIRST - TiB, err, sizeof(err)),
			 -1);
	assert_non_null(strstr(err, "0x110000000000-0x500000000000"));
	assert_int_equal(plan_init(&p, 0x500000000000ull, err, sizeof(err)),
			 -1);
}

/*
 * Issue 16: windows met position-independent executables and their heap
 * (0x555555554000 and up, randomised by up to 1 TiB at the default 28
 * bits, 16 TiB at the maximum 32) and AddressSanitizer's shadow (up to
 * 0x10007fff7fff). Every window vgpud can hand out lies inside the range
 * every client reserves, clear of both, and there are more of them than
 * the 48 the old windows had.
 */
static void plan_windows_stay_clear_of_loader_placements(void **state)
{
	const uint64_t pie_lowest = 0x555555554000ull;
	const uint64_t asan_shadow_end = 0x10007fff7fffull;
	struct plan p;
	char err[256];
	uint32_t i;

	assert_int_equal(plan_init(&p, VA_BASE, err, sizeof(err)), 0);
	assert_int_equal(p.nslots, VGPU_VA_WINDOWS);
	assert_true(p.nslots > 48);
	assert_int_equal(VGPU_VA_FIRST % VGPU_VA_WINDOW, 0);
	assert_int_equal(VGPU_VA_END % VGPU_VA_WINDOW, 0);
	for (i = 0; i < p.nslots; i++) {
		uint64_t lo = VA_BASE + i * PLAN_VA_WINDOW;
		uint64_t hi = lo + PLAN_VA_WINDOW;

		assert_true(lo >= VGPU_VA_FIRST && hi <= VGPU_VA_END);
		assert_true(lo > asan_shadow_end && hi <= pie_lowest);
	}
	/* the last base that fits still keeps its window inside */
	assert_int_equal(plan_init(&p, VGPU_VA_END - TiB, err, sizeof(err)), 0);
	assert_int_equal(p.nslots, 1);
}

static void plan_rejects_bad_names(void **state)
{
	struct plan *p = *state;
	char name[80], err[256];

	assert_false(plan_name_valid("", err, sizeof(err)));
	assert_string_equal(err, "the vGPU name is empty");
	assert_false(plan_name_valid("a b", err, sizeof(err)));
	assert_non_null(strstr(err, "at position 2"));
	assert_false(plan_name_valid("a/b", err, sizeof(err)));
	assert_false(plan_name_valid("caf\xc3\xa9", err, sizeof(err)));
	assert_true(plan_name_valid("Vm1-gpu_0.a", err, sizeof(err)));

	memset(name, 'x', 63);
	name[63] = '\0';
	assert_true(plan_name_valid(name, err, sizeof(err)));
	name[63] = 'x';
	name[64] = '\0';
	assert_false(plan_name_valid(name, err, sizeof(err)));
	assert_non_null(strstr(err, "longer than 63"));

	assert_null(take(p, "bad name", 8, GiB, 0, err, sizeof(err)));
	assert_non_null(take(p, "a", 8, GiB, 0, err, sizeof(err)));
	assert_null(take(p, "a", 8, GiB, 0, err, sizeof(err)));
	assert_string_equal(err, "a vGPU named 'a' already exists");
}

static void plan_rejects_zero_sms_or_memory(void **state)
{
	struct plan *p = *state;
	char err[256];

	assert_null(take(p, "a", 0, GiB, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "at least 1 SM"));
	assert_null(take(p, "a", 8, 0, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "memory"));
	assert_int_equal(p->gpus[0].groups_used, 0);
}

static void plan_rejects_a_gpu_that_does_not_exist(void **state)
{
	struct plan *p = *state;
	char err[256];

	assert_null(take(p, "a", 8, GiB, 1, err, sizeof(err)));
	assert_string_equal(err, "there is no GPU 1 (this host has 1)");
}

static void plan_picks_the_first_gpu_with_room(void **state)
{
	struct plan *p = *state;
	struct plan_request req = {.name = "x", .sms = 8, .memory = GiB};
	const struct plan_grant *g;
	char err[256];

	g = take(p, "a", 120, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_int_equal(g->gpu, 0);
	g = take(p, "b", 16, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->gpu, 1);
	/* memory-full GPU 0 is skipped too */
	assert_int_equal(plan_release(p, "a"), 0);
	assert_non_null(take(p, "m", 8, 79 * GiB, 0, err, sizeof(err)));
	g = take(p, "c", 8, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_int_equal(g->gpu, 1);
	/* nothing fits: the message names the GPU with the most free */
	assert_null(take(p, "d", 120, GiB, PLAN_GPU_ANY, err, sizeof(err)));
	assert_string_equal(err, "asked for 120 SMs, 112 SMs (14 groups of "
				 "8) are free on GPU 0; so is the leftover "
				 "slice of 12 SMs (usable alone)");
	/* an excluded GPU (recovering) is not chosen */
	req.gpu = PLAN_GPU_ANY;
	req.gpu_exclude = 1ull << 1;
	assert_null(plan_reserve(p, &req, err, sizeof(err)));
	req.gpu_exclude = 3;
	assert_null(plan_reserve(p, &req, err, sizeof(err)));
	assert_non_null(strstr(err, "recovering"));
}

static void plan_add_gpu_rejects_inconsistent_info(void **state)
{
	struct plan p;
	struct vgpu_gpu_info info = h100_info(0);
	char err[256];

	assert_int_equal(plan_init(&p, VA_BASE, err, sizeof(err)), 0);
	info.group_sms[3] = 100; /* groups hold more SMs than the GPU */
	assert_int_equal(plan_add_gpu(&p, &info, err, sizeof(err)), -1);
	info = h100_info(0);
	info.ngroups = VGPU_MAX_SM_GROUPS + 1;
	assert_int_equal(plan_add_gpu(&p, &info, err, sizeof(err)), -1);
	info = h100_info(0);
	info.min_partition = 0;
	assert_int_equal(plan_add_gpu(&p, &info, err, sizeof(err)), -1);
	info = h100_info(5); /* not the next index */
	assert_int_equal(plan_add_gpu(&p, &info, err, sizeof(err)), -1);
	assert_int_equal(p.ngpus, 0);
}

static void plan_formats_sizes_for_people(void **state)
{
	char buf[32];

	assert_string_equal(plan_format_size(512, buf, sizeof(buf)), "512 B");
	assert_string_equal(plan_format_size(4 * GiB, buf, sizeof(buf)),
			    "4.0 GiB");
	assert_string_equal(plan_format_size(1536 * MiB, buf, sizeof(buf)),
			    "1.5 GiB");
}

static void plan_gives_12_sms_the_leftover_slice(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g;
	char err[256];

	g = take(p, "a", 12, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->ngroups, 1);
	assert_int_equal(g->groups[0], 15); /* index == ngroups */
	assert_int_equal(g->sms, 12);
	assert_false(plan_leftover_free(&p->gpus[0]));
	/* the next 12 cannot have it: two regular groups */
	g = take(p, "b", 12, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->ngroups, 2);
	assert_int_equal(g->sms, 16);
	assert_int_equal(plan_release(p, "a"), 0);
	assert_true(plan_leftover_free(&p->gpus[0]));
}

static void plan_gives_8_sms_a_regular_group(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g;
	char err[256];

	g = take(p, "a", 8, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->ngroups, 1);
	assert_int_equal(g->groups[0], 0);
	assert_int_equal(g->sms, 8);
	/* 9 SMs: 16 in two groups wastes 7, the leftover 12 wastes 3 */
	g = take(p, "b", 9, GiB, PLAN_GPU_ANY, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->groups[0], 15);
	assert_int_equal(g->sms, 12);
}

static void plan_uses_the_leftover_when_regular_groups_are_gone(void **state)
{
	struct plan *p = *state;
	const struct plan_grant *g;
	char err[256];

	assert_non_null(take(p, "all", 120, GiB, 0, err, sizeof(err)));
	assert_int_equal(plan_gpu_free_sms(&p->gpus[0], NULL), 12);
	g = take(p, "b", 4, GiB, 0, err, sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->groups[0], 15);
	assert_null(take(p, "c", 4, GiB, 0, err, sizeof(err)));
	assert_string_equal(err, "asked for 4 SMs, 0 SMs (0 groups of 8) "
				 "are free on GPU 0");
	assert_int_equal(plan_release(p, "b"), 0);
	/* 13 SMs fit in neither: the message names the leftover slice */
	assert_null(take(p, "c", 13, GiB, 0, err, sizeof(err)));
	assert_non_null(strstr(err, "the leftover slice of 12 SMs"));
}

static void plan_restore_replays_a_recorded_grant(void **state)
{
	struct plan *p = *state;
	const uint32_t two[] = {3, 4}, left[] = {15}, bad[] = {15, 2};
	const uint32_t over[] = {4, 5}, none[] = {16};
	const struct plan_grant *g;
	char err[256];

	g = plan_restore(p, "a", 0, 2, two, GiB, VA_BASE + 2 * TiB, err,
			 sizeof(err));
	assert_non_null(g);
	assert_int_equal(g->sms, 16);
	assert_int_equal(g->slot, 2);
	assert_non_null(plan_restore(p, "b", 0, 1, left, GiB, VA_BASE, err,
				     sizeof(err)));
	/* overlapping groups, the leftover with others, no such group */
	assert_null(plan_restore(p, "c", 0, 2, over, GiB, VA_BASE + TiB, err,
				 sizeof(err)));
	assert_non_null(strstr(err, "already holds"));
	assert_null(plan_restore(p, "c", 0, 2, bad, GiB, VA_BASE + TiB, err,
				 sizeof(err)));
	assert_null(plan_restore(p, "c", 0, 1, none, GiB, VA_BASE + TiB, err,
				 sizeof(err)));
	/* a taken VA window, a misaligned one, an odd quota, a bad GPU */
	assert_null(plan_restore(p, "c", 0, 1, (uint32_t[]){7}, GiB, VA_BASE,
				 err, sizeof(err)));
	assert_null(plan_restore(p, "c", 0, 1, (uint32_t[]){7}, GiB,
				 VA_BASE + 4096, err, sizeof(err)));
	assert_null(plan_restore(p, "c", 0, 1, (uint32_t[]){7}, GiB + 1,
				 VA_BASE + TiB, err, sizeof(err)));
	assert_null(plan_restore(p, "c", 1, 1, (uint32_t[]){7}, GiB,
				 VA_BASE + TiB, err, sizeof(err)));
	/* a window of a vgpud from before the windows moved (issue 16) */
	assert_null(plan_restore(p, "c", 0, 1, (uint32_t[]){7}, GiB,
				 0x500000000000ull, err, sizeof(err)));
	assert_non_null(strstr(err, "before issue 16"));
	/* nothing of the refusals stuck: group 7 and slot 1 are free */
	assert_non_null(plan_restore(p, "c", 0, 1, (uint32_t[]){7}, GiB,
				     VA_BASE + TiB, err, sizeof(err)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			plan_gives_disjoint_groups_across_vgpus, setup_one_gpu,
			teardown),
		cmocka_unit_test_setup_teardown(
			plan_rounds_sms_up_to_whole_groups, setup_one_gpu,
			teardown),
		cmocka_unit_test_setup_teardown(
			plan_rejects_overcommitted_sms_saying_what_is_free,
			setup_one_gpu, teardown),
		cmocka_unit_test_setup_teardown(
			plan_rejects_more_sms_than_the_gpu_slices_hold,
			setup_one_gpu, teardown),
		cmocka_unit_test_setup_teardown(
			plan_accounts_memory_per_gpu_leaving_a_reserve,
			setup_one_gpu, teardown),
		cmocka_unit_test_setup_teardown(
			plan_reserve_is_five_percent_on_small_gpus,
			setup_one_gpu, teardown),
		cmocka_unit_test_setup_teardown(
			plan_rounds_memory_up_to_granularity, setup_one_gpu,
			teardown),
		cmocka_unit_test_setup_teardown(
			plan_release_returns_groups_and_memory, setup_one_gpu,
			teardown),
		cmocka_unit_test_setup_teardown(
			plan_reuses_the_lowest_free_va_slot, setup_one_gpu,
			teardown),
		cmocka_unit_test(plan_limits_vgpus_to_the_va_windows_that_fit),
		cmocka_unit_test(plan_init_rejects_a_bad_va_base),
		cmocka_unit_test(plan_windows_stay_clear_of_loader_placements),
		cmocka_unit_test_setup_teardown(plan_rejects_bad_names,
						setup_one_gpu, teardown),
		cmocka_unit_test_setup_teardown(plan_rejects_zero_sms_or_memory,
						setup_one_gpu, teardown),
		cmocka_unit_test_setup_teardown(
			plan_rejects_a_gpu_that_does_not_exist, setup_one_gpu,
			teardown),
		cmocka_unit_test_setup_teardown(
			plan_picks_the_first_gpu_with_room, setup_two_gpus,
			teardown),
		cmocka_unit_test(plan_add_gpu_rejects_inconsistent_info),
		cmocka_unit_test(plan_formats_sizes_for_people),
		cmocka_unit_test_setup_teardown(
			plan_gives_12_sms_the_leftover_slice, setup_one_gpu,
			teardown),
		cmocka_unit_test_setup_teardown(
			plan_gives_8_sms_a_regular_group, setup_one_gpu,
			teardown),
		cmocka_unit_test_setup_teardown(
			plan_uses_the_leftover_when_regular_groups_are_gone,
			setup_one_gpu, teardown),
		cmocka_unit_test_setup_teardown(
			plan_restore_replays_a_recorded_grant, setup_one_gpu,
			teardown),
	};

	return cmocka_run_group_tests_name("plan", tests, NULL, NULL);
}
