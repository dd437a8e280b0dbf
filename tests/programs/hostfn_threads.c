/* SPDX-License-Identifier: MIT */
/*
 * Host functions from several threads, as an ordinary multi-threaded CUDA
 * program uses them (issue 16, bugs 1 and 2):
 *
 *   hostfn_threads run [THREADS] [ITERS]
 *       each thread has its own stream and, ITERS times, launches a
 *       chainStep, queues a host function (cuLaunchHostFunc) and a
 *       callback (cuStreamAddCallback), and synchronises its stream. Every
 *       function must run exactly once and in order on its stream; the
 *       chain's result is checked at the end. Prints "hostfn_threads: ok".
 *   hostfn_threads stuck sync|free|region|ctxsync
 *       queues a host function that never returns, prints
 *       "hostfn_threads: stuck" and then blocks in the call named (a
 *       stream synchronise, a cuMemFree of memory the stream used, a
 *       cuMemFreeHost of a page-locked buffer, a context synchronise)
 *       until it is killed.
 *   hostfn_threads chaos [THREADS]
 *       for the randomized kill test: threads allocate, copy, launch,
 *       queue host functions (some sleep a little) and callbacks,
 *       synchronise and free at random, until killed. Prints
 *       "hostfn_threads: chaos" once every thread has done a round.
 *   hostfn_threads slow SECONDS
 *       one thread's host function sleeps SECONDS; meanwhile another
 *       thread's stream runs kernels and synchronises, correctly, and
 *       finishes first: neither the sleeper's synchronise nor the work
 *       queued behind its host function holds up another thread's calls
 *       (issue 16). Prints when each finished.
 */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#include "prog.h"

#define N	 4096
#define MAX_THR	 16
#define MAX_ITER 100000

static CUcontext ctx;
static CUkernel kern;

struct thr {
	int idx, iters;
	int plain; /* kernels and synchronises only, no host functions */
	CUstream s;
	CUdeviceptr v;
	/* written by host functions, read after the final synchronise */
	int fn_seen, cb_seen, out_of_order;
	double done_at;
};

static void CUDA_CB count_fn(void *arg)
{
	struct thr *t = arg;

	/* the callback of the same iteration comes after this one */
	if (t->fn_seen != t->cb_seen)
		t->out_of_order++;
	t->fn_seen++;
}

static void CUDA_CB count_cb(CUstream s, CUresult status, void *arg)
{
	struct thr *t = arg;

	if (status != CUDA_SUCCESS || s != t->s || t->cb_seen + 1 != t->fn_seen)
		t->out_of_order++;
	t->cb_seen++;
}

static void launch(struct thr *t, unsigned long long k)
{
	int n = N;
	void *params[] = {&t->v, &n, &k};

	CHECK(cuLaunchKernel((CUfunction)kern, N / 256, 1, 1, 256, 1, 1, 0,
			     t->s, params, NULL));
}

static void *run_thread(void *arg)
{
	struct thr *t = arg;
	int i;

	CHECK(cuCtxSetCurrent(ctx));
	for (i = 0; i < t->iters; i++) {
		launch(t, (unsigned long long)i);
		if (!t->plain) {
			CHECK(cuLaunchHostFunc(t->s, count_fn, t));
			CHECK(cuStreamAddCallback(t->s, count_cb, t, 0));
		}
		/* every other round: synchronise at once, while the other
		 * threads queue theirs (the smallest case of bug 1) */
		if (i % 2 == 0 || i == t->iters - 1)
			CHECK(cuStreamSynchronize(t->s));
	}
	t->done_at = prog_now();
	return NULL;
}

/* What ITERS chainSteps with k = 0..ITERS-1 leave in v[i], from 0. */
static unsigned long long expect(int i, int iters)
{
	unsigned long long x = 0;
	int k;

	for (k = 0; k < iters; k++)
		x = x * 31ull + (unsigned long long)k + (unsigned long long)i;
	return x;
}

static int check_thread(struct thr *t)
{
	static unsigned long long host[N];
	int i, bad = 0;
	int want = t->plain ? 0 : t->iters;

	if (t->fn_seen != want || t->cb_seen != want || t->out_of_order) {
		fprintf(stderr,
			"hostfn_threads: thread %d: %d host functions and %d "
			"callbacks ran of %d, %d out of order\n",
			t->idx, t->fn_seen, t->cb_seen, t->iters,
			t->out_of_order);
		return 1;
	}
	CHECK(cuMemcpyDtoH(host, t->v, sizeof(host)));
	for (i = 0; i < N; i++)
		if (host[i] != expect(i, t->iters))
			bad++;
	if (bad)
		fprintf(stderr, "hostfn_threads: thread %d: %d wrong values\n",
			t->idx, bad);
	return bad != 0;
}

static void thr_init(struct thr *t, int idx, int iters)
{
	memset(t, 0, sizeof(*t));
	t->idx = idx;
	t->iters = iters;
	CHECK(cuStreamCreate(&t->s, CU_STREAM_NON_BLOCKING));
	CHECK(cuMemAlloc(&t->v, N * sizeof(unsigned long long)));
	CHECK(cuMemsetD8(t->v, 0, N * sizeof(unsigned long long)));
}

static int run(int nthr, int iters)
{
	struct thr t[MAX_THR];
	pthread_t tid[MAX_THR];
	int i, bad = 0;

	for (i = 0; i < nthr; i++)
		thr_init(&t[i], i, iters);
	CHECK(cuCtxSynchronize());
	for (i = 0; i < nthr; i++)
		if (pthread_create(&tid[i], NULL, run_thread, &t[i])) {
			fprintf(stderr, "hostfn_threads: pthread_create\n");
			return 1;
		}
	for (i = 0; i < nthr; i++)
		pthread_join(tid[i], NULL);
	for (i = 0; i < nthr; i++) {
		bad |= check_thread(&t[i]);
		CHECK(cuStreamDestroy(t[i].s));
		CHECK(cuMemFree(t[i].v));
	}
	if (!bad)
		printf("hostfn_threads: ok, %d threads x %d rounds\n", nthr,
		       iters);
	return bad;
}

static void CUDA_CB never_returns(void *arg)
{
	for (;;)
		pause();
}

static int stuck(const char *how)
{
	struct thr t;
	void *pinned = NULL;

	thr_init(&t, 0, 1);
	if (!strcmp(how, "region")) /* a page-locked buffer, freed below */
		CHECK(cuMemAllocHost(&pinned, 1 << 20));
	CHECK(cuCtxSynchronize());
	launch(&t, 0);
	CHECK(cuLaunchHostFunc(t.s, never_returns, NULL));
	launch(&t, 1);
	printf("hostfn_threads: stuck\n");
	fflush(stdout);
	if (!strcmp(how, "sync"))
		cuStreamSynchronize(t.s);
	else if (!strcmp(how, "free"))
		cuMemFree(t.v);
	else if (!strcmp(how, "region"))
		cuMemFreeHost(pinned);
	else
		cuCtxSynchronize();
	fprintf(stderr,
		"hostfn_threads: %s returned past a host function "
		"that never returns\n",
		how);
	return 1;
}

static int chaos_started;

static void CUDA_CB nap(void *arg)
{
	usleep((useconds_t)(uintptr_t)arg);
}

static void *chaos_thread(void *arg)
{
	struct thr *t = arg;
	unsigned long long seed = 0x9e3779b97f4a7c15ull * (t->idx + 1);
	CUdeviceptr held[8] = {0};
	static unsigned char buf[1 << 16];
	unsigned int r;
	int i, first = 1;

	CHECK(cuCtxSetCurrent(ctx));
	for (;;) {
		r = prog_rand(&seed);
		i = r % 8;
		if (!held[i]) {
			CHECK(cuMemAlloc(&held[i],
					 4096 + (r >> 8) % (1 << 20)));
			CHECK(cuMemcpyHtoDAsync(held[i], buf, sizeof(buf) / 4,
						t->s));
		}
		launch(t, r);
		CHECK(cuLaunchHostFunc(t->s, nap,
				       (void *)(uintptr_t)((r >> 4) % 2000)));
		CHECK(cuStreamAddCallback(t->s, count_cb, t, 0));
		if (r % 3 == 0)
			CHECK(cuStreamSynchronize(t->s));
		if (r % 5 == 0) {
			CHECK(cuStreamSynchronize(t->s));
			CHECK(cuMemFree(held[i]));
			held[i] = 0;
		}
		if (first) {
			first = 0;
			__atomic_add_fetch(&chaos_started, 1, __ATOMIC_ACQ_REL);
		}
	}
	return NULL;
}

static int chaos(int nthr)
{
	struct thr t[MAX_THR];
	pthread_t tid;
	int i;

	for (i = 0; i < nthr; i++)
		thr_init(&t[i], i, 1);
	CHECK(cuCtxSynchronize());
	for (i = 0; i < nthr; i++)
		if (pthread_create(&tid, NULL, chaos_thread, &t[i]))
			return 1;
	while (__atomic_load_n(&chaos_started, __ATOMIC_ACQUIRE) < nthr)
		usleep(1000);
	printf("hostfn_threads: chaos\n");
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

static double sleep_secs;

static void CUDA_CB sleeper(void *arg)
{
	usleep((useconds_t)(sleep_secs * 1e6));
}

static void *sleeper_thread(void *arg)
{
	struct thr *t = arg;

	CHECK(cuCtxSetCurrent(ctx));
	launch(t, 0);
	CHECK(cuLaunchHostFunc(t->s, sleeper, NULL));
	CHECK(cuStreamSynchronize(t->s));
	t->done_at = prog_now();
	return NULL;
}

static int slow(double secs)
{
	struct thr a, b;
	pthread_t ta, tb;
	double t0;

	sleep_secs = secs;
	thr_init(&a, 0, 1);
	thr_init(&b, 1, 20);
	b.plain = 1;
	CHECK(cuCtxSynchronize());
	t0 = prog_now();
	if (pthread_create(&ta, NULL, sleeper_thread, &a))
		return 1;
	usleep(100000); /* the sleeper is asleep */
	if (pthread_create(&tb, NULL, run_thread, &b))
		return 1;
	pthread_join(tb, NULL);
	pthread_join(ta, NULL);
	printf("hostfn_threads: other stream done after %.2f s, sleeper "
	       "after %.2f s\n",
	       b.done_at - t0, a.done_at - t0);
	if (a.done_at - t0 < secs) {
		fprintf(stderr, "hostfn_threads: the synchronise returned "
				"before the host function did\n");
		return 1;
	}
	if (b.done_at - t0 >= secs) {
		fprintf(stderr, "hostfn_threads: the other thread's stream "
				"waited for the sleeping host function\n");
		return 1;
	}
	return check_thread(&b);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "run";
	CUlibrary lib;
	CUdevice dev;
	void *image;
	int rc;

	ctx = prog_init(&dev);
	image = prog_read_cubin("chain");
	CHECK(cuLibraryLoadData(&lib, image, NULL, NULL, 0, NULL, NULL, 0));
	free(image);
	CHECK(cuLibraryGetKernel(&kern, lib, "chainStep"));
	if (!strcmp(mode, "run")) {
		int nthr = argc > 2 ? atoi(argv[2]) : 4;
		int iters = argc > 3 ? atoi(argv[3]) : 200;

		if (nthr < 1 || nthr > MAX_THR || iters < 1 ||
		    iters > MAX_ITER) {
			fprintf(stderr,
				"hostfn_threads: run 1..%d threads, "
				"1..%d rounds\n",
				MAX_THR, MAX_ITER);
			return 2;
		}
		rc = run(nthr, iters);
	} else if (!strcmp(mode, "stuck") && argc > 2) {
		rc = stuck(argv[2]);
	} else if (!strcmp(mode, "chaos")) {
		int nthr = argc > 2 ? atoi(argv[2]) : 4;

		if (nthr < 1 || nthr > MAX_THR) {
			fprintf(stderr, "hostfn_threads: chaos 1..%d threads\n",
				MAX_THR);
			return 2;
		}
		rc = chaos(nthr);
	} else if (!strcmp(mode, "slow") && argc > 2) {
		rc = slow(atof(argv[2]));
	} else {
		fprintf(stderr,
			"usage: hostfn_threads run [THREADS] [ITERS] | "
			"stuck sync|free|region|ctxsync | chaos [THREADS] | "
			"slow SECONDS\n");
		return 2;
	}
	CHECK(cuLibraryUnload(lib));
	prog_fini(dev);
	return rc;
}
