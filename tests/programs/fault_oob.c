/* SPDX-License-Identifier: MIT */
/*
 * fault_oob: launches oobWrite with an offset far outside every
 * allocation (and outside this vGPU's address window) and synchronizes.
 * Expects an error (on a real GPU CUDA_ERROR_ILLEGAL_ADDRESS) and prints
 * it; succeeding is the failure here.
 */
#include "prog.h"

int main(void)
{
	unsigned long long offset = 1ull << 42; /* 4+ TiB past p */
	CUdeviceptr p;
	CUmodule mod;
	CUfunction fn;
	CUresult r;

	prog_init(NULL);
	CHECK(cuModuleLoad(&mod, prog_cubin_path("oob_write")));
	CHECK(cuModuleGetFunction(&fn, mod, "oobWrite"));
	CHECK(cuMemAlloc(&p, 4096));

	void *params[] = {&p, &offset};
	r = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL);
	if (r == CUDA_SUCCESS)
		r = cuCtxSynchronize();
	if (r == CUDA_SUCCESS) {
		printf("fault_oob: FAILED (an out-of-bounds write "
		       "succeeded)\n");
		return 1;
	}
	printf("fault_oob: got %s, as expected\n", prog_err_name(r));
	return 0;
}
