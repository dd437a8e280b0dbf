/* SPDX-License-Identifier: MIT */
/*
 * long_work: legal CUDA work that takes longer than the vGPU's kernel time
 * limit in all while no kernel of it runs that long (issue 16, bug 3). A
 * watchdog that times queued work, or a stream's waits, as a kernel's run
 * turns it into CUDA_ERROR_LAUNCH_TIMEOUT; it must run to the end.
 *
 *   long_work chain N MS
 *       N spinFor kernels of MS ms on one stream, queued at once, then one
 *       synchronise: the count must come out at N (each ran after the one
 *       before), and it took at least N * MS.
 *   long_work hostfn SLEEP_MS MS
 *       a host function (cuLaunchHostFunc) that sleeps SLEEP_MS, then a
 *       spinFor of MS ms queued behind it on the same stream.
 *   long_work event N MS MS2
 *       stream A runs N spinFor kernels of MS ms, each synchronised
 *       before the next is queued but the last; an event is recorded after
 *       it, and stream B, which waits for that event, runs a spinFor of MS2
 *       ms. B's kernel is queued about MS before it can start.
 *   long_work coop MS
 *       one spinFor of MS ms launched cooperatively
 *       (cuLaunchCooperativeKernel); "long_work: coop launched" is
 *       printed as soon as it is queued (a test resizes the vGPU then).
 *
 * Prints "long_work: MODE ok, ..." with the time it took, or the failing
 * call's error, and exits 1.
 */
#include "prog.h"

static CUfunction spin;

static void launch_spin(CUstream s, CUdeviceptr count, unsigned int ms)
{
	unsigned long long ns = (unsigned long long)ms * 1000000ull;
	void *params[] = {&count, &ns};

	CHECK(cuLaunchKernel(spin, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
}

static unsigned int read_count(CUdeviceptr count)
{
	unsigned int v = 0;

	CHECK(cuMemcpyDtoH(&v, count, sizeof(v)));
	return v;
}

static volatile int hostfn_ran; /* set by the host function */

static void CUDA_CB sleepy(void *arg)
{
	unsigned int ms = *(unsigned int *)arg;
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts))
		;
	hostfn_ran = 1;
}

static int usage(void)
{
	fprintf(stderr, "usage: long_work chain N MS | hostfn SLEEP_MS MS | "
			"event N MS MS2 | coop MS\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	unsigned int n, ms, ms2 = 0, i, got, want;
	char what[160];
	CUdeviceptr count;
	CUstream a, b;
	CUmodule mod;
	CUevent ev;
	double t0, t, least;

	if (!strcmp(mode, "chain") && argc == 4) {
		n = atoi(argv[2]);
		ms = atoi(argv[3]);
	} else if (!strcmp(mode, "hostfn") && argc == 4) {
		n = atoi(argv[2]); /* the host function's sleep */
		ms = atoi(argv[3]);
	} else if (!strcmp(mode, "coop") && argc == 3) {
		n = 1;
		ms = atoi(argv[2]);
	} else if (!strcmp(mode, "event") && argc == 5) {
		n = atoi(argv[2]);
		ms = atoi(argv[3]);
		ms2 = atoi(argv[4]);
	} else {
		return usage();
	}
	if (n < 1 || n > 100000 || ms > 600000)
		return usage();
	prog_init(NULL);
	CHECK(cuModuleLoad(&mod, prog_cubin_path("spin")));
	CHECK(cuModuleGetFunction(&spin, mod, "spinFor"));
	CHECK(cuMemAlloc(&count, sizeof(unsigned int)));
	CHECK(cuMemsetD32(count, 0, 1));
	CHECK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
	CHECK(cuCtxSynchronize());
	t0 = prog_now();

	if (!strcmp(mode, "chain")) {
		for (i = 0; i < n; i++)
			launch_spin(a, count, ms);
		CHECK(cuStreamSynchronize(a));
		t = prog_now() - t0;
		got = read_count(count);
		want = n;
		least = (double)n * ms / 1e3;
		snprintf(what, sizeof(what), "%u kernels of %u ms", n, ms);
	} else if (!strcmp(mode, "coop")) {
		unsigned long long ns = (unsigned long long)ms * 1000000ull;
		void *params[] = {&count, &ns};

		CHECK(cuLaunchCooperativeKernel(spin, 1, 1, 1, 32, 1, 1, 0, a,
						params));
		printf("long_work: coop launched\n");
		fflush(stdout);
		CHECK(cuStreamSynchronize(a));
		t = prog_now() - t0;
		got = read_count(count);
		want = 1;
		least = ms / 1e3;
		snprintf(what, sizeof(what), "a cooperative kernel of %u ms",
			 ms);
	} else if (!strcmp(mode, "hostfn")) {
		CHECK(cuLaunchHostFunc(a, sleepy, &n));
		launch_spin(a, count, ms);
		CHECK(cuStreamSynchronize(a));
		t = prog_now() - t0;
		got = read_count(count) + (hostfn_ran ? 0 : 100);
		want = 1;
		least = ((double)n + ms) / 1e3;
		snprintf(what, sizeof(what),
			 "a %u ms kernel behind a %u ms host function", ms, n);
	} else {
		CHECK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
		for (i = 0; i < n; i++) {
			launch_spin(a, count, ms);
			if (i + 1 < n)
				CHECK(cuStreamSynchronize(a));
		}
		CHECK(cuEventRecord(ev, a));
		CHECK(cuStreamWaitEvent(b, ev, 0));
		launch_spin(b, count, ms2);
		CHECK(cuStreamSynchronize(b));
		CHECK(cuStreamSynchronize(a));
		t = prog_now() - t0;
		got = read_count(count);
		want = n + 1;
		least = ((double)n * ms + ms2) / 1e3;
		snprintf(what, sizeof(what),
			 "a %u ms kernel behind %u of %u ms on another stream",
			 ms2, n, ms);
		CHECK(cuEventDestroy(ev));
	}
	if (got != want) {
		printf("long_work: %s FAILED: count %u, expected %u\n", mode,
		       got, want);
		return 1;
	}
	/* shorter: some of it overlapped what it should have waited for */
	if (t < least * 0.95) {
		printf("long_work: %s FAILED: %.2f s, expected at least %.2f "
		       "s\n",
		       mode, t, least);
		return 1;
	}
	printf("long_work: %s ok, %s, %.2f s\n", mode, what, t);
	CHECK(cuStreamDestroy(a));
	CHECK(cuStreamDestroy(b));
	CHECK(cuMemFree(count));
	CHECK(cuModuleUnload(mod));
	return 0;
}
