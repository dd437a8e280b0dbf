/* SPDX-License-Identifier: MIT */
/*
 * One role of the mixed co-located workload (issue 7; scripts/
 * sched-bench.sh runs the three roles at once under each configuration).
 * An ordinary driver-API program: natively it uses the whole GPU (alone,
 * time-sliced or as an MPS client), with VGPU=name and
 * LD_LIBRARY_PATH=build/lib it runs on a vGPU.
 *
 *   mixed_workload ROLE KDIR [options]
 *
 * Roles:
 *   lc        latency-critical: bursts of ON ms, OFF ms apart; in a burst
 *             computeBound kernels of BLOCKS blocks, each launched and
 *             waited for (its latency: launch to completion, host clock)
 *   compute   batch: computeBound kernels of BLOCKS blocks, INFLIGHT
 *             launched ahead, continuously (a job = one kernel); with
 *             --streams S they go round-robin over S streams, so up to
 *             S grids are pending at once (a flood: the GPU's work
 *             distributor then has them all queued ahead of a
 *             neighbour's grid, where one stream offers one at a time)
 *   memory    batch: saxpy over ELEMENTS floats (memory-bound: 12 bytes
 *             moved per element), INFLIGHT ahead, continuously
 *   calibrate-compute, calibrate-memory
 *             the ITERS (ELEMENTS) for which one kernel takes TARGET ms
 *             here (scaled from a first guess, three rounds)
 *
 * Options: --blocks N --iters N --elements N --inflight N --streams S
 *          --gpu-time N (lc: every Nth kernel is timed by events on the
 *          GPU instead, and left out of the latency samples)
 *          --warm-bursts N (lc: N bursts in the same rhythm before the
 *          window, reported apart: lc_warm)
 *          --block-times N (lc: every Nth kernel is computeBoundTimed
 *          instead, its blocks' start, end, cycles and SM read back:
 *          lc_blocks; not a latency sample)
 *          --on-ms N --off-ms N --seconds S --start EPOCH_MS --target-ms T
 * The measurement runs from --start (wall clock, ms since the epoch, so
 * that the three processes measure the same window) for --seconds;
 * before it the role warms up.
 *
 * Lines for scripts:
 *   lc kernels N p50_us P p99_us Q p999_us R max_us M on_ms A off_ms B
 *      head_kernels H head_p99_us X rest_p99_us Y
 *                                  (head: launched in a burst's first
 *                                  HEAD_MS, when its SMs may still be
 *                                  coming back; rest: the others)
 *   lc_gpu kernels N gpu_p50_us A gpu_p99_us B two_p50_us C
 *      kernel_p50_us K gap_p50_us G   (with --gpu-time: one kernel,
 *                                  two kernels, and from those medians
 *                                  a kernel's own time and the gap
 *                                  before the first; see time_on_gpu)
 *   lc_gpu_positions 0-1: n N p50 A p99 B ...   (the same by position)
 *   lc_blocks kernels N start_spread_us A makespan_us B block_kcycles C
 *      block_mhz D blocks_per_sm_max E step_p50_us S step_mean_us T
 *                                  (with --block-times: medians; step:
 *                                  from a kernel's last block's end to
 *                                  the first block's start of the next,
 *                                  queued behind it on the stream)
 *   lc_warm bursts N late L warm_kernels K warm_p50_us A warm_p99_us B
 *      warm_max_us M
 *                                  (the bursts before the window)
 *   lc_burst start_ms T head_max_us U at_ms A   (one per burst: when it
 *                                  began, wall clock, and its head's
 *                                  slowest kernel, launched A ms in)
 *   lc_positions 0-1: n N p50 A p99 B 1-2: ... 50-end: ...
 *                                  (the same by the launch's position
 *                                  in its burst, ms; printed first)
 *   batch jobs N seconds S jobs_per_s R mean_ms M
 *   calibrated iters N ms M            (or: elements N ms M)
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "bench_common.h"

#define MAX_INFLIGHT	  64
#define MAX_SAMPLES	  (4 << 20)
#define MAX_BLOCK_SAMPLES (1 << 16)

struct opts {
	const char *role, *kdir;
	int blocks, iters, inflight, streams, on_ms, off_ms, gpu_time;
	int warm_bursts, block_times;
	long elements;
	double seconds, target_ms, start_ms;
};

struct gpu {
	CUcontext ctx;
	CUstream s, batch[MAX_INFLIGHT]; /* batch[0] is s */
	int nbatch;
	CUfunction compute, saxpy, timed;
	CUdeviceptr out, x, y, rec;
	long out_elems, elements;
};

static double wall_ms(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return tv.tv_sec * 1e3 + tv.tv_usec / 1e3;
}

static CUfunction load(const char *kdir, const char *file, const char *name)
{
	char path[4096];
	CUmodule mod;
	CUfunction fn;
	size_t len;
	void *img;

	snprintf(path, sizeof(path), "%s/%s", kdir, file);
	img = bench_read_file(path, &len);
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&fn, mod, name));
	free(img);
	return fn;
}

static void gpu_init(struct gpu *g, const struct opts *o)
{
	CUdevice dev;

	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&g->ctx, dev));
	CHECK(cuCtxSetCurrent(g->ctx));
	CHECK(cuStreamCreate(&g->s, CU_STREAM_NON_BLOCKING));
	g->batch[0] = g->s;
	g->nbatch = o->streams;
	for (int i = 1; i < g->nbatch; i++)
		CHECK(cuStreamCreate(&g->batch[i], CU_STREAM_NON_BLOCKING));
	g->compute = load(o->kdir, "compute_bound.cubin", "computeBound");
	g->saxpy = load(o->kdir, "saxpy.cubin", "saxpy");
	g->out_elems = (long)o->blocks * 256;
	CHECK(cuMemAlloc(&g->out, g->out_elems * sizeof(float)));
	if (o->block_times) {
		g->timed = load(o->kdir, "compute_bound_timed.cubin",
				"computeBoundTimed");
		/* two kernels' records: a pair is timed */
		CHECK(cuMemAlloc(&g->rec, (size_t)o->blocks * 8 * 8));
	}
	g->elements = o->elements;
	if (g->elements > 0) {
		CHECK(cuMemAlloc(&g->x, g->elements * sizeof(float)));
		CHECK(cuMemAlloc(&g->y, g->elements * sizeof(float)));
		CHECK(cuMemsetD32(g->x, 0x3f800000u, g->elements)); /* 1.0f */
		CHECK(cuMemsetD32(g->y, 0, g->elements));
	}
	CHECK(cuCtxSynchronize());
}

static void launch_compute(struct gpu *g, CUstream s, int blocks, int iters)
{
	void *args[] = {&g->out, &iters};

	CHECK(cuLaunchKernel(g->compute, blocks, 1, 1, 256, 1, 1, 0, s, args,
			     NULL));
}

static void launch_saxpy(struct gpu *g, CUstream s, long n)
{
	float a = 0.5f;
	int ni = (int)n;
	void *args[] = {&a, &g->x, &g->y, &ni};

	CHECK(cuLaunchKernel(g->saxpy, (unsigned)((n + 255) / 256), 1, 1, 256,
			     1, 1, 0, s, args, NULL));
}

/* Sleep until wall time t (ms). */
static void sleep_until(double t)
{
	double now;

	while ((now = wall_ms()) < t)
		usleep((useconds_t)((t - now) > 50 ? 50000 : (t - now) * 1e3));
}

#define HEAD_MS 5 /* the head of a burst, reported apart */

/* The p50 (p50 may be NULL) and p99 of the samples whose position in
 * their burst (ms) is in [lo, hi); 0 when there are none. */
static long quantiles_at(const double *lat, const double *pos, long n,
			 double lo, double hi, double *tmp, double *p50,
			 double *p99)
{
	long k = 0;

	for (long i = 0; i < n; i++)
		if (pos[i] >= lo && pos[i] < hi)
			tmp[k++] = lat[i];
	if (p50)
		*p50 = k ? bench_quantile(tmp, (int)k, 0.5) : 0;
	*p99 = k ? bench_quantile(tmp, (int)k, 0.99) : 0;
	return k;
}

/*
 * Where in a burst the slow kernels are: by the position of a kernel's
 * launch in its burst, in bins (ms) from the burst's start. A lent
 * slice comes back at a burst's start; what a policy costs later in the
 * burst is something else.
 */
static void print_positions(const char *label, const double *lat,
			    const double *pos, long n, double *tmp)
{
	static const double edges[] = {0, 1, 2, 5, 20, 50};
	const unsigned nb = sizeof(edges) / sizeof(edges[0]);
	double p50, p99, hi;
	long k;

	printf("%s", label);
	for (unsigned b = 0; b < nb; b++) {
		hi = b + 1 < nb ? edges[b + 1] : 1e9;
		k = quantiles_at(lat, pos, n, edges[b], hi, tmp, &p50, &p99);
		if (b + 1 < nb)
			printf(" %g-%g", edges[b], hi);
		else
			printf(" %g-end", edges[b]);
		printf(": n %ld p50 %.1f p99 %.1f", k, p50, p99);
	}
	printf("\n");
}

/*
 * nk lc kernels timed by events on their stream (us), without the host's
 * wait. The first kernel reaches the stream after the start event does:
 * the gap between the two submissions is in the time too. The second
 * is queued while the first runs, so two kernels minus one is a
 * kernel's own time (with the step from one kernel to the next on the
 * stream), and one minus that the gap. lc_gpu gives these as
 * differences of the medians of one-kernel and two-kernel samples.
 */
static double time_on_gpu(struct gpu *g, const struct opts *o, CUevent ev[2],
			  int nk)
{
	float ms;

	CHECK(cuEventRecord(ev[0], g->s));
	for (int i = 0; i < nk; i++)
		launch_compute(g, g->s, o->blocks, o->iters);
	CHECK(cuEventRecord(ev[1], g->s));
	CHECK(cuEventSynchronize(ev[1]));
	CHECK(cuEventElapsedTime(&ms, ev[0], ev[1]));
	return ms * 1e3;
}

/* One lc kernel launched and waited for: its latency (us, host clock). */
static double lc_kernel_us(struct gpu *g, const struct opts *o)
{
	double t0 = bench_now_ms();

	launch_compute(g, g->s, o->blocks, o->iters);
	CHECK(cuStreamSynchronize(g->s));
	return (bench_now_ms() - t0) * 1e3;
}

/* Per block-timed lc kernel: what its blocks say (block_times). */
struct block_sample {
	double spread_us;   /* last block's start minus the first's */
	double makespan_us; /* last block's end minus the first's start */
	double kcycles;	    /* a block's SM cycles (thousands), median */
	double mhz;	    /* all its blocks' cycles over their time */
	double per_sm;	    /* most blocks that ran on one SM */
	double step_us;	    /* the next kernel's first start minus this
			     * one's last end */
};

/*
 * Two lc kernels as computeBoundTimed (computeBound's loop and geometry,
 * plus the records: a fraction of a us more, so its times compare with
 * each other, not with lc_gpu's), the second queued behind the first,
 * their blocks' records read back into rec (4 per block, the first
 * kernel's then the second's): does a slower kernel start its blocks
 * later, run them for more cycles, or at a lower clock, or is the time
 * between one kernel and the next on the stream (the GPU's own step:
 * completion, then dispatch) longer? A block's time is taken in cycles
 * (exact); the global timer may tick in about 1 us steps (0.256 on an
 * H200), so the clock is all cycles over all time, not a median of
 * quotients. The step is the GPU's own only while the second launch
 * reaches the stream before the first kernel ends (a launch takes a few
 * us, lc's kernel about 50) and no resize of the worker falls between
 * them (it would put the second on a new stream behind a fence; a
 * dynamic policy resizes lc between its bursts, not in them).
 */
static void time_blocks(struct gpu *g, const struct opts *o,
			struct block_sample *bs, unsigned long long *rec,
			double *tmp)
{
	int nb = o->blocks, iters = o->iters, most = 0;
	unsigned long long t0 = ~0ull, t1 = 0, cycles = 0, ns = 0, next = ~0ull;
	CUdeviceptr rec2 = g->rec + (size_t)nb * 4 * sizeof(*rec);
	void *args[] = {&g->out, &iters, &g->rec};
	void *args2[] = {&g->out, &iters, &rec2};

	CHECK(cuLaunchKernel(g->timed, nb, 1, 1, 256, 1, 1, 0, g->s, args,
			     NULL));
	CHECK(cuLaunchKernel(g->timed, nb, 1, 1, 256, 1, 1, 0, g->s, args2,
			     NULL));
	CHECK(cuStreamSynchronize(g->s));
	CHECK(cuMemcpyDtoH(rec, g->rec, (size_t)nb * 8 * sizeof(*rec)));
	for (int b = 0; b < nb; b++)
		next = rec[4 * (nb + b)] < next ? rec[4 * (nb + b)] : next;
	for (int b = 0; b < nb; b++) {
		unsigned long long *r = rec + 4 * b;
		int same = 0;

		t0 = r[0] < t0 ? r[0] : t0;
		t1 = r[1] > t1 ? r[1] : t1;
		cycles += r[2];
		ns += r[1] > r[0] ? r[1] - r[0] : 0;
		tmp[b] = r[2] / 1e3;
		for (int c = 0; c < nb; c++)
			same += rec[4 * c + 3] == r[3];
		most = same > most ? same : most;
	}
	bs->makespan_us = (t1 - t0) / 1e3;
	bs->kcycles = bench_quantile(tmp, nb, 0.5);
	bs->mhz = ns ? cycles * 1e3 / (double)ns : 0;
	for (int b = 0; b < nb; b++)
		tmp[b] = (rec[4 * b] - t0) / 1e3;
	bs->spread_us = bench_quantile(tmp, nb, 1.0);
	bs->per_sm = most;
	bs->step_us = ((double)next - (double)t1) / 1e3;
}

static double sample_median(const struct block_sample *bs, long n, size_t off,
			    double *tmp)
{
	for (long i = 0; i < n; i++)
		tmp[i] = *(const double *)((const char *)&bs[i] + off);
	return n ? bench_quantile(tmp, (int)n, 0.5) : 0;
}

/* The medians of the block samples, one line for scripts. */
static void print_blocks(const struct block_sample *bs, long n, double *tmp)
{
#define MEDIAN_OF(f) sample_median(bs, n, offsetof(struct block_sample, f), tmp)
	double step = 0;

	for (long i = 0; i < n; i++)
		step += bs[i].step_us;
	printf("lc_blocks kernels %ld start_spread_us %.2f makespan_us %.2f "
	       "block_kcycles %.2f block_mhz %.0f blocks_per_sm_max %.0f "
	       "step_p50_us %.2f step_mean_us %.2f\n",
	       n, MEDIAN_OF(spread_us), MEDIAN_OF(makespan_us),
	       MEDIAN_OF(kcycles), MEDIAN_OF(mhz), MEDIAN_OF(per_sm),
	       MEDIAN_OF(step_us), n ? step / n : 0);
#undef MEDIAN_OF
}

/*
 * Bursts before the window, in its rhythm (the last ends off_ms before
 * --start). A dynamic policy learns a steady rhythm from three bursts
 * and then takes lent SMs back before each burst instead of during it
 * (DESIGN.md, Scheduling); a service runs for hours, so the window
 * measures that steady state and these first bursts are reported apart.
 * Their latencies go into lat (at most MAX_SAMPLES).
 */
static void run_warm_bursts(struct gpu *g, const struct opts *o, double *lat)
{
	double period = o->on_ms + o->off_ms, t, us;
	long n = 0;
	int late = 0;

	if (!o->warm_bursts)
		return;
	for (int b = o->warm_bursts; b > 0; b--) {
		t = o->start_ms - b * period;
		/* started late (a slow start-up): shorter, or none at all */
		late += wall_ms() > t + 1;
		sleep_until(t);
		while (wall_ms() < t + o->on_ms) {
			us = lc_kernel_us(g, o);
			if (n < MAX_SAMPLES)
				lat[n++] = us;
		}
	}
	/* keys of their own: scripts take the first p99_us of a log */
	printf("lc_warm bursts %d late %d warm_kernels %ld warm_p50_us %.1f "
	       "warm_p99_us %.1f warm_max_us %.1f\n",
	       o->warm_bursts, late, n,
	       n ? bench_quantile(lat, (int)n, 0.5) : 0,
	       n ? bench_quantile(lat, (int)n, 0.99) : 0,
	       n ? bench_quantile(lat, (int)n, 1.0) : 0);
}

static int run_lc(struct gpu *g, const struct opts *o)
{
	double *lat = malloc(MAX_SAMPLES * sizeof(double)), end, t0;
	double *pos = malloc(MAX_SAMPLES * sizeof(double));
	double *tmp = malloc(MAX_SAMPLES * sizeof(double));
	double on = 0, off = 0, burst_end, mark, burst_t0;
	double head_p99, rest_p99, us, worst, worst_at;
	double *gpu = o->gpu_time ? malloc(MAX_SAMPLES * sizeof(double)) : NULL;
	double *gpu2 =
		o->gpu_time ? malloc(MAX_SAMPLES * sizeof(double)) : NULL;
	double *gpu_pos =
		o->gpu_time ? malloc(MAX_SAMPLES * sizeof(double)) : NULL;
	struct block_sample *bsam =
		o->block_times ? malloc(MAX_BLOCK_SAMPLES * sizeof(*bsam))
			       : NULL;
	unsigned long long *brec =
		o->block_times ? malloc((size_t)o->blocks * 8 * sizeof(*brec))
			       : NULL;
	long n = 0, nh, k = 0, ng = 0, ng2 = 0, kb = 0, nb = 0;
	CUevent ev[2];

	if (!lat || !pos || !tmp ||
	    (o->gpu_time && (!gpu || !gpu2 || !gpu_pos)) ||
	    (o->block_times && (!bsam || !brec)))
		return 1;
	if (o->gpu_time) {
		CHECK(cuEventCreate(&ev[0], CU_EVENT_DEFAULT));
		CHECK(cuEventCreate(&ev[1], CU_EVENT_DEFAULT));
	}
	/* warm-up: a few kernels */
	for (int i = 0; i < 50; i++) {
		launch_compute(g, g->s, o->blocks, o->iters);
		CHECK(cuStreamSynchronize(g->s));
	}
	run_warm_bursts(g, o, lat);
	sleep_until(o->start_ms);
	end = o->start_ms + o->seconds * 1e3;
	while (wall_ms() < end) {
		mark = wall_ms();
		burst_end = mark + o->on_ms;
		burst_t0 = bench_now_ms();
		worst = worst_at = 0;
		while ((t0 = bench_now_ms()), wall_ms() < burst_end) {
			if (o->block_times && ++kb % o->block_times == 0) {
				/* block-timed: not a latency sample */
				if (nb < MAX_BLOCK_SAMPLES)
					time_blocks(g, o, &bsam[nb++], brec,
						    tmp);
				continue;
			}
			if (o->gpu_time && ++k % o->gpu_time == 0) {
				/* timed on the GPU: not a latency sample */
				/* every other one: two kernels */
				if ((k / o->gpu_time) % 2 &&
				    ng2 < MAX_SAMPLES) {
					gpu2[ng2++] = time_on_gpu(g, o, ev, 2);
				} else if (ng < MAX_SAMPLES) {
					gpu_pos[ng] = t0 - burst_t0;
					gpu[ng++] = time_on_gpu(g, o, ev, 1);
				}
				continue;
			}
			us = lc_kernel_us(g, o);
			/* full: stop taking samples (never overwrite) */
			if (n < MAX_SAMPLES) {
				lat[n] = us;
				pos[n++] = t0 - burst_t0;
			}
			if (t0 - burst_t0 < HEAD_MS && us > worst) {
				worst = us;
				worst_at = t0 - burst_t0;
			}
		}
		/* when it began (to line up with vgpud's log) and its head's
		 * slowest kernel */
		printf("lc_burst start_ms %.3f head_max_us %.1f at_ms %.2f\n",
		       mark, worst, worst_at);
		on += wall_ms() - mark;
		mark = wall_ms();
		if (mark >= end)
			break;
		usleep((useconds_t)o->off_ms * 1000);
		off += wall_ms() - mark;
	}
	/* launched in the burst's first HEAD_MS, or later */
	nh = quantiles_at(lat, pos, n, 0, HEAD_MS, tmp, NULL, &head_p99);
	quantiles_at(lat, pos, n, HEAD_MS, 1e9, tmp, NULL, &rest_p99);
	/* before the quantiles below sort lat, which pos follows */
	print_positions("lc_positions", lat, pos, n, tmp);
	printf("lc kernels %ld p50_us %.1f p99_us %.1f p999_us %.1f max_us "
	       "%.1f on_ms %.0f off_ms %.0f head_kernels %ld head_p99_us "
	       "%.1f rest_p99_us %.1f\n",
	       n, bench_quantile(lat, (int)n, 0.5),
	       bench_quantile(lat, (int)n, 0.99),
	       bench_quantile(lat, (int)n, 0.999),
	       bench_quantile(lat, (int)n, 1.0), on, off, nh, head_p99,
	       rest_p99);
	if (o->gpu_time) {
		double one, two;

		print_positions("lc_gpu_positions", gpu, gpu_pos, ng, tmp);
		one = ng ? bench_quantile(gpu, (int)ng, 0.5) : 0;
		two = ng2 ? bench_quantile(gpu2, (int)ng2, 0.5) : 0;
		/* without samples of both kinds, no difference to give */
		if (ng && ng2)
			printf("lc_gpu kernels %ld gpu_p50_us %.1f gpu_p99_us "
			       "%.1f two_p50_us %.1f kernel_p50_us %.1f "
			       "gap_p50_us %.1f\n",
			       ng, one, bench_quantile(gpu, (int)ng, 0.99), two,
			       two - one, 2 * one - two);
		else
			printf("lc_gpu kernels %ld gpu_p50_us - gpu_p99_us - "
			       "two_p50_us - kernel_p50_us - gap_p50_us -\n",
			       ng);
		CHECK(cuEventDestroy(ev[0]));
		CHECK(cuEventDestroy(ev[1]));
	}
	if (o->block_times)
		print_blocks(bsam, nb, tmp);
	free(bsam);
	free(brec);
	free(gpu);
	free(gpu2);
	free(gpu_pos);
	free(lat);
	free(pos);
	free(tmp);
	return 0;
}

/* Job number i of a batch role, and its event, on its stream. */
static void issue(struct gpu *g, const struct opts *o, bool memory, long i,
		  CUevent ev)
{
	CUstream s = g->batch[i % g->nbatch];

	if (memory)
		launch_saxpy(g, s, g->elements);
	else
		launch_compute(g, s, o->blocks, o->iters);
	CHECK(cuEventRecord(ev, s));
}

/*
 * Batch: keep inflight jobs queued; count the ones done in the window
 * (waited for in the order issued: over several streams a later one may
 * finish first, which only delays its count to its turn).
 */
static int run_batch(struct gpu *g, const struct opts *o, bool memory)
{
	CUevent ev[MAX_INFLIGHT];
	double t_start = 0, end;
	long jobs = 0, issued = 0, done = 0;
	int k = o->inflight, i;

	for (i = 0; i < k; i++)
		CHECK(cuEventCreate(&ev[i], CU_EVENT_DISABLE_TIMING));
	/* warm-up, and run until the window opens */
	while (wall_ms() < o->start_ms || issued < 3) {
		if (issued - done == k) {
			CHECK(cuEventSynchronize(ev[done % k]));
			done++;
		}
		issue(g, o, memory, issued, ev[issued % k]);
		issued++;
	}
	t_start = wall_ms();
	end = o->start_ms + o->seconds * 1e3;
	while (wall_ms() < end) {
		if (issued - done == k) {
			CHECK(cuEventSynchronize(ev[done % k]));
			done++;
			jobs++;
		}
		issue(g, o, memory, issued, ev[issued % k]);
		issued++;
	}
	t_start = wall_ms() - t_start;
	CHECK(cuCtxSynchronize());
	for (i = 0; i < k; i++)
		CHECK(cuEventDestroy(ev[i]));
	printf("batch jobs %ld seconds %.3f jobs_per_s %.2f mean_ms %.4f\n",
	       jobs, t_start / 1e3, jobs / (t_start / 1e3),
	       jobs ? t_start / jobs : 0);
	return 0;
}

/* Milliseconds of one kernel (median of 5, each 3 launches / 3). */
static double time_one(struct gpu *g, bool memory, int iters, long n,
		       int blocks)
{
	double t[5];

	for (int r = 0; r < 5; r++) {
		double t0 = bench_now_ms();

		for (int i = 0; i < 3; i++) {
			if (memory)
				launch_saxpy(g, g->s, n);
			else
				launch_compute(g, g->s, blocks, iters);
		}
		CHECK(cuStreamSynchronize(g->s));
		t[r] = (bench_now_ms() - t0) / 3;
	}
	return bench_median(t, 5);
}

static int calibrate(struct gpu *g, const struct opts *o, bool memory)
{
	double ms;
	int iters = o->iters;
	long n = g->elements;

	time_one(g, memory, iters, n, o->blocks); /* warm-up */
	for (int round = 0; round < 3; round++) {
		ms = time_one(g, memory, iters, n, o->blocks);
		if (ms <= 0)
			break;
		if (memory) {
			long want = (long)(n * o->target_ms / ms);

			n = want < 1024		 ? 1024
			    : want > g->elements ? g->elements
						 : want;
		} else {
			double want = iters * o->target_ms / ms;

			iters = want < 1     ? 1
				: want > 2e9 ? 2000000000
					     : (int)want;
		}
	}
	ms = time_one(g, memory, iters, n, o->blocks);
	if (memory)
		printf("calibrated elements %ld ms %.4f\n", n, ms);
	else
		printf("calibrated iters %d ms %.4f\n", iters, ms);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mixed_workload lc|compute|memory|calibrate-compute|"
		"calibrate-memory KDIR\n"
		"       [--blocks N] [--iters N] [--elements N] [--inflight "
		"N] [--streams S]\n"
		"       [--on-ms N] [--off-ms N] [--seconds S] [--start "
		"EPOCH_MS]"
		"\n       [--target-ms T] [--gpu-time N] [--warm-bursts N]"
		"\n       [--block-times N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {.blocks = 64,
			 .iters = 4000,
			 .inflight = 2,
			 .streams = 1,
			 .on_ms = 100,
			 .off_ms = 100,
			 .elements = 1 << 24,
			 .seconds = 10,
			 .target_ms = 1};
	struct gpu g;

	if (argc < 3)
		usage();
	o.role = argv[1];
	o.kdir = argv[2];
	for (int i = 3; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			usage();
		if (!strcmp(a, "--blocks"))
			o.blocks = atoi(v);
		else if (!strcmp(a, "--iters"))
			o.iters = atoi(v);
		else if (!strcmp(a, "--elements"))
			o.elements = atol(v);
		else if (!strcmp(a, "--inflight"))
			o.inflight = atoi(v);
		else if (!strcmp(a, "--streams"))
			o.streams = atoi(v);
		else if (!strcmp(a, "--on-ms"))
			o.on_ms = atoi(v);
		else if (!strcmp(a, "--off-ms"))
			o.off_ms = atoi(v);
		else if (!strcmp(a, "--seconds"))
			o.seconds = atof(v);
		else if (!strcmp(a, "--start"))
			o.start_ms = atof(v);
		else if (!strcmp(a, "--target-ms"))
			o.target_ms = atof(v);
		else if (!strcmp(a, "--gpu-time"))
			o.gpu_time = atoi(v);
		else if (!strcmp(a, "--warm-bursts"))
			o.warm_bursts = atoi(v);
		else if (!strcmp(a, "--block-times"))
			o.block_times = atoi(v);
		else
			usage();
		i++;
	}
	if (o.blocks < 1 || o.iters < 1 || o.inflight < 1 ||
	    o.inflight > MAX_INFLIGHT || o.streams < 1 ||
	    o.streams > o.inflight || o.elements < 1024 ||
	    o.elements > (1l << 30) || o.seconds <= 0 || o.target_ms <= 0 ||
	    o.gpu_time < 0 || o.warm_bursts < 0 || o.warm_bursts > 100 ||
	    o.block_times < 0)
		usage();
	if (!o.start_ms) /* after the warm bursts, if any */
		o.start_ms = wall_ms() + 1000 +
			     o.warm_bursts * (double)(o.on_ms + o.off_ms);
	if (strcmp(o.role, "memory") && strcmp(o.role, "calibrate-memory"))
		o.elements = 0;
	gpu_init(&g, &o);
	if (!strcmp(o.role, "lc"))
		return run_lc(&g, &o);
	if (!strcmp(o.role, "compute"))
		return run_batch(&g, &o, false);
	if (!strcmp(o.role, "memory"))
		return run_batch(&g, &o, true);
	if (!strcmp(o.role, "calibrate-compute"))
		return calibrate(&g, &o, false);
	if (!strcmp(o.role, "calibrate-memory"))
		return calibrate(&g, &o, true);
	usage();
	return 2;
}
