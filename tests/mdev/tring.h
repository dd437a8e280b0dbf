/* SPDX-License-Identifier: MIT */
/*
 * The guest's side of one channel ring, for the tests that play vgpud and
 * vgpu_mdev.ko: the ring lies in a window of a BAR2 memfd, the submit
 * doorbell is an eventfd we write, the completion doorbell an eventfd the
 * worker writes. Written from protocol.h and ring.h alone; every wait is
 * bounded.
 */
#ifndef VGPU_TEST_TRING_H
#define VGPU_TEST_TRING_H

#include <stdint.h>

#include <vgpu/protocol.h>
#include <vgpu/ring.h>

struct tring {
	void *base; /* the window, mapped */
	uint64_t size;
	struct vgpu_ring_header *hdr;
	struct ring_layout lay; /* read from the header, checked */
	int submit_fd, complete_fd;
	uint32_t sq_tail, cq_head, next_tag;
};

/* Map [off, off + size) of memfd and check the header the worker wrote.
 * 0, or -1 with a message on stderr. */
int tring_open(struct tring *r, int memfd, uint64_t off, uint64_t size,
	       int submit_fd, int complete_fd);
void tring_close(struct tring *r);

/* Queue one sqe (tag filled in) and ring the submit doorbell. */
void tring_post(struct tring *r, struct vgpu_sqe *sqe);

/* Wait up to timeout_ms for the next completion: 0 with *cqe, -1. */
int tring_reap(struct tring *r, struct vgpu_cqe *cqe, int timeout_ms);

/* Post and reap one descriptor: its status, or -1 on timeout. */
int tring_call(struct tring *r, struct vgpu_sqe *sqe, struct vgpu_cqe *cqe);

/* A pointer into the data area. */
void *tring_data(struct tring *r, uint64_t off);

/* Convenience: MEM_ALLOC (0 = failed), HTOD, DTOH; status returned. */
uint64_t tring_alloc(struct tring *r, uint64_t bytes);
int tring_copy(struct tring *r, uint16_t op, uint64_t dev, uint64_t off,
	       uint64_t bytes);

#endif /* VGPU_TEST_TRING_H */
