// SPDX-License-Identifier: MIT
/*
 * mempool_rt: stream-ordered allocation as the CUDA programming guide
 * shows it. cudaMallocAsync / cudaFreeAsync in a loop on two streams with
 * kernels between (every result checked), the device's default pool and
 * its attributes (a release threshold keeps memory across a synchronise,
 * cudaMemPoolTrimTo gives it back, cudaMemGetInfo sees both), a pool of
 * our own with cudaMallocFromPoolAsync, cudaFree of stream-ordered
 * memory, and the refusals CUDA gives for read-only attributes and freed
 * pointers. Exit 0 and "mempool_rt: OK" when all holds.
 */
#include <stdint.h>

#include "rt_check.h"

__global__ void fillValue(int *d, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] = v;
}

__global__ void addScalar(int *d, int n, int v)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		d[i] += v;
}

static int failures;

#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("  FAILED: " __VA_ARGS__);                      \
			printf("\n");                                          \
			failures++;                                            \
		}                                                              \
	} while (0)

static uint64_t pool_attr(cudaMemPool_t p, cudaMemPoolAttr a)
{
	uint64_t v = 0;

	CHECK(cudaMemPoolGetAttribute(p, a, &v));
	return v;
}

/* n ints on s: v, then v + 1, read back; how many are wrong */
static int round_trip(cudaStream_t s, int n, int v, int *host)
{
	int *d, bad = 0;

	CHECK(cudaMallocAsync((void **)&d, n * sizeof(int), s));
	fillValue<<<(n + 255) / 256, 256, 0, s>>>(d, n, v);
	addScalar<<<(n + 255) / 256, 256, 0, s>>>(d, n, 1);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(host, d, n * sizeof(int), cudaMemcpyDeviceToHost,
			      s));
	CHECK(cudaFreeAsync(d, s));
	CHECK(cudaStreamSynchronize(s));
	for (int i = 0; i < n; i++)
		bad += host[i] != v + 1;
	return bad;
}

int main(void)
{
	const int n = 1 << 16;
	cudaStream_t s1, s2;
	cudaMemPool_t def, cur, mine;
	cudaMemPoolProps props = {};
	size_t free0, free1, total;
	uint64_t big = UINT64_MAX, zero = 0;
	int *host, *d, *e, attr = 0, bad = 0;

	host = (int *)malloc(n * sizeof(int));
	if (!host)
		return 1;
	CHECK(cudaDeviceGetAttribute(&attr, cudaDevAttrMemoryPoolsSupported, 0));
	EXPECT(attr == 1, "cudaDevAttrMemoryPoolsSupported is %d", attr);
	CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
	CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));

	/* allocate, compute, free, on two streams in turn */
	for (int i = 0; i < 40; i++)
		bad += round_trip(i % 2 ? s2 : s1, n, i * 3, host);
	EXPECT(bad == 0, "%d wrong results in 40 round trips", bad);

	/* the default pool */
	CHECK(cudaDeviceGetDefaultMemPool(&def, 0));
	CHECK(cudaDeviceGetMemPool(&cur, 0));
	EXPECT(def == cur, "the current pool is not the default one");
	CHECK(cudaDeviceSynchronize());
	EXPECT(pool_attr(def, cudaMemPoolAttrUsedMemCurrent) == 0,
	       "memory in use after every free");
	/* threshold 0: a synchronise gives what the pool holds back */
	EXPECT(pool_attr(def, cudaMemPoolAttrReservedMemCurrent) == 0,
	       "the default pool holds %llu bytes after a synchronise",
	       (unsigned long long)pool_attr(def,
					     cudaMemPoolAttrReservedMemCurrent));
	/* a threshold keeps it; a trim gives it back */
	CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold,
				      &big));
	CHECK(cudaMemGetInfo(&free0, &total));
	CHECK(cudaMallocAsync((void **)&d, 8 << 20, s1));
	CHECK(cudaFreeAsync(d, s1));
	CHECK(cudaDeviceSynchronize());
	EXPECT(pool_attr(def, cudaMemPoolAttrReservedMemCurrent) >= (8 << 20),
	       "the threshold did not keep 8 MiB in the pool");
	EXPECT(pool_attr(def, cudaMemPoolAttrReservedMemHigh) >= (8 << 20),
	       "the reserved high mark is under 8 MiB");
	CHECK(cudaMemGetInfo(&free1, &total));
	EXPECT(free1 + (8 << 20) <= free0,
	       "cudaMemGetInfo does not count the pool's 8 MiB (%zu, %zu)",
	       free0, free1);
	CHECK(cudaMemPoolTrimTo(def, 0));
	EXPECT(pool_attr(def, cudaMemPoolAttrReservedMemCurrent) == 0,
	       "a trim to 0 left memory in the pool");
	CHECK(cudaMemGetInfo(&free1, &total));
	EXPECT(free1 >= free0, "the trimmed memory is not free (%zu < %zu)",
	       free1, free0);
	CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReleaseThreshold,
				      &zero));
	CHECK(cudaMemPoolSetAttribute(def, cudaMemPoolAttrReservedMemHigh,
				      &zero));
	EXPECT(pool_attr(def, cudaMemPoolAttrReservedMemHigh) == 0,
	       "the reserved high mark was not reset");
	EXPECT(cudaMemPoolSetAttribute(def, cudaMemPoolAttrUsedMemCurrent,
				       &zero) == cudaErrorInvalidValue,
	       "the used figure could be set");
	cudaGetLastError();

	/* a pool of our own */
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	CHECK(cudaMemPoolCreate(&mine, &props));
	CHECK(cudaMallocFromPoolAsync((void **)&d, n * sizeof(int), mine, s2));
	CHECK(cudaMallocFromPoolAsync((void **)&e, n * sizeof(int), mine, s2));
	EXPECT(d != e, "two live allocations share an address");
	EXPECT(pool_attr(mine, cudaMemPoolAttrUsedMemCurrent) >=
		       2 * n * sizeof(int),
	       "the pool's use does not count two allocations");
	fillValue<<<(n + 255) / 256, 256, 0, s2>>>(d, n, 5);
	fillValue<<<(n + 255) / 256, 256, 0, s2>>>(e, n, 6);
	CHECK_LAUNCH();
	CHECK(cudaMemcpyAsync(host, e, n * sizeof(int), cudaMemcpyDeviceToHost,
			      s2));
	CHECK(cudaFreeAsync(d, s2));
	CHECK(cudaStreamSynchronize(s2));
	EXPECT(host[0] == 6 && host[n - 1] == 6, "the own pool's data: %d %d",
	       host[0], host[n - 1]);
	/* cudaFree of stream-ordered memory synchronises and frees it */
	CHECK(cudaFree(e));
	EXPECT(cudaFree(e) != cudaSuccess, "a second cudaFree succeeded");
	cudaGetLastError();
	CHECK(cudaDeviceSynchronize());
	EXPECT(pool_attr(mine, cudaMemPoolAttrUsedMemCurrent) == 0,
	       "the own pool still counts memory in use");
	CHECK(cudaMemPoolDestroy(mine));

	CHECK(cudaStreamDestroy(s1));
	CHECK(cudaStreamDestroy(s2));
	free(host);
	if (failures) {
		printf("mempool_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("mempool_rt: OK (40 round trips on two streams, the default "
	       "pool's threshold and trim, a pool of its own)\n");
	return 0;
}
