/* SPDX-License-Identifier: MIT */
/*
 * A vGPU's memory across a migration on the sim backend, with the
 * worker's own sub-allocator (mem_suballoc.c) making the mem_map and
 * mem_unmap calls as it does in the worker: many allocations of varied
 * sizes (sharing granules, whole granules, many granules) move to the
 * other simulated GPU and back, with allocations made and freed between
 * prepare and commit; every byte reads back the same; then each
 * allocation is freed, its contents checked first, and all the memory
 * comes back. A resume's way of mapping (whole runs in one call, freed
 * allocation by allocation later) keeps memory until a run's last
 * allocation goes, moves with it, and never exceeds the quota.
 *
 * The backend keeps its extents as the cuda one does (backend_extent.h),
 * so this is the bookkeeping the GPU path runs.
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
#include <cuda.h>

#include "backend.h"
#include "mem_suballoc.h"
#include "suballoc_runs.h"

#define VA_BASE	 0x540000000000ull
#define VA_SIZE	 (2ull << 30)
#define GRANULE	 (2ull << 20)
#define QUOTA	 (256ull << 20)
#define MAX_LIVE 512

static const struct backend_ops *ops = &backend_sim_ops;

struct alloc {
	uint64_t va, bytes;
	uint32_t seed;
};

struct fixture {
	struct backend *b;
	struct suballoc sa;
	struct alloc a[MAX_LIVE];
	int n;
	uint32_t rng;
	int maps, unmaps; /* callbacks seen */
};

static uint32_t rnd(struct fixture *f)
{
	f->rng = f->rng * 1103515245u + 12345u;
	return f->rng >> 8;
}

static int cb_map(void *ctx, uint64_t va, uint64_t len)
{
	struct fixture *f = ctx;

	f->maps++;
	return ops->mem_map(f->b, va, len);
}

static int cb_unmap(void *ctx, uint64_t va, uint64_t len)
{
	struct fixture *f = ctx;

	f->unmaps++;
	return ops->mem_unmap(f->b, va, len);
}

static unsigned char pat(uint32_t seed, uint64_t i)
{
	return (unsigned char)(seed * 131u + i * 7u + (i >> 11));
}

static void fill(const struct alloc *a)
{
	unsigned char *p = (unsigned char *)(uintptr_t)a->va;
	uint64_t i;

	for (i = 0; i < a->bytes; i++)
		p[i] = pat(a->seed, i);
}

static int intact(const struct alloc *a)
{
	const unsigned char *p = (const unsigned char *)(uintptr_t)a->va;
	uint64_t i;

	for (i = 0; i < a->bytes; i++)
		if (p[i] != pat(a->seed, i))
			return 0;
	return 1;
}

/* Sizes as programs use them: tiny, odd, exactly a granule, many. */
static uint64_t some_size(struct fixture *f)
{
	switch (rnd(f) % 8) {
	case 0:
	case 1:
		return 1 + rnd(f) % 4096;
	case 2:
	case 3:
		return 100 + rnd(f) % (256u << 10);
	case 4:
		return GRANULE;
	case 5:
		return GRANULE * (1 + rnd(f) % 4);
	case 6:
		return GRANULE * (1 + rnd(f) % 8) + 1 + rnd(f) % GRANULE;
	default:
		return 1 + rnd(f) % (3u << 20);
	}
}

static int alloc_one(struct fixture *f, uint64_t bytes)
{
	struct alloc *a = &f->a[f->n];
	int rc;

	if (f->n == MAX_LIVE)
		return -ENOMEM;
	rc = suballoc_alloc(&f->sa, bytes, 1, &a->va);
	if (rc)
		return rc;
	a->bytes = bytes;
	a->seed = rnd(f);
	fill(a);
	f->n++;
	return 0;
}

/* Free the i-th live allocation, its contents checked first. */
static void free_one(struct fixture *f, int i)
{
	assert_true(intact(&f->a[i]));
	assert_int_equal(suballoc_free(&f->sa, f->a[i].va, 1), 0);
	f->a[i] = f->a[--f->n];
}

static void check_all(struct fixture *f)
{
	int i;

	for (i = 0; i < f->n; i++)
		if (!intact(&f->a[i]))
			fail_msg("allocation %d (0x%llx, %llu bytes) changed",
				 i, (unsigned long long)f->a[i].va,
				 (unsigned long long)f->a[i].bytes);
}

static void migrate(struct fixture *f, uint32_t gpu, int churn)
{
	struct backend_move_info mi;
	struct backend_move *m = NULL;
	uint32_t group = 1;
	char err[256] = "";
	int i;

	assert_int_equal(ops->migrate_prepare(f->b, gpu, &group, 1, &m, err,
					      sizeof(err)),
			 0);
	/* the clients go on between prepare and commit */
	for (i = 0; i < churn; i++) {
		if (f->n && rnd(f) % 2)
			free_one(f, (int)(rnd(f) % (uint32_t)f->n));
		else
			alloc_one(f, some_size(f)); /* may not fit: fine */
	}
	assert_int_equal(ops->migrate_commit(f->b, m, &mi, err, sizeof(err)),
			 0);
	assert_int_equal(mi.bytes, f->sa.mapped);
	check_all(f);
}

/* Nothing kept anywhere: a whole quota's worth maps in a fresh range. */
static void assert_all_memory_back(struct fixture *f)
{
	uint64_t far = VA_BASE + VA_SIZE / 2;

	assert_int_equal(f->sa.mapped, 0);
	assert_int_equal(ops->mem_map(f->b, far, QUOTA), 0);
	assert_int_equal(ops->mem_unmap(f->b, far, QUOTA), 0);
}

static int setup(void **state)
{
	struct vgpu_worker_config cfg;
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256] = "";

	setenv("VGPU_SIM_GPUS", "2", 1);
	setenv("VGPU_SIM_SMS", "32", 1);
	setenv("VGPU_SIM_MEMORY", "1G", 1);
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "move-test");
	cfg.backend = VGPU_BACKEND_SIM;
	cfg.ngroups = 1;
	cfg.groups[0] = 1;
	cfg.va_base = VA_BASE;
	cfg.va_size = VA_SIZE;
	cfg.memory_quota = QUOTA;
	if (!f || ops->open(&f->b, &cfg, err, sizeof(err))) {
		fprintf(stderr, "open: %s\n", err);
		free(f);
		return -1;
	}
	if (ops->thread_attach(f->b) ||
	    suballoc_init(&f->sa, VA_BASE, VA_SIZE, GRANULE, QUOTA, 0, cb_map,
			  cb_unmap, f)) {
		ops->close(f->b);
		free(f);
		return -1;
	}
	f->rng = 12345;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	suballoc_free_owner(&f->sa, 1);
	suballoc_destroy(&f->sa);
	ops->close(f->b);
	free(f);
	return 0;
}

static void move_many_allocations_then_free_each(void **state)
{
	struct fixture *f = *state;
	int i;

	while (f->sa.mapped < QUOTA - (64ull << 20) && f->n < 300)
		alloc_one(f, some_size(f));
	assert_true(f->n > 60);
	for (i = 0; i < f->n / 3; i++) /* holes */
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	check_all(f);
	migrate(f, 1, 40);
	migrate(f, 0, 0);
	migrate(f, 1, 40);
	while (f->n)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	assert_int_equal(f->maps, f->unmaps);
	assert_all_memory_back(f);
}

static void
move_after_resume_keeps_runs_until_their_last_allocation(void **state)
{
	struct fixture *f = *state;
	uint64_t start[256], end[256], far = VA_BASE + VA_SIZE / 2;
	unsigned char *save[MAX_LIVE];
	int i, n;

	while (f->sa.mapped < (128ull << 20) && f->n < 200)
		alloc_one(f, some_size(f));
	for (i = 0; i < f->n / 4; i++)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	/* suspend: the contents aside, the runs unmapped */
	for (i = 0; i < f->n; i++) {
		save[i] = malloc(f->a[i].bytes);
		assert_non_null(save[i]);
		memcpy(save[i], (void *)(uintptr_t)f->a[i].va, f->a[i].bytes);
	}
	n = suballoc_runs(&f->sa, GRANULE, start, end, 256);
	suballoc_runs_remap(ops, f->b, start, end, n, false);
	/* resume: each run in one call, the contents back */
	suballoc_runs_remap(ops, f->b, start, end, n, true);
	for (i = 0; i < f->n; i++) {
		memcpy((void *)(uintptr_t)f->a[i].va, save[i], f->a[i].bytes);
		free(save[i]);
	}
	check_all(f);
	/* freed one by one, the runs' memory is kept ... */
	for (i = 0; i < f->n / 2; i++)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	/* ... and counted: a quota's worth elsewhere does not fit now */
	assert_int_equal(ops->mem_map(f->b, far, QUOTA),
			 CUDA_ERROR_OUT_OF_MEMORY);
	/* kept memory moves with its runs, and is taken back by new
	 * allocations there */
	migrate(f, 1, 20);
	for (i = 0; i < 20; i++)
		alloc_one(f, some_size(f));
	migrate(f, 0, 20);
	while (f->n)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	assert_all_memory_back(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			move_many_allocations_then_free_each, setup, teardown),
		cmocka_unit_test_setup_teardown(
			move_after_resume_keeps_runs_until_their_last_allocation,
			setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
