/* SPDX-License-Identifier: MIT */
/*
 * Host-side copies between the caller's memory and the ring's data area.
 * One core's memcpy moves about 10 GB/s, less than the GPU's DMA: a
 * pageable D2H copy would be bound by it. Large copies are therefore
 * split across a few helper threads (VGPU_COPY_THREADS, default up to 3
 * helpers besides the caller; 0 turns them off).
 */
#ifndef VGPU_CLIENT_MEMCPY_H
#define VGPU_CLIENT_MEMCPY_H

#include <stddef.h>

/* memcpy(dst, src, n), in parallel when n is large and helpers are idle. */
void client_memcpy(void *dst, const void *src, size_t n);

#endif /* VGPU_CLIENT_MEMCPY_H */
