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
 *   export {UUID} -> ok|error N from LIB   cuGetExportTable, and who asked
 *   proc NAME VERSION FLAGS -> ok|...  cuGetProcAddress(_v2)
 *
 * With VGPU_TRACE_ENTRIES=1 it also describes each export table once
 * ("table {UUID} ...": its slots, what each holds) and logs every call the
 * program makes through a table's entries, with the first six integer
 * arguments and the result ("entry {UUID}[i](...) -> r"): each entry is
 * replaced in place (the table keeps its address) by a trampoline that
 * passes six integer registers on, enough for every entry seen. The
 * integrity-check table {d4082055-...} is left alone: its answer hashes
 * the addresses of entries. VGPU_TRACE_DUMP=1 adds, for each argument
 * that points at readable memory, its first 64 bytes before and after
 * the call ("  argN before|after: hex"): what an entry reads and writes,
 * which its arguments alone do not tell. The memory is read with
 * process_vm_readv, so an argument that only looks like a pointer costs
 * nothing but a missing line.
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
#include <sys/uio.h>
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
#define HOOK_SLOTS  100 /* the largest table ({6e163fbe-...}) has 99 */

typedef uint64_t (*entry_fn)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t,
			     uint64_t);

static struct hooked {
	const void **table;
	char uuid[40];
	entry_fn orig[HOOK_SLOTS];
} hooked[HOOK_TABLES];
static int nhooked;
static pthread_mutex_t hook_lock = PTHREAD_MUTEX_INITIALIZER;

#define DUMP_BYTES 64

/* The first DUMP_BYTES at p as hex into hex (2 * DUMP_BYTES + 1), or
 * 0 when p is not readable memory of this process. */
static int dump_at(uint64_t p, char *hex)
{
	unsigned char buf[DUMP_BYTES];
	struct iovec local = {buf, sizeof(buf)};
	struct iovec remote = {(void *)(uintptr_t)p, sizeof(buf)};
	int j;

	if (p < 65536 || process_vm_readv(getpid(), &local, 1, &remote, 1, 0) !=
				 (ssize_t)sizeof(buf))
		return 0;
	for (j = 0; j < DUMP_BYTES; j++)
		sprintf(hex + 2 * j, "%02x", buf[j]);
	return 1;
}

static uint64_t entry_call(int k, int i, uint64_t a, uint64_t b, uint64_t c,
			   uint64_t d, uint64_t e, uint64_t f)
{
	const uint64_t arg[6] = {a, b, c, d, e, f};
	const char *env = getenv("VGPU_TRACE_DUMP");
	int dump = env && !strcmp(env, "1"), ok[6] = {0}, j;
	char before[6][2 * DUMP_BYTES + 1], after[2 * DUMP_BYTES + 1];
	CUcontext cur = NULL;
	uint64_t r;

	for (j = 0; dump && j < 6; j++)
		ok[j] = dump_at(arg[j], before[j]);
	r = hooked[k].orig[i](a, b, c, d, e, f);
	if (dump)
		cuCtxGetCurrent(&cur);
	trace("entry %s[%d](%#llx, %#llx, %#llx, %#llx, %#llx, %#llx) -> "
	      "%#llx%s%#llx\n",
	      hooked[k].uuid, i, (unsigned long long)a, (unsigned long long)b,
	      (unsigned long long)c, (unsigned long long)d,
	      (unsigned long long)e, (unsigned long long)f,
	      (unsigned long long)r, dump ? " current context " : "",
	      dump ? (unsigned long long)(uintptr_t)cur : 0ULL);
	for (j = 0; dump && j < 6; j++) {
		if (!ok[j])
			continue;
		trace("  arg%d before: %s\n", j, before[j]);
		if (dump_at(arg[j], after))
			trace("  arg%d after:  %s\n", j, after);
	}
	return r;
}

#define TRAMP(k, i)                                                            \
	static uint64_t tramp_##k##_##i(uint64_t a, uint64_t b, uint64_t c,    \
					uint64_t d, uint64_t e, uint64_t f)    \
	{                                                                      \
		return entry_call(k, i, a, b, c, d, e, f);                     \
	}
/* X(k, i) for i = 0..99 */
/* clang-format off */
#define SLOTS10(X, k, t) \
	X(k, t##0) X(k, t##1) X(k, t##2) X(k, t##3) X(k, t##4) \
	X(k, t##5) X(k, t##6) X(k, t##7) X(k, t##8) X(k, t##9)
#define SLOTS(X, k) \
	X(k, 0) X(k, 1) X(k, 2) X(k, 3) X(k, 4) \
	X(k, 5) X(k, 6) X(k, 7) X(k, 8) X(k, 9) \
	SLOTS10(X, k, 1) SLOTS10(X, k, 2) SLOTS10(X, k, 3) SLOTS10(X, k, 4) \
	SLOTS10(X, k, 5) SLOTS10(X, k, 6) SLOTS10(X, k, 7) SLOTS10(X, k, 8) \
	SLOTS10(X, k, 9)
#define TRAMPS(k) SLOTS(TRAMP, k)
#define PTR(k, i) tramp_##k##_##i,
#define PTRS(k) {SLOTS(PTR, k)}

TRAMPS(0) TRAMPS(1) TRAMPS(2) TRAMPS(3) TRAMPS(4) TRAMPS(5) TRAMPS(6)
TRAMPS(7) TRAMPS(8) TRAMPS(9) TRAMPS(10) TRAMPS(11) TRAMPS(12) TRAMPS(13)
TRAMPS(14) TRAMPS(15)

static const entry_fn tramps[HOOK_TABLES][HOOK_SLOTS] = {
	PTRS(0), PTRS(1), PTRS(2), PTRS(3), PTRS(4), PTRS(5), PTRS(6), PTRS(7),
	PTRS(8), PTRS(9), PTRS(10), PTRS(11), PTRS(12), PTRS(13), PTRS(14),
	PTRS(15),
};
/* clang-format on */

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
	Dl_info caller;
	const char *from = "?";

	if (dladdr(__builtin_return_address(0), &caller) && caller.dli_fname)
		from = strrchr(caller.dli_fname, '/')
			       ? strrchr(caller.dli_fname, '/') + 1
			       : caller.dli_fname;
	trace("export %s -> %s %d from %s\n", uuid,
	      rc == CUDA_SUCCESS ? "ok" : "error", (int)rc, from);
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
