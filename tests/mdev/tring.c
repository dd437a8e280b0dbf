/* SPDX-License-Identifier: MIT */
/*
 * Guest side of a channel ring (tring.h). The test always says it sleeps
 * (client_sleeping = 1), so the worker rings the completion eventfd after
 * every completion and a bounded poll on it is all the waiting we need.
 */
#include <cuda.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tring.h"

#define TRING_TIMEOUT_MS 10000

int tring_open(struct tring *r, int memfd, uint64_t off, uint64_t size,
	       int submit_fd, int complete_fd)
{
	struct vgpu_ring_header *h;

	memset(r, 0, sizeof(*r));
	r->base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, memfd,
		       (off_t)off);
	if (r->base == MAP_FAILED) {
		perror("tring: mmap");
		r->base = NULL;
		return -1;
	}
	r->size = size;
	r->submit_fd = submit_fd;
	r->complete_fd = complete_fd;
	r->next_tag = 1;
	h = r->hdr = r->base;
	r->lay.sq_entries = h->sq_entries;
	r->lay.cq_entries = h->cq_entries;
	r->lay.sq_offset = h->sq_offset;
	r->lay.cq_offset = h->cq_offset;
	r->lay.data_offset = h->data_offset;
	r->lay.data_size = h->data_size;
	r->lay.total_size = h->total_size;
	if (h->magic != VGPU_PROTO_MAGIC || h->major != VGPU_PROTO_MAJOR ||
	    !ring_is_pow2(h->sq_entries) || !ring_is_pow2(h->cq_entries) ||
	    h->total_size != size ||
	    h->data_offset + h->data_size != h->total_size ||
	    ring_load_acquire(&h->status) != VGPU_RING_OK || h->sq_tail ||
	    h->sq_head || h->cq_tail || h->cq_head) {
		fprintf(stderr,
			"tring: bad header: magic 0x%x, %u/%u entries, total "
			"%llu (window %llu), data %llu+%llu, status %u, "
			"indices %u %u %u %u\n",
			h->magic, h->sq_entries, h->cq_entries,
			(unsigned long long)h->total_size,
			(unsigned long long)size,
			(unsigned long long)h->data_offset,
			(unsigned long long)h->data_size, h->status, h->sq_tail,
			h->sq_head, h->cq_tail, h->cq_head);
		tring_close(r);
		return -1;
	}
	__atomic_store_n(&h->client_sleeping, 1, __ATOMIC_RELAXED);
	return 0;
}

void tring_close(struct tring *r)
{
	if (r->base)
		munmap(r->base, r->size);
	r->base = NULL;
}

void tring_post(struct tring *r, struct vgpu_sqe *sqe)
{
	uint64_t one = 1;
	ssize_t n;

	sqe->tag = r->next_tag++;
	*ring_sqe(r->base, r->lay.sq_offset, r->lay.sq_entries, r->sq_tail) =
		*sqe;
	r->sq_tail++;
	ring_store_release(&r->hdr->sq_tail, r->sq_tail);
	ring_full_barrier();
	n = write(r->submit_fd, &one, sizeof(one));
	(void)n;
}

int tring_reap(struct tring *r, struct vgpu_cqe *cqe, int timeout_ms)
{
	struct pollfd p = {.fd = r->complete_fd, .events = POLLIN};
	uint64_t v;
	ssize_t n;

	for (;;) {
		if (ring_load_acquire(&r->hdr->cq_tail) != r->cq_head) {
			*cqe = *ring_cqe(r->base, r->lay.cq_offset,
					 r->lay.cq_entries, r->cq_head);
			r->cq_head++;
			ring_store_release(&r->hdr->cq_head, r->cq_head);
			return 0;
		}
		if (ring_load_acquire(&r->hdr->status) != VGPU_RING_OK)
			return -1;
		if (poll(&p, 1, timeout_ms) <= 0)
			return -1;
		n = read(r->complete_fd, &v, sizeof(v));
		(void)n;
	}
}

int tring_call(struct tring *r, struct vgpu_sqe *sqe, struct vgpu_cqe *cqe)
{
	uint32_t tag;

	tring_post(r, sqe);
	tag = sqe->tag;
	if (tring_reap(r, cqe, TRING_TIMEOUT_MS) < 0) {
		fprintf(stderr, "tring: no completion for tag %u (status %u)\n",
			tag, r->hdr->status);
		return -1;
	}
	if (cqe->tag != tag) {
		fprintf(stderr, "tring: completion tag %u, expected %u\n",
			cqe->tag, tag);
		return -1;
	}
	return cqe->status;
}

void *tring_data(struct tring *r, uint64_t off)
{
	return (char *)r->base + r->lay.data_offset + off;
}

uint64_t tring_alloc(struct tring *r, uint64_t bytes)
{
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_MEM_ALLOC, .a = {bytes}};
	struct vgpu_cqe cqe;

	if (tring_call(r, &sqe, &cqe) != CUDA_SUCCESS)
		return 0;
	return cqe.r[0];
}

int tring_copy(struct tring *r, uint16_t op, uint64_t dev, uint64_t off,
	       uint64_t bytes)
{
	struct vgpu_sqe sqe = {.opcode = op, .a = {dev, off, bytes}};
	struct vgpu_cqe cqe;

	return tring_call(r, &sqe, &cqe);
}
