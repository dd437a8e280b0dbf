/* SPDX-License-Identifier: MIT */
/*
 * Channels of a vgpu_mdev instance from the guest's side (pci.h): open
 * with the CTRL register, wait for the state, then use the ring the
 * worker laid out in BAR2 (protocol.h, ring.h), as the guest driver will.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "vfio_dev.h"
#include "vgpu/ring.h"

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Sleeps up to ms, waking early on the device's interrupt. */
static void nap(struct vfio_dev *d, int ms)
{
	if (d->msi_fd >= 0)
		wait_eventfd(d->msi_fd, ms);
	else
		usleep(ms * 1000);
}

/*
 * Waits until channel ch is in state want: 0, or -1 with errno ETIMEDOUT,
 * or EIO when it went FAILED instead (its ERROR register says why).
 */
int chan_wait_state(struct vfio_dev *d, unsigned int ch, uint32_t want,
		    int timeout_ms)
{
	long end = now_ms() + timeout_ms;
	uint32_t st;

	for (;;) {
		st = reg_read(d, VGPU_REG_CHANNEL(ch) + VGPU_CHAN_STATE);
		if (st == want)
			return 0;
		if (st == VGPU_CHAN_FAILED) {
			diag("channel %u FAILED, error %d", ch,
			     (int)reg_read(d, VGPU_REG_CHANNEL(ch) +
						      VGPU_CHAN_ERROR));
			errno = EIO;
			return -1;
		}
		if (now_ms() >= end) {
			diag("channel %u: state %u after %d ms, want %u", ch,
			     st, timeout_ms, want);
			errno = ETIMEDOUT;
			return -1;
		}
		nap(d, 20);
	}
}

/*
 * Opens channel ch and reads its ring's layout once (never again: the
 * header page is shared with the worker, as the worker never re-reads a
 * client's). BAR2 must be mapped.
 */
int chan_open(struct vfio_dev *d, unsigned int ch, struct vfio_ring *r)
{
	uint64_t stride = VGPU_PCI_CHANNEL_STRIDE;
	struct vgpu_ring_header *h;

	if (reg_write(d, VGPU_REG_CHANNEL(ch) + VGPU_CHAN_CTRL,
		      VGPU_CHAN_CMD_OPEN) < 0 ||
	    chan_wait_state(d, ch, VGPU_CHAN_OPEN, 10000) < 0)
		return -1;
	if (!d->bar2 || (ch + 1) * stride > d->bar2_size) {
		diag("channel %u is outside BAR2", ch);
		errno = ERANGE;
		return -1;
	}
	memset(r, 0, sizeof(*r));
	r->channel = ch;
	r->base = (uint8_t *)d->bar2 + ch * stride;
	h = r->hdr = (struct vgpu_ring_header *)r->base;
	r->sq_entries = h->sq_entries;
	r->cq_entries = h->cq_entries;
	r->sq_offset = h->sq_offset;
	r->cq_offset = h->cq_offset;
	r->total_size = h->total_size;
	if (h->magic != VGPU_PROTO_MAGIC || h->major != VGPU_PROTO_MAJOR ||
	    !ring_is_pow2(r->sq_entries) || !ring_is_pow2(r->cq_entries) ||
	    r->total_size > stride ||
	    !ring_range_ok(r->sq_offset,
			   (uint64_t)r->sq_entries * sizeof(struct vgpu_sqe),
			   r->total_size) ||
	    !ring_range_ok(r->cq_offset,
			   (uint64_t)r->cq_entries * sizeof(struct vgpu_cqe),
			   r->total_size)) {
		diag("channel %u: bad ring header (magic 0x%x, version %u, "
		     "sq %u at %u, cq %u at %u, size %llu)",
		     ch, h->magic, h->major, r->sq_entries, r->sq_offset,
		     r->cq_entries, r->cq_offset,
		     (unsigned long long)r->total_size);
		errno = EPROTO;
		return -1;
	}
	return 0;
}

int chan_close(struct vfio_dev *d, unsigned int ch)
{
	if (reg_write(d, VGPU_REG_CHANNEL(ch) + VGPU_CHAN_CTRL,
		      VGPU_CHAN_CMD_CLOSE) < 0)
		return -1;
	return chan_wait_state(d, ch, VGPU_CHAN_FREE, 10000);
}

/* Puts one descriptor on the ring and rings the doorbell. */
int ring_submit(struct vfio_dev *d, struct vfio_ring *r,
		const struct vgpu_sqe *sqe)
{
	struct vgpu_ring_header *h = r->hdr;
	uint32_t tail = h->sq_tail; /* ours: only we write it */
	uint32_t head = ring_load_acquire(&h->sq_head);

	if (ring_used(head, tail) >= r->sq_entries) {
		errno = EAGAIN;
		return -1;
	}
	*ring_sqe(r->base, r->sq_offset, r->sq_entries, tail) = *sqe;
	ring_store_release(&h->sq_tail, tail + 1);
	return reg_write(d, VGPU_REG_CHANNEL(r->channel) + VGPU_CHAN_DOORBELL,
			 1);
}

/*
 * Takes the next completion, waiting up to timeout_ms on the interrupt;
 * *got_irq says whether the interrupt came. -1 with errno ETIMEDOUT, or
 * EPIPE when the worker marked the ring broken or dead.
 */
int ring_complete(struct vfio_dev *d, struct vfio_ring *r, struct vgpu_cqe *cqe,
		  int timeout_ms, int *got_irq)
{
	struct vgpu_ring_header *h = r->hdr;
	long end = now_ms() + timeout_ms;
	uint32_t head, tail;
	int left;

	for (;;) {
		head = h->cq_head;
		tail = ring_load_acquire(&h->cq_tail);
		if (tail != head) {
			*cqe = *ring_cqe(r->base, r->cq_offset, r->cq_entries,
					 head);
			ring_store_release(&h->cq_head, head + 1);
			return 0;
		}
		if (ring_load_acquire(&h->status) != VGPU_RING_OK) {
			diag("ring status %u, error %d", h->status, h->error);
			errno = EPIPE;
			return -1;
		}
		left = (int)(end - now_ms());
		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		if (d->msi_fd >= 0 && wait_eventfd(d->msi_fd, left) > 0)
			*got_irq = 1;
		else if (d->msi_fd < 0)
			usleep(1000);
	}
}

/*
 * One descriptor, one completion: says it sleeps first so that the worker
 * raises the completion interrupt, then submits and waits (10 s). The
 * flag stays set until the interrupt came (or 5 s more passed): the worker
 * reads it after it has published the completion, which we may have seen
 * already. Returns whether the interrupt came, or -1.
 */
int ring_call(struct vfio_dev *d, struct vfio_ring *r, struct vgpu_sqe *sqe,
	      struct vgpu_cqe *cqe)
{
	int irq = 0;

	r->hdr->client_sleeping = 1;
	ring_full_barrier();
	if (ring_submit(d, r, sqe) < 0 ||
	    ring_complete(d, r, cqe, 10000, &irq) < 0) {
		r->hdr->client_sleeping = 0;
		return -1;
	}
	if (!irq && d->msi_fd >= 0)
		irq = wait_eventfd(d->msi_fd, 5000) > 0;
	r->hdr->client_sleeping = 0;
	if (cqe->tag != sqe->tag) {
		diag("completion tag %u, want %u", cqe->tag, sqe->tag);
		errno = EPROTO;
		return -1;
	}
	return irq;
}
