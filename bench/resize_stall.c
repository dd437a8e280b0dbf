/* SPDX-License-Identifier: MIT */
/*
 * What a resize costs a running program. A client of a vGPU (VGPU=name,
 * LD_LIBRARY_PATH=build/lib) runs a chain of small dependent kernels, each
 * launched and waited for, and records each one's latency (launch to
 * completion, host clock): first alone (the baseline), then while a
 * thread of the same program resizes the vGPU every PERIOD_MS through
 * vgpud's admin socket (root), alternating SMS_A and SMS_B SMs and, when
 * MASK_A and MASK_B are given (hex SM-group masks), every third time a
 * move between those two sets of groups. Goal (issue 7): the p99 latency
 * while resizing at most 100 us above the baseline's.
 *
 *   resize_stall CUBIN RUN_DIR SMS_A SMS_B [KERNELS [PERIOD_MS
 *                [MASK_A MASK_B]]]
 *
 * CUBIN is kernels/resize_seq.cubin. Lines for scripts:
 *   baseline_us p50 P p99 P max M
 *   resizing_us p50 P p99 P max M kernels N
 *   extra_p99_us X
 *   resize_ms p50 P p99 P max M count N      (admin round trip, resizes)
 *   move_ms p50 P p99 P max M count N        (the same, moves)
 *   admin_rtt_ms p50 P p99 P max M           (a request vgpud refuses at
 *                                             once: the socket round trip)
 *   switch_us p50 P p99 P max M              (the worker's barrier)
 *   build_ms p50 P p99 P max M               (new context, beside)
 *   waits W of R                             (switches that needed a wait)
 *   order ok | order FAILED ...              (the whole chain's log)
 */
#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <vgpu/admin.h>

#include "bench_admin.h"
#include "bench_common.h"

#define N	      1024
#define MAX_OPS	      100000
#define ADMIN_WAIT_MS 30000
#define RTT_SAMPLES   20 /* vgpud logs each refusal: a few */

struct resizer {
	const char *run_dir, *name;
	uint32_t sms[2];
	uint64_t mask[2];
	double period_ms;
	volatile int stop;
	int failed;
	double *resize_ms, *move_ms, *switch_us, *build_ms;
	double rtt_ms[RTT_SAMPLES];
	int nrtt;
	int nresize, nmove, nswitch, waits;
	char last_error[VGPU_MESSAGE_MAX];
};

/* The worker's figures of the last resize, from TOP. */
static void last_switch(struct resizer *r, struct vgpu_admin_response *resp)
{
	struct vgpu_admin_request q;
	uint32_t i;

	bench_admin_request(&q, VGPU_ADMIN_TOP, "");
	if (bench_admin(r->run_dir, &q, resp, ADMIN_WAIT_MS) || resp->status)
		return;
	for (i = 0; i < resp->count && i < VGPU_ADMIN_LIST_MAX; i++) {
		const struct vgpu_admin_load *l = &resp->loads[i];

		if (strncmp(l->name, r->name, sizeof(l->name)))
			continue;
		if (r->nswitch < MAX_OPS) {
			r->switch_us[r->nswitch] = l->last_switch_ns / 1e3;
			r->build_ms[r->nswitch++] = l->last_build_us / 1e3;
		}
		r->waits += l->last_waits != 0;
	}
}

static void *resizer_main(void *arg)
{
	struct resizer *r = arg;
	struct vgpu_admin_response *resp = calloc(1, sizeof(*resp));
	struct vgpu_admin_request q;
	double next = bench_now_ms(), t0, dt;
	int i = 0, move;

	if (!resp)
		return NULL;
	while (!r->stop) {
		next += r->period_ms;
		while (!r->stop && bench_now_ms() < next)
			usleep(200);
		if (r->stop)
			break;
		move = r->mask[0] && i % 3 == 2;
		bench_admin_request(&q, VGPU_ADMIN_RESIZE, r->name);
		if (move)
			q.slice_mask = r->mask[(i / 3) % 2];
		else
			q.sms = r->sms[i % 2];
		t0 = bench_now_ms();
		if (bench_admin(r->run_dir, &q, resp, ADMIN_WAIT_MS)) {
			r->failed++;
			break;
		}
		dt = bench_now_ms() - t0;
		if (resp->status) {
			r->failed++;
			snprintf(r->last_error, sizeof(r->last_error), "%s",
				 resp->message);
		} else if (move && r->nmove < MAX_OPS) {
			r->move_ms[r->nmove++] = dt;
		} else if (!move && r->nresize < MAX_OPS) {
			r->resize_ms[r->nresize++] = dt;
		}
		if (!resp->status)
			last_switch(r, resp);
		i++;
	}
	free(resp);
	return NULL;
}

/*
 * What part of a resize's round trip is the admin socket's: requests
 * vgpud answers at once without asking the worker (0 SMs: refused).
 */
static void admin_rtt(struct resizer *r)
{
	struct vgpu_admin_response *resp = calloc(1, sizeof(*resp));
	struct vgpu_admin_request q;
	double t0;

	r->nrtt = 0;
	for (int i = 0; resp && i < RTT_SAMPLES; i++) {
		bench_admin_request(&q, VGPU_ADMIN_RESIZE, r->name);
		q.sms = 0;
		t0 = bench_now_ms();
		if (bench_admin(r->run_dir, &q, resp, ADMIN_WAIT_MS))
			break;
		r->rtt_ms[r->nrtt++] = bench_now_ms() - t0;
	}
	free(resp);
}

static void print_stats(const char *label, double *v, int n, double scale,
			const char *extra)
{
	printf("%s p50 %.2f p99 %.2f max %.2f%s\n", label,
	       bench_quantile(v, n, 0.5) * scale,
	       bench_quantile(v, n, 0.99) * scale,
	       bench_quantile(v, n, 1.0) * scale, extra ? extra : "");
}

struct chain {
	CUfunction fn;
	CUstream s;
	CUdeviceptr v, log, smids;
	unsigned long long k;
	int n;
};

/* count kernels, each launched and waited for; latencies in us. */
static void run_chain(struct chain *c, int count, double *lat)
{
	for (int i = 0; i < count; i++) {
		void *args[] = {&c->v, &c->n, &c->k, &c->log, &c->smids};
		double t0 = bench_now_ms();

		CHECK(cuLaunchKernel(c->fn, N / 256, 1, 1, 256, 1, 1, 0, c->s,
				     args, NULL));
		CHECK(cuStreamSynchronize(c->s));
		if (lat)
			lat[i] = (bench_now_ms() - t0) * 1e3;
		c->k++;
	}
}

int main(int argc, char **argv)
{
	struct resizer r = {0};
	struct chain c = {.n = N};
	unsigned long long *log;
	double *base, *during, p99b, p99d;
	int kernels, total, warm = 200, bad = 0;
	char extra[64];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	pthread_t t;
	size_t len;
	void *img;

	if (argc < 5) {
		fprintf(stderr,
			"usage: %s CUBIN RUN_DIR SMS_A SMS_B [KERNELS "
			"[PERIOD_MS [MASK_A MASK_B]]]\n",
			argv[0]);
		return 2;
	}
	r.run_dir = argv[2];
	r.name = getenv("VGPU");
	r.sms[0] = (uint32_t)atoi(argv[3]);
	r.sms[1] = (uint32_t)atoi(argv[4]);
	kernels = argc > 5 ? atoi(argv[5]) : 50000;
	r.period_ms = argc > 6 ? atof(argv[6]) : 10;
	if (argc > 8) {
		r.mask[0] = strtoull(argv[7], NULL, 16);
		r.mask[1] = strtoull(argv[8], NULL, 16);
	}
	if (!r.name || kernels < 100 || kernels > 10000000 || r.period_ms < 1) {
		fprintf(stderr, "VGPU must name the vGPU; KERNELS 100.., "
				"PERIOD_MS >= 1\n");
		return 2;
	}
	total = warm + 2 * kernels;
	base = calloc(kernels, sizeof(*base));
	during = calloc(kernels, sizeof(*during));
	log = calloc((size_t)total + 1, sizeof(*log));
	r.resize_ms = calloc(MAX_OPS, sizeof(double));
	r.move_ms = calloc(MAX_OPS, sizeof(double));
	r.switch_us = calloc(MAX_OPS, sizeof(double));
	r.build_ms = calloc(MAX_OPS, sizeof(double));
	if (!base || !during || !log || !r.resize_ms || !r.move_ms ||
	    !r.switch_us || !r.build_ms)
		return 1;

	img = bench_read_file(argv[1], &len);
	CHECK(cuInit(0));
	CHECK(cuDeviceGet(&dev, 0));
	CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
	CHECK(cuCtxSetCurrent(ctx));
	CHECK(cuModuleLoadData(&mod, img));
	CHECK(cuModuleGetFunction(&c.fn, mod, "resizeSeqStep"));
	CHECK(cuStreamCreate(&c.s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&c.v, N * sizeof(unsigned long long)));
	CHECK(cuMemAlloc(&c.log, ((size_t)total + 1) * sizeof(*log)));
	CHECK(cuMemAlloc(&c.smids, (size_t)total * sizeof(unsigned int)));
	CHECK(cuMemsetD8(c.v, 0, N * sizeof(unsigned long long)));
	CHECK(cuMemsetD8(c.log, 0, ((size_t)total + 1) * sizeof(*log)));
	CHECK(cuCtxSynchronize());

	run_chain(&c, warm, NULL);
	admin_rtt(&r);
	run_chain(&c, kernels, base);
	if (pthread_create(&t, NULL, resizer_main, &r)) {
		fprintf(stderr, "cannot start the resizer\n");
		return 1;
	}
	run_chain(&c, kernels, during);
	r.stop = 1;
	pthread_join(t, NULL);

	CHECK(cuMemcpyDtoH(log, c.log, ((size_t)total + 1) * sizeof(*log)));
	if (log[0] != (unsigned long long)total)
		bad = 1;
	for (int j = 0; j < total && !bad; j++)
		if (log[1 + j] != (unsigned long long)j)
			bad = 1 + j;

	p99b = bench_quantile(base, kernels, 0.99);
	p99d = bench_quantile(during, kernels, 0.99);
	print_stats("baseline_us", base, kernels, 1, NULL);
	snprintf(extra, sizeof(extra), " kernels %d", kernels);
	print_stats("resizing_us", during, kernels, 1, extra);
	printf("extra_p99_us %.2f\n", p99d - p99b);
	snprintf(extra, sizeof(extra), " count %d", r.nresize);
	print_stats("resize_ms", r.resize_ms, r.nresize, 1, extra);
	snprintf(extra, sizeof(extra), " count %d", r.nmove);
	print_stats("move_ms", r.move_ms, r.nmove, 1, extra);
	if (r.nrtt)
		print_stats("admin_rtt_ms", r.rtt_ms, r.nrtt, 1, NULL);
	else
		printf("admin_rtt_ms none\n");
	print_stats("switch_us", r.switch_us, r.nswitch, 1, NULL);
	print_stats("build_ms", r.build_ms, r.nswitch, 1, NULL);
	printf("waits %d of %d\n", r.waits, r.nswitch);
	if (r.failed)
		printf("refused %d (last: %s)\n", r.failed, r.last_error);
	if (bad)
		printf("order FAILED: %llu launches logged of %d (first bad "
		       "%d)\n",
		       log[0], total, bad - 1);
	else
		printf("order ok: %d dependent launches, each once, in order\n",
		       total);
	CHECK(cuModuleUnload(mod));
	CHECK(cuStreamDestroy(c.s));
	CHECK(cuDevicePrimaryCtxRelease(dev));
	return bad || r.failed ? 1 : 0;
}
