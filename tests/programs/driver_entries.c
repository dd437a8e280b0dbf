/* SPDX-License-Identifier: MIT */
/*
 * driver_entries: the entries of the driver's private tables that
 * cuBLASLt calls around a matrix product (issue 17), checked against the
 * public calls they must agree with, on NVIDIA's driver and on ours:
 *   - slot 2 of {42d85a81-...}: (CUcontext *out, ...) gives the
 *     calling thread's current context, as cuCtxGetCurrent does;
 *   - slot 4 of {21318c60-...}: (CUcontext ctx, unsigned long long *id)
 *     gives the context's unique id, as cuCtxGetId does;
 *   - slot 51 of {21318c60-...}: (ctx, CUstream, void **out) resolves a
 *     stream (NULL too) to an object that slot 39 (ctx, object,
 *     unsigned long long *id) turns into the stream's id, as
 *     cuStreamGetId gives it (for NULL, the context's default stream's).
 * Also cuCtxGetId and cuStreamGetId themselves: ids unique, never 0, and
 * not reused after a destruction. Prints each value it saw (so a native
 * run documents the driver) and "driver_entries: OK" when every check
 * holds.
 */
#include "prog.h"

#include <stdint.h>

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

typedef CUresult (*current_fn)(CUcontext *, uintptr_t, uintptr_t, uintptr_t);
typedef CUresult (*ctx_id_fn)(CUcontext, unsigned long long *);
typedef CUresult (*stream_resolve_fn)(CUcontext, CUstream, void **);
typedef CUresult (*stream_id_fn)(CUcontext, void *, unsigned long long *);

/* The stream's id through slots 51 and 39, and through cuStreamGetId. */
static void stream_ids(const void **libs_table, CUcontext ctx, CUstream s,
		       const char *what)
{
	stream_resolve_fn resolve = (stream_resolve_fn)libs_table[51];
	stream_id_fn id_of = (stream_id_fn)libs_table[39];
	void *obj = NULL;
	unsigned long long e = 0, id = 0;
	CUresult r1, r2;
	char line[160];

	r1 = resolve(ctx, s, &obj);
	r2 = r1 == CUDA_SUCCESS ? id_of(ctx, obj, &e) : r1;
	CHECK(cuStreamGetId(s, &id));
	printf("stream entries, %s (%p): resolve %d -> %p%s, id %d -> %llu; "
	       "cuStreamGetId %llu\n",
	       what, (void *)s, r1, obj,
	       obj == (void *)s ? " (the handle)" : "", r2, e, id);
	/* NULL: NVIDIA's driver resolves the context's own default stream,
	 * whose id is not cuStreamGetId(NULL)'s (20 and 14 on the H200) */
	snprintf(line, sizeof(line), "the stream entries give %s (%s)",
		 s ? "cuStreamGetId's id" : "an id", what);
	expect(r1 == CUDA_SUCCESS && obj && r2 == CUDA_SUCCESS && e &&
		       (!s || e == id),
	       line);
}

static const void **table(const unsigned char uuid[16])
{
	CUuuid id;
	const void *t = NULL;

	memcpy(id.bytes, uuid, 16);
	CHECK(cuGetExportTable(&t, &id));
	return (const void **)t;
}

int main(void)
{
	static const unsigned char tls[16] = {
		0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
		0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc};
	static const unsigned char libs[16] = {
		0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
		0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2};
	current_fn current;
	ctx_id_fn ctx_id;
	CUcontext a, b, c, got, none;
	CUstream s1, s2, s3;
	CUdevice dev;
	unsigned long long ia, ib, ic, ea, eb, v, i1, i2, i3, i0;
	CUresult r;

	a = prog_init(&dev);
	current = (current_fn)table(tls)[2];
	ctx_id = (ctx_id_fn)table(libs)[4];

	got = NULL;
	r = current(&got, 0, 0, 0);
	printf("current entry, primary current: %d, %p (primary %p)\n", r,
	       (void *)got, (void *)a);
	expect(r == CUDA_SUCCESS && got == a,
	       "the current-context entry gives the primary context");
	CHECK(cuCtxCreate(&b, NULL, 0, dev));
	got = NULL;
	r = current(&got, 0x37, 0, 0); /* what cuBLASLt passes */
	expect(r == CUDA_SUCCESS && got == b,
	       "... and a context made current after it");

	CHECK(cuCtxGetId(a, &ia));
	CHECK(cuCtxGetId(b, &ib));
	printf("cuCtxGetId: primary %llu, created %llu\n", ia, ib);
	expect(ia && ib && ia != ib, "context ids are non-zero and unique");
	CHECK(cuCtxGetId(NULL, &v));
	expect(v == ib, "cuCtxGetId(NULL) is the current context's");
	expect(cuCtxGetId(a, NULL) == CUDA_ERROR_INVALID_VALUE,
	       "cuCtxGetId without a place for the id is refused");

	ea = eb = 0;
	r = ctx_id(a, &ea);
	printf("id entry: primary %d, %llu\n", r, ea);
	expect(r == CUDA_SUCCESS && ea == ia,
	       "the id entry gives cuCtxGetId's id (primary)");
	r = ctx_id(b, &eb);
	printf("id entry: created %d, %llu\n", r, eb);
	expect(r == CUDA_SUCCESS && eb == ib,
	       "the id entry gives cuCtxGetId's id (created)");

	/* streams, in the created context */
	stream_ids(table(libs), b, NULL, "the default stream");
	CHECK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
	CHECK(cuStreamCreate(&s2, 0));
	stream_ids(table(libs), b, s1, "a created stream");
	stream_ids(table(libs), NULL, s2, "another, the current context");
	CHECK(cuStreamGetId(NULL, &i0));
	CHECK(cuStreamGetId(s1, &i1));
	CHECK(cuStreamGetId(s2, &i2));
	expect(i0 && i1 && i2 && i0 != i1 && i1 != i2 && i0 != i2,
	       "stream ids are non-zero and unique");
	CHECK(cuStreamDestroy(s1));
	CHECK(cuStreamCreate(&s3, 0));
	CHECK(cuStreamGetId(s3, &i3));
	printf("cuStreamGetId: default %llu, created %llu %llu, made after a "
	       "destruction %llu\n",
	       i0, i1, i2, i3);
	expect(i3 != i1 && i3 != i2, "a later stream gets a new id");
	expect(cuStreamGetId(s2, NULL) == CUDA_ERROR_INVALID_VALUE,
	       "cuStreamGetId without a place for the id is refused");
	CHECK(cuStreamDestroy(s2));
	CHECK(cuStreamDestroy(s3));
	/* a destroyed stream and junk: refused. NVIDIA's driver takes a
	 * handle's word for it and may crash, so only on a vGPU */
	if (getenv("VGPU")) {
		stream_resolve_fn resolve = (stream_resolve_fn)table(libs)[51];
		stream_id_fn id_of = (stream_id_fn)table(libs)[39];
		void *obj = NULL;

		expect(resolve(b, s1, &obj) == CUDA_ERROR_INVALID_HANDLE &&
			       !obj,
		       "the stream entries refuse a destroyed stream");
		expect(id_of(b, (void *)&obj, &v) == CUDA_ERROR_INVALID_HANDLE,
		       "... and junk");
		expect(ctx_id((CUcontext)&obj, &v) ==
			       CUDA_ERROR_INVALID_CONTEXT,
		       "the id entry refuses junk for a context");
		expect(cuStreamGetId((CUstream)&obj, &v) ==
			       CUDA_ERROR_INVALID_HANDLE,
		       "cuStreamGetId refuses junk");
	}

	CHECK(cuCtxDestroy(b));
	CHECK(cuCtxCreate(&c, NULL, 0, dev));
	CHECK(cuCtxGetId(c, &ic));
	printf("cuCtxGetId: made after a destruction %llu\n", ic);
	expect(ic != ia && ic != ib, "a later context gets a new id");
	CHECK(cuCtxDestroy(c));

	/* no context current on this thread */
	while (cuCtxPopCurrent(&none) == CUDA_SUCCESS)
		;
	got = (CUcontext)&got;
	r = current(&got, 0, 0, 0);
	printf("current entry, nothing current: %d, %p\n", r, (void *)got);
	expect(r == CUDA_SUCCESS && got == NULL,
	       "the current-context entry gives NULL when none is current");
	r = cuCtxGetId(NULL, &v);
	printf("cuCtxGetId(NULL), nothing current: %d\n", r);
	expect(r == CUDA_ERROR_INVALID_CONTEXT,
	       "cuCtxGetId(NULL) with nothing current is refused");

	CHECK(cuDevicePrimaryCtxRelease(dev));
	if (failures) {
		printf("driver_entries: %d check(s) FAILED\n", failures);
		return 1;
	}
	printf("driver_entries: OK\n");
	return 0;
}
