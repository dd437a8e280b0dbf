/* SPDX-License-Identifier: MIT */
/*
 * The vGPU windows kept out of the process's own memory (client_va.c).
 */
#ifndef VGPU_CLIENT_VA_H
#define VGPU_CLIENT_VA_H

#include <stddef.h>
#include <stdint.h>

/* Says on stderr, once, what the reservation at load could not do. */
void client_va_report(void);

/*
 * A device allocation [ptr, ptr + bytes) just made: where its window was
 * not reserved at load, the window is claimed now (no host memory can
 * land there later). -1, with why, when the process already has memory
 * in that range (a host pointer would equal a device pointer); else 0.
 */
int client_va_claim(uint64_t ptr, uint64_t bytes, char *why, size_t len);

#endif /* VGPU_CLIENT_VA_H */
