/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of resize in the sim backend (backend.h: resize,
 * resize_reclaim, busy_ns), through the backend table as the worker uses
 * it: a long chain of dependent launches keeps its order while another
 * thread moves the slice around; a bad resize leaves the slice as it was;
 * the busy count follows the work.
 *
 * The simulated GPU has 32 SMs: groups 0-3 of 8 (SMs 8g .. 8g+7).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <cuda.h>

#include "backend.h"

#ifndef VGPU_KERNEL_DIR
#define VGPU_KERNEL_DIR "build/kernels"
#endif

#define VA_BASE	   0x520000000000ull
#define VA_SIZE	   (1ull << 30)
#define HEAP_BYTES (64ull << 20)
#define LAUNCHES   4000
#define N	   512

static const struct backend_ops *ops = &backend_sim_ops;

struct fixture {
	struct backend *b;
	struct backend_library *lib;
	struct backend_kernel *k;
	volatile int stop;
	int resizes, failures;
};

static int setup(void **state)
{
	struct vgpu_worker_config cfg;
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256] = "", path[512];
	FILE *fp;
	void *img;
	long n;

	setenv("VGPU_SIM_GPUS", "1", 1);
	setenv("VGPU_SIM_SMS", "32", 1);
	setenv("VGPU_SIM_MEMORY", "256M", 1);
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "resize-test");
	cfg.backend = VGPU_BACKEND_SIM;
	cfg.ngroups = 1;
	cfg.groups[0] = 0;
	cfg.va_base = VA_BASE;
	cfg.va_size = VA_SIZE;
	cfg.memory_quota = 128ull << 20;
	if (!f || ops->open(&f->b, &cfg, err, sizeof(err))) {
		fprintf(stderr, "open: %s\n", err);
		return -1;
	}
	if (ops->thread_attach(f->b) || ops->mem_map(f->b, VA_BASE, HEAP_BYTES))
		return -1;
	snprintf(path, sizeof(path), "%s/resize_seq.cubin",
		 getenv("VGPU_KERNEL_DIR") ? getenv("VGPU_KERNEL_DIR")
					   : VGPU_KERNEL_DIR);
	fp = fopen(path, "rb");
	if (!fp) {
		fprintf(stderr, "cannot open %s\n", path);
		return -1;
	}
	fseek(fp, 0, SEEK_END);
	n = ftell(fp);
	rewind(fp);
	img = malloc((size_t)n);
	if (!img || fread(img, 1, (size_t)n, fp) != (size_t)n)
		return -1;
	fclose(fp);
	if (ops->library_load(f->b, img, (size_t)n, &f->lib) ||
	    ops->library_get_kernel(f->b, f->lib, "resizeSeqStep", &f->k, NULL))
		return -1;
	free(img);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	ops->close(f->b);
	free(f);
	return 0;
}

/* Moves the slice around until told to stop: 8, 16, 8 (elsewhere), 32. */
static void *resizer(void *arg)
{
	static const uint32_t sets[][4] = {{1}, {2, 3}, {3}, {0, 1, 2, 3}};
	static const uint32_t sizes[] = {1, 2, 1, 4};
	struct fixture *f = arg;
	struct backend_resize_info ri;
	struct timespec nap = {0, 2000000};
	char err[256];
	int i = 0;

	ops->thread_attach(f->b);
	while (!f->stop) {
		if (ops->resize(f->b, sets[i % 4], sizes[i % 4], &ri, err,
				sizeof(err)))
			f->failures++;
		else
			f->resizes++;
		ops->resize_reclaim(f->b);
		i++;
		nanosleep(&nap, NULL);
	}
	return NULL;
}

static void resize_keeps_kernel_order(void **state)
{
	struct fixture *f = *state;
	unsigned long long *v = (unsigned long long *)(uintptr_t)VA_BASE;
	unsigned long long *log = v + N;
	unsigned int *smids = (unsigned int *)(log + LAUNCHES + 1);
	static unsigned long long ref[N];
	struct backend_stream *s;
	uint64_t dv = VA_BASE, dlog = VA_BASE + N * 8,
		 dsm = dlog + (LAUNCHES + 1) * 8;
	unsigned int seen = 0;
	pthread_t t;
	int n = N, i;

	for (i = 0; i < N; i++)
		v[i] = ref[i] = 5 + i;
	memset(log, 0, (LAUNCHES + 1) * 8);
	assert_int_equal(ops->stream_create(f->b, &s), 0);
	assert_int_equal(pthread_create(&t, NULL, resizer, f), 0);
	for (unsigned long long k = 0; k < LAUNCHES; k++) {
		const uint32_t grid[3] = {N / 128, 1, 1},
			       block[3] = {128, 1, 1};
		void *params[] = {&dv, &n, &k, &dlog, &dsm};

		assert_int_equal(ops->launch(f->b, f->k, grid, block, 0, s,
					     params, NULL),
				 0);
		if (k % 97 == 0)
			assert_int_equal(ops->stream_sync(f->b, s), 0);
	}
	assert_int_equal(ops->stream_sync(f->b, s), 0);
	f->stop = 1;
	pthread_join(t, NULL);
	for (unsigned long long k = 0; k < LAUNCHES; k++)
		for (i = 0; i < N; i++)
			ref[i] = ref[i] * 31 + k + i;
	assert_int_equal(log[0], LAUNCHES);
	for (i = 0; i < LAUNCHES; i++)
		assert_int_equal(log[1 + i], i);
	for (i = 0; i < N; i++)
		assert_int_equal(v[i], ref[i]);
	for (i = 0; i < LAUNCHES; i++) {
		assert_true(smids[i] < 32);
		seen |= 1u << (smids[i] / 8);
	}
	assert_true(f->resizes >= 4);
	assert_int_equal(f->failures, 0);
	/* block 0 ran on more than one group: the moves took effect */
	assert_true(__builtin_popcount(seen) >= 2);
	ops->stream_destroy(f->b, s);
}

static void bad_resize_leaves_the_slice(void **state)
{
	struct fixture *f = *state;
	static const uint32_t bad1[] = {9}, bad2[] = {1, 1}, bad3[] = {4, 0};
	struct backend_resize_info ri;
	struct vgpu_device_info info;
	char err[256] = "";
	int i;

	assert_int_not_equal(ops->resize(f->b, bad1, 1, &ri, err, sizeof(err)),
			     0);
	assert_non_null(strstr(err, "does not exist"));
	assert_int_not_equal(ops->resize(f->b, bad2, 2, &ri, err, sizeof(err)),
			     0);
	assert_int_not_equal(ops->resize(f->b, bad3, 2, &ri, err, sizeof(err)),
			     0);
	ops->device_info(f->b, &info);
	assert_int_equal(info.sm_count, 8);
	assert_int_equal(info.attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT],
			 8);
	/* a good one: the description follows; the old pool goes away */
	{
		static const uint32_t good[] = {2, 3};

		assert_int_equal(
			ops->resize(f->b, good, 2, &ri, err, sizeof(err)), 0);
		assert_int_equal(ri.sms, 16);
	}
	ops->device_info(f->b, &info);
	assert_int_equal(info.sm_count, 16);
	assert_non_null(strstr(info.name, "16-SM"));
	for (i = 0; i < 1000 && ops->resize_reclaim(f->b); i++) {
		struct timespec nap = {0, 1000000};

		nanosleep(&nap, NULL);
	}
	assert_int_equal(ops->resize_reclaim(f->b), CUDA_SUCCESS);
}

static void busy_counts_time_with_kernels(void **state)
{
	struct fixture *f = *state;
	uint64_t dv = VA_BASE, dlog = VA_BASE + N * 8,
		 dsm = dlog + (LAUNCHES + 1) * 8, b0, b1, b2;
	struct timespec nap = {0, 50000000};
	struct backend_stream *s;
	int n = N;

	memset((void *)(uintptr_t)dlog, 0, 8);
	assert_int_equal(ops->stream_create(f->b, &s), 0);
	b0 = ops->busy_ns(f->b);
	nanosleep(&nap, NULL);
	b1 = ops->busy_ns(f->b);
	assert_true(b1 - b0 < 1000000); /* idle: under a millisecond */
	for (unsigned long long k = 0; k < 200; k++) {
		const uint32_t grid[3] = {N / 128, 1, 1},
			       block[3] = {128, 1, 1};
		void *params[] = {&dv, &n, &k, &dlog, &dsm};

		assert_int_equal(ops->launch(f->b, f->k, grid, block, 0, s,
					     params, NULL),
				 0);
	}
	assert_int_equal(ops->stream_sync(f->b, s), 0);
	b2 = ops->busy_ns(f->b);
	assert_true(b2 > b1);
	ops->stream_destroy(f->b, s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(resize_keeps_kernel_order),
		T(bad_resize_leaves_the_slice),
		T(busy_counts_time_with_kernels),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
