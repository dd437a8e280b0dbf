/* SPDX-License-Identifier: MIT */
/*
 * Ring index helpers shared by both ends of a vgpu ring. Indices are
 * free-running u32 counters; the slot is index & (entries - 1). Loads of
 * the other side's index are acquires, stores of our own are releases, so
 * an entry is fully written before its index is published.
 */
#ifndef VGPU_RING_H
#define VGPU_RING_H

#include <stddef.h>
#include <stdint.h>

#include "protocol.h"

static inline uint32_t ring_load_acquire(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void ring_store_release(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

/* Orders a flag store before the following load (sleep/wake protocol). */
static inline void ring_full_barrier(void)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

/* Entries between head and tail; larger than entries means corruption. */
static inline uint32_t ring_used(uint32_t head, uint32_t tail)
{
	return tail - head;
}

static inline int ring_is_pow2(uint32_t n)
{
	return n != 0 && (n & (n - 1)) == 0;
}

/*
 * True when [off, off + len) lies inside a region of size bytes, without
 * overflow. Every offset and length that crosses the ring goes through
 * this (or an equivalent check) before use.
 */
static inline int ring_range_ok(uint64_t off, uint64_t len, uint64_t size)
{
	return off <= size && len <= size - off;
}

static inline struct vgpu_sqe *ring_sqe(void *base, uint32_t sq_offset,
					uint32_t entries, uint32_t index)
{
	return (struct vgpu_sqe *)((char *)base + sq_offset) +
	       (index & (entries - 1));
}

static inline struct vgpu_cqe *ring_cqe(void *base, uint32_t cq_offset,
					uint32_t entries, uint32_t index)
{
	return (struct vgpu_cqe *)((char *)base + cq_offset) +
	       (index & (entries - 1));
}

/* Byte layout for a ring of the given geometry (worker side). */
struct ring_layout {
	uint32_t sq_entries, cq_entries;
	uint32_t sq_offset, cq_offset;
	uint64_t data_offset, data_size, total_size;
};

static inline void ring_layout_compute(struct ring_layout *l, uint32_t sq,
				       uint32_t cq, uint64_t data)
{
	const uint64_t page = 4096;

	l->sq_entries = sq;
	l->cq_entries = cq;
	l->sq_offset = (uint32_t)page;
	l->cq_offset = l->sq_offset + sq * (uint32_t)sizeof(struct vgpu_sqe);
	l->data_offset =
		(l->cq_offset + cq * sizeof(struct vgpu_cqe) + page - 1) &
		~(page - 1);
	l->data_size = data;
	l->total_size = l->data_offset + data;
}

#endif /* VGPU_RING_H */
