/* SPDX-License-Identifier: MIT */
/*
 * VGPU_TRACE=1: one stderr line per private-interface request a program
 * makes of the driver (cuGetExportTable, cuGetProcAddress, a call through
 * an export table entry we do not serve), in the format of the tracing
 * shim tests/trace/cuda_trace.c uses against NVIDIA's driver, prefixed
 * "vgpu-trace: ", so that the two inventories compare line by line.
 */
#ifndef VGPU_CLIENT_TRACE_H
#define VGPU_CLIENT_TRACE_H

/* VGPU_TRACE is "1" (read once). */
int client_trace_on(void);
/* One line (fmt ends in \n), whole, to stderr. */
void client_trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif /* VGPU_CLIENT_TRACE_H */
