/* SPDX-License-Identifier: MIT */
/*
 * libcuda.so.1's export tables (issue 17): every table NVIDIA's runtime
 * and libraries ask for is there with the size NVIDIA's CUDA 13 driver
 * gives it; the entries a vGPU does not serve fail with
 * CUDA_ERROR_NOT_SUPPORTED whatever they are passed; an unknown UUID and
 * bad arguments are errors, never a crash. No vGPU is needed: what needs
 * one fails cleanly here and runs in tests/integration/nvidia_runtime.sh.
 * Linked against the built libcuda.so.1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <cuda.h>

static const struct {
	CUuuid id;
	size_t size; /* slot 0, in bytes; 0: slot 0 is an entry */
} known[] = {
	{{{0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9,
	   0x39, 0x12, 0xfd, 0x9d, 0xf9}},
	 104},
	{{{0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6,
	   0xe7, 0x8a, 0x3a, 0xec, 0xdc}},
	 24},
	{{{0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08,
	   0x00, 0x20, 0x0c, 0x0a, 0x66}},
	 56},
	{{{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68,
	   0xf3, 0x55, 0xd8, 0x95, 0x93}},
	 0},
	{{{0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba,
	   0x12, 0x3c, 0x66, 0xe1, 0xf2}},
	 24},
	{{{0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb,
	   0xd5, 0x00, 0x6d, 0xfa, 0x7e}},
	 120},
	{{{0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb,
	   0x46, 0x9e, 0x7c, 0x0d, 0xd9}},
	 24},
	{{{0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41,
	   0xff, 0x73, 0x24, 0xc8, 0xf2}},
	 744},
	{{{0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d, 0x83, 0x5c, 0xe1,
	   0x82, 0xaf, 0xf1, 0x99, 0x1e}},
	 792},
	{{{0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49, 0x8b, 0x47, 0xb0, 0x30, 0xc5,
	   0xda, 0x33, 0x0e, 0xa4, 0xe9}},
	 272},
	{{{0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45, 0x87, 0x26, 0xc0,
	   0xf1, 0xe7, 0xdd, 0x8b, 0xca}},
	 136},
};

enum {
	CUDART,
	TOOLS_TLS,
	HOOKS,
	CLS,
	INTEGRITY,
	CHECKS,
	F8CF,
	LIBS_A,
	LIBS_B,
	TORCH,
	LIBS_C
};

typedef CUresult (*any_fn)(uintptr_t, uintptr_t, uintptr_t, uintptr_t,
			   uintptr_t, uintptr_t);

static const void **table(int t)
{
	const void *p = NULL;

	assert_int_equal(cuGetExportTable(&p, &known[t].id), CUDA_SUCCESS);
	assert_non_null(p);
	return (const void **)p;
}

static void bad_arguments_and_unknown_tables_are_errors(void **state)
{
	CUuuid unknown = {
		{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}};
	const void *p = (const void *)&p;

	assert_int_equal(cuGetExportTable(NULL, &known[0].id),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetExportTable(&p, NULL), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cuGetExportTable(&p, &unknown),
			 CUDA_ERROR_NOT_SUPPORTED);
	assert_null(p);
	/* and again: still an error, the same answer */
	assert_int_equal(cuGetExportTable(&p, &unknown),
			 CUDA_ERROR_NOT_SUPPORTED);
}

static void every_known_table_has_nvidias_size(void **state)
{
	for (size_t t = 0; t < sizeof(known) / sizeof(known[0]); t++) {
		const void **tb = table((int)t);

		if (known[t].size)
			assert_int_equal((uintptr_t)tb[0], known[t].size);
		else /* slot 0 is an entry: a pointer, not a size */
			assert_true((uintptr_t)tb[0] > 4096);
		/* the same table every time */
		assert_ptr_equal(table((int)t), tb);
	}
}

static void unserved_entries_fail_whatever_they_are_passed(void **state)
{
	/* slot 1 of the runtime interface and of the libraries' tables:
	 * not served; called with junk, they touch nothing */
	any_fn f = (any_fn)table(CUDART)[1];

	assert_int_equal(f(1, 2, 3, 4, 5, 6), CUDA_ERROR_NOT_SUPPORTED);
	f = (any_fn)table(7)[92];
	assert_int_equal(f(0, 0, 0, 0, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
	f = (any_fn)table(8)[98];
	assert_int_equal(f(~0ul, ~0ul, 0, 0, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
	/* cuBLASLt's half-precision exchange: a table, none of it served */
	for (int i = 1; i < 17; i++) {
		f = (any_fn)table(LIBS_C)[i];
		assert_int_equal(f(0, 0, 0, 0, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
	}
}

static void served_entries_check_their_arguments(void **state)
{
	CUresult (*primary)(CUcontext *, CUdevice) =
		(CUresult(*)(CUcontext *, CUdevice))table(CUDART)[2];
	CUresult (*cls_get)(void **, CUcontext, void *) =
		(CUresult(*)(void **, CUcontext, void *))table(CLS)[2];
	CUresult (*integrity)(uint32_t, uint64_t, uint64_t *) = (CUresult(*)(
		uint32_t, uint64_t, uint64_t *))table(INTEGRITY)[1];
	void (*buf)(void **, size_t *) =
		(void (*)(void **, size_t *))table(HOOKS)[2];
	CUresult (*check)(CUcontext, uint32_t *, CUcontext *) = (CUresult(*)(
		CUcontext, uint32_t *, CUcontext *))table(CHECKS)[2];
	uint64_t r[2];
	uint32_t wrapped = 7;
	void *p = NULL;
	size_t n = 0;

	assert_int_equal(primary(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(cls_get(NULL, NULL, &p), CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(integrity(13002, 0, NULL), CUDA_ERROR_INVALID_VALUE);
	/* versions ending in 0 and 1 have fixed answers */
	assert_int_equal(integrity(13000, 1, r), CUDA_SUCCESS);
	assert_true(r[0] == 0x3341181c03cb675cull &&
		    r[1] == 0x8ed383aa1f4cd1e8ull);
	assert_int_equal(integrity(13001, 1, r), CUDA_SUCCESS);
	assert_true(r[0] == 0x1841181c03cb675cull &&
		    r[1] == 0x8ed383aa1f4cd1e8ull);
	buf(&p, &n);
	assert_non_null(p);
	assert_int_equal(n, 1024);
	buf(NULL, NULL); /* tolerated */
	((void (*)(void **, size_t *))table(HOOKS)[6])(&p, &n);
	assert_non_null(p);
	assert_int_equal(n, 14);
	assert_int_equal(check(NULL, &wrapped, NULL), CUDA_SUCCESS);
	assert_int_equal(wrapped, 0);
	/* the current context, a context's and a stream's id: nowhere to
	 * put the answer */
	assert_int_equal(((CUresult(*)(CUcontext *))table(TOOLS_TLS)[2])(NULL),
			 CUDA_ERROR_INVALID_VALUE);
}

/* Without a vGPU (VGPU unset): what needs one fails, nothing crashes. */
static void entries_that_need_a_vgpu_fail_without_one(void **state)
{
	CUresult (*primary)(CUcontext *, CUdevice) =
		(CUresult(*)(CUcontext *, CUdevice))table(CUDART)[2];
	CUresult (*cls_put)(CUcontext, void *, void *, void *) =
		(CUresult(*)(CUcontext, void *, void *, void *))table(CLS)[0];
	CUresult (*integrity)(uint32_t, uint64_t, uint64_t *) = (CUresult(*)(
		uint32_t, uint64_t, uint64_t *))table(INTEGRITY)[1];
	CUcontext ctx = NULL;
	uint64_t r[2];

	CUresult (*ctx_id)(CUcontext, unsigned long long *) =
		(CUresult(*)(CUcontext, unsigned long long *))table(LIBS_A)[4];
	CUresult (*resolve)(CUcontext, CUstream, CUstream *) =
		(CUresult(*)(CUcontext, CUstream, CUstream *))table(LIBS_A)[51];
	CUresult (*stream_id)(CUcontext, CUstream, unsigned long long *) =
		(CUresult(*)(CUcontext, CUstream, unsigned long long *))table(
			LIBS_A)[39];
	unsigned long long id = 7;
	CUstream s = NULL;

	unsetenv("VGPU");
	/* junk contexts and streams: an error, not a crash */
	assert_int_not_equal(ctx_id((CUcontext)&id, &id), CUDA_SUCCESS);
	assert_int_not_equal(resolve((CUcontext)&id, (CUstream)&id, &s),
			     CUDA_SUCCESS);
	assert_int_not_equal(stream_id(NULL, (CUstream)&id, &id), CUDA_SUCCESS);
	assert_int_equal(id, 7);
	assert_null(s);
	assert_int_not_equal(primary(&ctx, 0), CUDA_SUCCESS);
	assert_int_not_equal(cls_put(NULL, &ctx, &ctx, NULL), CUDA_SUCCESS);
	assert_int_not_equal(integrity(13002, 1, r), CUDA_SUCCESS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(bad_arguments_and_unknown_tables_are_errors),
		cmocka_unit_test(every_known_table_has_nvidias_size),
		cmocka_unit_test(
			unserved_entries_fail_whatever_they_are_passed),
		cmocka_unit_test(served_entries_check_their_arguments),
		cmocka_unit_test(entries_that_need_a_vgpu_fail_without_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
