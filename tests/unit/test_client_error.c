/* SPDX-License-Identifier: MIT */
/*
 * cuGetErrorName / cuGetErrorString of the guest library: every CUresult
 * of cuda.h has a name and a description, unknown codes are refused, and
 * the fatal ("sticky") errors are marked as such.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client_error.h"

static void error_table_is_sorted_and_complete(void **state)
{
	(void)state;
	assert_true(client_error_count >= 100);
	for (unsigned int i = 1; i < client_error_count; i++)
		assert_true((unsigned int)client_error_table[i - 1].code <
			    (unsigned int)client_error_table[i].code);
	for (unsigned int i = 0; i < client_error_count; i++) {
		assert_non_null(client_error_table[i].name);
		assert_true(strncmp(client_error_table[i].name, "CUDA_", 5) ==
			    0);
		assert_true(strlen(client_error_table[i].text) > 0);
	}
}

static void error_names_match_cuda_h(void **state)
{
	static const struct {
		CUresult code;
		const char *name;
	} known[] = {
		{CUDA_SUCCESS, "CUDA_SUCCESS"},
		{CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE"},
		{CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED"},
		{CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE"},
		{CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE"},
		{CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND"},
		{CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS"},
		{CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED"},
		{CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN"},
	};
	const char *s;

	(void)state;
	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
		assert_int_equal(cuGetErrorName(known[i].code, &s),
				 CUDA_SUCCESS);
		assert_string_equal(s, known[i].name);
		assert_int_equal(cuGetErrorString(known[i].code, &s),
				 CUDA_SUCCESS);
		assert_non_null(s);
	}
}

static void error_unknown_code_is_invalid_value(void **state)
{
	const char *s = "x";

	(void)state;
	assert_int_equal(cuGetErrorName((CUresult)12345, &s),
			 CUDA_ERROR_INVALID_VALUE);
	assert_null(s);
	s = "x";
	assert_int_equal(cuGetErrorString((CUresult)12345, &s),
			 CUDA_ERROR_INVALID_VALUE);
	assert_null(s);
	assert_int_equal(cuGetErrorName(CUDA_SUCCESS, NULL),
			 CUDA_ERROR_INVALID_VALUE);
}

static void error_fatal_errors_are_sticky(void **state)
{
	(void)state;
	assert_true(client_error_is_sticky(CUDA_ERROR_ILLEGAL_ADDRESS));
	assert_true(client_error_is_sticky(CUDA_ERROR_LAUNCH_FAILED));
	assert_true(client_error_is_sticky(CUDA_ERROR_LAUNCH_TIMEOUT));
	assert_true(client_error_is_sticky(CUDA_ERROR_ASSERT));
	assert_false(client_error_is_sticky(CUDA_SUCCESS));
	assert_false(client_error_is_sticky(CUDA_ERROR_INVALID_VALUE));
	assert_false(client_error_is_sticky(CUDA_ERROR_NOT_READY));
	assert_false(client_error_is_sticky(CUDA_ERROR_OUT_OF_MEMORY));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(error_table_is_sorted_and_complete),
		cmocka_unit_test(error_names_match_cuda_h),
		cmocka_unit_test(error_unknown_code_is_invalid_value),
		cmocka_unit_test(error_fatal_errors_are_sticky),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
