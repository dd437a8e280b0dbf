/* SPDX-License-Identifier: MIT */
/*
 * What nvcc's static constructors register: fat binaries, the kernels
 * in them (host stub address -> mangled device name) and their
 * __device__/__constant__ variables (host shadow address -> device
 * name). Plain bookkeeping, no driver calls: the device objects behind
 * them (CUlibrary, CUkernel, address) are filled in at first use by
 * cudart_module.c.
 */
#ifndef VGPU_CUDART_REGISTRY_H
#define VGPU_CUDART_REGISTRY_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>

#define CUDART_FATBIN_MAGIC 0x466243b1 /* nvcc's fatbin wrapper */
#define CUDART_FUNC_MAGIC   0x76726b6eu
#define CUDART_HASH_BUCKETS 256

/* nvcc's __fatDeviceText */
struct cudart_fatbin_wrapper {
	int magic;
	int version;
	const void *data;
	void *filename_or_fatbins;
};

struct cudart_fatbin {
	const void *image;    /* the fatbin; NULL if the wrapper was bad */
	pthread_mutex_t lock; /* guards lib, loaded */
	CUlibrary lib;
	int loaded;
	struct cudart_fatbin *next;
};

/* A kernel; its address is the cudaKernel_t __cudaGetKernel hands out. */
struct cudart_func {
	uint32_t magic; /* CUDART_FUNC_MAGIC while registered */
	const void *host;
	char *name;
	struct cudart_fatbin *fb;
	CUkernel kernel; /* atomic; NULL until the first launch */
	struct cudart_func *next;
};

struct cudart_var {
	const void *host;
	char *name;
	size_t size; /* as nvcc registered it */
	int constant;
	struct cudart_fatbin *fb;
	pthread_mutex_t lock; /* guards dptr, bytes, resolved */
	CUdeviceptr dptr;
	size_t bytes;
	int resolved;
	struct cudart_var *next;
};

struct cudart_registry {
	pthread_rwlock_t lock;
	struct cudart_fatbin *fatbins;
	struct cudart_func *funcs[CUDART_HASH_BUCKETS];
	struct cudart_var *vars[CUDART_HASH_BUCKETS];
};

/* The process's registry (cudart_registry.c). */
extern struct cudart_registry cudart_registry_the;

void cudart_registry_init(struct cudart_registry *r);
/* Frees everything still registered (tests). */
void cudart_registry_fini(struct cudart_registry *r);

/* A new fatbin for nvcc's wrapper (its magic checked), or NULL without
 * memory. */
struct cudart_fatbin *cudart_registry_add_fatbin(struct cudart_registry *r,
						 const void *wrapper);

/* 0, or -1 without memory or with bad arguments. A host address
 * registered twice (a template instantiated in two files) keeps its
 * first registration. */
int cudart_registry_add_func(struct cudart_registry *r,
			     struct cudart_fatbin *fb, const void *host,
			     const char *name);
int cudart_registry_add_var(struct cudart_registry *r, struct cudart_fatbin *fb,
			    const void *host, const char *name, size_t size,
			    int constant);

struct cudart_func *cudart_registry_func(struct cudart_registry *r,
					 const void *host);
struct cudart_var *cudart_registry_var(struct cudart_registry *r,
				       const void *host);
/* 1 when fb is a registered fatbin. */
int cudart_registry_has_fatbin(struct cudart_registry *r,
			       struct cudart_fatbin *fb);

/*
 * Forgets what loading made (each fatbin's library, each kernel, each
 * variable's address) and keeps the registrations: after cudaDeviceReset
 * unloaded the libraries, the next use loads them again, as CUDA
 * re-registers a program's code after a reset.
 */
void cudart_registry_forget_loaded(struct cudart_registry *r);

/* Unlinks fb with its kernels and variables and frees them; returns its
 * library (to unload) in *lib and whether it was loaded. -1 if fb is not
 * registered. */
int cudart_registry_remove_fatbin(struct cudart_registry *r,
				  struct cudart_fatbin *fb, CUlibrary *lib,
				  int *loaded);

#endif /* VGPU_CUDART_REGISTRY_H */
