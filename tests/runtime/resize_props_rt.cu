// SPDX-License-Identifier: MIT
/*
 * resize_props_rt [--wait SECONDS]: the SM count a program sees, from
 * cudaGetDeviceProperties and cudaDeviceGetAttribute, which must agree at
 * start. With --wait it then asks the attribute again every 10 ms until
 * the count changes (the vGPU was resized) and prints
 * "resize_props_rt: 16 -> 24 SMs"; exit 1 if nothing changed in time.
 * NVIDIA's runtime reads the properties once and keeps them (natively a
 * GPU never changes), so only the attribute, asked of the driver each
 * time, follows a resize; the line says what the properties say then.
 * Without --wait, one line and exit 0 (scripts/gpu-check.sh runs every
 * *_rt so).
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rt_check.h"

static int sms_attr(void)
{
	int attr = 0;

	CHECK(cudaDeviceGetAttribute(&attr, cudaDevAttrMultiProcessorCount, 0));
	return attr;
}

static int sms_prop(void)
{
	cudaDeviceProp prop;

	CHECK(cudaGetDeviceProperties(&prop, 0));
	return prop.multiProcessorCount;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double wait = -1, t0;
	int first, now;

	if (argc == 3 && strcmp(argv[1], "--wait") == 0) {
		wait = atof(argv[2]);
	} else if (argc != 1) {
		fprintf(stderr, "usage: resize_props_rt [--wait SECONDS]\n");
		return 2;
	}
	CHECK(cudaSetDevice(0));
	first = sms_attr();
	if (sms_prop() != first) {
		printf("resize_props_rt: FAILED: the property says %d SMs, the "
		       "attribute %d\n",
		       sms_prop(), first);
		return 1;
	}
	printf("resize_props_rt: %d SMs\n", first);
	fflush(stdout);
	if (wait < 0)
		return 0;
	t0 = now_s();
	while ((now = sms_attr()) == first) {
		if (now_s() - t0 > wait) {
			printf("resize_props_rt: still %d SMs after %.0f s\n",
			       first, wait);
			return 1;
		}
		usleep(10000);
	}
	printf("resize_props_rt: %d -> %d SMs (the properties say %d)\n",
	       first, now, sms_prop());
	return 0;
}
