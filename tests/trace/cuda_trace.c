/* SPDX-License-Identifier: MIT */
/*
 * A tracing libcuda.so.1 in front of NVIDIA's driver: what NVIDIA's
 * runtime and libraries ask the driver for beyond its public entry points
 * (issue 17's inventory). Put its folder first on LD_LIBRARY_PATH; it
 * loads the real driver by its path (VGPU_TRACE_REAL, default the
 * system's /usr/lib/x86_64-linux-gnu/libcuda.so.1) and forwards every
 * function to it, except three, which it logs first, one line each, to
 * VGPU_TRACE_FILE (default stderr):
 *
 *   export {UUID} -> ok|error N       cuGetExportTable
 *   proc NAME VERSION FLAGS -> ok|...  cuGetProcAddress(_v2)
 *
 * cuGetProcAddress asked for cuGetProcAddress or cuGetExportTable answers
 * with this library's own, or later requests would bypass the log. The
 * other functions are forwarders generated from the toolkit's stub
 * (gen_forwarders.sh): a jump through a pointer filled at load time.
 */
/* the exported names as they are, not cuda.h's versioned macros */
#define __CUDA_API_VERSION_INTERNAL
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_trace_fwd.h"

#define TRACE_REAL_DEFAULT "/usr/lib/x86_64-linux-gnu/libcuda.so.1"

static void *real;
static FILE *out;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

typedef CUresult(CUDAAPI *export_fn)(const void **, const CUuuid *);
typedef CUresult(CUDAAPI *proc2_fn)(const char *, void **, int, cuuint64_t,
				    CUdriverProcAddressQueryResult *);
typedef CUresult(CUDAAPI *proc1_fn)(const char *, void **, int, cuuint64_t);

static export_fn real_export;
static proc2_fn real_proc2;
static proc1_fn real_proc1;

static void trace(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void trace(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&out_lock);
	va_start(ap, fmt);
	vfprintf(out ? out : stderr, fmt, ap);
	va_end(ap);
	fflush(out ? out : stderr);
	pthread_mutex_unlock(&out_lock);
}

__attribute__((constructor)) static void trace_init(void)
{
	const char *path = getenv("VGPU_TRACE_REAL");
	const char *file = getenv("VGPU_TRACE_FILE");

	if (file && *file)
		out = fopen(file, "a");
	real = dlopen(path && *path ? path : TRACE_REAL_DEFAULT,
		      RTLD_NOW | RTLD_LOCAL);
	if (!real) {
		trace("cuda_trace: cannot load the real driver: %s\n",
		      dlerror());
		return;
	}
	real_export = (export_fn)dlsym(real, "cuGetExportTable");
	real_proc2 = (proc2_fn)dlsym(real, "cuGetProcAddress_v2");
	real_proc1 = (proc1_fn)dlsym(real, "cuGetProcAddress");
	cuda_trace_fwd_resolve(real);
}

CUresult CUDAAPI cuGetExportTable(const void **table, const CUuuid *id)
{
	const unsigned char *u = (const unsigned char *)id->bytes;
	CUresult rc = real_export ? real_export(table, id)
				  : CUDA_ERROR_NOT_INITIALIZED;

	trace("export {%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
	      "%02x%02x%02x%02x%02x%02x} -> %s %d\n",
	      u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10],
	      u[11], u[12], u[13], u[14], u[15],
	      rc == CUDA_SUCCESS ? "ok" : "error", (int)rc);
	return rc;
}

/* Ours for the two that must stay traced; else the real answer. */
static int own_answer(const char *symbol, void **pfn);

CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn,
				     int version, cuuint64_t flags,
				     CUdriverProcAddressQueryResult *status)
{
	CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SUCCESS;
	CUresult rc = real_proc2 ? real_proc2(symbol, pfn, version, flags, &st)
				 : CUDA_ERROR_NOT_INITIALIZED;

	if (rc == CUDA_SUCCESS && symbol)
		own_answer(symbol, pfn);
	trace("proc %s %d %llu -> %d status %d\n", symbol ? symbol : "(null)",
	      version, (unsigned long long)flags, (int)rc, (int)st);
	if (status)
		*status = st;
	return rc;
}

CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int version,
				  cuuint64_t flags)
{
	CUresult rc = real_proc1 ? real_proc1(symbol, pfn, version, flags)
				 : CUDA_ERROR_NOT_INITIALIZED;

	if (rc == CUDA_SUCCESS && symbol)
		own_answer(symbol, pfn);
	trace("proc1 %s %d %llu -> %d\n", symbol ? symbol : "(null)", version,
	      (unsigned long long)flags, (int)rc);
	return rc;
}

static int own_answer(const char *symbol, void **pfn)
{
	if (!strcmp(symbol, "cuGetExportTable"))
		*pfn = (void *)cuGetExportTable;
	else if (!strcmp(symbol, "cuGetProcAddress"))
		*pfn = (void *)cuGetProcAddress_v2; /* 12.0+: the _v2 one */
	else
		return 0;
	return 1;
}
