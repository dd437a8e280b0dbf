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
 * With VGPU_TRACE_ENTRIES=1 it also describes each export table once
 * ("table {UUID} ...": its slots, what each holds) and logs every call the
 * program makes through a table's entries, with the first six integer
 * arguments and the result ("entry {UUID}[i](...) -> r"): each entry is
 * replaced in place (the table keeps its address) by a trampoline that
 * passes six integer registers on, enough for every entry seen. The
 * integrity-check table {d4082055-...} is left alone: its answer hashes
 * the addresses of entries.
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
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
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

/* ---- export-table entries (VGPU_TRACE_ENTRIES=1) ---- */

#define HOOK_TABLES 16
#define HOOK_SLOTS  32

typedef uint64_t (*entry_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
			     uint64_t);

static struct hooked {
	const void **table;
	char uuid[40];
	entry_fn orig[HOOK_SLOTS];
} hooked[HOOK_TABLES];
static int nhooked;
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t entry_call(int k, int i, uint64_t a, uint64_t b, uint64_t c,
			   uint64_t d, uint64_t e, uint64_t f)
{
	uint64_t r = hooked[k].orig[i](a, b, c, d, e, f);

	trace("entry %s[%d](%#llx, %#llx, %#llx, %#llx, %#llx, %#llx) -> "
	      "%#llx\n",
	      hooked[k].uuid, i, (unsigned long long)a, (unsigned long long)b,
	      (unsigned long long)c, (unsigned long long)d,
	      (unsigned long long)e, (unsigned long long)f,
	      (unsigned long long)r);
	return r;
}

#define TRAMP(k, i)                                                            \
	static uint64_t tramp_##k##_##i(uint64_t a, uint64_t b, uint64_t c,    \
					uint64_t d, uint64_t e, uint64_t f)    \
	{                                                                      \
		return entry_call(k, i, a, b, c, d, e, f);                     \
	}
/* X(k, i) for i = 0..31 */
#define SLOTS(X, k)                                                            \
	X(k, 0)                                                                \
	X(k, 1) X(k, 2) X(k, 3) X(k, 4) X(k, 5) X(k, 6) X(k, 7) X(k, 8)        \
		X(k, 9) X(k, 10) X(k, 11) X(k, 12) X(k, 13) X(k, 14) X(k, 15)  \
			X(k, 16) X(k, 17) X(k, 18) X(k, 19) X(k, 20) X(k, 21)  \
				X(k, 22) X(k, 23) X(k, 24) X(k, 25) X(k, 26)   \
					X(k, 27) X(k, 28) X(k, 29) X(k, 30)    \
						X(k, 31)
#define TRAMPS32(k) SLOTS(TRAMP, k)
#define PTR(k, i)   tramp_##k##_##i,
#define PTRS32(k)                                                              \
	{                                                                      \
		SLOTS(PTR, k)                                                  \
	}

TRAMPS32(0)
TRAMPS32(1) TRAMPS32(2) TRAMPS32(3) TRAMPS32(4) TRAMPS32(5) TRAMPS32(6)
	TRAMPS32(7) TRAMPS32(8) TRAMPS32(9) TRAMPS32(10) TRAMPS32(11) TRAMPS32(
		12) TRAMPS32(13) TRAMPS32(14) TRAMPS32(15)

		static const entry_fn tramps[HOOK_TABLES][HOOK_SLOTS] = {
			PTRS32(0),  PTRS32(1),	PTRS32(2),  PTRS32(3),
			PTRS32(4),  PTRS32(5),	PTRS32(6),  PTRS32(7),
			PTRS32(8),  PTRS32(9),	PTRS32(10), PTRS32(11),
			PTRS32(12), PTRS32(13), PTRS32(14), PTRS32(15),
};

/* A pointer into the real driver's mapping. */
static int in_driver(const void *p, const void *base)
{
	Dl_info di;

	return p && dladdr(p, &di) && di.dli_fbase == base;
}

/* Describe the table once and hook its entries (not the integrity
 * check's). */
static void hook_table(const void **t, const char *uuid)
{
	Dl_info self;
	const void *base;
	char desc[2048];
	int k, i, first, n, len = 0, skip;
	long pg = sysconf(_SC_PAGESIZE);

	pthread_mutex_lock(&hook_lock);
	for (k = 0; k < nhooked; k++)
		if (hooked[k].table == t)
			goto out;
	if (nhooked == HOOK_TABLES || !dladdr((const void *)real_export, &self))
		goto out;
	base = self.dli_fbase;
	k = nhooked++;
	hooked[k].table = t;
	snprintf(hooked[k].uuid, sizeof(hooked[k].uuid), "%s", uuid);
	if ((uintptr_t)t[0] < 4096) { /* slot 0: the table's size */
		first = 1;
		n = (int)((uintptr_t)t[0] / sizeof(void *));
	} else {
		first = 0;
		for (n = 0; n < HOOK_SLOTS && in_driver(t[n], base); n++)
			;
	}
	if (n > HOOK_SLOTS)
		n = HOOK_SLOTS;
	len += snprintf(desc + len, sizeof(desc) - len,
			"table %s slots %d:", uuid, n);
	if (first)
		len += snprintf(desc + len, sizeof(desc) - len, " 0=size %lu",
				(unsigned long)(uintptr_t)t[0]);
	for (i = first; i < n && len < (int)sizeof(desc) - 40; i++) {
		if (!t[i])
			len += snprintf(desc + len, sizeof(desc) - len,
					" %d=null", i);
		else if (in_driver(t[i], base))
			len += snprintf(desc + len, sizeof(desc) - len,
					" %d=fn+%#lx", i,
					(unsigned long)((uintptr_t)t[i] -
							(uintptr_t)base));
		else
			len += snprintf(desc + len, sizeof(desc) - len,
					" %d=data %#lx", i,
					(unsigned long)(uintptr_t)t[i]);
	}
	trace("%s\n", desc);
	skip = !strncmp(uuid, "{d4082055", 9);
	if (!skip && n > first &&
	    !mprotect((void *)((uintptr_t)t & ~(uintptr_t)(pg - 1)),
		      ((uintptr_t)(t + n) -
		       ((uintptr_t)t & ~(uintptr_t)(pg - 1))),
		      PROT_READ | PROT_WRITE)) {
		for (i = first; i < n; i++) {
			if (!in_driver(t[i], base))
				continue;
			hooked[k].orig[i] = (entry_fn)t[i];
			t[i] = (const void *)tramps[k][i];
		}
	}
out:
	pthread_mutex_unlock(&hook_lock);
}

CUresult CUDAAPI cuGetExportTable(const void **table, const CUuuid *id)
{
	const unsigned char *u = (const unsigned char *)id->bytes;
	CUresult rc = real_export ? real_export(table, id)
				  : CUDA_ERROR_NOT_INITIALIZED;

	char uuid[40];
	const char *e = getenv("VGPU_TRACE_ENTRIES");

	snprintf(uuid, sizeof(uuid),
		 "{%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x}",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
	trace("export %s -> %s %d\n", uuid, rc == CUDA_SUCCESS ? "ok" : "error",
	      (int)rc);
	if (rc == CUDA_SUCCESS && e && !strcmp(e, "1") && table && *table)
		hook_table((const void **)*table, uuid);
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
