/* SPDX-License-Identifier: MIT */
/*
 * The <<<grid, block, shmem, stream>>> configuration stack: last in,
 * first out, bounded, and popping with nothing pushed is an error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cudart.h"
#include "cudart_callcfg.h"

static void callcfg_pops_what_was_pushed_last_first(void **state)
{
	struct cudart_callcfg_stack s = {0};
	struct cudart_callcfg a = {{1, 2, 3}, {4, 5, 6}, 7, (cudaStream_t)8};
	struct cudart_callcfg b = {{9, 1, 1}, {32, 1, 1}, 0, NULL}, out;

	(void)state;
	assert_int_equal(cudart_callcfg_push(&s, &a), 0);
	assert_int_equal(cudart_callcfg_push(&s, &b), 0);
	assert_int_equal(cudart_callcfg_pop(&s, &out), 0);
	assert_int_equal(out.grid.x, 9);
	assert_int_equal(out.block.x, 32);
	assert_int_equal(cudart_callcfg_pop(&s, &out), 0);
	assert_int_equal(out.grid.z, 3);
	assert_int_equal(out.block.y, 5);
	assert_int_equal(out.shmem, 7);
	assert_ptr_equal(out.stream, (cudaStream_t)8);
	assert_int_equal(cudart_callcfg_pop(&s, &out), -1);
}

static void callcfg_stack_is_bounded(void **state)
{
	struct cudart_callcfg_stack s = {0};
	struct cudart_callcfg c = {{1, 1, 1}, {1, 1, 1}, 0, NULL};

	(void)state;
	for (int i = 0; i < CUDART_CALLCFG_DEPTH; i++)
		assert_int_equal(cudart_callcfg_push(&s, &c), 0);
	assert_int_equal(cudart_callcfg_push(&s, &c), -1);
}

static void push_then_pop_through_the_entry_points(void **state)
{
	dim3 g = {3, 1, 1}, b = {64, 2, 1}, og, ob;
	size_t shm = 0;
	cudaStream_t st = NULL;

	(void)state;
	assert_int_equal(__cudaPopCallConfiguration(&og, &ob, &shm, &st),
			 cudaErrorMissingConfiguration);
	assert_int_equal(cudaGetLastError(), cudaErrorMissingConfiguration);
	assert_int_equal(
		__cudaPushCallConfiguration(g, b, 128, (cudaStream_t)0x10), 0);
	assert_int_equal(__cudaPopCallConfiguration(&og, &ob, &shm, &st),
			 cudaSuccess);
	assert_int_equal(og.x, 3);
	assert_int_equal(ob.x, 64);
	assert_int_equal(ob.y, 2);
	assert_int_equal(shm, 128);
	assert_ptr_equal(st, (cudaStream_t)0x10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(callcfg_pops_what_was_pushed_last_first),
		cmocka_unit_test(callcfg_stack_is_bounded),
		cmocka_unit_test(push_then_pop_through_the_entry_points),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
