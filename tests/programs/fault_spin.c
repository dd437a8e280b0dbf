/* SPDX-License-Identifier: MIT */
/*
 * fault_spin [trigger]: launches spinForever, which never ends on its
 * own, and synchronizes; with "trigger", spinAfterTrigger, which first
 * signals its completion to dependent launches (an event on its launch
 * completes early). Expects the vGPU's watchdog (its --time-limit) to turn it
 * into an error, and prints the error and how long after the launch it
 * came (the limit, plus the watchdog's poll and the fault's way back).
 */
#include "prog.h"

int main(int argc, char **argv)
{
	const char *name = argc > 1 && strcmp(argv[1], "trigger") == 0
				   ? "spinAfterTrigger"
				   : "spinForever";
	CUdeviceptr flag;
	CUmodule mod;
	CUfunction fn;
	CUresult r;
	double t0;

	prog_init(NULL);
	CHECK(cuModuleLoad(&mod, prog_cubin_path("spin")));
	CHECK(cuModuleGetFunction(&fn, mod, name));
	CHECK(cuMemAlloc(&flag, sizeof(int)));
	CHECK(cuMemsetD32(flag, 0, 1));

	void *params[] = {&flag};
	t0 = prog_now();
	r = cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL);
	if (r == CUDA_SUCCESS)
		r = cuCtxSynchronize();
	if (r == CUDA_SUCCESS) {
		printf("fault_spin: FAILED (an endless kernel finished)\n");
		return 1;
	}
	printf("fault_spin: %s got %s after %.2f s, as expected\n", name,
	       prog_err_name(r), prog_now() - t0);
	return 0;
}
