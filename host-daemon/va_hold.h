/* SPDX-License-Identifier: MIT */
/*
 * The worker's hold on its VA window (include/vgpu/va.h) from start-up
 * until its backend takes the window: the sim backend takes the hold
 * itself; the cuda backend gives it back before cuInit, since the driver
 * never hands out a range the process had mapped when it started
 * (backend_cuda.c).
 */
#ifndef VGPU_VA_HOLD_H
#define VGPU_VA_HOLD_H

#include <stddef.h>
#include <stdint.h>

/*
 * Reserve [base, base + size) PROT_NONE for this process. 0, or -1 and a
 * sentence in err naming the address and what holds it. One hold at a
 * time (a worker has one window).
 */
int va_hold(uint64_t base, uint64_t size, char *err, size_t errlen);

/*
 * Give the hold back when it meets [base, base + size), right before a
 * backend maps there: the CUDA driver (cuMemAddressReserve) takes a hint
 * only where the process maps nothing. Nothing happens without a hold
 * there (unit tests open backends without one).
 */
void va_hold_release(uint64_t base, uint64_t size);

/*
 * The hold, when it is exactly [base, base + size), becomes the caller's
 * own PROT_NONE mapping (the sim backend's window: no gap in which
 * another mapping could land, and under valgrind no second 1 TiB to
 * track): 1. 0 when there is no such hold.
 */
int va_hold_take(uint64_t base, uint64_t size);

#endif /* VGPU_VA_HOLD_H */
