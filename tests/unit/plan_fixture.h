/* SPDX-License-Identifier: MIT */
/*
 * The planner unit tests' fixture (test_plan_move, test_plan_resize,
 * test_plan_swap): a plan over identical GPUs split in groups of 8 SMs,
 * and a reservation that must succeed. Header-only, so that each test
 * links only the planner objects it tests. Include it after <cmocka.h>.
 */
#ifndef VGPU_TEST_PLAN_FIXTURE_H
#define VGPU_TEST_PLAN_FIXTURE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"

#define GiB	(1ull << 30)
#define MiB	(1ull << 20)
#define VA_BASE VGPU_VA_FIRST

/* A GPU of ngroups groups of 8 SMs (sm_count SMs in all), 2 MiB pages. */
static inline struct vgpu_gpu_info
plan_fixture_gpu(uint32_t backend, const char *name, uint32_t sm_count,
		 uint32_t ngroups, uint64_t memory)
{
	struct vgpu_gpu_info info;
	uint32_t i;

	memset(&info, 0, sizeof(info));
	info.backend = backend;
	snprintf(info.name, sizeof(info.name), "%s", name);
	info.sm_count = sm_count;
	info.min_partition = 8;
	info.alignment = 8;
	info.memory_total = memory;
	info.granularity = 2 * MiB;
	info.ngroups = ngroups;
	for (i = 0; i < info.ngroups; i++)
		info.group_sms[i] = 8;
	return info;
}

/* The H100 most planner tests use: 132 SMs (15 groups of 8), 80 GiB. */
static inline struct vgpu_gpu_info plan_fixture_h100(void)
{
	return plan_fixture_gpu(VGPU_BACKEND_CUDA, "NVIDIA H100 80GB HBM3", 132,
				15, 80 * GiB);
}

/*
 * A cmocka setup's plan over ngpus GPUs like info (indexes 0, 1, ...)
 * into *state (the caller frees it): 0, or -1 when the planner refuses.
 */
static inline int plan_fixture_setup(void **state, struct vgpu_gpu_info info,
				     uint32_t ngpus)
{
	struct plan *p = calloc(1, sizeof(*p));
	char err[256];
	uint32_t g;

	if (!p || plan_init(p, VA_BASE, err, sizeof(err)))
		return -1;
	for (g = 0; g < ngpus; g++) {
		info.index = g;
		if (plan_add_gpu(p, &info, err, sizeof(err)))
			return -1;
	}
	*state = p;
	return 0;
}

static inline int plan_fixture_teardown(void **state)
{
	free(*state);
	return 0;
}

/* plan_reserve that must succeed: the test fails with the planner's
 * reason otherwise. */
static inline const struct plan_grant *
plan_fixture_take(struct plan *p, const char *name, uint32_t sms, uint64_t mem,
		  uint32_t gpu)
{
	struct plan_request req = {
		.name = name, .sms = sms, .memory = mem, .gpu = gpu};
	char err[256];
	const struct plan_grant *g = plan_reserve(p, &req, err, sizeof(err));

	if (!g)
		fail_msg("%s", err);
	return g;
}

#endif /* VGPU_TEST_PLAN_FIXTURE_H */
