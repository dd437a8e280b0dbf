/* SPDX-License-Identifier: MIT */
/*
 * cuLaunchHostFunc and cuStreamAddCallback, asynchronous as in CUDA.
 *
 * Each stream that gets a host function has a struct vgpu_gate in the data
 * area (protocol.h, VGPU_OP_STREAM_GATE). The call enqueues a gate with the
 * stream's next sequence number and returns; the stream then writes that
 * number to gate.reached when the work before it is done, and waits until
 * we write it to gate.open. One thread per process (started on first use)
 * watches the gates of pending functions, runs each function when its
 * gate is reached, then opens the gate. It never talks to the worker, so a
 * function runs even while another thread is blocked in a synchronize
 * that waits for it.
 *
 * Two locks, so that the thread that runs functions never waits for the
 * worker: order_lock puts the gate calls of a stream on the ring in the
 * order of their numbers, and is held while a call is pushed (which may
 * wait for room on the ring), never while its answer is awaited; lock
 * guards only the list of pending functions, which the watching thread
 * takes for a moment. A thread that held one lock across the answer
 * deadlocked the process: the worker was waiting for another thread's
 * synchronise, behind a host function that the watching thread could
 * not take off the list (issue 16).
 *
 * Watching is polling (gate.reached is written by the GPU): every 20 us
 * for 2 ms after the last function ran, then every 250 us, and not at all
 * while nothing is pending. Where the worker has no gates (an older
 * worker, a data area the GPU cannot reach) or the 64 gates are in use,
 * the call waits for the stream and runs the function itself, in order
 * but not asynchronously.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <vgpu/protocol.h>

#include "client.h"
#include "client_api.h"

#define HOSTFN_GATES	    64
#define HOSTFN_FAST_POLL_NS 20000L
#define HOSTFN_SLOW_POLL_NS 250000L
#define HOSTFN_FAST_FOR_NS  2000000L

struct hostfn_item {
	struct hostfn_item *next;
	struct vgpu_gate *gate;
	uint64_t seq;
	CUhostFn fn; /* cuLaunchHostFunc */
	void *arg;
	CUstreamCallback callback; /* cuStreamAddCallback */
	CUstream stream;
};

struct hostfn_stream {
	int used;
	uint32_t handle;
	uint64_t seq; /* the last number enqueued */
};

static struct {
	/* order_lock: the set-up, the streams' slots and numbers, and the
	 * push of each gate call (numbers reach the worker in order) */
	pthread_mutex_t order_lock;
	int started, unsupported;
	struct client *c;
	struct vgpu_gate *gates; /* HOSTFN_GATES, in the data area */
	uint64_t gates_off;
	struct hostfn_stream streams[HOSTFN_GATES];
	/* lock: the list of pending functions, nothing else */
	pthread_mutex_t lock;
	pthread_cond_t work; /* an item was queued */
	struct hostfn_item *head, *tail;
} hf = {
	.order_lock = PTHREAD_MUTEX_INITIALIZER,
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
};

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* Opens gate g up to seq, never backwards: items of one stream may
 * finish or fail in another order than their numbers were given. */
static void gate_open_to(struct vgpu_gate *g, uint64_t seq)
{
	uint64_t cur = __atomic_load_n(&g->open, __ATOMIC_RELAXED);

	while ((int64_t)(cur - seq) < 0 &&
	       !__atomic_compare_exchange_n(&g->open, &cur, seq, 1,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		;
}

static void run_item(struct hostfn_item *it, CUresult status)
{
	if (it->callback)
		it->callback(it->stream, status, it->arg);
	else if (status == CUDA_SUCCESS)
		it->fn(it->arg); /* CUDA skips host functions after a fault */
}

/*
 * Takes the first item whose gate is reached (or every item, once the
 * vGPU is dead). Items of one stream are queued in order and a later one
 * cannot be reached before an earlier one opens, so per stream this keeps
 * order; across streams they run as they become ready. Lock held.
 */
static struct hostfn_item *take_ready(CUresult *status)
{
	struct hostfn_item *it, *prev = NULL;

	/* lock order: hf.lock, then the ring's */
	client_ring_lock(&hf.c->ring);
	*status = client_ring_dead(&hf.c->ring);
	client_ring_unlock(&hf.c->ring);
	for (it = hf.head; it; prev = it, it = it->next) {
		uint64_t reached =
			__atomic_load_n(&it->gate->reached, __ATOMIC_ACQUIRE);

		if (*status == CUDA_SUCCESS && (int64_t)(reached - it->seq) < 0)
			continue;
		if (prev)
			prev->next = it->next;
		else
			hf.head = it->next;
		if (hf.tail == it)
			hf.tail = prev;
		return it;
	}
	return NULL;
}

static void *hostfn_main(void *arg)
{
	long last_run = now_ns();

	pthread_mutex_lock(&hf.lock);
	for (;;) {
		struct hostfn_item *it;
		CUresult status;
		struct timespec t = {0, HOSTFN_FAST_POLL_NS};

		if (!hf.head) {
			pthread_cond_wait(&hf.work, &hf.lock);
			last_run = now_ns();
			continue;
		}
		it = take_ready(&status);
		if (!it) {
			if (now_ns() - last_run > HOSTFN_FAST_FOR_NS)
				t.tv_nsec = HOSTFN_SLOW_POLL_NS;
			pthread_mutex_unlock(&hf.lock);
			nanosleep(&t, NULL);
			pthread_mutex_lock(&hf.lock);
			continue;
		}
		pthread_mutex_unlock(&hf.lock);
		run_item(it, status);
		/* the stream may go on: the worker copies this to its word */
		gate_open_to(it->gate, it->seq);
		free(it);
		last_run = now_ns();
		pthread_mutex_lock(&hf.lock);
	}
	return arg;
}

/* The gate block and the thread, once. order_lock held. */
static CUresult hostfn_setup(struct client *c)
{
	sigset_t all, old;
	pthread_t t;
	CUresult err;
	int rc;

	if (hf.started)
		return CUDA_SUCCESS;
	err = client_ring_data_alloc(&c->ring, HOSTFN_GATES * sizeof(*hf.gates),
				     &hf.gates_off);
	if (err != CUDA_SUCCESS)
		return err;
	/* never freed: the worker may write there until the process ends */
	hf.gates = client_ring_data(&c->ring, hf.gates_off);
	memset(hf.gates, 0, HOSTFN_GATES * sizeof(*hf.gates));
	hf.c = c;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&t, NULL, hostfn_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		client_ring_data_free(&c->ring, hf.gates_off,
				      HOSTFN_GATES * sizeof(*hf.gates));
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_detach(t);
	pthread_setname_np(t, "vgpu-hostfn");
	__atomic_store_n(&hf.started, 1, __ATOMIC_RELEASE);
	return CUDA_SUCCESS;
}

/* The stream's slot, or -1 when all are taken. order_lock held. */
static int stream_slot(uint32_t handle)
{
	int i, free_slot = -1;

	for (i = 0; i < HOSTFN_GATES; i++) {
		if (hf.streams[i].used && hf.streams[i].handle == handle)
			return i;
		if (!hf.streams[i].used && free_slot < 0)
			free_slot = i;
	}
	if (free_slot >= 0) {
		hf.streams[free_slot].used = 1;
		hf.streams[free_slot].handle = handle;
	}
	return free_slot;
}

/*
 * Enqueue it behind the work on stream h. Returns CUDA_ERROR_NOT_SUPPORTED
 * when the caller must fall back to a synchronous call. Takes it.
 */
static CUresult hostfn_enqueue(struct client *c, uint32_t h,
			       struct hostfn_item *it)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_STREAM_GATE, .stream = h};
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_cqe cqe;
	uint32_t tag;
	CUresult err;
	int slot;

	pthread_mutex_lock(&hf.order_lock);
	err = __atomic_load_n(&hf.unsupported, __ATOMIC_RELAXED)
		      ? CUDA_ERROR_NOT_SUPPORTED
		      : hostfn_setup(c);
	if (err != CUDA_SUCCESS)
		goto unlock;
	slot = stream_slot(h);
	if (slot < 0) {
		err = CUDA_ERROR_NOT_SUPPORTED;
		goto unlock;
	}
	/* a number refused below is skipped: the worker wants them rising,
	 * not consecutive (worker_gate.c) */
	it->gate = &hf.gates[slot];
	it->seq = ++hf.streams[slot].seq;
	sqe.a[0] = hf.gates_off + (uint64_t)slot * sizeof(struct vgpu_gate);
	sqe.a[1] = it->seq;
	client_ring_lock(&c->ring);
	err = client_ring_push(&c->ring, &sqe, &how, &tag);
	if (err == CUDA_SUCCESS)
		client_ring_flush(&c->ring);
	client_ring_unlock(&c->ring);
	if (err != CUDA_SUCCESS)
		gate_open_to(it->gate, it->seq); /* nothing waits for it */
unlock:
	pthread_mutex_unlock(&hf.order_lock);
	if (err != CUDA_SUCCESS)
		goto out;

	/* the answer may come only after another thread's synchronise,
	 * which may wait for a function on the list: no lock of ours */
	client_ring_lock(&c->ring);
	err = client_ring_wait(&c->ring, tag, &cqe);
	client_ring_unlock(&c->ring);
	if (err == CUDA_SUCCESS)
		err = (CUresult)cqe.status;
	if (err != CUDA_SUCCESS) {
		gate_open_to(it->gate, it->seq);
		if (err == CUDA_ERROR_NOT_SUPPORTED) /* no gates: stop asking */
			__atomic_store_n(&hf.unsupported, 1, __ATOMIC_RELAXED);
		goto out;
	}
	/* the stream may have reached the gate already: the watcher sees
	 * reached >= seq at its next look */
	pthread_mutex_lock(&hf.lock);
	it->next = NULL;
	if (hf.tail)
		hf.tail->next = it;
	else
		hf.head = it;
	hf.tail = it;
	pthread_cond_signal(&hf.work);
	pthread_mutex_unlock(&hf.lock);
	it = NULL;
out:
	free(it);
	return err;
}

/*
 * Where gates cannot be had: wait for the stream, then call. A callback is
 * always called (with the stream's error, if any) and the call succeeds; a
 * host function is skipped after an error, which the call returns.
 */
static CUresult hostfn_sync(CUstream stream, const struct hostfn_item *it)
{
	CUresult err = cuStreamSynchronize(stream);

	if (err == CUDA_ERROR_INVALID_HANDLE ||
	    err == CUDA_ERROR_INVALID_CONTEXT)
		return err;
	run_item((struct hostfn_item *)it, err);
	return it->callback ? CUDA_SUCCESS : err;
}

static CUresult hostfn_launch(CUstream stream, const struct hostfn_item *tmpl)
{
	struct client_stream_use u;
	struct hostfn_item *it;
	struct client *c;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	err = client_stream_begin(c, stream, 0, &u);
	if (err != CUDA_SUCCESS)
		return err;
	it = malloc(sizeof(*it));
	if (!it)
		return client_stream_end(c, &u, CUDA_ERROR_OUT_OF_MEMORY);
	*it = *tmpl;
	err = client_stream_end(c, &u, hostfn_enqueue(c, u.handle, it));
	if (err == CUDA_ERROR_NOT_SUPPORTED)
		return hostfn_sync(stream, tmpl);
	return err;
}

/* Waits until gate g is open to seq, or the vGPU is dead. */
static void wait_gate(struct vgpu_gate *g, uint64_t seq)
{
	struct timespec t = {0, HOSTFN_FAST_POLL_NS};

	while ((int64_t)(__atomic_load_n(&g->open, __ATOMIC_ACQUIRE) - seq) <
	       0) {
		CUresult dead;

		client_ring_lock(&hf.c->ring);
		dead = client_ring_dead(&hf.c->ring);
		client_ring_unlock(&hf.c->ring);
		if (dead != CUDA_SUCCESS)
			break;
		nanosleep(&t, NULL);
	}
}

/*
 * Waits until every host function enqueued on stream h so far (every
 * stream: all) has run. A copy from ordinary host memory is staged when
 * it is submitted, not when the stream reaches it; a host function before
 * it in the stream may still be about to write that memory (callbacks_rt
 * does), so the staging waits. A synchronise waits here before it asks
 * the worker: the worker serves this process's calls in order, so a
 * synchronise waiting there for a host function would hold up every
 * other thread's calls until the function has run.
 */
static void wait_streams(uint32_t h, int all)
{
	struct {
		struct vgpu_gate *g;
		uint64_t seq;
	} w[HOSTFN_GATES];
	int i, n = 0;

	/* no lock until a host function was ever queued (a function queued
	 * by another thread at this very moment is not ordered before this
	 * call anyway) */
	if (!__atomic_load_n(&hf.started, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&hf.order_lock);
	for (i = 0; i < HOSTFN_GATES; i++)
		if (hf.streams[i].used && (all || hf.streams[i].handle == h)) {
			w[n].g = &hf.gates[i];
			w[n++].seq = hf.streams[i].seq;
		}
	pthread_mutex_unlock(&hf.order_lock);
	for (i = 0; i < n; i++)
		wait_gate(w[i].g, w[i].seq);
}

void client_hostfn_wait_stream(uint32_t h)
{
	wait_streams(h, 0);
}

void client_hostfn_wait_all(void)
{
	wait_streams(0, 1);
}

VGPU_API CUresult CUDAAPI cuLaunchHostFunc(CUstream hStream, CUhostFn fn,
					   void *userData)
{
	struct hostfn_item it = {.fn = fn, .arg = userData};

	if (!fn)
		return CUDA_ERROR_INVALID_VALUE;
	return hostfn_launch(hStream, &it);
}

VGPU_API CUresult CUDAAPI cuStreamAddCallback(CUstream hStream,
					      CUstreamCallback callback,
					      void *userData,
					      unsigned int flags)
{
	struct hostfn_item it = {
		.callback = callback,
		.arg = userData,
		.stream = hStream,
	};

	if (!callback || flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	return hostfn_launch(hStream, &it);
}
