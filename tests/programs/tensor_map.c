/* SPDX-License-Identifier: MIT */
/*
 * tensor_map: cuTensorMapEncodeTiled, cuTensorMapEncodeIm2col and
 * cuTensorMapReplaceAddress as a driver-API user calls them (issue 18:
 * the maps Hopper's bulk tensor copies read, which CUDA's libraries
 * build). The same arguments give the same bytes; a replaced address
 * changes them and replacing it back restores them; a rank of 0, an
 * address not 16-byte aligned and a box edge of 0 are
 * CUDA_ERROR_INVALID_VALUE. A NULL map and a rank of 6 are not asked:
 * with them the program died natively of a segfault in a context (which
 * of the two was not isolated); the guest library refuses both with
 * CUDA_ERROR_INVALID_VALUE. Last, the bytes of a map at a fixed address
 * are printed ("map: ..."), so that a run on a vGPU can be compared with
 * a native one (gpu-check: the worker's driver encodes them). Prints
 * "tensor_map: OK".
 */
#include "prog.h"

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

/* A 2D float tensor of rows x cols at p, boxes of 16 x 16. */
static CUresult tiled(CUtensorMap *m, void *p, cuuint32_t rank,
		      cuuint32_t box_edge)
{
	const cuuint64_t dim[5] = {256, 64, 1, 1, 1};
	const cuuint64_t strides[4] = {256 * 4, 256 * 64 * 4, 256 * 64 * 4,
				       256 * 64 * 4};
	const cuuint32_t box[5] = {16, box_edge, 1, 1, 1};
	const cuuint32_t elem[5] = {1, 1, 1, 1, 1};

	return cuTensorMapEncodeTiled(
		m, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, rank, p, dim, strides, box,
		elem, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_NONE,
		CU_TENSOR_MAP_L2_PROMOTION_NONE,
		CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

static void print_map(const char *label, const CUtensorMap *m)
{
	const unsigned char *b = (const unsigned char *)m;

	printf("%s: ", label);
	for (size_t i = 0; i < sizeof(*m); i++)
		printf("%02x", b[i]);
	printf("\n");
}

int main(void)
{
	CUtensorMap a, b, c;
	CUdeviceptr d, d2;
	CUdevice dev;
	void *fixed = (void *)(uintptr_t)0x7f0000000000ull;

	setvbuf(stdout, NULL, _IOLBF, 0);
	prog_init(&dev);
	CHECK(cuMemAlloc(&d, 256 * 64 * 4));
	CHECK(cuMemAlloc(&d2, 256 * 64 * 4));

	CHECK(tiled(&a, (void *)(uintptr_t)d, 2, 16));
	CHECK(tiled(&b, (void *)(uintptr_t)d, 2, 16));
	expect(!memcmp(&a, &b, sizeof(a)),
	       "the same arguments encode the same bytes");
	c = a;
	CHECK(cuTensorMapReplaceAddress(&c, (void *)(uintptr_t)d2));
	expect(memcmp(&a, &c, sizeof(a)) != 0,
	       "cuTensorMapReplaceAddress changes the map");
	CHECK(cuTensorMapReplaceAddress(&c, (void *)(uintptr_t)d));
	expect(!memcmp(&a, &c, sizeof(a)),
	       "... and replacing the address back restores it");

	expect(tiled(&b, (void *)(uintptr_t)d, 0, 16) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "rank 0: CUDA_ERROR_INVALID_VALUE");
	expect(tiled(&b, (void *)(uintptr_t)(d + 4), 2, 16) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "an address not 16-byte aligned: CUDA_ERROR_INVALID_VALUE");
	expect(tiled(&b, (void *)(uintptr_t)d, 2, 0) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "a box edge of 0: CUDA_ERROR_INVALID_VALUE");

	{
		/* NHWC float, 1 x 8 x 8 x 16, a 3 x 3 pixel box */
		const cuuint64_t dim[4] = {16, 8, 8, 1};
		const cuuint64_t strides[3] = {16 * 4, 16 * 8 * 4,
					       16 * 8 * 8 * 4};
		const int lower[2] = {-1, -1}, upper[2] = {1, 1};
		const cuuint32_t elem[4] = {1, 1, 1, 1};

		CHECK(cuTensorMapEncodeIm2col(
			&b, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4,
			(void *)(uintptr_t)d, dim, strides, lower, upper, 16,
			64, elem, CU_TENSOR_MAP_INTERLEAVE_NONE,
			CU_TENSOR_MAP_SWIZZLE_NONE,
			CU_TENSOR_MAP_L2_PROMOTION_NONE,
			CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
		expect(memcmp(&a, &b, sizeof(a)) != 0,
		       "an im2col map is encoded, unlike the tiled one");
	}

	CHECK(tiled(&a, fixed, 2, 16));
	print_map("map", &a);
	CHECK(cuMemFree(d));
	CHECK(cuMemFree(d2));
	prog_fini(dev);
	printf("tensor_map: %s\n", failures ? "FAILED" : "OK");
	return failures != 0;
}
