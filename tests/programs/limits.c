/* SPDX-License-Identifier: MIT */
/*
 * limits: cuCtxGetLimit and cuCtxSetLimit as a driver-API user makes
 * them (issue 18; cuBLAS reads one while it makes a handle). The stack,
 * printf FIFO and malloc heap have sizes; a set heap of 32 MiB reads
 * back as set; a heap, FIFO or stack larger than a quarter of the
 * device's memory is refused on a vGPU (its memory lies outside the
 * quota), the L2 persisting size is the whole GPU's there
 * (CUDA_ERROR_UNSUPPORTED_LIMIT); an unknown limit and a NULL output are
 * errors. Prints "limits: OK".
 */
#include "prog.h"

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

int main(void)
{
	size_t stack = 0, fifo = 0, heap = 0, v = 0, total = 0, free_mem = 0;
	CUdevice dev;
	CUresult rc;

	prog_init(&dev);
	CHECK(cuMemGetInfo(&free_mem, &total));
	CHECK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
	CHECK(cuCtxGetLimit(&fifo, CU_LIMIT_PRINTF_FIFO_SIZE));
	CHECK(cuCtxGetLimit(&heap, CU_LIMIT_MALLOC_HEAP_SIZE));
	printf("# stack %zu B, printf FIFO %zu B, malloc heap %zu B\n", stack,
	       fifo, heap);
	expect(stack > 0 && fifo > 0 && heap > 0,
	       "the stack, printf FIFO and heap have sizes");

	CHECK(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 32u << 20));
	CHECK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
	expect(v == 32u << 20, "a malloc heap of 32 MiB reads back as set");
	CHECK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2048));
	CHECK(cuCtxGetLimit(&v, CU_LIMIT_STACK_SIZE));
	expect(v >= 2048, "a stack of 2 KiB a thread is granted");
	rc = cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, total);
	printf("# a heap of all %zu bytes: %s\n", total, prog_err_name(rc));
	expect(rc != CUDA_SUCCESS, "a heap as large as the memory is refused");
	CHECK(cuCtxGetLimit(&v, CU_LIMIT_MALLOC_HEAP_SIZE));
	expect(v == 32u << 20, "... and the heap stays as it was");

	expect(cuCtxGetLimit(NULL, CU_LIMIT_STACK_SIZE) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "a NULL output is CUDA_ERROR_INVALID_VALUE");
	expect(cuCtxGetLimit(&v, CU_LIMIT_MAX) != CUDA_SUCCESS,
	       "an unknown limit is an error");
	prog_fini(dev);
	printf("limits: %s\n", failures ? "FAILED" : "OK");
	return failures != 0;
}
