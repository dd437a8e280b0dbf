/* SPDX-License-Identifier: MIT */
/*
 * The client end of a vgpu ring: submit descriptors, reap completions,
 * hand out data-area regions, and notice a worker that is gone.
 *
 * One mutex (lock) guards everything here. Callers take it with
 * client_ring_lock(), build and push descriptors, and wait; waiting
 * drops the lock while the thread spins or sleeps, so other threads keep
 * submitting. One waiting thread at a time (the poller) watches the
 * completion eventfd and the socket; the others sleep on cond and are
 * woken whenever completions are reaped, regions come back or the poller
 * role is free.
 *
 * Every descriptor gets a slot whose index and generation form its tag.
 * A slot is either
 *   WAIT  - its owner waits for it (client_ring_wait) and then reads its
 *           completion and any output in its data region, and frees that
 *           region itself; or
 *   ASYNC - nobody waits: on completion its data region is freed, and a
 *           failure is recorded in its group (first error wins) or, with
 *           no group, kept as the deferred error that the next
 *           synchronizing call returns.
 *
 * When the worker is gone (client_ring_dead() != 0) nothing is reaped any
 * more and every wait returns that error; see ring_dead_error() in
 * client_ring.c for which error that is.
 */
#ifndef VGPU_CLIENT_RING_H
#define VGPU_CLIENT_RING_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <vgpu/protocol.h>

#include "client_data.h"

/* Completion bookkeeping for a set of ASYNC descriptors. */
struct client_group {
	uint32_t pending;
	CUresult error; /* first failure, CUDA_SUCCESS if none */
};

enum client_slot_mode {
	CLIENT_SLOT_WAIT = 1,
	CLIENT_SLOT_ASYNC = 2,
};

/* How a pushed descriptor is tracked. */
struct client_push {
	enum client_slot_mode mode;
	struct client_group *group; /* ASYNC only; NULL = deferred error */
	uint64_t data_off;	    /* region to free on ASYNC completion */
	uint64_t data_len;	    /* 0 = none */
};

struct client_slot;

struct client_ring {
	pthread_mutex_t lock;
	pthread_cond_t cond;

	/* the shared mapping and our private copy of its layout */
	struct vgpu_ring_header *hdr;
	char *base;
	uint64_t map_size;
	uint32_t sq_entries, cq_entries;
	uint32_t sq_offset, cq_offset;
	char *data;
	uint64_t data_size;

	int sock;	  /* liveness only */
	int submit_efd;	  /* we write: worker's doorbell */
	int complete_efd; /* we read: our doorbell */

	uint32_t sq_tail;      /* next descriptor goes here */
	uint32_t sq_published; /* what the worker has been shown */
	uint32_t cq_head;
	uint32_t inflight;     /* pushed, completion not yet reaped */
	uint32_t max_inflight; /* keeps both queues from overflowing */
	int poller;	       /* a thread is waiting on the eventfd */

	struct client_slot *slots;
	uint32_t nslots;
	uint32_t free_slot; /* head of the free list, UINT32_MAX if none */

	struct client_data area;

	CUresult dead;	   /* != 0 once the worker is gone */
	CUresult deferred; /* first failure of ungrouped ASYNC work */

	/*
	 * A HOST_REGION_CREATE is in flight: the packet the worker sends
	 * with its memfd may sit on sock, and belongs to that creator. The
	 * liveness check then never reads the socket. Atomic: the poller
	 * reads it with the lock dropped.
	 */
	uint32_t region_busy;
};

/*
 * Checks the layout the worker wrote in the header of a map_size-byte
 * mapping (magic, version, powers of two, regions inside the mapping and
 * not overlapping) and sets the ring up over it. The descriptors stay
 * owned by the caller. Returns 0, or -1 with a sentence in err.
 */
int client_ring_init(struct client_ring *r, void *map, uint64_t map_size,
		     int sock, int submit_efd, int complete_efd, char *err,
		     size_t errlen);
void client_ring_fini(struct client_ring *r);

void client_ring_lock(struct client_ring *r);
void client_ring_unlock(struct client_ring *r);

/* The error every call returns now, CUDA_SUCCESS while the worker lives.
 * Also looks at the header, so a DEAD ring is noticed without a wait. */
CUresult client_ring_dead(struct client_ring *r);

/*
 * A data region of len bytes at *off, waiting for regions to come back
 * if the area is full. The caller must hold no region it has not pushed
 * (or that client_ring_try_data_alloc could get back by itself), or the
 * wait could be for itself. Fails with CUDA_ERROR_INVALID_VALUE when len
 * can never fit, or with the dead error.
 */
CUresult client_ring_data_alloc(struct client_ring *r, uint64_t len,
				uint64_t *off);
/* Like client_ring_data_alloc but never waits: CUDA_ERROR_NOT_READY. */
CUresult client_ring_try_data_alloc(struct client_ring *r, uint64_t len,
				    uint64_t *off);
void client_ring_data_free(struct client_ring *r, uint64_t off, uint64_t len);

static inline void *client_ring_data(struct client_ring *r, uint64_t off)
{
	return r->data + off;
}

/*
 * Writes *sqe (its tag is filled in) into the submission queue, waiting
 * for room. The worker sees it at the next flush (or wait). On failure
 * nothing is pushed and an ASYNC region stays the caller's to free.
 */
CUresult client_ring_push(struct client_ring *r, struct vgpu_sqe *sqe,
			  const struct client_push *how, uint32_t *tag);

/* Publishes every pushed descriptor; rings the doorbell only when the
 * worker said it is going to sleep. */
void client_ring_flush(struct client_ring *r);

/*
 * Waits for the WAIT descriptor tag and copies its completion to *cqe.
 * Returns CUDA_SUCCESS (the operation's own status is cqe->status) or
 * the dead error. The slot is released either way.
 */
CUresult client_ring_wait(struct client_ring *r, uint32_t tag,
			  struct vgpu_cqe *cqe);

/* Waits until no descriptor of group is pending; returns the dead error
 * or CUDA_SUCCESS (the group's own error is in group->error). */
CUresult client_ring_wait_group(struct client_ring *r,
				struct client_group *group);

/* Returns and clears the deferred error (sticky ones are the dead
 * error and stay). Lock held. */
CUresult client_ring_take_deferred(struct client_ring *r);

/* What a synchronizing call returns: its own failure err, else (taking
 * it) an error left by earlier asynchronous work. Lock not held. */
CUresult client_ring_sync_result(struct client_ring *r, CUresult err);

/*
 * One synchronous operation: lock, push sqe as WAIT, wait, unlock.
 * Returns the dead error or the completion's status; *cqe (may be NULL)
 * gets the completion.
 */
CUresult client_ring_call(struct client_ring *r, struct vgpu_sqe *sqe,
			  struct vgpu_cqe *cqe);

/*
 * Host region creation owns the socket's packets: begin waits for any
 * other creation to end and marks the ring busy (so the poller leaves
 * the socket alone and packets cannot be taken by the wrong creator);
 * end clears it. Lock held.
 */
void client_ring_region_begin(struct client_ring *r);
void client_ring_region_end(struct client_ring *r);

/*
 * Receives and discards every packet waiting on the socket, closing any
 * descriptor that came with one. Returns 1 when the peer has closed the
 * socket, else 0. Never blocks.
 */
int client_ring_drain_sock(int sock);

/* Pushes sqe as ASYNC with no group (errors deferred) and flushes. */
CUresult client_ring_submit_async(struct client_ring *r, struct vgpu_sqe *sqe);

#endif /* VGPU_CLIENT_RING_H */
