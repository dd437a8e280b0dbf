/* SPDX-License-Identifier: MIT */
/*
 * vm_rtt [ITERS] [CUBIN] [LABEL]: the cost of one round trip to the vGPU's
 * worker, through whichever transport the library chose (pci inside a VM,
 * local on the host), with nothing else in flight. An ordinary driver-API
 * program, so it measures the whole path a CUDA call takes.
 *
 *   ctx_sync      cuCtxSynchronize with nothing queued: one empty command
 *                 (VGPU_OP_CTX_SYNC) and its completion
 *   launch_sync   an empty launch (vecAdd with n = 0, one thread) and a
 *                 cuCtxSynchronize: two descriptors, one wait
 *   idle_sync     ctx_sync after 2 ms of quiet, so that the worker and
 *                 the library have stopped spinning (both spin 50 us) and
 *                 the call takes the doorbell and the completion
 *                 interrupt: the cost of a sporadic call
 *
 * Back-to-back calls find both sides still spinning on the shared ring,
 * so they measure the ring and the worker but not the doorbells; the
 * idle calls measure the doorbells too (in a VM: a trapped BAR0 write,
 * QEMU, vgpu_mdev.ko, an eventfd, and an MSI back into the guest).
 *
 * Each is timed call by call (ITERS times, default 2000, after ITERS/10
 * warm-up calls; idle_sync ITERS/5 times); prints the median and the
 * 90th percentile as
 *   RESULT name=LABEL_ctx_sync_median value=... unit=us
 * LABEL defaults to "rtt". CUBIN defaults to $VGPU_KERNEL_DIR (or
 * build/kernels)/vector_add.cubin. tests/vm-l2 runs it in L1 (local) and
 * L2 (pci) in the same run and compares; docs/PERF.md has the figures.
 */
#include "bench_common.h"

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* The p-th fraction of sorted samples (bench_median sorts them). */
static double percentile(const double *sorted, int n, double p)
{
	int i = (int)(p * (n - 1) + 0.5);

	return sorted[i];
}

static void report(const char *label, const char *what, double *t, int n)
{
	double med = bench_median(t, n);

	printf("RESULT name=%s_%s_median value=%.1f unit=us\n", label, what,
	       med);
	printf("RESULT name=%s_%s_p90 value=%.1f unit=us\n", label, what,
	       percentile(t, n, 0.9));
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 2000;
	const char *label = argc > 3 ? argv[3] : "rtt";
	char path[4096];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUdeviceptr buf;
	double *t;
	size_t len;
	void *img;
	int n = 0;

	if (iters < 10 || iters > 1000000) {
		fprintf(stderr,
			"usage: %s [ITERS 10..1000000] [CUBIN] "
			"[LABEL]\n",
			argv[0]);
		return 2;
	}
	if (argc > 2) {
		snprintf(path, sizeof(path), "%s", argv[2]);
	} else {
		const char *dir = getenv("VGPU_KERNEL_DIR");

		snprintf(path, sizeof(path), "%s/vector_add.cubin",
			 dir && *dir ? dir : "build/kernels");
	}
	t = calloc(iters, sizeof(*t));
	if (!t) {
		fprintf(stderr, "out of memory\n");
		return 1;
	}
	img = bench_read_file(path, &len);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&fn, mod, "vecAdd"));
	CHECK(cuMemAlloc(&buf, 256));

	for (int i = 0; i < iters / 10; i++)
		CHECK(cuCtxSynchronize());
	for (int i = 0; i < iters; i++) {
		double t0 = now_us();

		CHECK(cuCtxSynchronize());
		t[i] = now_us() - t0;
	}
	report(label, "ctx_sync", t, iters);

	void *args[] = {&buf, &buf, &buf, &n};

	for (int i = 0; i < iters / 10; i++) {
		CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args,
				     NULL));
		CHECK(cuCtxSynchronize());
	}
	for (int i = 0; i < iters; i++) {
		double t0 = now_us();

		CHECK(cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, NULL, args,
				     NULL));
		CHECK(cuCtxSynchronize());
		t[i] = now_us() - t0;
	}
	report(label, "launch_sync", t, iters);

	for (int i = 0; i < iters / 5; i++) {
		struct timespec quiet = {0, 2000000};
		double t0;

		nanosleep(&quiet, NULL);
		t0 = now_us();
		CHECK(cuCtxSynchronize());
		t[i] = now_us() - t0;
	}
	report(label, "idle_sync", t, iters / 5);

	CHECK(cuMemFree(buf));
	CHECK(cuModuleUnload(mod));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	free(img);
	free(t);
	return 0;
}
