/* SPDX-License-Identifier: MIT */
/*
 * The cuda backend's memory and migration code against a fake driver
 * (tests/unit/fake_libcuda.c: a strict model of cuda.h's virtual memory
 * rules, no GPU), driven by the worker's sub-allocator as in the worker:
 *   - each allocation is one physical allocation (cuMemCreate), and a
 *     free unmaps exactly what its cuMemMap mapped;
 *   - a migration makes one target allocation per extent, copies only
 *     what the target and source may touch, remaps extent by extent,
 *     and leaves the source memory to resize_reclaim;
 *   - a resume's run-sized mappings keep their memory until the run's
 *     last allocation is freed, move with it, and free cleanly after;
 *   - the copy through the host (no peer access) works too;
 *   - a commit whose remap fails puts everything back, and the next
 *     migration succeeds;
 * and nothing breaks a rule, nothing is left behind at close.
 */
#include <dlfcn.h>
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
#include "backend_cuda_int.h" /* struct backend_stream */
#include "fake_libcuda.h"
#include "mem_suballoc.h"
#include "suballoc_runs.h"

#ifndef FAKE_LIBCUDA
#define FAKE_LIBCUDA "build/tests/fake/libfakecuda.so"
#endif

#define VA_BASE	 0x120000000000ull /* a window (vgpu/va.h), clear of PIEs */
#define VA_SIZE	 (64ull << 30)
#define GRANULE	 (2ull << 20)
#define QUOTA	 (24ull << 30)
#define MAX_LIVE 512

static const struct backend_ops *ops = &backend_cuda_ops;
static void (*stats)(struct fake_cuda_stats *);
static void (*fail_map)(long);
static void (*busy_queries)(long);
static unsigned int (*access_of)(CUdeviceptr);

struct fixture {
	struct backend *b;
	struct suballoc sa;
	uint64_t va[MAX_LIVE];
	int n;
	uint32_t rng;
	int maps; /* map callbacks */
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

	return ops->mem_unmap(f->b, va, len);
}

static struct fake_cuda_stats now(void)
{
	struct fake_cuda_stats s;

	stats(&s);
	return s;
}

static void no_breach(void)
{
	struct fake_cuda_stats s = now();

	if (s.violations)
		fail_msg("%llu breaches of the driver's rules; last: %s",
			 (unsigned long long)s.violations, s.last);
}

static uint64_t some_size(struct fixture *f)
{
	switch (rnd(f) % 6) {
	case 0:
	case 1:
		return 1 + rnd(f) % 4096;
	case 2:
		return GRANULE * (1 + rnd(f) % 3);
	case 3:
		return (1ull << 30) + 4096; /* two extents: 1 GiB + 2 MiB */
	default:
		return GRANULE * (1 + rnd(f) % 40) + 1 + rnd(f) % GRANULE;
	}
}

static int alloc_one(struct fixture *f, uint64_t bytes)
{
	if (f->n == MAX_LIVE)
		return -ENOMEM;
	if (suballoc_alloc(&f->sa, bytes, 1, &f->va[f->n]))
		return -ENOMEM;
	f->n++;
	return 0;
}

static void free_one(struct fixture *f, int i)
{
	assert_int_equal(suballoc_free(&f->sa, f->va[i], 1), 0);
	f->va[i] = f->va[--f->n];
}

/* Where the window's memory is, by the fake's account. */
static void assert_memory_on(int gpu, uint64_t bytes)
{
	struct fake_cuda_stats s = now();

	assert_int_equal(s.bytes[gpu], bytes);
	assert_int_equal(s.bytes[1 - gpu], 0);
}

static void migrate(struct fixture *f, uint32_t gpu, int churn)
{
	struct fake_cuda_stats s0 = now(), s1;
	struct backend_move_info mi;
	struct backend_move *m = NULL;
	uint32_t group = 2;
	char err[256] = "";
	int i;

	assert_int_equal(ops->migrate_prepare(f->b, gpu, &group, 1, &m, err,
					      sizeof(err)),
			 0);
	for (i = 0; i < churn; i++) {
		if (f->n && rnd(f) % 2)
			free_one(f, (int)(rnd(f) % (uint32_t)f->n));
		else
			alloc_one(f, some_size(f));
	}
	if (ops->migrate_commit(f->b, m, &mi, err, sizeof(err)))
		fail_msg("commit: %s", err);
	assert_int_equal(mi.bytes, f->sa.mapped);
	no_breach();
	/* the source memory and the staging go once the clients run */
	while (ops->resize_reclaim(f->b) == CUDA_ERROR_NOT_READY)
		;
	no_breach();
	s1 = now();
	if (!churn) {
		/* per extent (= per live handle now): one cuMemCreate, a
		 * staging and a window cuMemMap, a window and a staging
		 * cuMemUnmap; no call per granule */
		assert_int_equal(s1.creates - s0.creates, s1.handles);
		assert_int_equal(s1.maps - s0.maps, 2 * s1.handles);
		assert_int_equal(s1.unmaps - s0.unmaps, 2 * s1.handles);
	}
}

static int setup(void **state)
{
	struct vgpu_worker_config cfg;
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256] = "";
	void *dl;

	setenv("VGPU_REAL_LIBCUDA", FAKE_LIBCUDA, 1);
	dl = dlopen(FAKE_LIBCUDA, RTLD_NOW | RTLD_LOCAL);
	if (!f || !dl) {
		fprintf(stderr, "%s: %s\n", FAKE_LIBCUDA, dlerror());
		return -1;
	}
	stats = (void (*)(struct fake_cuda_stats *))dlsym(dl,
							  "fake_cuda_stats");
	fail_map = (void (*)(long))dlsym(dl, "fake_cuda_fail_map");
	busy_queries = (void (*)(long))dlsym(dl, "fake_cuda_busy_queries");
	access_of =
		(unsigned int (*)(CUdeviceptr))dlsym(dl, "fake_cuda_access");
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "cuda-move-test");
	cfg.backend = VGPU_BACKEND_CUDA;
	cfg.gpu = 0;
	cfg.ngroups = 1;
	cfg.groups[0] = 1;
	cfg.va_base = VA_BASE;
	cfg.va_size = VA_SIZE;
	cfg.memory_quota = QUOTA;
	if (ops->open(&f->b, &cfg, err, sizeof(err))) {
		fprintf(stderr, "open: %s\n", err);
		return -1;
	}
	if (ops->thread_attach(f->b) ||
	    suballoc_init(&f->sa, VA_BASE, VA_SIZE, GRANULE, QUOTA, 0, cb_map,
			  cb_unmap, f))
		return -1;
	f->rng = 4242;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	struct fake_cuda_stats s;

	suballoc_free_owner(&f->sa, 1);
	suballoc_destroy(&f->sa);
	ops->close(f->b);
	s = now();
	free(f);
	fail_map(-1);
	busy_queries(0);
	unsetenv("FAKE_CUDA_PEER");
	unsetenv("VGPU_CUDA_SLICE_CACHE");
	/* nothing left: memory, mappings, reservations, contexts, streams */
	if (s.violations || s.handles || s.mappings || s.reservations ||
	    s.greens_live || s.streams_live)
		fail_msg("after close: %llu breaches (%s), %llu handles, %llu "
			 "mappings, %llu reservations, %llu green contexts, "
			 "%llu streams left",
			 (unsigned long long)s.violations, s.last,
			 (unsigned long long)s.handles,
			 (unsigned long long)s.mappings,
			 (unsigned long long)s.reservations,
			 (unsigned long long)s.greens_live,
			 (unsigned long long)s.streams_live);
	return 0;
}

static void cuda_move_maps_each_allocation_once_and_frees_it(void **state)
{
	struct fixture *f = *state;
	struct fake_cuda_stats s0, s1;
	int i;

	s0 = now();
	while (f->sa.mapped < QUOTA / 2 && f->n < 300)
		alloc_one(f, some_size(f));
	s1 = now();
	/* one cuMemCreate per map call (two for a map over 1 GiB) */
	assert_true(s1.creates - s0.creates >= (uint64_t)f->maps);
	assert_true(s1.creates - s0.creates < (uint64_t)f->maps * 2);
	assert_memory_on(0, f->sa.mapped);
	for (i = 0; i < f->n / 3; i++)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	assert_memory_on(0, f->sa.mapped);
	no_breach();

	migrate(f, 1, 0);
	assert_memory_on(1, f->sa.mapped);
	assert_true(f->n > 0);
	assert_int_equal(access_of(f->va[0]) & 3, 2); /* GPU 1's only */
	migrate(f, 0, 30);
	assert_memory_on(0, f->sa.mapped);
	migrate(f, 1, 30);
	assert_memory_on(1, f->sa.mapped);
	while (f->n)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	no_breach();
	assert_int_equal(now().handles, 0);
	assert_int_equal(now().mappings, 0);
}

static void cuda_move_after_resume_frees_runs_cleanly(void **state)
{
	struct fixture *f = *state;
	uint64_t start[256], end[256];
	int i, n;

	while (f->sa.mapped < QUOTA / 3 && f->n < 200)
		alloc_one(f, some_size(f));
	n = suballoc_runs(&f->sa, GRANULE, start, end, 256);
	suballoc_runs_remap(ops, f->b, start, end, n, false); /* suspend */
	assert_memory_on(0, 0);
	suballoc_runs_remap(ops, f->b, start, end, n, true); /* resume */
	for (i = 0; i < f->n / 2; i++)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	no_breach();
	migrate(f, 1, 20);
	for (i = 0; i < 20; i++)
		alloc_one(f, some_size(f));
	migrate(f, 0, 0);
	while (f->n)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	no_breach();
	assert_memory_on(0, 0);
}

static void cuda_move_through_the_host(void **state)
{
	struct fixture *f = *state;

	setenv("FAKE_CUDA_PEER", "0", 1);
	while (f->sa.mapped < (300ull << 20) && f->n < 100)
		alloc_one(f, some_size(f));
	migrate(f, 1, 10);
	assert_memory_on(1, f->sa.mapped);
	migrate(f, 0, 10);
	while (f->n)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	no_breach();
}

static void cuda_move_failed_remap_puts_everything_back(void **state)
{
	struct fixture *f = *state;
	struct backend_move_info mi;
	struct backend_move *m = NULL;
	uint32_t group = 2;
	char err[256] = "";
	uint64_t mapped;
	int i;

	for (i = 0; i < 40; i++)
		alloc_one(f, some_size(f));
	mapped = f->sa.mapped;
	assert_int_equal(
		ops->migrate_prepare(f->b, 1, &group, 1, &m, err, sizeof(err)),
		0);
	fail_map(3); /* the fourth cuMemMap: inside the remap */
	assert_int_not_equal(
		ops->migrate_commit(f->b, m, &mi, err, sizeof(err)), 0);
	no_breach();
	assert_memory_on(0, mapped);
	assert_int_equal(access_of(VA_BASE) & 3, 1);
	migrate(f, 1, 0);
	assert_memory_on(1, mapped);
	while (f->n)
		free_one(f, (int)(rnd(f) % (uint32_t)f->n));
	no_breach();
}

/* Resize to groups, then reclaim the old context; returns the green
 * contexts created meanwhile. */
static uint64_t resize_to(struct fixture *f, uint32_t g0, uint32_t g1)
{
	struct backend_resize_info ri;
	uint32_t groups[2] = {g0, g1};
	uint64_t before = now().greens;
	char err[256] = "";

	if (ops->resize(f->b, groups, 2, &ri, err, sizeof(err)))
		fail_msg("resize to groups %u,%u: %s", g0, g1, err);
	assert_int_equal(ri.sms, 2 * 8);
	while (ops->resize_reclaim(f->b) == CUDA_ERROR_NOT_READY)
		;
	return now().greens - before;
}

/*
 * A resize back to a group set used before takes the context kept from
 * then (no cuGreenCtxCreate); a full cache lets its oldest go; with the
 * cache off every resize builds; close destroys what is kept (teardown
 * checks that no green context is left).
 */
static void cuda_resize_keeps_idle_contexts(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(resize_to(f, 2, 3), 1);
	assert_int_equal(resize_to(f, 4, 5), 1);
	assert_int_equal(resize_to(f, 2, 3), 0); /* kept since the first */
	assert_int_equal(resize_to(f, 4, 5), 0);
	assert_int_equal(resize_to(f, 3, 2), 0); /* the same set */
	/* default 4 kept: six sets push {4,5} out */
	assert_int_equal(resize_to(f, 6, 7), 1);
	assert_int_equal(resize_to(f, 8, 9), 1);
	assert_int_equal(resize_to(f, 10, 11), 1);
	assert_int_equal(resize_to(f, 12, 13), 1);
	assert_int_equal(resize_to(f, 4, 5), 1);
	assert_int_equal(resize_to(f, 12, 13), 0);
	/* live: the current one and at most 4 kept */
	assert_true(now().greens_live <= 5);
	no_breach();
}

/* A vGPU moved back to a GPU it left takes the context it left there
 * (the first context a process makes on a GPU is the slow one), and the
 * streams it had there. */
static void cuda_move_back_takes_the_context_left_there(void **state)
{
	struct fixture *f = *state;
	uint64_t g0 = now().greens;
	CUstream on1;

	alloc_one(f, 4 * GRANULE);
	migrate(f, 1, 0); /* GPU 1, group 2: built */
	on1 = f->b->defstream.stream;
	migrate(f, 0, 0); /* GPU 0, group 2: built */
	assert_int_equal(now().greens - g0, 2);
	migrate(f, 1, 0); /* GPU 1, group 2: kept from before */
	/* with its streams: the default stream has the one it had there */
	assert_ptr_equal(f->b->defstream.stream, on1);
	migrate(f, 0, 0);
	assert_int_equal(now().greens - g0, 2);
	while (f->n)
		free_one(f, 0);
	no_breach();
}

/* A build that fails while contexts are kept is tried again without
 * them (they may be what the device lacks room for). */
static void cuda_resize_drops_kept_contexts_when_short(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(resize_to(f, 2, 3), 1);
	assert_int_equal(resize_to(f, 4, 5),
			 1); /* live: {4,5}, kept: {1}, {2,3} */
	setenv("FAKE_CUDA_MAX_GREENS", "3", 1);
	assert_int_equal(resize_to(f, 6, 7), 1); /* failed once, then built */
	unsetenv("FAKE_CUDA_MAX_GREENS");
	assert_int_equal(resize_to(f, 2, 3), 1); /* it was dropped */
	no_breach();
}

/*
 * A switch back to a kept context hands each stream the one it had there
 * (a vGPU that lends and takes back its groups keeps its hardware
 * queues) and makes none; nothing else holds them meanwhile.
 */
static void cuda_resize_back_takes_the_streams_kept(void **state)
{
	struct fixture *f = *state;
	struct backend_stream *s;
	CUstream on23;
	uint64_t made;

	assert_int_equal(ops->stream_create(f->b, &s), 0);
	assert_int_equal(resize_to(f, 2, 3), 1);
	on23 = s->stream;
	assert_int_equal(resize_to(f, 4, 5), 1);
	assert_ptr_not_equal(s->stream, on23);
	made = now().streams;
	assert_int_equal(resize_to(f, 2, 3), 0);
	assert_ptr_equal(s->stream, on23);
	assert_int_equal(resize_to(f, 4, 5), 0);
	assert_int_equal(resize_to(f, 2, 3), 0);
	assert_ptr_equal(s->stream, on23);
	assert_int_equal(now().streams, made); /* none made */
	/* a stream made since: the kept ones do not cover it */
	ops->stream_destroy(f->b, s);
	assert_int_equal(ops->stream_create(f->b, &s), 0);
	assert_int_equal(ops->stream_create(f->b, &s), 0);
	assert_int_equal(resize_to(f, 4, 5), 0);
	assert_int_equal(now().streams, made + 3); /* 2 made, 1 by the switch */
	no_breach();
}

/*
 * A switch while the old stream still has work: the new stream (a kept
 * one) waits for its fence, the old slice is kept (with its streams)
 * only once they drained, and a switch back takes them; nothing made,
 * nothing breaks a rule.
 */
static void cuda_resize_while_busy_waits_on_kept_streams(void **state)
{
	struct fixture *f = *state;
	struct backend_resize_info ri;
	uint32_t g23[2] = {2, 3};
	char err[256] = "";
	uint64_t made;

	assert_int_equal(resize_to(f, 2, 3), 1);
	assert_int_equal(resize_to(f, 4, 5), 1); /* {2,3} kept */
	made = now().streams;
	busy_queries(1); /* the switch's look at the default stream */
	if (ops->resize(f->b, g23, 2, &ri, err, sizeof(err)))
		fail_msg("resize back to 2,3: %s", err);
	assert_int_equal(ri.waits, 1);
	busy_queries(3); /* {4,5}'s old stream drains a little later */
	assert_int_equal(ops->resize_reclaim(f->b), CUDA_ERROR_NOT_READY);
	while (ops->resize_reclaim(f->b) == CUDA_ERROR_NOT_READY)
		;
	assert_int_equal(now().streams, made);
	assert_int_equal(resize_to(f, 4, 5), 0); /* kept, with its stream */
	assert_int_equal(now().streams, made);
	no_breach();
}

/* With the cache off every resize builds its context and its streams
 * (one here: the default stream). */
static void cuda_resize_without_cache_builds_each_time(void **state)
{
	struct fixture *f = *state;
	uint64_t made = now().streams;

	assert_int_equal(resize_to(f, 2, 3), 1);
	assert_int_equal(resize_to(f, 4, 5), 1);
	assert_int_equal(resize_to(f, 2, 3), 1);
	assert_int_equal(now().greens_live, 1);
	/* each built its marker and the default stream's */
	assert_int_equal(now().streams - made, 3 * 2);
	no_breach();
}

/*
 * The leftover slice (the fake's 132 SMs: 16 groups of 8, group 16 the 4
 * left) builds with groups into one green context of their SMs together
 * (as the scheduler lends it), and is refused listed twice.
 */
static void cuda_resize_takes_the_leftover_with_groups(void **state)
{
	struct fixture *f = *state;
	struct backend_resize_info ri;
	uint32_t with[3] = {2, 3, 16}, twice[3] = {16, 2, 16};
	char err[256] = "";

	assert_int_equal(ops->resize(f->b, with, 3, &ri, err, sizeof(err)), 0);
	assert_int_equal(ri.sms, 2 * 8 + 4);
	while (ops->resize_reclaim(f->b) == CUDA_ERROR_NOT_READY)
		;
	assert_int_not_equal(ops->resize(f->b, twice, 3, &ri, err, sizeof(err)),
			     0);
	assert_non_null(strstr(err, "listed twice"));
	assert_int_equal(resize_to(f, 2, 3), 1); /* and back without it */
	no_breach();
}

static int setup_no_cache(void **state)
{
	setenv("VGPU_CUDA_SLICE_CACHE", "0", 1);
	return setup(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			cuda_move_maps_each_allocation_once_and_frees_it, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			cuda_move_after_resume_frees_runs_cleanly, setup,
			teardown),
		cmocka_unit_test_setup_teardown(cuda_move_through_the_host,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			cuda_move_failed_remap_puts_everything_back, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			cuda_resize_takes_the_leftover_with_groups, setup,
			teardown),
		cmocka_unit_test_setup_teardown(cuda_resize_keeps_idle_contexts,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			cuda_move_back_takes_the_context_left_there, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			cuda_resize_drops_kept_contexts_when_short, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			cuda_resize_back_takes_the_streams_kept, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			cuda_resize_while_busy_waits_on_kept_streams, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			cuda_resize_without_cache_builds_each_time,
			setup_no_cache, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
