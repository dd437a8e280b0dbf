// SPDX-License-Identifier: MIT
/*
 * pinned_many_rt COUNT MIB [SECONDS]: COUNT pinned buffers of MIB MiB
 * each (cudaMallocHost), every one used for a copy to the device and
 * back, checked on the CPU; then they stay allocated SECONDS seconds
 * (default 0) before they are freed. With the vGPU's cap on pinned host
 * memory reached, cudaMallocHost still succeeds (plain memory instead of
 * a host region) and the copies are still right
 * (tests/integration/runtime_regions_cap.sh).
 */
#include <string.h>
#include <unistd.h>

#include "rt_check.h"

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 4;
	size_t bytes = (size_t)(argc > 2 ? atoi(argv[2]) : 1) << 20;
	int hold = argc > 3 ? atoi(argv[3]) : 0;
	unsigned char **buf;
	unsigned char *d;
	int bad = 0;

	if (count < 2 || bytes == 0)
		return 2;
	buf = (unsigned char **)calloc(count, sizeof(*buf));
	if (!buf)
		return 1;
	CHECK(cudaMalloc(&d, bytes));
	for (int i = 0; i < count; i++) {
		struct cudaPointerAttributes a;

		CHECK(cudaMallocHost(&buf[i], bytes));
		CHECK(cudaPointerGetAttributes(&a, buf[i]));
		bad += a.type != cudaMemoryTypeHost;
		memset(buf[i], i + 1, bytes);
	}
	/* buffer i -> device -> buffer i + 1 (before: i + 2) */
	for (int i = 0; i + 1 < count; i++) {
		CHECK(cudaMemcpy(d, buf[i], bytes, cudaMemcpyHostToDevice));
		CHECK(cudaMemcpyAsync(buf[i + 1], d, bytes,
				      cudaMemcpyDeviceToHost, 0));
		CHECK(cudaStreamSynchronize(0));
		for (size_t k = 0; k < bytes; k += 4093)
			bad += buf[i + 1][k] != 1;
	}
	if (hold > 0) {
		printf("pinned_many_rt: holding %d buffers for %d s\n", count,
		       hold);
		fflush(stdout);
		sleep(hold);
	}
	for (int i = 0; i < count; i++)
		CHECK(cudaFreeHost(buf[i]));
	CHECK(cudaFree(d));
	free(buf);
	if (bad) {
		printf("pinned_many_rt: FAILED (%d wrong bytes or types)\n",
		       bad);
		return 1;
	}
	printf("pinned_many_rt: OK (%d pinned buffers of %zu MiB)\n", count,
	       bytes >> 20);
	return 0;
}
