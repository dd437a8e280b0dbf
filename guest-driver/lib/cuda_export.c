/* SPDX-License-Identifier: MIT */
/*
 * cuGetExportTable: the driver's private tables that NVIDIA's runtime and
 * libraries ask for by UUID (docs/DRIVER-INVENTORY.md).
 *
 * Each table is an array of pointers; in most, slot 0 holds the table's
 * size in bytes and the runtime reads it before it calls a slot. The
 * sizes are those of NVIDIA's CUDA 13 driver (580.159, measured on the
 * H200 with tests/trace/cuda_trace.c), and so is which slot the runtime
 * calls with what: the entries it calls are served here on our own
 * driver (cuda_export_entries.c, cuda_export_integrity.c); every other
 * slot holds a stub that says once on stderr which table and slot a vGPU
 * does not serve and fails with CUDA_ERROR_NOT_SUPPORTED. A UUID we do
 * not know gets CUDA_ERROR_NOT_SUPPORTED and one line naming it. With
 * VGPU_TRACE=1 every request is logged (client_trace.h).
 */
#include <stdio.h>
#include <string.h>

#include "client_api.h"
#include "client_trace.h"
#include "cuda_export.h"
#include "cuda_unsupported.h"

/* X(t, s) for every slot s of a table (the largest has 99) */
/* clang-format off */
#define EXPORT_SLOTS(X, t) \
	X(t, 0) X(t, 1) X(t, 2) X(t, 3) X(t, 4) X(t, 5) X(t, 6) X(t, 7) \
	X(t, 8) X(t, 9) X(t, 10) X(t, 11) X(t, 12) X(t, 13) X(t, 14) X(t, 15) \
	X(t, 16) X(t, 17) X(t, 18) X(t, 19) X(t, 20) X(t, 21) X(t, 22) X(t, 23) \
	X(t, 24) X(t, 25) X(t, 26) X(t, 27) X(t, 28) X(t, 29) X(t, 30) X(t, 31) \
	X(t, 32) X(t, 33) X(t, 34) X(t, 35) X(t, 36) X(t, 37) X(t, 38) X(t, 39) \
	X(t, 40) X(t, 41) X(t, 42) X(t, 43) X(t, 44) X(t, 45) X(t, 46) X(t, 47) \
	X(t, 48) X(t, 49) X(t, 50) X(t, 51) X(t, 52) X(t, 53) X(t, 54) X(t, 55) \
	X(t, 56) X(t, 57) X(t, 58) X(t, 59) X(t, 60) X(t, 61) X(t, 62) X(t, 63) \
	X(t, 64) X(t, 65) X(t, 66) X(t, 67) X(t, 68) X(t, 69) X(t, 70) X(t, 71) \
	X(t, 72) X(t, 73) X(t, 74) X(t, 75) X(t, 76) X(t, 77) X(t, 78) X(t, 79) \
	X(t, 80) X(t, 81) X(t, 82) X(t, 83) X(t, 84) X(t, 85) X(t, 86) X(t, 87) \
	X(t, 88) X(t, 89) X(t, 90) X(t, 91) X(t, 92) X(t, 93) X(t, 94) X(t, 95) \
	X(t, 96) X(t, 97) X(t, 98) X(t, 99)
/* clang-format on */

/* The stub of slot s of table t. */
static int export_unsupported(int t, int s);

#define EXPORT_STUB(t, s)                                                      \
	__attribute__((unused)) static int stub_##t##_##s(void)                \
	{                                                                      \
		return export_unsupported(t, s);                               \
	}
#define EXPORT_STUB_PTR(t, s) (const void *)stub_##t##_##s,

/* every table's stubs, slots 0..99 */
#define EXPORT_TABLE_STUBS(t) EXPORT_SLOTS(EXPORT_STUB, t)
EXPORT_TABLE_STUBS(0)
EXPORT_TABLE_STUBS(1)
EXPORT_TABLE_STUBS(2)
EXPORT_TABLE_STUBS(3)
EXPORT_TABLE_STUBS(4)
EXPORT_TABLE_STUBS(5)
EXPORT_TABLE_STUBS(6)
EXPORT_TABLE_STUBS(7)
EXPORT_TABLE_STUBS(8)
EXPORT_TABLE_STUBS(9)
EXPORT_TABLE_STUBS(10)

#define EXPORT_MAX_SLOTS 100

/* The tables as the program sees them: stubs, then the served entries
 * and the sizes put in by export_init. */
static const void *tables[EXPORT_TABLES][EXPORT_MAX_SLOTS] = {
	{EXPORT_SLOTS(EXPORT_STUB_PTR, 0)},  {EXPORT_SLOTS(EXPORT_STUB_PTR, 1)},
	{EXPORT_SLOTS(EXPORT_STUB_PTR, 2)},  {EXPORT_SLOTS(EXPORT_STUB_PTR, 3)},
	{EXPORT_SLOTS(EXPORT_STUB_PTR, 4)},  {EXPORT_SLOTS(EXPORT_STUB_PTR, 5)},
	{EXPORT_SLOTS(EXPORT_STUB_PTR, 6)},  {EXPORT_SLOTS(EXPORT_STUB_PTR, 7)},
	{EXPORT_SLOTS(EXPORT_STUB_PTR, 8)},  {EXPORT_SLOTS(EXPORT_STUB_PTR, 9)},
	{EXPORT_SLOTS(EXPORT_STUB_PTR, 10)},
};

/*
 * What each table is: its UUID as the runtime passes it (the bytes of
 * the {xxxxxxxx-...} form, in order), its slot count, whether slot 0 is
 * its size, and the entries served.
 */
static const struct export_desc {
	const char *name;
	unsigned char uuid[16];
	int slots;
	int sized;
} descs[EXPORT_TABLES] = {
	[EXPORT_CUDART] = {"{6bd5fb6c-5bf4-e74a-8987-d93912fd9df9}",
			   {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
			    0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
			   13,
			   1},
	[EXPORT_TOOLS_TLS] = {"{42d85a81-23f6-cb47-8298-f6e78a3aecdc}",
			      {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47,
			       0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
			      3,
			      1},
	[EXPORT_HOOKS] = {"{a094798c-2e74-2e74-93f2-0800200c0a66}",
			  {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93,
			   0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
			  7,
			  1},
	[EXPORT_CLS] = {"{c693336e-1121-df11-a8c3-68f355d89593}",
			{0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8,
			 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
			3,
			0},
	[EXPORT_INTEGRITY] = {"{d4082055-bde6-704b-8d34-ba123c66e1f2}",
			      {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b,
			       0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
			      3,
			      1},
	[EXPORT_CHECKS] = {"{263e8860-7cd2-6143-92f6-bbd5006dfa7e}",
			   {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43,
			    0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
			   15,
			   1},
	[EXPORT_F8CF] = {"{f8cff951-2146-8b4e-b9e2-fb469e7c0dd9}",
			 {0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9,
			  0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9},
			 3,
			 1},
	[EXPORT_LIBS_A] = {"{21318c60-9714-3248-8ca6-41ff7324c8f2}",
			   {0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48,
			    0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2},
			   93,
			   1},
	[EXPORT_LIBS_B] = {"{6e163fbe-b958-444d-835c-e182aff1991e}",
			   {0x6e, 0x16, 0x3f, 0xbe, 0xb9, 0x58, 0x44, 0x4d,
			    0x83, 0x5c, 0xe1, 0x82, 0xaf, 0xf1, 0x99, 0x1e},
			   99,
			   1},
	[EXPORT_TORCH] = {"{69a28e9f-2449-8b47-b030-c5da330ea4e9}",
			  {0x69, 0xa2, 0x8e, 0x9f, 0x24, 0x49, 0x8b, 0x47, 0xb0,
			   0x30, 0xc5, 0xda, 0x33, 0x0e, 0xa4, 0xe9},
			  34,
			  1},
	/* cuBLASLt's half-precision path: none of it served (an exchange of
	 * tables and keys, docs/DRIVER-INVENTORY.md), but cuBLASLt does not
	 * check cuGetExportTable's answer: without a table it crashes,
	 * with one it gets an error from the entry it calls */
	[EXPORT_LIBS_C] = {"{1734dc26-800d-4745-8726-c0f1e7dd8bca}",
			   {0x17, 0x34, 0xdc, 0x26, 0x80, 0x0d, 0x47, 0x45,
			    0x87, 0x26, 0xc0, 0xf1, 0xe7, 0xdd, 0x8b, 0xca},
			   17,
			   1},
};

static int said[EXPORT_TABLES][EXPORT_MAX_SLOTS];

static int export_unsupported(int t, int s)
{
	cuda_say_once(&said[t][s],
		      "entry %d of the driver's export table %s is not "
		      "supported on a vGPU (CUDA_ERROR_NOT_SUPPORTED)",
		      s, descs[t].name);
	return CUDA_ERROR_NOT_SUPPORTED;
}

static pthread_once_t export_once = PTHREAD_ONCE_INIT;

static void export_init(void)
{
	int t;

	for (t = 0; t < EXPORT_TABLES; t++)
		if (descs[t].sized)
			tables[t][0] =
				(const void *)(uintptr_t)(descs[t].slots *
							  sizeof(void *));
	export_entries_install(tables);
}

const void *const *export_table(int t)
{
	pthread_once(&export_once, export_init);
	return tables[t];
}

static void uuid_text(const CUuuid *id, char out[40])
{
	const unsigned char *u = (const unsigned char *)id->bytes;

	snprintf(out, 40,
		 "{%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
		 "%02x%02x%02x%02x%02x%02x}",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

VGPU_API CUresult CUDAAPI cuGetExportTable(const void **ppExportTable,
					   const CUuuid *pExportTableId)
{
	static int said_unknown;
	char text[40];
	int t;

	if (!ppExportTable || !pExportTableId)
		return CUDA_ERROR_INVALID_VALUE;
	*ppExportTable = NULL;
	for (t = 0; t < EXPORT_TABLES; t++)
		if (!memcmp(descs[t].uuid, pExportTableId->bytes, 16))
			break;
	if (t < EXPORT_TABLES)
		*ppExportTable = (const void *)export_table(t);
	if (t == EXPORT_TABLES || client_trace_on())
		uuid_text(pExportTableId, text);
	if (client_trace_on())
		client_trace("export %s -> %s %d\n", text,
			     t < EXPORT_TABLES ? "ok" : "error",
			     t < EXPORT_TABLES ? CUDA_SUCCESS
					       : CUDA_ERROR_NOT_SUPPORTED);
	if (t < EXPORT_TABLES)
		return CUDA_SUCCESS;
	cuda_say_once(&said_unknown,
		      "the driver's export table %s is not supported on a "
		      "vGPU (CUDA_ERROR_NOT_SUPPORTED)",
		      text);
	return CUDA_ERROR_NOT_SUPPORTED;
}
