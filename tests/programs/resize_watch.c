/* SPDX-License-Identifier: MIT */
/*
 * resize_watch [seconds]: prints the vGPU's SM count
 * (cuDeviceGetAttribute(MULTIPROCESSOR_COUNT)) and its name, then asks
 * again every 10 ms until the count changes (a resize) and prints the new
 * one: "resize_watch: 16 -> 24 SMs". Exits 1 if nothing changed within the
 * time (default 30 s). One context, kept the whole time: the change must
 * reach a running program's new queries. It also times a 64 MiB copy to
 * the device before and after ("copy GB/s: 50.1 before, 49.8 after"): the
 * worker's pinned staging must stay pinned for the new context.
 */
#include <unistd.h>

#include "prog.h"

#define COPY_BYTES (64u << 20)

/* GB/s of the best of 3 copies of COPY_BYTES to dst. */
static double copy_rate(CUdeviceptr dst, const void *src)
{
	double best = 0, t0, r;

	for (int i = 0; i < 3; i++) {
		t0 = prog_now();
		CHECK(cuMemcpyHtoD(dst, src, COPY_BYTES));
		r = COPY_BYTES / (prog_now() - t0) / 1e9;
		if (r > best)
			best = r;
	}
	return best;
}

static int sm_count(CUdevice dev)
{
	int v = 0;

	CHECK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
				   dev));
	return v;
}

int main(int argc, char **argv)
{
	double limit = argc > 1 ? atof(argv[1]) : 30, t0;
	double before, after;
	char name[256];
	CUdeviceptr buf;
	CUdevice dev;
	void *host;
	int first, now;

	prog_init(&dev);
	host = calloc(1, COPY_BYTES);
	if (!host)
		return 1;
	CHECK(cuMemAlloc(&buf, COPY_BYTES));
	before = copy_rate(buf, host);
	first = sm_count(dev);
	CHECK(cuDeviceGetName(name, sizeof(name), dev));
	printf("resize_watch: %d SMs (%s)\n", first, name);
	fflush(stdout);
	t0 = prog_now();
	while ((now = sm_count(dev)) == first) {
		if (prog_now() - t0 > limit) {
			printf("resize_watch: still %d SMs after %.0f s\n",
			       first, limit);
			return 1;
		}
		usleep(10000);
	}
	CHECK(cuDeviceGetName(name, sizeof(name), dev));
	printf("resize_watch: %d -> %d SMs (%s)\n", first, now, name);
	after = copy_rate(buf, host);
	usleep(500000); /* the old context is reclaimed meanwhile */
	printf("resize_watch: copy GB/s: %.1f before, %.1f at once after, "
	       "%.1f half a second later\n",
	       before, after, copy_rate(buf, host));
	CHECK(cuMemFree(buf));
	free(host);
	prog_fini(dev);
	return 0;
}
