/* SPDX-License-Identifier: MIT */
/*
 * alloc_many [count] [bytes]: count small allocations (default 10,000 of
 * 256 B), all distinct and non-overlapping, each written and read back
 * at its first and last word; then all freed, and cuMemGetInfo shows the
 * memory free again.
 */
#include "prog.h"

static int cmp_ptr(const void *a, const void *b)
{
	CUdeviceptr x = *(const CUdeviceptr *)a, y = *(const CUdeviceptr *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int count = argc > 1 ? atoi(argv[1]) : 10000;
	size_t bytes = argc > 2 ? strtoull(argv[2], NULL, 0) : 256;
	size_t free0, free1, free2, total;
	CUdeviceptr *p, *sorted;
	CUdevice dev;

	if (count <= 0 || bytes < 8) {
		fprintf(stderr, "usage: alloc_many [count > 0] [bytes >= 8]\n");
		return 2;
	}
	p = calloc(count, sizeof(*p));
	sorted = calloc(count, sizeof(*p));
	if (!p || !sorted) {
		fprintf(stderr, "alloc_many: out of host memory\n");
		return 1;
	}
	prog_init(&dev);
	CHECK(cuMemGetInfo(&free0, &total));
	for (int i = 0; i < count; i++) {
		unsigned int tag = (unsigned int)i;

		CHECK(cuMemAlloc(&p[i], bytes));
		CHECK(cuMemsetD32(p[i], tag, 1));
		CHECK(cuMemsetD32(p[i] + bytes - 4, ~tag, 1));
	}
	CHECK(cuMemGetInfo(&free1, &total));
	for (int i = 0; i < count; i++) {
		unsigned int first, last;

		CHECK(cuMemcpyDtoH(&first, p[i], 4));
		CHECK(cuMemcpyDtoH(&last, p[i] + bytes - 4, 4));
		if (first != (unsigned int)i || last != ~(unsigned int)i) {
			printf("alloc_many: FAILED (allocation %d holds 0x%x.."
			       "0x%x: overlapping allocations)\n",
			       i, first, last);
			return 1;
		}
	}
	memcpy(sorted, p, count * sizeof(*p));
	qsort(sorted, count, sizeof(*p), cmp_ptr);
	for (int i = 1; i < count; i++) {
		if (sorted[i] < sorted[i - 1] + bytes) {
			printf("alloc_many: FAILED (0x%llx and 0x%llx "
			       "overlap)\n",
			       (unsigned long long)sorted[i - 1],
			       (unsigned long long)sorted[i]);
			return 1;
		}
	}
	for (int i = 0; i < count; i++)
		CHECK(cuMemFree(p[i]));
	CHECK(cuMemGetInfo(&free2, &total));
	prog_fini(dev);
	if (free1 >= free0 || free2 != free0) {
		printf("alloc_many: FAILED (free memory %zu before, %zu with "
		       "the allocations, %zu after freeing them)\n",
		       free0, free1, free2);
		return 1;
	}
	printf("alloc_many: %d x %zu B OK (free %zu -> %zu -> %zu of %zu)\n",
	       count, bytes, free0, free1, free2, total);
	free(p);
	free(sorted);
	return 0;
}
