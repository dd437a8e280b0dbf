/* SPDX-License-Identifier: MIT */
/*
 * The sim backend, driven directly through backend_sim_ops: settings,
 * the exact-address VA window, memory, copies, real cubins run by their C
 * twins, stream order, events, SM ids, and the fault path.
 *
 * Kernels come from $VGPU_KERNEL_DIR (default: the build's kernels/).
 */
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <cuda.h>

#include "backend.h"

#ifndef VGPU_KERNEL_DIR
#define VGPU_KERNEL_DIR "build/kernels"
#endif

#define TEST_VA_BASE 0x510000000000ull
#define TEST_VA_SIZE (1ull << 30)
#define GRANULE	     (2ull << 20)
#define HEAP_BYTES   (64ull << 20) /* mapped at the start of the window */

static const struct backend_ops *ops = &backend_sim_ops;

struct fixture {
	struct backend *b;
	uint64_t next; /* bump allocator inside the mapped heap */
};

static void sim_env(void)
{
	setenv("VGPU_SIM_GPUS", "1", 1);
	setenv("VGPU_SIM_SMS", "32", 1); /* 4 groups of 8 */
	setenv("VGPU_SIM_MEMORY", "256M", 1);
}

/* A 16-SM slice of groups 1 and 3: SMs 8..15 and 24..31. */
static void test_config(struct vgpu_worker_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->name, sizeof(cfg->name), "test-vgpu");
	cfg->backend = VGPU_BACKEND_SIM;
	cfg->gpu = 0;
	cfg->ngroups = 2;
	cfg->groups[0] = 1;
	cfg->groups[1] = 3;
	cfg->va_base = TEST_VA_BASE;
	cfg->va_size = TEST_VA_SIZE;
	cfg->memory_quota = 128ull << 20;
}

static int smid_in_slice(uint32_t smid)
{
	return (smid >= 8 && smid < 16) || (smid >= 24 && smid < 32);
}

static int setup(void **state)
{
	struct vgpu_worker_config cfg;
	struct fixture *f = calloc(1, sizeof(*f));
	char err[256] = "";
	int rc;

	sim_env();
	test_config(&cfg);
	rc = ops->open(&f->b, &cfg, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "open: %d %s\n", rc, err);
		free(f);
		return -1;
	}
	if (ops->thread_attach(f->b) ||
	    ops->mem_map(f->b, TEST_VA_BASE, HEAP_BYTES)) {
		ops->close(f->b);
		free(f);
		return -1;
	}
	f->next = TEST_VA_BASE;
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

static uint64_t dalloc(struct fixture *f, size_t n)
{
	uint64_t p = f->next;

	f->next += (n + 255) & ~(uint64_t)255;
	assert_true(f->next <= TEST_VA_BASE + HEAP_BYTES);
	return p;
}

static void *load_file(const char *name, size_t *len)
{
	const char *dir = getenv("VGPU_KERNEL_DIR");
	char path[512];
	FILE *fp;
	void *buf;
	long n;

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : VGPU_KERNEL_DIR,
		 name);
	fp = fopen(path, "rb");
	if (!fp)
		fail_msg("cannot open %s (set VGPU_KERNEL_DIR)", path);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	n = ftell(fp);
	assert_true(n > 0);
	rewind(fp);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	*len = (size_t)n;
	return buf;
}

/* Load kernels/<file> and get kernel name from it. */
static struct backend_library *load_kernel(struct fixture *f, const char *file,
					   const char *name,
					   struct backend_kernel **k,
					   struct vgpu_kernel_info *info)
{
	struct backend_library *l;
	size_t len;
	void *img = load_file(file, &len);

	assert_int_equal(ops->library_load(f->b, img, len, &l), 0);
	free(img);
	assert_int_equal(ops->library_get_kernel(f->b, l, name, k, info), 0);
	return l;
}

static void launch1d(struct fixture *f, struct backend_kernel *k,
		     struct backend_stream *s, uint32_t blocks,
		     uint32_t threads, void **params)
{
	const uint32_t grid[3] = {blocks, 1, 1};
	const uint32_t block[3] = {threads, 1, 1};

	assert_int_equal(ops->launch(f->b, k, grid, block, 0, s, params, NULL),
			 0);
}

/* ---- probe ------------------------------------------------------------ */

static void sim_probe_describes_simulated_gpus(void **state)
{
	struct vgpu_gpu_info gpus[4];
	char err[256];
	uint32_t i;

	unsetenv("VGPU_SIM_GPUS");
	unsetenv("VGPU_SIM_SMS");
	unsetenv("VGPU_SIM_MEMORY");
	assert_int_equal(ops->probe(gpus, 4, err, sizeof(err)), 1);
	assert_string_equal(gpus[0].name, "vgpu simulated GPU");
	assert_int_equal(gpus[0].backend, VGPU_BACKEND_SIM);
	assert_int_equal(gpus[0].sm_count, 132);
	assert_int_equal(gpus[0].ngroups, 16);
	for (i = 0; i < 16; i++)
		assert_int_equal(gpus[0].group_sms[i], 8);
	assert_int_equal(gpus[0].min_partition, 8);
	assert_int_equal(gpus[0].alignment, 8);
	assert_int_equal(gpus[0].cc_major, 9);
	assert_int_equal(gpus[0].cc_minor, 0);
	assert_int_equal(gpus[0].memory_total, 16ull << 30);
	assert_int_equal(gpus[0].granularity, GRANULE);

	setenv("VGPU_SIM_GPUS", "3", 1);
	setenv("VGPU_SIM_SMS", "36", 1);
	setenv("VGPU_SIM_MEMORY", "512M", 1);
	assert_int_equal(ops->probe(gpus, 4, err, sizeof(err)), 3);
	assert_int_equal(gpus[2].index, 2);
	assert_int_equal(gpus[2].sm_count, 36);
	assert_int_equal(gpus[2].ngroups, 4);
	assert_int_equal(gpus[2].memory_total, 512ull << 20);
	assert_int_equal(ops->probe(gpus, 2, err, sizeof(err)), 2);
	sim_env();
}

static void sim_probe_rejects_bad_settings(void **state)
{
	static const char *bad[][2] = {
		{"VGPU_SIM_SMS", "abc"},
		{"VGPU_SIM_SMS", "4"},
		{"VGPU_SIM_SMS", ""},
		{"VGPU_SIM_SMS", "-8"},
		{"VGPU_SIM_SMS", "16 "},
		{"VGPU_SIM_SMS", "100000"},
		{"VGPU_SIM_GPUS", "0"},
		{"VGPU_SIM_GPUS", "17"},
		{"VGPU_SIM_MEMORY", "12X"},
		{"VGPU_SIM_MEMORY", "1M"},
		{"VGPU_SIM_MEMORY", "99999999999999999999G"},
		{"VGPU_SIM_MEMORY", "99999999999G"},
	};
	struct vgpu_gpu_info gpus[1];
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[256] = "";

		sim_env();
		setenv(bad[i][0], bad[i][1], 1);
		assert_int_equal(ops->probe(gpus, 1, err, sizeof(err)), -1);
		if (!strstr(err, bad[i][0]))
			fail_msg("%s='%s': message '%s' does not name it",
				 bad[i][0], bad[i][1], err);
	}
	sim_env();
}

/* ---- open -------------------------------------------------------------- */

static int window_in_maps(uint64_t base)
{
	char line[512], want[32];
	FILE *fp = fopen("/proc/self/maps", "r");
	int found = 0;

	assert_non_null(fp);
	snprintf(want, sizeof(want), "%llx-", (unsigned long long)base);
	while (fgets(line, sizeof(line), fp))
		if (strncmp(line, want, strlen(want)) == 0)
			found = 1;
	fclose(fp);
	return found;
}

static void sim_open_reserves_the_exact_window(void **state)
{
	struct vgpu_worker_config cfg;
	struct backend *b, *b2 = NULL;
	char err[256] = "";

	sim_env();
	test_config(&cfg);
	assert_int_equal(ops->open(&b, &cfg, err, sizeof(err)), 0);
	assert_true(window_in_maps(TEST_VA_BASE));

	/* the same window again: refused, with the address in the message */
	assert_int_not_equal(ops->open(&b2, &cfg, err, sizeof(err)), 0);
	assert_null(b2);
	if (!strstr(err, "0x510000000000"))
		fail_msg("message '%s' does not name the address", err);

	ops->close(b);
	assert_false(window_in_maps(TEST_VA_BASE));
	assert_int_equal(ops->open(&b, &cfg, err, sizeof(err)), 0);
	ops->close(b);
}

static void expect_open_fails(struct vgpu_worker_config *cfg, const char *what)
{
	struct backend *b = NULL;
	char err[256] = "";

	assert_int_not_equal(ops->open(&b, cfg, err, sizeof(err)), 0);
	if (!strstr(err, what))
		fail_msg("message '%s' does not say '%s'", err, what);
}

static void sim_open_rejects_bad_configs(void **state)
{
	struct vgpu_worker_config cfg;

	sim_env();
	test_config(&cfg);
	cfg.gpu = 1;
	expect_open_fails(&cfg, "GPU 1");
	test_config(&cfg);
	cfg.groups[1] = 4;
	expect_open_fails(&cfg, "SM group 4");
	test_config(&cfg);
	cfg.groups[1] = 1;
	expect_open_fails(&cfg, "listed twice");
	test_config(&cfg);
	cfg.ngroups = 0;
	expect_open_fails(&cfg, "SM groups");
	test_config(&cfg);
	cfg.va_base += 4096;
	expect_open_fails(&cfg, "aligned");
	test_config(&cfg);
	setenv("VGPU_SIM_SMS", "many", 1);
	expect_open_fails(&cfg, "VGPU_SIM_SMS");
	sim_env();
}

static void sim_device_info_names_the_simulator(void **state)
{
	struct fixture *f = *state;
	struct vgpu_device_info info;

	ops->device_info(f->b, &info);
	assert_string_equal(
		info.name, "vGPU test-vgpu: 16-SM slice of vgpu simulated GPU");
	assert_string_equal(info.gpu_name, "vgpu simulated GPU");
	assert_string_equal(info.vgpu_name, "test-vgpu");
	assert_int_equal(info.backend, VGPU_BACKEND_SIM);
	assert_int_equal(info.sm_count, 16);
	assert_int_equal(info.attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT],
			 16);
	assert_int_equal(info.attrs[CU_DEVICE_ATTRIBUTE_WARP_SIZE], 32);
	assert_int_equal(info.attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK],
			 1024);
	assert_int_equal(
		info.attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR], 9);
	assert_int_equal(info.cc_major, 9);
	assert_int_equal(info.memory_quota, 128ull << 20);
	assert_int_equal(info.driver_version, 13000);
	assert_int_equal(ops->granularity(f->b), GRANULE);
}

/* ---- memory and copies ------------------------------------------------- */

static void sim_maps_and_unmaps_granules(void **state)
{
	struct fixture *f = *state;
	uint64_t va = TEST_VA_BASE + HEAP_BYTES;
	uint32_t *p = (uint32_t *)(uintptr_t)va;

	assert_int_equal(ops->mem_map(f->b, va, 2 * GRANULE), 0);
	p[0] = 0xdeadbeef;
	p[GRANULE / 4] = 1; /* second granule */
	assert_int_equal(ops->mem_map(f->b, va + GRANULE, GRANULE),
			 CUDA_ERROR_INVALID_VALUE); /* already mapped */
	assert_int_equal(ops->mem_unmap(f->b, va, GRANULE), 0);
	assert_int_equal(ops->mem_unmap(f->b, va, GRANULE),
			 CUDA_ERROR_INVALID_VALUE); /* not mapped */
	assert_int_equal(p[GRANULE / 4], 1);	    /* neighbour untouched */
	assert_int_equal(ops->mem_map(f->b, va, GRANULE), 0);
	assert_int_equal(p[0], 0); /* fresh memory */
	assert_int_equal(ops->mem_unmap(f->b, va, 2 * GRANULE), 0);

	assert_int_equal(ops->mem_map(f->b, va + 4096, GRANULE),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(ops->mem_map(f->b, TEST_VA_BASE - GRANULE, GRANULE),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(ops->mem_map(f->b,
				      TEST_VA_BASE + TEST_VA_SIZE - GRANULE,
				      2 * GRANULE),
			 CUDA_ERROR_INVALID_VALUE);
	/* VGPU_SIM_MEMORY=256M, 64M already mapped */
	assert_int_equal(ops->mem_map(f->b, va, 256ull << 20),
			 CUDA_ERROR_OUT_OF_MEMORY);
	assert_int_equal(ops->mem_map(f->b, va, 192ull << 20), 0);
	assert_int_equal(ops->mem_unmap(f->b, va, 192ull << 20), 0);
}

static void sim_copies_and_memsets_in_order(void **state)
{
	struct fixture *f = *state;
	struct backend_stream *s;
	const size_t n = 1 << 16;
	uint64_t a = dalloc(f, n), b = dalloc(f, n);
	unsigned char *src = malloc(n), *dst = malloc(n);
	uint16_t h[8];
	uint32_t w[8];
	size_t i;

	assert_int_equal(ops->stream_create(f->b, &s), 0);
	for (i = 0; i < n; i++)
		src[i] = (unsigned char)(i * 7);
	assert_int_equal(ops->memcpy_htod(f->b, s, a, src, n), 0);
	assert_int_equal(ops->memcpy_dtod(f->b, s, b, a, n), 0);
	assert_int_equal(ops->memcpy_dtoh(f->b, s, dst, b, n), 0);
	assert_memory_equal(src, dst, n);

	assert_int_equal(ops->memset(f->b, s, a, 0x1ab, 1, 100), 0);
	assert_int_equal(ops->memcpy_dtoh(f->b, s, dst, a, 101), 0);
	for (i = 0; i < 100; i++)
		assert_int_equal(dst[i], 0xab);
	assert_int_equal(dst[100], src[100]);
	assert_int_equal(ops->memset(f->b, s, a, 0xbeef, 2, 8), 0);
	assert_int_equal(ops->memcpy_dtoh(f->b, s, h, a, sizeof(h)), 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(h[i], 0xbeef);
	assert_int_equal(ops->memset(f->b, NULL, b, 0xcafef00d, 4, 8), 0);
	assert_int_equal(ops->stream_sync(f->b, NULL), 0);
	assert_int_equal(ops->memcpy_dtoh(f->b, s, w, b, sizeof(w)), 0);
	for (i = 0; i < 8; i++)
		assert_int_equal(w[i], 0xcafef00d);
	assert_int_equal(ops->memset(f->b, s, a + 1, 0, 4, 1),
			 CUDA_ERROR_INVALID_VALUE); /* misaligned */
	assert_int_equal(ops->memset(f->b, s, a, 0, 3, 1),
			 CUDA_ERROR_INVALID_VALUE);
	ops->stream_destroy(f->b, s);
	free(src);
	free(dst);
}

/* ---- kernels from cubins ----------------------------------------------- */

static void sim_runs_vecadd_from_a_cubin(void **state)
{
	struct fixture *f = *state;
	const int n = 100003;
	struct vgpu_kernel_info info;
	struct backend_library *l;
	struct backend_kernel *k;
	float *ha = malloc(n * sizeof(float)), *hb = malloc(n * sizeof(float));
	float *hc = malloc(n * sizeof(float));
	uint64_t a = dalloc(f, n * 4), b = dalloc(f, n * 4),
		 c = dalloc(f, n * 4);
	void *params[4] = {&a, &b, &c, (void *)&n};
	int i;

	l = load_kernel(f, "vector_add.cubin", "vecAdd", &k, &info);
	assert_int_equal(info.nparams, 4);
	assert_int_equal(info.params[0].offset, 0);
	assert_int_equal(info.params[2].offset, 16);
	assert_int_equal(info.params[3].offset, 24);
	assert_int_equal(info.params[3].size, 4);
	assert_int_equal(info.param_bytes, 28);

	for (i = 0; i < n; i++) {
		ha[i] = (float)i * 0.5f;
		hb[i] = (float)(n - i);
	}
	assert_int_equal(ops->memcpy_htod(f->b, NULL, a, ha, n * 4), 0);
	assert_int_equal(ops->memcpy_htod(f->b, NULL, b, hb, n * 4), 0);
	launch1d(f, k, NULL, (n + 255) / 256, 256, params);
	assert_int_equal(ops->memcpy_dtoh(f->b, NULL, hc, c, n * 4), 0);
	for (i = 0; i < n; i++)
		assert_true(hc[i] == ha[i] + hb[i]);
	ops->library_unload(f->b, l);
	free(ha);
	free(hb);
	free(hc);
}

static void sim_runs_matmul_from_a_cubin(void **state)
{
	struct fixture *f = *state;
	const int n = 67; /* not a multiple of the 16x16 tile */
	const size_t bytes = (size_t)n * n * sizeof(float);
	struct backend_library *l;
	struct backend_kernel *k;
	float *A = malloc(bytes), *B = malloc(bytes), *C = malloc(bytes);
	uint64_t da = dalloc(f, bytes), db = dalloc(f, bytes),
		 dc = dalloc(f, bytes);
	void *params[4] = {&da, &db, &dc, (void *)&n};
	const uint32_t grid[3] = {(n + 15) / 16, (n + 15) / 16, 1};
	const uint32_t block[3] = {16, 16, 1};
	int i, j, kk;

	l = load_kernel(f, "matmul_tiled.cubin", "matmulTiled", &k, NULL);
	for (i = 0; i < n * n; i++) {
		A[i] = (float)((i * 37) % 101) / 50.0f - 1.0f;
		B[i] = (float)((i * 53) % 89) / 40.0f - 1.0f;
	}
	assert_int_equal(ops->memcpy_htod(f->b, NULL, da, A, bytes), 0);
	assert_int_equal(ops->memcpy_htod(f->b, NULL, db, B, bytes), 0);
	assert_int_equal(
		ops->launch(f->b, k, grid, block, 0, NULL, params, NULL), 0);
	assert_int_equal(ops->memcpy_dtoh(f->b, NULL, C, dc, bytes), 0);
	for (i = 0; i < n; i++) {
		for (j = 0; j < n; j++) {
			float sum = 0.0f;

			for (kk = 0; kk < n; kk++)
				sum = fmaf(A[i * n + kk], B[kk * n + j], sum);
			if (C[i * n + j] != sum)
				fail_msg("C[%d][%d] = %a, expected %a", i, j,
					 C[i * n + j], sum);
		}
	}
	ops->library_unload(f->b, l);
	free(A);
	free(B);
	free(C);
}

static void sim_runs_saxpy_with_a_float_parameter(void **state)
{
	struct fixture *f = *state;
	const int n = 5000;
	const float a = 2.5f;
	struct vgpu_kernel_info info;
	struct backend_library *l;
	struct backend_kernel *k;
	float x[5000], y[5000], r[5000];
	uint64_t dx = dalloc(f, sizeof(x)), dy = dalloc(f, sizeof(y));
	void *params[4] = {(void *)&a, &dx, &dy, (void *)&n};
	int i;

	l = load_kernel(f, "saxpy.cubin", "saxpy", &k, &info);
	assert_int_equal(info.nparams, 4);
	assert_int_equal(info.params[0].offset, 0);
	assert_int_equal(info.params[0].size, 4);
	assert_int_equal(info.params[1].offset, 8);
	assert_int_equal(info.params[2].offset, 16);
	assert_int_equal(info.params[3].offset, 24);
	assert_int_equal(info.param_bytes, 28);
	for (i = 0; i < n; i++) {
		x[i] = (float)i / 3.0f;
		y[i] = 1.0f / (float)(i + 1);
	}
	assert_int_equal(ops->memcpy_htod(f->b, NULL, dx, x, sizeof(x)), 0);
	assert_int_equal(ops->memcpy_htod(f->b, NULL, dy, y, sizeof(y)), 0);
	launch1d(f, k, NULL, (n + 127) / 128, 128, params);
	assert_int_equal(ops->memcpy_dtoh(f->b, NULL, r, dy, sizeof(r)), 0);
	for (i = 0; i < n; i++)
		assert_true(r[i] == fmaf(a, x[i], y[i]));
	ops->library_unload(f->b, l);
}

static void sim_compute_bound_matches_fmaf(void **state)
{
	struct fixture *f = *state;
	const int iters = 500, threads = 2048;
	struct backend_library *l;
	struct backend_kernel *k;
	float *out = malloc(threads * sizeof(float));
	uint64_t d = dalloc(f, threads * sizeof(float));
	void *params[2] = {&d, (void *)&iters};
	int i, it;

	l = load_kernel(f, "compute_bound.cubin", "computeBound", &k, NULL);
	launch1d(f, k, NULL, threads / 256, 256, params);
	assert_int_equal(
		ops->memcpy_dtoh(f->b, NULL, out, d, threads * sizeof(float)),
		0);
	for (i = 0; i < threads; i++) {
		float x = (float)((unsigned)i & 1023u) * 0.001f;

		for (it = 0; it < iters; it++)
			x = fmaf(x, 0.999999f, 0.000001f);
		assert_true(out[i] == x);
	}
	ops->library_unload(f->b, l);
	free(out);
}

static void sim_get_kernel_needs_the_name_in_the_image(void **state)
{
	struct fixture *f = *state;
	static const char ptx[] = "// ptx\n.visible .entry vecAdd(\n"
				  ".visible .entry saxpyX(\n";
	static const char elf[] = "\0.text.chainStep\0recordSmid\0";
	struct vgpu_kernel_info info;
	struct backend_library *l, *l2, *l3;
	struct backend_kernel *k, *k2;

	l = load_kernel(f, "vector_add.cubin", "vecAdd", &k, &info);
	assert_int_equal(ops->library_get_kernel(f->b, l, "vecAdd", &k2, NULL),
			 0);
	assert_ptr_equal(k, k2); /* one handle per kernel */
	assert_int_equal(
		ops->library_get_kernel(f->b, l, "saxpy", &k, &info),
		CUDA_ERROR_NOT_FOUND); /* a twin, but not in this cubin */
	assert_int_equal(
		ops->library_get_kernel(f->b, l, "noSuchKernel", &k, &info),
		CUDA_ERROR_NOT_FOUND);
	assert_int_equal(ops->library_get_kernel(f->b, l, "vec", &k, &info),
			 CUDA_ERROR_NOT_FOUND);

	assert_int_equal(ops->library_load(f->b, ptx, sizeof(ptx), &l2), 0);
	assert_int_equal(ops->library_get_kernel(f->b, l2, "vecAdd", &k, NULL),
			 0);
	assert_int_equal(ops->library_get_kernel(f->b, l2, "saxpy", &k, NULL),
			 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(ops->library_load(f->b, elf, sizeof(elf), &l3), 0);
	assert_int_equal(
		ops->library_get_kernel(f->b, l3, "chainStep", &k, NULL), 0);
	assert_int_equal(
		ops->library_get_kernel(f->b, l3, "recordSmid", &k, NULL), 0);
	assert_int_equal(
		ops->library_get_kernel(f->b, l3, "spinForever", &k, NULL),
		CUDA_ERROR_NOT_FOUND);
	assert_int_equal(ops->library_load(f->b, ptx, 0, &l3),
			 CUDA_ERROR_INVALID_VALUE);
	ops->library_unload(f->b, l);
	ops->library_unload(f->b, l2);
	/* l3 is left loaded: close frees it */
}

/*
 * A twin runs only a kernel with the parameters it was written for: an
 * image's vecAdd without them launches as a kernel with no twin
 * (CUDA_ERROR_NOT_SUPPORTED), never with the twin reading parameters
 * that are not there. An image declaring more module memory than the
 * simulator gives (64 MiB) gets none of it.
 */
static void sim_twin_needs_its_own_parameters(void **state)
{
	struct fixture *f = *state;
	static const char ptx[] = ".version 8.0\n.target sm_90\n"
				  ".visible .entry vecAdd()\n{\n\tret;\n}\n";
	static const char big[] = ".version 8.0\n.target sm_90\n"
				  ".global .b8 huge[70000000];\n"
				  ".visible .entry vecAdd()\n{\n\tret;\n}\n";
	const uint32_t one[3] = {1, 1, 1};
	struct vgpu_kernel_info info;
	struct backend_library *l, *l2;
	struct backend_kernel *k;
	uint64_t dptr, bytes;

	assert_int_equal(ops->library_load(f->b, ptx, sizeof(ptx), &l), 0);
	assert_int_equal(ops->library_get_kernel(f->b, l, "vecAdd", &k, &info),
			 0);
	assert_int_equal(info.nparams, 0);
	assert_int_equal(ops->launch(f->b, k, one, one, 0, NULL, NULL, NULL),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(ops->library_load(f->b, big, sizeof(big), &l2), 0);
	assert_int_equal(
		ops->library_get_global(f->b, l2, "huge", &dptr, &bytes),
		CUDA_ERROR_NOT_FOUND);
	ops->library_unload(f->b, l);
	ops->library_unload(f->b, l2);
}

/* ---- module-scope variables ------------------------------------------- */

/* Run readGlobal from l: the 4 floats it reads from vgpuTestGlobal. */
static void read_global(struct fixture *f, struct backend_library *l,
			float out[4])
{
	struct backend_kernel *k;
	uint64_t d = dalloc(f, 4 * sizeof(float));
	void *params[1] = {&d};

	assert_int_equal(
		ops->library_get_kernel(f->b, l, "readGlobal", &k, NULL), 0);
	launch1d(f, k, NULL, 1, 32, params);
	assert_int_equal(ops->memcpy_dtoh(f->b, NULL, out, d, 16), 0);
}

static void sim_module_variable_is_zeroed_and_read_by_its_twin(void **state)
{
	struct fixture *f = *state;
	static const char ptx[] =
		"// ptx\n.global .align 4 .b8 vgpuTestGlobal[16];\n"
		".visible .entry readGlobal(\n";
	const float in[4] = {1.5f, -2.0f, 3.25f, 4.0f};
	struct backend_library *l, *l2, *l3;
	uint64_t dptr, dptr2, bytes;
	float out[4];
	size_t len;
	void *img;
	int i;

	assert_int_equal(ops->library_load(f->b, ptx, sizeof(ptx), &l), 0);
	assert_int_equal(ops->library_get_global(f->b, l, "vgpuTestGlobal",
						 &dptr, &bytes),
			 0);
	assert_int_equal(bytes, 16);
	assert_int_equal(dptr % 256, 0);
	assert_true(dptr + bytes <= TEST_VA_BASE ||
		    dptr >= TEST_VA_BASE + TEST_VA_SIZE);
	for (i = 0; i < 16; i++)
		assert_int_equal(((const unsigned char *)(uintptr_t)dptr)[i],
				 0);
	assert_int_equal(ops->library_get_global(f->b, l, "vgpuTestGlob",
						 &dptr2, &bytes),
			 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(ops->library_get_global(f->b, l, "noSuchVariable",
						 &dptr2, &bytes),
			 CUDA_ERROR_NOT_FOUND);

	/* the program writes it, the twin reads it */
	assert_int_equal(ops->memcpy_htod(f->b, NULL, dptr, in, sizeof(in)), 0);
	read_global(f, l, out);
	assert_memory_equal(out, in, sizeof(in));

	/* each library has its own, zeroed */
	assert_int_equal(ops->library_load(f->b, ptx, sizeof(ptx), &l2), 0);
	assert_int_equal(ops->library_get_global(f->b, l2, "vgpuTestGlobal",
						 &dptr2, &bytes),
			 0);
	assert_true(dptr2 != dptr);
	read_global(f, l2, out);
	for (i = 0; i < 4; i++)
		assert_true(out[i] == 0.0f);
	ops->library_unload(f->b, l2);

	/* the real cubin: the name ends in NUL in its string table */
	img = load_file("read_global.cubin", &len);
	assert_int_equal(ops->library_load(f->b, img, len, &l3), 0);
	free(img);
	assert_int_equal(ops->library_get_global(f->b, l3, "vgpuTestGlobal",
						 &dptr2, &bytes),
			 0);
	assert_int_equal(bytes, 16);
	assert_int_equal(ops->memcpy_htod(f->b, NULL, dptr2, in, 8), 0);
	read_global(f, l3, out);
	assert_true(out[0] == in[0] && out[1] == in[1] && out[2] == 0.0f);
	ops->library_unload(f->b, l3);
	ops->library_unload(f->b, l);
}

static void sim_module_variable_needs_its_name_in_the_image(void **state)
{
	struct fixture *f = *state;
	static const char *const images[] = {
		"// ptx\n.global .align 4 .b8 vgpuTestGlobals[16];\n",
		"// ptx\n.global .align 4 .b8 xvgpuTestGlobal[16];\n",
		"// ptx\n.global .align 4 .b8 vgpuTestGlobal_2;\n",
		"// ptx\n.visible .entry vecAdd(\n",
	};
	static const char *const ok[] = {
		"\0vgpuTestGlobal\0", /* an ELF string table */
		".global .f32 vgpuTestGlobal;",
		".global .u32 vgpuTestGlobal = 1;",
		".const .align 4 .b8 vgpuTestGlobal\t[16];",
	};
	struct backend_library *l;
	uint64_t dptr, bytes;
	size_t i;

	for (i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		assert_int_equal(ops->library_load(f->b, images[i],
						   strlen(images[i]) + 1, &l),
				 0);
		assert_int_equal(ops->library_get_global(f->b, l,
							 "vgpuTestGlobal",
							 &dptr, &bytes),
				 CUDA_ERROR_NOT_FOUND);
		ops->library_unload(f->b, l);
	}
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		size_t n = i == 0 ? 16 : strlen(ok[i]);

		assert_int_equal(ops->library_load(f->b, ok[i], n, &l), 0);
		assert_int_equal(ops->library_get_global(f->b, l,
							 "vgpuTestGlobal",
							 &dptr, &bytes),
				 0);
		assert_int_equal(bytes, 16);
		ops->library_unload(f->b, l);
	}
}

/* A fatbin of one entry: 16-byte header, 64-byte entry header with flags
 * at 40, then the payload. */
static size_t make_fatbin(unsigned char *buf, uint64_t flags,
			  const void *payload, uint64_t n)
{
	const uint32_t magic = 0xba55ed50u, ehsize = 64;
	const uint16_t version = 1, hsize = 16, kind = 2;
	const uint64_t fsize = ehsize + n;

	memset(buf, 0, 16 + fsize);
	memcpy(buf, &magic, 4);
	memcpy(buf + 4, &version, 2);
	memcpy(buf + 6, &hsize, 2);
	memcpy(buf + 8, &fsize, 8);
	memcpy(buf + 16, &kind, 2);
	memcpy(buf + 16 + 4, &ehsize, 4);
	memcpy(buf + 16 + 8, &n, 8);
	memcpy(buf + 16 + 40, &flags, 8);
	memcpy(buf + 16 + ehsize, payload, n);
	return 16 + fsize;
}

static void sim_compressed_fatbin_finds_twins_by_name(void **state)
{
	struct fixture *f = *state;
	static const unsigned char junk[32] = {0x13, 0x37, 0xfe, 0x01};
	static const char named[] = "\0vecAdd\0";
	const float in[4] = {7, 8, 9, 10};
	unsigned char buf[256];
	struct backend_library *l;
	struct backend_kernel *k;
	uint64_t dptr, bytes;
	float out[4];
	size_t n;

	/* compressed: names by the twin table alone */
	n = make_fatbin(buf, 0x2000, junk, sizeof(junk));
	assert_int_equal(ops->library_load(f->b, buf, n, &l), 0);
	assert_int_equal(ops->library_get_global(f->b, l, "vgpuTestGlobal",
						 &dptr, &bytes),
			 0);
	assert_int_equal(bytes, 16);
	assert_int_equal(ops->library_get_kernel(f->b, l, "saxpy", &k, NULL),
			 0);
	assert_int_equal(
		ops->library_get_kernel(f->b, l, "noSuchKernel", &k, NULL),
		CUDA_ERROR_NOT_FOUND);
	assert_int_equal(ops->library_get_global(f->b, l, "noSuchVariable",
						 &dptr, &bytes),
			 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(ops->memcpy_htod(f->b, NULL, dptr, in, sizeof(in)), 0);
	read_global(f, l, out);
	assert_memory_equal(out, in, sizeof(in));
	ops->library_unload(f->b, l);

	/* uncompressed, but no twin's name in it: the same */
	n = make_fatbin(buf, 0, junk, sizeof(junk));
	assert_int_equal(ops->library_load(f->b, buf, n, &l), 0);
	assert_int_equal(ops->library_get_kernel(f->b, l, "saxpy", &k, NULL),
			 0);
	ops->library_unload(f->b, l);

	/* uncompressed with readable names: only what it holds */
	n = make_fatbin(buf, 0, named, sizeof(named));
	assert_int_equal(ops->library_load(f->b, buf, n, &l), 0);
	assert_int_equal(ops->library_get_kernel(f->b, l, "vecAdd", &k, NULL),
			 0);
	assert_int_equal(ops->library_get_kernel(f->b, l, "saxpy", &k, NULL),
			 CUDA_ERROR_NOT_FOUND);
	assert_int_equal(ops->library_get_global(f->b, l, "vgpuTestGlobal",
						 &dptr, &bytes),
			 CUDA_ERROR_NOT_FOUND);
	ops->library_unload(f->b, l);
}

/* ---- streams and events ------------------------------------------------ */

static void chain_ref(unsigned long long *v, int n, unsigned long long k)
{
	int i;

	for (i = 0; i < n; i++)
		v[i] = v[i] * 31ull + k + (unsigned long long)i;
}

static void sim_streams_and_events_keep_order(void **state)
{
	struct fixture *f = *state;
	enum { N = 1000, STEPS = 60 };
	static unsigned long long want[N], got[N];
	struct backend_library *l;
	struct backend_kernel *k;
	struct backend_stream *s1, *s2;
	struct backend_event *e;
	uint64_t d = dalloc(f, sizeof(want));
	int n = N;
	unsigned long long step;
	void *params[3] = {&d, &n, &step};
	int i;

	l = load_kernel(f, "chain.cubin", "chainStep", &k, NULL);
	assert_int_equal(ops->stream_create(f->b, &s1), 0);
	assert_int_equal(ops->stream_create(f->b, &s2), 0);
	assert_int_equal(ops->event_create(f->b, 0, &e), 0);
	for (i = 0; i < N; i++)
		want[i] = (unsigned long long)i;
	assert_int_equal(ops->memcpy_htod(f->b, s1, d, want, sizeof(want)), 0);

	/* half the chain on s1, the rest on s2 after an event from s1 */
	for (step = 1; step <= STEPS; step++) {
		if (step == STEPS / 2 + 1) {
			assert_int_equal(ops->event_record(f->b, e, s1), 0);
			assert_int_equal(ops->stream_wait_event(f->b, s2, e),
					 0);
		}
		launch1d(f, k, step <= STEPS / 2 ? s1 : s2, (N + 63) / 64, 64,
			 params);
		chain_ref(want, N, step);
	}
	assert_int_equal(ops->stream_sync(f->b, s2), 0);
	assert_int_equal(ops->stream_query(f->b, s2), 0);
	assert_int_equal(ops->event_query(f->b, e), 0);
	assert_int_equal(ops->memcpy_dtoh(f->b, s2, got, d, sizeof(got)), 0);
	assert_memory_equal(want, got, sizeof(want));

	ops->event_destroy(f->b, e);
	ops->stream_destroy(f->b, s1);
	ops->stream_destroy(f->b, s2);
	ops->library_unload(f->b, l);
}

static void sim_queries_are_not_ready_while_a_kernel_spins(void **state)
{
	struct fixture *f = *state;
	struct backend_library *l;
	struct backend_kernel *k;
	struct backend_stream *s1, *s2;
	struct backend_event *e;
	uint64_t flag = dalloc(f, sizeof(int));
	void *params[1] = {&flag};
	const int one = 1;

	l = load_kernel(f, "spin.cubin", "spinForever", &k, NULL);
	assert_int_equal(ops->stream_create(f->b, &s1), 0);
	assert_int_equal(ops->stream_create(f->b, &s2), 0);
	assert_int_equal(ops->event_create(f->b, 0, &e), 0);
	assert_int_equal(ops->event_query(f->b, e), 0); /* never recorded */
	assert_int_equal(ops->memset(f->b, s1, flag, 0, 4, 1), 0);
	assert_int_equal(ops->stream_sync(f->b, s1), 0); /* before s2 writes */
	launch1d(f, k, s1, 4, 32, params);
	assert_int_equal(ops->event_record(f->b, e, s1), 0);
	assert_int_equal(ops->stream_query(f->b, s1), CUDA_ERROR_NOT_READY);
	assert_int_equal(ops->event_query(f->b, e), CUDA_ERROR_NOT_READY);
	/* another stream is not held up; its write releases the spinner */
	assert_int_equal(ops->memcpy_htod(f->b, s2, flag, &one, sizeof(one)),
			 0);
	assert_int_equal(ops->event_sync(f->b, e), 0);
	assert_int_equal(ops->event_query(f->b, e), 0);
	assert_int_equal(ops->stream_sync(f->b, s1), 0);
	assert_int_equal(ops->stream_query(f->b, s1), 0);
	ops->event_destroy(f->b, e);
	ops->stream_destroy(f->b, s1);
	ops->stream_destroy(f->b, s2);
	ops->library_unload(f->b, l);
}

/*
 * A record on an idle stream is reached at once: the stream never looks
 * busy because of it (the worker's watchdog records on client streams, and
 * cuStreamQuery must stay CUDA_SUCCESS once the client's work is done).
 */
static void sim_record_on_an_idle_stream_keeps_it_idle(void **state)
{
	struct fixture *f = *state;
	struct backend_stream *s;
	struct backend_event *e;
	int i;

	assert_int_equal(ops->stream_create(f->b, &s), 0);
	assert_int_equal(ops->event_create(f->b, CU_EVENT_DISABLE_TIMING, &e),
			 0);
	for (i = 0; i < 1000; i++) {
		assert_int_equal(ops->event_record(f->b, e, s), 0);
		assert_int_equal(ops->stream_query(f->b, s), 0);
		assert_int_equal(ops->event_query(f->b, e), 0);
	}
	ops->event_destroy(f->b, e);
	ops->stream_destroy(f->b, s);
}

static void sim_event_elapsed_time(void **state)
{
	struct fixture *f = *state;
	struct backend_library *l;
	struct backend_kernel *k;
	struct backend_event *e0, *e1, *nt, *never;
	struct backend_stream *s;
	uint64_t d = dalloc(f, 1024 * sizeof(float));
	int iters = 200;
	void *params[2] = {&d, &iters};
	float ms = -1.0f;

	l = load_kernel(f, "compute_bound.cubin", "computeBound", &k, NULL);
	assert_int_equal(ops->stream_create(f->b, &s), 0);
	assert_int_equal(ops->event_create(f->b, 0, &e0), 0);
	assert_int_equal(ops->event_create(f->b, 0, &e1), 0);
	assert_int_equal(ops->event_create(f->b, CU_EVENT_DISABLE_TIMING, &nt),
			 0);
	assert_int_equal(ops->event_create(f->b, 0, &never), 0);
	assert_int_equal(ops->event_create(f->b, CU_EVENT_INTERPROCESS, &never),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_int_equal(ops->event_record(f->b, e0, s), 0);
	launch1d(f, k, s, 4, 256, params);
	assert_int_equal(ops->event_record(f->b, e1, s), 0);
	assert_int_equal(ops->event_record(f->b, nt, s), 0);
	assert_int_equal(ops->event_sync(f->b, e1), 0);
	assert_int_equal(ops->event_elapsed(f->b, e0, e1, &ms), 0);
	assert_true(ms >= 0.0f);
	assert_int_equal(ops->event_elapsed(f->b, e0, nt, &ms),
			 CUDA_ERROR_INVALID_HANDLE);
	assert_int_equal(ops->event_elapsed(f->b, e0, never, &ms),
			 CUDA_ERROR_INVALID_HANDLE);
	/* destroyed while a record is still queued: freed when reached */
	assert_int_equal(ops->event_record(f->b, e0, s), 0);
	ops->event_destroy(f->b, e0);
	assert_int_equal(ops->stream_sync(f->b, s), 0);
	ops->event_destroy(f->b, e1);
	ops->event_destroy(f->b, nt);
	ops->event_destroy(f->b, never);
	ops->stream_destroy(f->b, s);
	ops->library_unload(f->b, l);
}

static void sim_blocks_run_on_the_slices_sms(void **state)
{
	struct fixture *f = *state;
	enum { BLOCKS = 6 * 7 * 5 };
	struct backend_library *l;
	struct backend_kernel *k;
	uint32_t ids[BLOCKS];
	uint64_t d = dalloc(f, sizeof(ids));
	void *params[1] = {&d};
	const uint32_t grid[3] = {6, 7, 5};
	const uint32_t block[3] = {32, 2, 1};
	int i;

	l = load_kernel(f, "smid.cubin", "recordSmid", &k, NULL);
	assert_int_equal(ops->memset(f->b, NULL, d, 0xffffffff, 4, BLOCKS), 0);
	assert_int_equal(
		ops->launch(f->b, k, grid, block, 0, NULL, params, NULL), 0);
	assert_int_equal(ops->memcpy_dtoh(f->b, NULL, ids, d, sizeof(ids)), 0);
	for (i = 0; i < BLOCKS; i++)
		if (!smid_in_slice(ids[i]))
			fail_msg("block %d ran on SM %u, outside the slice", i,
				 ids[i]);
	ops->library_unload(f->b, l);
}

static void sim_launch_checks_dimensions(void **state)
{
	struct fixture *f = *state;
	struct backend_library *l;
	struct backend_kernel *k;
	uint64_t d = dalloc(f, 64);
	void *params[1] = {&d};
	const uint32_t grid[3] = {1, 1, 1}, zero[3] = {0, 1, 1};
	const uint32_t big[3] = {1024, 2, 1}, ok[3] = {1024, 1, 1};

	l = load_kernel(f, "smid.cubin", "recordSmid", &k, NULL);
	assert_int_equal(ops->launch(f->b, k, zero, ok, 0, NULL, params, NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(ops->launch(f->b, k, grid, big, 0, NULL, params, NULL),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
		ops->launch(f->b, k, grid, ok, 49153, NULL, params, NULL),
		CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(ops->launch(f->b, k, grid, ok, 0, NULL, params, NULL),
			 0);
	assert_int_equal(ops->stream_sync(f->b, NULL), 0);
	ops->library_unload(f->b, l);
}

/* A cluster launch runs as CUDA checks it: 8 blocks, 16 with the
 * kernel's non-portable opt-in, the kernel's required shape. */
static void sim_launch_checks_cluster_shapes(void **state)
{
	struct fixture *f = *state;
	struct backend_library *l;
	struct backend_kernel *k;
	uint64_t d = dalloc(f, 64);
	void *params[1] = {&d};
	const uint32_t grid[3] = {16, 1, 1}, block[3] = {32, 1, 1};
	const uint32_t eight[3] = {8, 1, 1}, sixteen[3] = {4, 4, 1};
	const uint32_t two[3] = {2, 1, 1};

	l = load_kernel(f, "smid.cubin", "recordSmid", &k, NULL);
	assert_int_equal(
		ops->launch(f->b, k, grid, block, 0, NULL, params, eight), 0);
	assert_int_equal(
		ops->launch(f->b, k, grid, block, 0, NULL, params, sixteen),
		CUDA_ERROR_INVALID_CLUSTER_SIZE);
	assert_int_equal(
		ops->kernel_set_attribute(
			f->b, k,
			CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1),
		0);
	assert_int_equal(
		ops->launch(f->b, k, grid, block, 0, NULL, params, sixteen), 0);
	/* a required shape of 2x1x1: only that one */
	for (int i = 0; i < 3; i++)
		assert_int_equal(
			ops->kernel_set_attribute(
				f->b, k,
				CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH + i,
				i ? 1 : 2),
			0);
	assert_int_equal(
		ops->launch(f->b, k, grid, block, 0, NULL, params, eight),
		CUDA_ERROR_INVALID_CLUSTER_SIZE);
	assert_int_equal(
		ops->launch(f->b, k, grid, block, 0, NULL, params, two), 0);
	assert_int_equal(ops->stream_sync(f->b, NULL), 0);
	ops->library_unload(f->b, l);
}

/*
 * 132 SMs: 16 groups of 8 and 4 left over. Group 16 names those 4 as a
 * slice of their own (SMs 128..131), or lent on top of groups; listed
 * twice it is refused, and without SMs left over it does not exist.
 */
static void sim_leftover_group_is_a_slice_of_its_own(void **state)
{
	enum { BLOCKS = 64 };
	struct vgpu_worker_config cfg;
	struct vgpu_device_info info;
	struct fixture f = {0};
	struct backend_library *l;
	struct backend_kernel *k;
	uint32_t ids[BLOCKS], seen = 0;
	char err[256] = "";
	uint64_t d;
	void *params[1] = {&d};
	int i;

	sim_env();
	setenv("VGPU_SIM_SMS", "132", 1);
	test_config(&cfg);
	cfg.groups[0] = 16;
	cfg.groups[1] = 16;
	expect_open_fails(&cfg, "listed twice");
	/* with a group (lent on top of a slice): its 8 SMs and the 4 */
	cfg.groups[1] = 0;
	assert_int_equal(ops->open(&f.b, &cfg, err, sizeof(err)), 0);
	assert_int_equal(ops->thread_attach(f.b), 0);
	ops->device_info(f.b, &info);
	assert_int_equal(info.sm_count, 12);
	ops->close(f.b);
	f.b = NULL;
	cfg.ngroups = 1;
	cfg.groups[0] = 17;
	expect_open_fails(&cfg, "SM group 17");

	cfg.groups[0] = 16;
	assert_int_equal(ops->open(&f.b, &cfg, err, sizeof(err)), 0);
	assert_int_equal(ops->thread_attach(f.b), 0);
	ops->device_info(f.b, &info);
	assert_int_equal(info.sm_count, 4);
	assert_int_equal(info.attrs[CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT],
			 4);
	assert_int_equal(ops->mem_map(f.b, TEST_VA_BASE, HEAP_BYTES), 0);
	f.next = TEST_VA_BASE;
	d = dalloc(&f, sizeof(ids));
	l = load_kernel(&f, "smid.cubin", "recordSmid", &k, NULL);
	assert_int_equal(ops->memset(f.b, NULL, d, 0xffffffff, 4, BLOCKS), 0);
	launch1d(&f, k, NULL, BLOCKS, 32, params);
	assert_int_equal(ops->memcpy_dtoh(f.b, NULL, ids, d, sizeof(ids)), 0);
	for (i = 0; i < BLOCKS; i++) {
		if (ids[i] < 128 || ids[i] > 131)
			fail_msg("block %d ran on SM %u, not on 128..131", i,
				 ids[i]);
		seen |= 1u << (ids[i] - 128);
	}
	assert_int_not_equal(seen, 0);
	ops->library_unload(f.b, l);
	ops->close(f.b);

	/* 128 SMs split into 16 whole groups: nothing is left over */
	setenv("VGPU_SIM_SMS", "128", 1);
	expect_open_fails(&cfg, "SM group 16 does not exist");
	sim_env();
}

/* Several client threads, each on its own stream, at once. */
struct worker_arg {
	struct fixture *f;
	struct backend_kernel *k;
	uint64_t d;
	int ok;
};

static void *client_thread(void *p)
{
	struct worker_arg *a = p;
	struct backend *b = a->f->b;
	enum { N = 256 };
	unsigned long long want[N], got[N];
	struct backend_stream *s;
	unsigned long long step;
	int n = N, i;
	void *params[3] = {&a->d, &n, &step};
	const uint32_t grid[3] = {N / 64, 1, 1}, block[3] = {64, 1, 1};

	if (ops->thread_attach(b) || ops->stream_create(b, &s))
		return NULL;
	for (i = 0; i < N; i++)
		want[i] = 0;
	if (ops->memcpy_htod(b, s, a->d, want, sizeof(want)))
		return NULL;
	for (step = 1; step <= 20; step++) {
		if (ops->launch(b, a->k, grid, block, 0, s, params, NULL))
			return NULL;
		chain_ref(want, N, step);
	}
	if (ops->memcpy_dtoh(b, s, got, a->d, sizeof(got)) == 0 &&
	    memcmp(want, got, sizeof(got)) == 0)
		a->ok = 1;
	ops->stream_destroy(b, s);
	return NULL;
}

static void sim_serves_several_threads(void **state)
{
	struct fixture *f = *state;
	enum { T = 4 };
	struct worker_arg args[T];
	pthread_t th[T];
	struct backend_library *l;
	struct backend_kernel *k;
	int i;

	l = load_kernel(f, "chain.cubin", "chainStep", &k, NULL);
	for (i = 0; i < T; i++) {
		args[i] = (struct worker_arg){f, k, dalloc(f, 256 * 8), 0};
		assert_int_equal(
			pthread_create(&th[i], NULL, client_thread, &args[i]),
			0);
	}
	for (i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		assert_true(args[i].ok);
	}
	ops->library_unload(f->b, l);
}

/* ---- teardown and faults ----------------------------------------------- */

static void sim_close_stops_an_endless_kernel(void **state)
{
	struct fixture *f = *state;
	struct backend_library *l;
	struct backend_kernel *k;
	struct backend_stream *s;
	struct backend_event *e;
	uint64_t flag = dalloc(f, sizeof(int));
	void *params[1] = {&flag};

	l = load_kernel(f, "spin.cubin", "spinForever", &k, NULL);
	assert_int_equal(ops->stream_create(f->b, &s), 0);
	assert_int_equal(ops->event_create(f->b, 0, &e), 0);
	assert_int_equal(ops->memset(f->b, s, flag, 0, 4, 1), 0);
	launch1d(f, k, s, 64, 32, params);
	assert_int_equal(ops->event_record(f->b, e, s), 0);
	assert_int_equal(ops->memset(f->b, s, flag, 0, 4, 1), 0);
	assert_int_equal(ops->stream_query(f->b, s), CUDA_ERROR_NOT_READY);
	/* the stream, event and library are left for close to free */
	(void)l;
}

/* The child opens its own vGPU (the parent's threads do not survive the
 * fork) in another window, and its twin's wild write must kill it. */
static void sim_wild_write_kills_the_process(void **state)
{
	int status = 0;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct vgpu_worker_config cfg;
		struct fixture child = {0};
		struct backend_kernel *k;
		uint64_t p = TEST_VA_BASE + (16ull << 40);
		unsigned long long off = 1ull << 40; /* 4 TiB past the base */
		void *params[2] = {&p, &off};
		const uint32_t one[3] = {1, 1, 1};
		char err[256];

		signal(SIGSEGV, SIG_DFL); /* cmocka catches it otherwise */
		sim_env();
		test_config(&cfg);
		cfg.va_base = p;
		if (ops->open(&child.b, &cfg, err, sizeof(err)))
			_exit(2);
		load_kernel(&child, "oob_write.cubin", "oobWrite", &k, NULL);
		ops->launch(child.b, k, one, one, 0, NULL, params, NULL);
		ops->stream_sync(child.b, NULL);
		_exit(0); /* not reached: the twin's write faults */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status))
		fail_msg("child exited with %d instead of dying",
			 WEXITSTATUS(status));
	assert_int_equal(WTERMSIG(status), SIGSEGV);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(sim_probe_describes_simulated_gpus),
		cmocka_unit_test(sim_probe_rejects_bad_settings),
		cmocka_unit_test(sim_open_reserves_the_exact_window),
		cmocka_unit_test(sim_open_rejects_bad_configs),
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
		T(sim_device_info_names_the_simulator),
		T(sim_maps_and_unmaps_granules),
		T(sim_copies_and_memsets_in_order),
		T(sim_runs_vecadd_from_a_cubin),
		T(sim_runs_matmul_from_a_cubin),
		T(sim_runs_saxpy_with_a_float_parameter),
		T(sim_compute_bound_matches_fmaf),
		T(sim_get_kernel_needs_the_name_in_the_image),
		T(sim_twin_needs_its_own_parameters),
		T(sim_module_variable_is_zeroed_and_read_by_its_twin),
		T(sim_module_variable_needs_its_name_in_the_image),
		T(sim_compressed_fatbin_finds_twins_by_name),
		T(sim_streams_and_events_keep_order),
		T(sim_queries_are_not_ready_while_a_kernel_spins),
		T(sim_record_on_an_idle_stream_keeps_it_idle),
		T(sim_event_elapsed_time),
		T(sim_blocks_run_on_the_slices_sms),
		T(sim_launch_checks_dimensions),
		T(sim_launch_checks_cluster_shapes),
		T(sim_serves_several_threads),
		T(sim_close_stops_an_endless_kernel),
#undef T
		cmocka_unit_test(sim_leftover_group_is_a_slice_of_its_own),
		cmocka_unit_test(sim_wild_write_kills_the_process),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
