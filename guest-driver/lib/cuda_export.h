/* SPDX-License-Identifier: MIT */
/*
 * The driver's export tables (cuda_export.c): their numbers here, and
 * what fills the entries a vGPU serves.
 */
#ifndef VGPU_CUDA_EXPORT_H
#define VGPU_CUDA_EXPORT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

enum export_table_id {
	EXPORT_CUDART,	  /* the runtime's interface: primary context */
	EXPORT_TOOLS_TLS, /* tools' thread-local state */
	EXPORT_HOOKS,	  /* tools' runtime callback hooks: buffers */
	EXPORT_CLS,	  /* context-local storage */
	EXPORT_INTEGRITY, /* the runtime's check that this is the driver */
	EXPORT_CHECKS,	  /* context checks */
	EXPORT_F8CF,	  /* asked for by every runtime, never called */
	EXPORT_LIBS_A,	  /* asked for by cuBLAS, cuFFT, PyTorch */
	EXPORT_LIBS_B,	  /* asked for by cuBLAS */
	EXPORT_TORCH,	  /* asked for by PyTorch */
	EXPORT_LIBS_C,	  /* asked for by cuBLASLt (half precision) */
	EXPORT_TABLES
};

/* The table the program gets (its entries installed on first use). */
const void *const *export_table(int t);

/* cuda_export_integrity.c: the integrity check (slot 1 of its table):
 * result = what NVIDIA's driver answers for this version and time. */
CUresult export_integrity_check(uint32_t version, uint64_t unix_seconds,
				uint64_t result[2]);

/* MD2 (RFC 1319) of len bytes at p: the check's hash, for its tests. */
void export_md2(const void *p, size_t len, unsigned char out[16]);

/* cuda_export_entries.c: put the served entries into the tables. */
void export_entries_install(const void *tables[][100]);

#endif /* VGPU_CUDA_EXPORT_H */
