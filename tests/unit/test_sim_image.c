/* SPDX-License-Identifier: MIT */
/*
 * sim_image: what the simulator reads from a library image. Real cubins
 * from nvcc (the build's kernels/), the same cubins wrapped in a fatbin by
 * hand, plain and compressed with zstd (as CUDA 13's libraries ship them)
 * or LZ4 (as cuFFT's PTX is), PTX text, and broken images: each must be
 * read, or refused without a crash.
 *
 * Cubins come from $VGPU_KERNEL_DIR (default: the build's kernels/).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <elf.h>
#include <lz4.h>
#include <zstd.h>

#include "sim_image.h"

#ifndef VGPU_KERNEL_DIR
#define VGPU_KERNEL_DIR "build/kernels"
#endif

#define FATBIN_ZSTD 0x8000ull
#define FATBIN_LZ   0x2000ull

struct blob {
	unsigned char *p;
	size_t len;
};

static struct blob read_cubin(const char *name)
{
	const char *dir = getenv("VGPU_KERNEL_DIR");
	char path[512];
	struct blob b = {0};
	FILE *f;
	long n;

	snprintf(path, sizeof(path), "%s/%s.cubin", dir ? dir : VGPU_KERNEL_DIR,
		 name);
	f = fopen(path, "rb");
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0);
	rewind(f);
	b.p = malloc((size_t)n);
	assert_non_null(b.p);
	assert_int_equal(fread(b.p, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	b.len = (size_t)n;
	return b;
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/*
 * A fatbin with one cubin entry for sm_<arch>: the payload as given (raw
 * cubin bytes, or a zstd frame of raw_len bytes once uncompressed).
 */
static struct blob fatbin(const void *payload, size_t len, uint64_t flags,
			  uint64_t raw_len, uint32_t arch)
{
	size_t padded = (len + 7) & ~(size_t)7;
	struct blob b = {calloc(1, 16 + 64 + padded), 16 + 64 + padded};

	assert_non_null(b.p);
	put32(b.p, 0xba55ed50u);
	b.p[4] = 1;
	b.p[6] = 16;
	put64(b.p + 8, 64 + padded);
	b.p[16] = 2; /* a cubin */
	b.p[18] = 1;
	b.p[19] = 1;
	put32(b.p + 16 + 4, 64);
	put64(b.p + 16 + 8, padded);
	put32(b.p + 16 + 28, arch);
	put64(b.p + 16 + 40, flags);
	put64(b.p + 16 + 56, raw_len);
	memcpy(b.p + 16 + 64, payload, len);
	return b;
}

static struct blob zstd_fatbin(const struct blob *cubin)
{
	size_t cap = ZSTD_compressBound(cubin->len), n;
	unsigned char *z = malloc(cap);
	struct blob b;

	assert_non_null(z);
	n = ZSTD_compress(z, cap, cubin->p, cubin->len, 3);
	assert_false(ZSTD_isError(n));
	b = fatbin(z, n, FATBIN_ZSTD | 0x11, cubin->len, 90);
	free(z);
	return b;
}

static struct blob lz4_fatbin(const struct blob *cubin)
{
	int cap = LZ4_compressBound((int)cubin->len), n;
	char *z = malloc((size_t)cap);
	struct blob b;

	assert_non_null(z);
	n = LZ4_compress_default((const char *)cubin->p, z, (int)cubin->len,
				 cap);
	assert_true(n > 0);
	b = fatbin(z, (size_t)n, FATBIN_LZ | 0x11, cubin->len, 90);
	put32(b.p + 16 + 16, (uint32_t)n); /* the payload is padded */
	free(z);
	return b;
}

static const struct sim_image_var *find_var(const struct sim_image *im,
					    const char *name)
{
	const struct sim_image_var *v;
	uint32_t i;

	for (i = 0; (v = sim_image_var(im, i)); i++)
		if (strcmp(v->name, name) == 0)
			return v;
	return NULL;
}

/* vector_add's kernel, with the layout its signature gives. */
static void check_vector_add(const struct blob *img)
{
	struct vgpu_kernel_info info;
	struct sim_image *im = NULL;
	const char *why = NULL;

	assert_int_equal(sim_image_open(img->p, img->len, &im, &why), 0);
	assert_non_null(im);
	assert_null(why);
	assert_int_equal(sim_image_kernel_count(im), 1);
	assert_string_equal(sim_image_kernel_name(im, 0), "vecAdd");
	assert_null(sim_image_kernel_name(im, 1));
	assert_int_equal(sim_image_kernel_params(im, "vecAdd", &info), 0);
	/* (const float *a, const float *b, float *c, int n) */
	assert_int_equal(info.nparams, 4);
	assert_int_equal(info.param_bytes, 28);
	assert_int_equal(info.params[2].offset, 16);
	assert_int_equal(info.params[2].size, 8);
	assert_int_equal(info.params[3].offset, 24);
	assert_int_equal(info.params[3].size, 4);
	assert_int_equal(sim_image_kernel_params(im, "vecAd", &info), -1);
	assert_int_equal(sim_image_kernel_params(im, "nope", &info), -1);
	sim_image_free(im);
}

static void test_cubin(void **state)
{
	struct blob c = read_cubin("vector_add");

	check_vector_add(&c);
	free(c.p);
}

static void test_fatbin_plain(void **state)
{
	struct blob c = read_cubin("vector_add");
	struct blob f = fatbin(c.p, c.len, 0x11, 0, 90);

	check_vector_add(&f);
	free(f.p);
	free(c.p);
}

static void test_fatbin_zstd(void **state)
{
	struct blob c = read_cubin("vector_add");
	struct blob f = zstd_fatbin(&c);

	check_vector_add(&f);
	free(f.p);
	free(c.p);
}

static void test_fatbin_lz4(void **state)
{
	struct blob c = read_cubin("vector_add");
	struct blob f = lz4_fatbin(&c);

	check_vector_add(&f);
	free(f.p);
	free(c.p);
}

/* PTX as nvcc writes it: kernels, their parameters, variables. */
static void test_ptx(void **state)
{
	static const char ptx[] =
		"//\n// Generated\n//\n.version 8.0\n.target sm_90\n"
		".address_size 64\n\n"
		".global .align 8 .u64 lut_sp;\n"
		".global .align 4 .b8 table[12] = {1, 2, 3};\n"
		".extern .shared .align 16 .b8 smem[];\n"
		".const .align 4 .f32 scale;\n"
		".visible .entry _Z3fftPfi(\n"
		"\t.param .u64 .ptr .global .align 4 _Z3fftPfi_param_0,\n"
		"\t.param .u32 _Z3fftPfi_param_1,\n"
		"\t.param .align 8 .b8 _Z3fftPfi_param_2[24]\n)\n"
		".maxntid 256, 1, 1\n{\n\t.reg .b32 %r<4>;\n"
		"\tld.global.u32 %r1, [lut_sp];\n\tret;\n}\n"
		".visible .entry empty()\n{\n\tret;\n}\n";
	struct vgpu_kernel_info info;
	const struct sim_image_var *v;
	struct sim_image *im = NULL;

	assert_int_equal(sim_image_open(ptx, sizeof(ptx), &im, NULL), 0);
	assert_non_null(im);
	assert_int_equal(sim_image_kernel_count(im), 2);
	assert_string_equal(sim_image_kernel_name(im, 0), "_Z3fftPfi");
	assert_int_equal(sim_image_kernel_params(im, "_Z3fftPfi", &info), 0);
	assert_int_equal(info.nparams, 3);
	assert_int_equal(info.params[1].offset, 8);
	assert_int_equal(info.params[1].size, 4);
	assert_int_equal(info.params[2].offset, 16);
	assert_int_equal(info.params[2].size, 24);
	assert_int_equal(info.param_bytes, 40);
	assert_int_equal(sim_image_kernel_params(im, "empty", &info), 0);
	assert_int_equal(info.nparams, 0);
	v = find_var(im, "lut_sp");
	assert_non_null(v);
	assert_int_equal(v->bytes, 8);
	assert_non_null(find_var(im, "scale"));
	assert_null(find_var(im, "table")); /* its initialiser is not read */
	assert_null(find_var(im, "smem"));
	assert_int_equal(sim_image_var_count(im), 2);
	sim_image_free(im);
}

/* A module variable: its size, and zeros (it has no initialiser). */
static void test_variable(void **state)
{
	struct blob c = read_cubin("read_global");
	struct blob f = zstd_fatbin(&c);
	const struct sim_image_var *v;
	struct sim_image *im = NULL;

	assert_int_equal(sim_image_open(f.p, f.len, &im, NULL), 0);
	assert_non_null(im);
	v = find_var(im, "vgpuTestGlobal");
	assert_non_null(v);
	assert_int_equal(v->bytes, 4 * sizeof(float));
	assert_null(v->init);
	assert_int_equal(sim_image_kernel_count(im), 1);
	assert_string_equal(sim_image_kernel_name(im, 0), "readGlobal");
	sim_image_free(im);
	free(f.p);
	free(c.p);
}

/* Nothing to read, or what cannot be: no code, PTX that is not PTX, an
 * LZ4 entry that is not LZ4. */
static void test_unreadable(void **state)
{
	static const char text[] = "just some text";
	static const char bad_ptx[] = ".visible .entry k(.param .v9 x)\n";
	struct blob c = read_cubin("vector_add");
	struct blob lz = fatbin(c.p, c.len, FATBIN_LZ | 0x11, c.len + 9, 90);
	struct sim_image *im = (struct sim_image *)&im;
	const char *why = NULL;

	assert_int_equal(sim_image_open(text, sizeof(text), &im, &why), 0);
	assert_null(im);
	assert_null(why);
	assert_int_equal(sim_image_open(bad_ptx, sizeof(bad_ptx), &im, &why),
			 0);
	assert_null(im);
	assert_non_null(why);
	why = NULL;
	assert_int_equal(sim_image_open(lz.p, lz.len, &im, &why), 0);
	assert_null(im);
	assert_non_null(why);
	assert_int_equal(sim_image_open("", 0, &im, NULL), 0);
	assert_null(im);
	free(lz.p);
	free(c.p);
}

/* Module variables beyond 64 MiB in all: refused, however few bytes
 * declare them. */
static void test_variables_capped(void **state)
{
	static const char one[] = ".global .b128 a[999999999999];\n"
				  ".visible .entry k()\n{\n}\n";
	static const char two[] = ".global .b8 a[40000000];\n"
				  ".global .b8 b[40000000];\n"
				  ".visible .entry k()\n{\n}\n";
	static const char fits[] = ".global .b8 a[40000000];\n"
				   ".visible .entry k()\n{\n}\n";
	struct sim_image *im;
	const char *why;

	why = NULL;
	assert_int_equal(sim_image_open(one, sizeof(one), &im, &why), 0);
	assert_null(im);
	assert_non_null(why);
	why = NULL;
	assert_int_equal(sim_image_open(two, sizeof(two), &im, &why), 0);
	assert_null(im);
	assert_non_null(why);
	assert_int_equal(sim_image_open(fits, sizeof(fits), &im, NULL), 0);
	assert_non_null(im);
	assert_int_equal(sim_image_var_count(im), 1);
	assert_true(sim_image_bytes(im) >= 40000000);
	sim_image_free(im);
}

/* Images that lie about their sizes: refused, with a reason. */
static void test_hostile(void **state)
{
	struct blob c = read_cubin("vector_add");
	struct blob f = zstd_fatbin(&c);
	struct blob g;
	Elf64_Ehdr *eh;
	struct sim_image *im;
	const char *why;

	/* the uncompressed size is not the frame's */
	put64(f.p + 16 + 56, c.len + 1);
	why = NULL;
	assert_int_equal(sim_image_open(f.p, f.len, &im, &why), 0);
	assert_null(im);
	assert_non_null(why);
	/* an entry larger than the fatbin */
	put64(f.p + 16 + 56, c.len);
	put64(f.p + 16 + 8, f.len);
	why = NULL;
	assert_int_equal(sim_image_open(f.p, f.len, &im, &why), 0);
	assert_null(im);
	assert_non_null(why);
	/* a section table past the end of the cubin */
	g.len = c.len;
	g.p = malloc(c.len);
	assert_non_null(g.p);
	memcpy(g.p, c.p, c.len);
	eh = (Elf64_Ehdr *)g.p;
	eh->e_shoff = c.len - 8;
	why = NULL;
	assert_int_equal(sim_image_open(g.p, g.len, &im, &why), 0);
	assert_null(im);
	assert_non_null(why);
	/* a cubin cut short */
	memcpy(g.p, c.p, c.len);
	why = NULL;
	assert_int_equal(sim_image_open(g.p, c.len / 2, &im, &why), 0);
	assert_null(im);
	assert_non_null(why);
	free(g.p);
	free(f.p);
	free(c.p);
}

/* Every byte of a cubin flipped in turn: read or refused, never a crash
 * (valgrind.sh runs this under memcheck). */
static void test_flipped_bytes(void **state)
{
	struct blob c = read_cubin("vector_add");
	struct vgpu_kernel_info info;
	struct sim_image *im;
	unsigned char *p = malloc(c.len);
	size_t i;
	uint32_t k;

	assert_non_null(p);
	for (i = 0; i < c.len; i++) {
		memcpy(p, c.p, c.len);
		p[i] ^= 0xa5;
		assert_int_equal(sim_image_open(p, c.len, &im, NULL), 0);
		if (!im)
			continue;
		for (k = 0; k < sim_image_kernel_count(im); k++)
			sim_image_kernel_params(
				im, sim_image_kernel_name(im, k), &info);
		sim_image_free(im);
	}
	free(p);
	free(c.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cubin),
		cmocka_unit_test(test_fatbin_plain),
		cmocka_unit_test(test_fatbin_zstd),
		cmocka_unit_test(test_fatbin_lz4),
		cmocka_unit_test(test_ptx),
		cmocka_unit_test(test_variable),
		cmocka_unit_test(test_unreadable),
		cmocka_unit_test(test_variables_capped),
		cmocka_unit_test(test_hostile),
		cmocka_unit_test(test_flipped_bytes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
