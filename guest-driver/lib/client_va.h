/* SPDX-License-Identifier: MIT */
/*
 * The vGPU windows kept out of the process's own memory (client_va.c).
 */
#ifndef VGPU_CLIENT_VA_H
#define VGPU_CLIENT_VA_H

/* Says on stderr, once, what the reservation at load could not do. */
void client_va_report(void);

#endif /* VGPU_CLIENT_VA_H */
