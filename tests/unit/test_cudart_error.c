/* SPDX-License-Identifier: MIT */
/*
 * The runtime's errors: every cudaError_t has a name and a description,
 * driver results map to runtime codes, cudaGetLastError returns and
 * clears, a sticky error stays, and unsupported calls fail cleanly.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cudart.h"

static void runtime_error_table_is_sorted_and_complete(void **state)
{
	(void)state;
	assert_true(cudart_error_count >= 100);
	for (unsigned int i = 1; i < cudart_error_count; i++)
		assert_true((unsigned int)cudart_error_table[i - 1].code <
			    (unsigned int)cudart_error_table[i].code);
	for (unsigned int i = 0; i < cudart_error_count; i++) {
		assert_true(strncmp(cudart_error_table[i].name, "cuda", 4) ==
			    0);
		assert_true(strlen(cudart_error_table[i].text) > 0);
	}
}

static void runtime_error_names_match_driver_types_h(void **state)
{
	(void)state;
	assert_string_equal(cudaGetErrorName(cudaSuccess), "cudaSuccess");
	assert_string_equal(cudaGetErrorName(cudaErrorInvalidValue),
			    "cudaErrorInvalidValue");
	assert_string_equal(cudaGetErrorName(cudaErrorIllegalAddress),
			    "cudaErrorIllegalAddress");
	assert_string_equal(cudaGetErrorName(cudaErrorNotSupported),
			    "cudaErrorNotSupported");
	assert_string_equal(cudaGetErrorName(cudaErrorApiFailureBase),
			    "cudaErrorApiFailureBase");
	assert_string_equal(cudaGetErrorName((cudaError_t)123456),
			    "unrecognized error code");
	assert_string_equal(cudaGetErrorString((cudaError_t)123456),
			    "unrecognized error code");
	assert_true(strstr(cudaGetErrorString(cudaErrorIllegalAddress),
			   "invalid memory address") != NULL);
}

static void runtime_sticky_errors_are_the_fatal_ones(void **state)
{
	(void)state;
	assert_true(cudart_error_is_sticky(cudaErrorIllegalAddress));
	assert_true(cudart_error_is_sticky(cudaErrorLaunchFailure));
	assert_true(cudart_error_is_sticky(cudaErrorAssert));
	assert_false(cudart_error_is_sticky(cudaErrorInvalidValue));
	assert_false(cudart_error_is_sticky(cudaErrorInvalidConfiguration));
	assert_false(cudart_error_is_sticky(cudaErrorNotReady));
}

static void cuda_results_map_to_runtime_codes(void **state)
{
	(void)state;
	assert_int_equal(cudart_error_from_cu(CUDA_SUCCESS), cudaSuccess);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_INVALID_VALUE),
			 cudaErrorInvalidValue);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_OUT_OF_MEMORY),
			 cudaErrorMemoryAllocation);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_NO_DEVICE),
			 cudaErrorNoDevice);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_INVALID_HANDLE),
			 cudaErrorInvalidResourceHandle);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_NOT_READY),
			 cudaErrorNotReady);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_ILLEGAL_ADDRESS),
			 cudaErrorIllegalAddress);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_LAUNCH_FAILED),
			 cudaErrorLaunchFailure);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_NOT_SUPPORTED),
			 cudaErrorNotSupported);
	assert_int_equal(cudart_error_from_cu(CUDA_ERROR_INVALID_IMAGE),
			 cudaErrorInvalidKernelImage);
	assert_int_equal(cudart_error_from_cu((CUresult)54321),
			 cudaErrorUnknown);
	/* every driver result lands on a code the runtime can name */
	for (int r = 0; r < 1100; r++)
		assert_non_null(
			cudart_error_find(cudart_error_from_cu((CUresult)r)));
}

static void get_last_error_returns_and_clears(void **state)
{
	(void)state;
	assert_int_equal(cudaGetLastError(), cudaSuccess);
	assert_int_equal(cudart_ret(cudaErrorInvalidValue),
			 cudaErrorInvalidValue);
	assert_int_equal(cudart_ret(cudaSuccess), cudaSuccess);
	assert_int_equal(cudaPeekAtLastError(), cudaErrorInvalidValue);
	assert_int_equal(cudaGetLastError(), cudaErrorInvalidValue);
	assert_int_equal(cudaGetLastError(), cudaSuccess);
	/* not ready is an answer, not an error */
	cudart_ret(cudaErrorNotReady);
	assert_int_equal(cudaGetLastError(), cudaSuccess);
}

static void unsupported_call_fails_with_not_supported(void **state)
{
	(void)state;
	assert_int_equal(cudart_unsupported("cudaTestCall"),
			 cudaErrorNotSupported);
	assert_int_equal(cudart_unsupported("cudaTestCall"),
			 cudaErrorNotSupported);
	assert_int_equal(cudaGetLastError(), cudaErrorNotSupported);
}

/* Last: the sticky error stays for the rest of the process. */
static void sticky_error_stays(void **state)
{
	(void)state;
	assert_int_equal(cudart_sticky(), cudaSuccess);
	cudart_ret(cudaErrorIllegalAddress);
	cudart_ret(cudaErrorInvalidValue);
	assert_int_equal(cudart_sticky(), cudaErrorIllegalAddress);
	assert_int_equal(cudaGetLastError(), cudaErrorIllegalAddress);
	assert_int_equal(cudaGetLastError(), cudaErrorIllegalAddress);
	assert_int_equal(cudaPeekAtLastError(), cudaErrorIllegalAddress);
	cudart_ret(cudaErrorLaunchFailure);
	assert_int_equal(cudart_sticky(), cudaErrorIllegalAddress);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runtime_error_table_is_sorted_and_complete),
		cmocka_unit_test(runtime_error_names_match_driver_types_h),
		cmocka_unit_test(runtime_sticky_errors_are_the_fatal_ones),
		cmocka_unit_test(cuda_results_map_to_runtime_codes),
		cmocka_unit_test(get_last_error_returns_and_clears),
		cmocka_unit_test(unsupported_call_fails_with_not_supported),
		cmocka_unit_test(sticky_error_stays),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
