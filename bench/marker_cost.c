/* SPDX-License-Identifier: MIT */
/*
 * What a per-launch watchdog marker costs, natively (issue 16: the
 * watchdog may cost the launch path at most 2% of its launch rate).
 *
 *   marker_cost [LAUNCHES [REPS]]
 *
 * Empty kernels on one stream of the primary context, LAUNCHES of them
 * (default 20000) per run, each way below REPS times (default 7),
 * alternated; the median time per launch, to the last launch's return
 * (what the submitting thread pays) and to the end of a synchronise:
 *   plain       cuLaunchKernel
 *   record      cuLaunchKernel, then cuEventRecord (the worker's fallback)
 *   record/8    the same with a record after every 8th launch only
 *   write       cuLaunchKernel, then cuStreamWriteValue32 to mapped memory
 *   ex          cuLaunchKernelEx without attributes
 *   ex+event    cuLaunchKernelEx with CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT
 *               (the cuda backend's launch_marked)
 * Natively an empty kernel's launch is bound by the GPU here, and the ways
 * differ by less than the run-to-run noise (H200: record 1.037-1.061,
 * ex+event 1.027-1.082 in two sessions); scripts/wd-bench.sh measures what
 * counts, a vGPU's launch rate. It also checks that an event given that
 * attribute reads as pending while a 200 ms kernel runs and as done after it
 * (what the watchdog relies on).
 */
#include "bench_common.h"

#include <string.h>
#include <unistd.h>

static const char ptx[] =
	".version 8.0\n.target sm_90\n.address_size 64\n"
	".visible .entry empty() { ret; }\n"
	".visible .entry spin(.param .u64 ns) {\n"
	" .reg .u64 %r<4>; .reg .pred %p;\n"
	" ld.param.u64 %r1, [ns];\n"
	" mov.u64 %r2, %globaltimer;\n"
	"L: mov.u64 %r3, %globaltimer; sub.u64 %r3, %r3, %r2;\n"
	" setp.lt.u64 %p, %r3, %r1; @%p bra L;\n"
	" ret; }\n";

enum { PLAIN, RECORD, RECORD8, WRITE, EX, EX_EVENT, NWAYS };
static const char *const way_name[NWAYS] = {"plain", "record", "record/8",
					    "write", "ex",     "ex+event"};

#define NEV 1024

static CUfunction empty_fn, spin_fn;
static CUstream st;
static CUevent ev[NEV];
static CUdeviceptr word;

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static CUresult launch_ex(CUfunction f, void **params, CUevent e)
{
	CUlaunchConfig cfg = {0};
	CUlaunchAttribute at;

	cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = 1;
	cfg.blockDimX = 32;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.hStream = st;
	if (e) {
		memset(&at, 0, sizeof(at));
		at.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT;
		at.value.programmaticEvent.event = e;
		at.value.programmaticEvent.flags = 0;
		at.value.programmaticEvent.triggerAtBlockStart = 0;
		cfg.attrs = &at;
		cfg.numAttrs = 1;
	}
	return cuLaunchKernelEx(&cfg, f, params, NULL);
}

/* one run: microseconds per launch, submitted and completed */
static void run(int way, int n, double *sub, double *done)
{
	double t0 = now_us();

	for (int i = 0; i < n; i++) {
		switch (way) {
		case PLAIN:
			CHECK(cuLaunchKernel(empty_fn, 1, 1, 1, 32, 1, 1, 0, st,
					     NULL, NULL));
			break;
		case RECORD:
		case RECORD8:
			CHECK(cuLaunchKernel(empty_fn, 1, 1, 1, 32, 1, 1, 0, st,
					     NULL, NULL));
			if (way == RECORD || i % 8 == 7)
				CHECK(cuEventRecord(ev[i % NEV], st));
			break;
		case WRITE:
			CHECK(cuLaunchKernel(empty_fn, 1, 1, 1, 32, 1, 1, 0, st,
					     NULL, NULL));
			CHECK(cuStreamWriteValue32(st, word, (cuuint32_t)i, 0));
			break;
		case EX:
			CHECK(launch_ex(empty_fn, NULL, NULL));
			break;
		case EX_EVENT:
			CHECK(launch_ex(empty_fn, NULL, ev[i % NEV]));
			break;
		}
	}
	*sub = (now_us() - t0) / n;
	CHECK(cuStreamSynchronize(st));
	*done = (now_us() - t0) / n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The attribute's event: pending while the kernel runs, done after. */
static int check_event(void)
{
	unsigned long long ns = 200000000ull;
	void *params[] = {&ns};
	CUresult during, after;

	CHECK(launch_ex(spin_fn, params, ev[0]));
	usleep(50000);
	during = cuEventQuery(ev[0]);
	CHECK(cuStreamSynchronize(st));
	after = cuEventQuery(ev[0]);
	printf("RESULT name=programmatic_event during=%d after=%d %s\n",
	       (int)during, (int)after,
	       during == CUDA_ERROR_NOT_READY && after == CUDA_SUCCESS
		       ? "ok"
		       : "UNUSABLE");
	return during == CUDA_ERROR_NOT_READY && after == CUDA_SUCCESS;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000;
	int reps = argc > 2 ? atoi(argv[2]) : 7;
	double sub[NWAYS][64], done[NWAYS][64];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	void *host;

	if (n < 1 || reps < 1 || reps > 64) {
		fprintf(stderr, "usage: marker_cost [LAUNCHES [REPS<=64]]\n");
		return 2;
	}
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoadData(&mod, ptx));
	CHECK(cuModuleGetFunction(&empty_fn, mod, "empty"));
	CHECK(cuModuleGetFunction(&spin_fn, mod, "spin"));
	CHECK(cuStreamCreate(&st, CU_STREAM_NON_BLOCKING));
	for (int i = 0; i < NEV; i++)
		CHECK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
	CHECK(cuMemHostAlloc(&host, 4096, CU_MEMHOSTALLOC_DEVICEMAP));
	CHECK(cuMemHostGetDevicePointer(&word, host, 0));
	for (int w = 0; w < NWAYS; w++) /* warm-up */
		run(w, 1000, &sub[w][0], &done[w][0]);
	for (int r = 0; r < reps; r++)
		for (int w = 0; w < NWAYS; w++) {
			int way = r % 2 ? NWAYS - 1 - w : w;

			run(way, n, &sub[way][r], &done[way][r]);
		}
	double base = median(sub[PLAIN], reps);
	for (int w = 0; w < NWAYS; w++) {
		double s = median(sub[w], reps), d = median(done[w], reps);

		printf("RESULT name=%s submit_us=%.3f done_us=%.3f "
		       "submit_vs_plain=%.3f\n",
		       way_name[w], s, d, s / base);
	}
	return check_event() ? 0 : 1;
}
