/* SPDX-License-Identifier: MIT */
/*
 * Kernel parameter marshalling in the guest library: arguments land at
 * the offsets of the layout the worker sent, from kernelParams or from a
 * packed `extra` buffer; bad layouts and bad argument lists are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client_params.h"

/* vecAdd(const float *a, const float *b, float *c, int n) */
static const struct vgpu_kernel_info vecadd = {
	.nparams = 4,
	.param_bytes = 28,
	.params = {{0, 8}, {8, 8}, {16, 8}, {24, 4}},
};

static void params_kernelparams_land_at_their_offsets(void **state)
{
	uint64_t a = 0x500000000000, b = 0x500000400000, c = 0x500000800000;
	int n = 12345;
	void *args[] = {&a, &b, &c, &n};
	unsigned char buf[28];
	uint64_t got;
	int gn;

	(void)state;
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(client_params_marshal(&vecadd, args, NULL, buf),
			 CUDA_SUCCESS);
	memcpy(&got, buf + 8, 8);
	assert_true(got == b);
	memcpy(&got, buf + 16, 8);
	assert_true(got == c);
	memcpy(&gn, buf + 24, 4);
	assert_int_equal(gn, n);
}

static void params_padding_is_zeroed(void **state)
{
	/* (char x, double y): 7 bytes of padding after x */
	const struct vgpu_kernel_info k = {
		.nparams = 2,
		.param_bytes = 16,
		.params = {{0, 1}, {8, 8}},
	};
	char x = 'x';
	double y = 2.5;
	void *args[] = {&x, &y};
	unsigned char buf[16];

	(void)state;
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(client_params_marshal(&k, args, NULL, buf),
			 CUDA_SUCCESS);
	for (int i = 1; i < 8; i++)
		assert_int_equal(buf[i], 0);
}

static void params_extra_buffer_is_copied(void **state)
{
	unsigned char packed[32], buf[28];
	size_t size = sizeof(packed);
	void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed,
			 CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			 CU_LAUNCH_PARAM_END};

	(void)state;
	for (unsigned int i = 0; i < sizeof(packed); i++)
		packed[i] = (unsigned char)i;
	assert_int_equal(client_params_marshal(&vecadd, NULL, extra, buf),
			 CUDA_SUCCESS);
	assert_memory_equal(buf, packed, sizeof(buf));
}

static void params_bad_argument_lists_are_invalid_value(void **state)
{
	unsigned char packed[32], buf[28];
	size_t small = 16, size = 32;
	uint64_t p = 0;
	int n = 0;
	void *args[] = {&p, &p, NULL, &n};
	void *extra_small[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed,
			       CU_LAUNCH_PARAM_BUFFER_SIZE, &small,
			       CU_LAUNCH_PARAM_END};
	void *extra_nosize[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed,
				CU_LAUNCH_PARAM_END};
	void *extra_unknown[] = {(void *)(uintptr_t)0x77, packed,
				 CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
				 CU_LAUNCH_PARAM_END};
	void *good[] = {&p, &p, &p, &n};
	void *extra_good[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, packed,
			      CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			      CU_LAUNCH_PARAM_END};

	(void)state;
	assert_int_equal(client_params_marshal(&vecadd, NULL, NULL, buf),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(client_params_marshal(&vecadd, args, NULL, buf),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(client_params_marshal(&vecadd, NULL, extra_small, buf),
			 CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
		client_params_marshal(&vecadd, NULL, extra_nosize, buf),
		CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(
		client_params_marshal(&vecadd, NULL, extra_unknown, buf),
		CUDA_ERROR_INVALID_VALUE);
	assert_int_equal(client_params_marshal(&vecadd, good, extra_good, buf),
			 CUDA_ERROR_INVALID_VALUE);
}

static void params_kernel_without_parameters_needs_none(void **state)
{
	const struct vgpu_kernel_info none = {0};
	unsigned char buf[1];

	(void)state;
	assert_int_equal(client_params_marshal(&none, NULL, NULL, buf),
			 CUDA_SUCCESS);
}

static void params_layout_check_rejects_bad_layouts(void **state)
{
	struct vgpu_kernel_info k = vecadd;
	char err[160];

	(void)state;
	assert_int_equal(client_params_check_layout(&k, err, sizeof(err)), 0);
	k.nparams = VGPU_MAX_PARAMS + 1;
	assert_int_equal(client_params_check_layout(&k, err, sizeof(err)), -1);
	k = vecadd;
	k.param_bytes = VGPU_MAX_PARAM_BYTES + 1;
	assert_int_equal(client_params_check_layout(&k, err, sizeof(err)), -1);
	k = vecadd;
	k.params[3].offset = 26; /* 26 + 4 > 28 */
	assert_int_equal(client_params_check_layout(&k, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "parameter 3"));
	k = vecadd;
	k.params[1].offset = 4; /* overlaps parameter 0 */
	assert_int_equal(client_params_check_layout(&k, err, sizeof(err)), -1);
	k = vecadd;
	k.params[2].offset = 0xfffffffc; /* offset + size wraps in 32 bits */
	assert_int_equal(client_params_check_layout(&k, err, sizeof(err)), -1);
	k = vecadd;
	k.params[0].size = 0;
	assert_int_equal(client_params_check_layout(&k, err, sizeof(err)), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(params_kernelparams_land_at_their_offsets),
		cmocka_unit_test(params_padding_is_zeroed),
		cmocka_unit_test(params_extra_buffer_is_copied),
		cmocka_unit_test(params_bad_argument_lists_are_invalid_value),
		cmocka_unit_test(params_kernel_without_parameters_needs_none),
		cmocka_unit_test(params_layout_check_rejects_bad_layouts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
