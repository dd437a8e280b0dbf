/* SPDX-License-Identifier: MIT */
/*
 * smid_map [expected-count]: which SMs run this vGPU's blocks. Launches
 * recordSmid with 32 blocks per SM and prints the sorted set of SM ids,
 * as "smid_map: N SMs: id,id,...". With an expected count it launches
 * again, with twice the blocks each time (up to 256 per SM), for up to
 * 10 seconds, until the set has that many SMs: a GPU's block scheduler,
 * or a simulator's SM threads on a busy 2-core machine, need not use
 * every SM for one short grid. It fails if it ends with another count.
 */
#include "prog.h"

#define MAX_SMID   4096
#define MAX_GROWTH 8 /* up to 32 << 8 blocks per SM */

int main(int argc, char **argv)
{
	int expect = argc > 1 ? atoi(argv[1]) : -1;
	static unsigned char seen[MAX_SMID];
	int sms, blocks, max_blocks, count = 0;
	unsigned int *ids;
	CUdeviceptr out;
	CUmodule mod;
	CUfunction fn;
	CUdevice dev;

	prog_init(&dev);
	CHECK(cuDeviceGetAttribute(
		&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
	max_blocks = (32 * sms) << MAX_GROWTH;
	ids = malloc(max_blocks * sizeof(*ids));
	if (!ids) {
		fprintf(stderr, "smid_map: out of host memory\n");
		return 1;
	}
	CHECK(cuModuleLoad(&mod, prog_cubin_path("smid")));
	CHECK(cuModuleGetFunction(&fn, mod, "recordSmid"));
	CHECK(cuMemAlloc(&out, max_blocks * sizeof(*ids)));

	double t0 = prog_now();

	for (int round = 0; prog_now() - t0 < 10; round++) {
		void *params[] = {&out};

		blocks = (32 * sms)
			 << (round < MAX_GROWTH ? round : MAX_GROWTH);
		CHECK(cuMemsetD32(out, 0xffffffffu, blocks));
		CHECK(cuLaunchKernel(fn, blocks, 1, 1, 64, 1, 1, 0, NULL,
				     params, NULL));
		CHECK(cuCtxSynchronize());
		CHECK(cuMemcpyDtoH(ids, out, blocks * sizeof(*ids)));
		for (int b = 0; b < blocks; b++) {
			if (ids[b] >= MAX_SMID) {
				printf("smid_map: FAILED (block %d reports "
				       "SM %u)\n",
				       b, ids[b]);
				return 1;
			}
			count += !seen[ids[b]];
			seen[ids[b]] = 1;
		}
		if (expect < 0 || count >= expect)
			break;
	}

	printf("smid_map: %d SMs:", count);
	for (int i = 0, first = 1; i < MAX_SMID; i++) {
		if (seen[i]) {
			printf("%s%d", first ? " " : ",", i);
			first = 0;
		}
	}
	printf("\n");
	CHECK(cuMemFree(out));
	CHECK(cuModuleUnload(mod));
	prog_fini(dev);
	free(ids);
	if (count > sms || (expect >= 0 && count != expect)) {
		printf("smid_map: FAILED (%d SMs used, device has %d, expected "
		       "%d)\n",
		       count, sms, expect);
		return 1;
	}
	return 0;
}
