/* SPDX-License-Identifier: MIT */
/*
 * alloc_threads [pairs] [threads]: threads (default 2) of one process
 * each allocate and free pairs (default 100,000) small buffers of sizes
 * that vary a little, as a program whose threads use scratch memory
 * does. Every call must succeed: with plenty of memory free, an
 * allocation that fails is a false out-of-memory (issue 16: a thread's
 * cuMemAlloc got back the address another thread was just freeing).
 * Each new buffer must be known as device memory of its own size, and
 * at the end cuMemGetInfo must show the memory of the start free again
 * (nothing leaked).
 */
#include <pthread.h>

#include "prog.h"

struct worker {
	pthread_t thread;
	int id;
	long pairs;
	CUcontext ctx;
	long done;	/* pairs completed */
	char fail[256]; /* empty, or what went wrong */
};

static void fail(struct worker *w, const char *call, CUresult r, size_t bytes)
{
	size_t free_b = 0, total = 0;

	/* what the vGPU says is free, to tell a real shortage from a false one
	 */
	cuMemGetInfo(&free_b, &total);
	snprintf(w->fail, sizeof(w->fail),
		 "thread %d, pair %ld: %s of %zu B: %s (%d) with %zu of %zu B "
		 "free",
		 w->id, w->done, call, bytes, prog_err_name(r), (int)r, free_b,
		 total);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	unsigned long long seed = 0x9e3779b97f4a7c15ull * (w->id + 1);
	CUresult r;

	r = cuCtxSetCurrent(w->ctx);
	if (r != CUDA_SUCCESS) {
		fail(w, "cuCtxSetCurrent", r, 0);
		return NULL;
	}
	for (w->done = 0; w->done < w->pairs; w->done++) {
		/* 256 B to 4 KiB in 256 B steps: neighbours of different
		 * sizes, so freed space is reused at varying offsets */
		size_t bytes = 256 * (1 + prog_rand(&seed) % 16);
		CUdeviceptr p = 0, start = 0;
		size_t size = 0;

		r = cuMemAlloc(&p, bytes);
		if (r != CUDA_SUCCESS) {
			fail(w, "cuMemAlloc", r, bytes);
			return NULL;
		}
		r = cuPointerGetAttribute(
			&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p);
		if (r == CUDA_SUCCESS)
			r = cuPointerGetAttribute(
				&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p);
		if (r != CUDA_SUCCESS) {
			fail(w, "cuPointerGetAttribute", r, bytes);
			return NULL;
		}
		if (start != p || size != bytes) {
			snprintf(w->fail, sizeof(w->fail),
				 "thread %d, pair %ld: a new %zu B buffer at "
				 "0x%llx is known as [0x%llx, +%zu)",
				 w->id, w->done, bytes, (unsigned long long)p,
				 (unsigned long long)start, size);
			return NULL;
		}
		r = cuMemFree(p);
		if (r != CUDA_SUCCESS) {
			fail(w, "cuMemFree", r, bytes);
			return NULL;
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long pairs = argc > 1 ? atol(argv[1]) : 100000;
	int nthreads = argc > 2 ? atoi(argv[2]) : 2;
	size_t free0, free1, total;
	struct worker *w;
	double t0, secs;
	CUcontext ctx;
	CUdevice dev;
	int failed = 0;

	if (pairs <= 0 || nthreads <= 0 || nthreads > 64) {
		fprintf(stderr, "usage: alloc_threads [pairs > 0] "
				"[threads 1..64]\n");
		return 2;
	}
	w = calloc(nthreads, sizeof(*w));
	if (!w) {
		fprintf(stderr, "alloc_threads: out of host memory\n");
		return 1;
	}
	ctx = prog_init(&dev);
	CHECK(cuMemGetInfo(&free0, &total));
	t0 = prog_now();
	for (int i = 0; i < nthreads; i++) {
		w[i].id = i;
		w[i].pairs = pairs;
		w[i].ctx = ctx;
		if (pthread_create(&w[i].thread, NULL, worker_run, &w[i])) {
			fprintf(stderr,
				"alloc_threads: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < nthreads; i++)
		pthread_join(w[i].thread, NULL);
	secs = prog_now() - t0;
	for (int i = 0; i < nthreads; i++) {
		if (w[i].fail[0]) {
			printf("alloc_threads: FAILED (%s)\n", w[i].fail);
			failed = 1;
		}
	}
	CHECK(cuMemGetInfo(&free1, &total));
	prog_fini(dev);
	if (failed)
		return 1;
	if (free1 != free0) {
		printf("alloc_threads: FAILED (free memory %zu before, %zu "
		       "after every buffer was freed)\n",
		       free0, free1);
		return 1;
	}
	printf("alloc_threads: %d threads x %ld alloc/free pairs OK in %.1f s "
	       "(free %zu of %zu before and after)\n",
	       nthreads, pairs, secs, free0, total);
	free(w);
	return 0;
}
