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
	pthread_mutex_t lock; /* everything below; held across the gate call
				 so that numbers reach the worker in order */
	pthread_cond_t work;  /* an item was queued */
	int started, unsupported;
	struct client *c;
	struct vgpu_gate *gates; /* HOSTFN_GATES, in the data area */
	uint64_t gates_off;
	struct hostfn_stream streams[HOSTFN_GATES];
	struct hostfn_item *head, *tail;
} hf = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.work = PTHREAD_COND_INITIALIZER,
};

static long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000L + t.tv_nsec;
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

	/* lock order: hf.lock, then the ring's (as in hostfn_enqueue) */
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
		__atomic_store_n(&it->gate->open, it->seq, __ATOMIC_RELEASE);
		free(it);
		last_run = now_ns();
		pthread_mutex_lock(&hf.lock);
	}
	return arg;
}

/* The gate block and the thread, once. Lock held. */
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

/* The stream's slot, or -1 when all are taken. Lock held. */
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
	struct hostfn_stream *st;
	CUresult err;
	int slot;

	pthread_mutex_lock(&hf.lock);
	err = hf.unsupported ? CUDA_ERROR_NOT_SUPPORTED : hostfn_setup(c);
	if (err != CUDA_SUCCESS)
		goto out;
	slot = stream_slot(h);
	if (slot < 0) {
		err = CUDA_ERROR_NOT_SUPPORTED;
		goto out;
	}
	st = &hf.streams[slot];
	it->gate = &hf.gates[slot];
	it->seq = st->seq + 1;
	sqe.a[0] = hf.gates_off + (uint64_t)slot * sizeof(struct vgpu_gate);
	sqe.a[1] = it->seq;
	err = client_ring_call(&c->ring, &sqe, NULL);
	if (err == CUDA_ERROR_NOT_SUPPORTED)
		hf.unsupported = 1; /* the worker has no gates: stop asking */
	if (err != CUDA_SUCCESS)
		goto out;
	st->seq = it->seq;
	it->next = NULL;
	if (hf.tail)
		hf.tail->next = it;
	else
		hf.head = it;
	hf.tail = it;
	pthread_cond_signal(&hf.work);
	it = NULL;
out:
	pthread_mutex_unlock(&hf.lock);
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
	struct hostfn_item *it;
	struct client *c;
	uint32_t h;
	CUresult err = client_enter(&c);

	if (err != CUDA_SUCCESS)
		return err;
	err = client_stream_handle(c, stream, &h);
	if (err != CUDA_SUCCESS)
		return err;
	it = malloc(sizeof(*it));
	if (!it)
		return CUDA_ERROR_OUT_OF_MEMORY;
	*it = *tmpl;
	err = hostfn_enqueue(c, h, it);
	if (err == CUDA_ERROR_NOT_SUPPORTED)
		return hostfn_sync(stream, tmpl);
	return err;
}

/*
 * Waits until every host function enqueued on stream h so far has run. A
 * copy from ordinary host memory is staged when it is submitted, not when
 * the stream reaches it; a host function before it in the stream may still
 * be about to write that memory (callbacks_rt does), so the staging waits.
 */
void client_hostfn_wait_stream(uint32_t h)
{
	struct timespec t = {0, HOSTFN_FAST_POLL_NS};
	int i;

	/* every copy calls this: no lock until a host function was ever
	 * queued (a function queued by another thread at this very moment
	 * is not ordered before this copy anyway) */
	if (!__atomic_load_n(&hf.started, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&hf.lock);
	for (i = 0; i < HOSTFN_GATES; i++)
		if (hf.streams[i].used && hf.streams[i].handle == h)
			break;
	while (i < HOSTFN_GATES && hf.c &&
	       (int64_t)(__atomic_load_n(&hf.gates[i].open, __ATOMIC_ACQUIRE) -
			 hf.streams[i].seq) < 0) {
		CUresult dead;

		client_ring_lock(&hf.c->ring); /* order: hf.lock, then ring */
		dead = client_ring_dead(&hf.c->ring);
		client_ring_unlock(&hf.c->ring);
		if (dead != CUDA_SUCCESS)
			break;
		pthread_mutex_unlock(&hf.lock);
		nanosleep(&t, NULL);
		pthread_mutex_lock(&hf.lock);
	}
	pthread_mutex_unlock(&hf.lock);
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
