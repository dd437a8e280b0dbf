/* SPDX-License-Identifier: MIT */
/*
 * Parallel memcpy for large host copies (see client_memcpy.h).
 *
 * One job at a time: a copy that finds the helpers busy does its own
 * memcpy instead of waiting. The caller takes pieces too, so a helper
 * that wakes late only means fewer pieces for it, never a slower copy.
 * After fork() the child has no helpers: it copies alone.
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client_memcpy.h"

#define MEMCPY_MIN_PARALLEL (512u << 10) /* smaller: one memcpy */
#define MEMCPY_MIN_PIECE    (256u << 10)
#define MEMCPY_MAX_HELPERS  8

struct memcpy_job {
	char *dst;
	const char *src;
	size_t n, piece;
	uint32_t npieces;
	uint32_t next;	/* atomic: the next piece to claim */
	uint32_t done;	/* atomic: pieces copied */
	uint32_t users; /* atomic: helpers inside job_work (joined
			 * under pool.lock, left without it) */
};

static struct {
	pthread_mutex_t lock; /* init, and the job hand-over */
	pthread_cond_t wake;
	pthread_mutex_t busy; /* held by the copy that owns the helpers */
	int ready;	      /* init ran */
	pid_t pid;	      /* the process the helpers belong to */
	unsigned int nhelpers;
	uint64_t generation; /* bumped per job */
	struct memcpy_job *job;
} pool = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.busy = PTHREAD_MUTEX_INITIALIZER,
};

/* Copies pieces of job until none is left. */
static void job_work(struct memcpy_job *job)
{
	uint32_t i;

	while ((i = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED)) <
	       job->npieces) {
		size_t off = (size_t)i * job->piece;
		size_t len =
			job->n - off < job->piece ? job->n - off : job->piece;

		memcpy(job->dst + off, job->src + off, len);
		__atomic_fetch_add(&job->done, 1, __ATOMIC_RELEASE);
	}
}

static void *helper_main(void *arg)
{
	uint64_t seen = 0;

	for (;;) {
		struct memcpy_job *job;

		pthread_mutex_lock(&pool.lock);
		while (pool.generation == seen)
			pthread_cond_wait(&pool.wake, &pool.lock);
		seen = pool.generation;
		job = pool.job;
		/* atomic although under the lock: a helper already in the
		 * job counts itself out without the lock, and a plain ++
		 * could lose its decrement (the owner then waits for ever) */
		if (job)
			__atomic_fetch_add(&job->users, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&pool.lock);
		/* the owner waits until no helper uses job: it outlives this */
		if (job) {
			job_work(job);
			__atomic_fetch_sub(&job->users, 1, __ATOMIC_RELEASE);
		}
	}
	return arg;
}

static unsigned int helpers_wanted(void)
{
	const char *s = getenv("VGPU_COPY_THREADS");
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	long n = cpus > 1 ? cpus - 1 : 0;

	if (n > 3)
		n = 3;
	if (s && *s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (*end == '\0' && v >= 0)
			n = v;
	}
	return n > MEMCPY_MAX_HELPERS ? MEMCPY_MAX_HELPERS : (unsigned int)n;
}

/* Starts the helpers once per process; signals stay with the app's own
 * threads. Returns how many run. */
static unsigned int pool_start(void)
{
	sigset_t all, old;
	unsigned int i, want;

	pthread_mutex_lock(&pool.lock);
	if (pool.ready) {
		pthread_mutex_unlock(&pool.lock);
		return pool.pid == getpid() ? pool.nhelpers : 0;
	}
	pool.ready = 1;
	pool.pid = getpid();
	want = helpers_wanted();
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (i = 0; i < want; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, helper_main, NULL))
			break;
		pthread_detach(t);
		pthread_setname_np(t, "vgpu-copy");
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pool.nhelpers = i;
	pthread_mutex_unlock(&pool.lock);
	return i;
}

void client_memcpy(void *dst, const void *src, size_t n)
{
	struct memcpy_job job;
	unsigned int helpers;

	if (n < MEMCPY_MIN_PARALLEL || (helpers = pool_start()) == 0 ||
	    pthread_mutex_trylock(&pool.busy)) {
		memcpy(dst, src, n);
		return;
	}
	job.dst = dst;
	job.src = src;
	job.n = n;
	job.piece = n / (helpers + 1);
	if (job.piece < MEMCPY_MIN_PIECE)
		job.piece = MEMCPY_MIN_PIECE;
	job.piece = (job.piece + 63) & ~(size_t)63;
	job.npieces = (uint32_t)((n + job.piece - 1) / job.piece);
	job.next = 0;
	job.done = 0;
	job.users = 0;

	pthread_mutex_lock(&pool.lock);
	pool.job = &job;
	pool.generation++;
	pthread_cond_broadcast(&pool.wake);
	pthread_mutex_unlock(&pool.lock);

	job_work(&job);
	while (__atomic_load_n(&job.done, __ATOMIC_ACQUIRE) < job.npieces)
		sched_yield();

	pthread_mutex_lock(&pool.lock);
	pool.job = NULL; /* a helper waking now finds nothing */
	pthread_mutex_unlock(&pool.lock);
	/* job lives on this stack: wait for helpers still inside it */
	while (__atomic_load_n(&job.users, __ATOMIC_ACQUIRE))
		sched_yield();
	pthread_mutex_unlock(&pool.busy);
}
