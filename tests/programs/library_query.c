/* SPDX-License-Identifier: MIT */
/*
 * library_query: driver calls CUDA's libraries make while they set up
 * (issue 17: cuBLAS and cuFFT make each), as a driver-API user makes them:
 *   - what a module or library holds (cuModuleGetFunctionCount,
 *     cuModuleEnumerateFunctions, cuLibraryGetKernelCount,
 *     cuLibraryEnumerateKernels) and a kernel's name (cuFuncGetName,
 *     cuKernelGetName); an enumerated function launches;
 *   - thread-block cluster attributes (cuFuncSetAttribute) and cluster
 *     occupancy (cuOccupancyMaxActiveClusters,
 *     cuOccupancyMaxPotentialClusterSize), bad values refused, and
 *     launches in clusters (cuLaunchKernelEx) that add right;
 *   - CU_POINTER_ATTRIBUTE_BUFFER_ID: one per allocation, never reused.
 * Prints "library_query: OK".
 */
#include "prog.h"

#include <string.h>

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	failures += !ok;
}

/*
 * vecAdd through f on 1024 floats, c = a + b exactly: in blocks of 256
 * (cluster 0), or by cuLaunchKernelEx in blocks of 64, cluster of them
 * to a thread-block cluster.
 */
static int adds(CUfunction f, unsigned int cluster)
{
	enum { N = 1024 };
	static float a[N], b[N], c[N];
	CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
	CUlaunchConfig cfg = {.gridDimX = N / 64,
			      .gridDimY = 1,
			      .gridDimZ = 1,
			      .blockDimX = 64,
			      .blockDimY = 1,
			      .blockDimZ = 1,
			      .attrs = &at,
			      .numAttrs = 1};
	CUdeviceptr da, db, dc;
	int n = N, i, ok = 1;
	void *args[] = {&da, &db, &dc, &n};

	for (i = 0; i < N; i++) {
		a[i] = (float)i;
		b[i] = (float)(2 * i);
	}
	CHECK(cuMemAlloc(&da, sizeof(a)));
	CHECK(cuMemAlloc(&db, sizeof(b)));
	CHECK(cuMemAlloc(&dc, sizeof(c)));
	CHECK(cuMemcpyHtoD(da, a, sizeof(a)));
	CHECK(cuMemcpyHtoD(db, b, sizeof(b)));
	CHECK(cuMemsetD32(dc, 0, N)); /* not an earlier run's sums */
	if (cluster) {
		at.value.clusterDim.x = cluster;
		at.value.clusterDim.y = 1;
		at.value.clusterDim.z = 1;
		CHECK(cuLaunchKernelEx(&cfg, f, args, NULL));
	} else {
		CHECK(cuLaunchKernel(f, N / 256, 1, 1, 256, 1, 1, 0, NULL, args,
				     NULL));
	}
	CHECK(cuMemcpyDtoH(c, dc, sizeof(c)));
	for (i = 0; i < N; i++)
		ok &= c[i] == a[i] + b[i];
	CHECK(cuMemFree(da));
	CHECK(cuMemFree(db));
	CHECK(cuMemFree(dc));
	return ok;
}

static void contents(void)
{
	CUfunction fns[4] = {0}, byname;
	CUkernel ks[2] = {0};
	unsigned int n = 0;
	const char *name = NULL;
	CUlibrary lib;
	CUmodule mod;

	CHECK(cuModuleLoad(&mod, prog_cubin_path("vector_add")));
	CHECK(cuModuleGetFunctionCount(&n, mod));
	expect(n == 1, "vector_add's module has one function");
	CHECK(cuModuleEnumerateFunctions(fns, 1, mod));
	CHECK(cuFuncGetName(&name, fns[0]));
	expect(name && strcmp(name, "vecAdd") == 0, "it is vecAdd, by name");
	expect(adds(fns[0], 0), "the enumerated function adds vectors");
	CHECK(cuModuleGetFunction(&byname, mod, "vecAdd"));
	CHECK(cuFuncGetName(&name, byname));
	expect(name && strcmp(name, "vecAdd") == 0,
	       "cuModuleGetFunction's function has the same name");
	expect(cuModuleEnumerateFunctions(NULL, 1, mod) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "enumerating into NULL is CUDA_ERROR_INVALID_VALUE");
	CHECK(cuModuleUnload(mod));

	CHECK(cuLibraryLoadFromFile(&lib, prog_cubin_path("read_global"), NULL,
				    NULL, 0, NULL, NULL, 0));
	CHECK(cuLibraryGetKernelCount(&n, lib));
	expect(n == 1, "read_global's library has one kernel");
	CHECK(cuLibraryEnumerateKernels(ks, 1, lib));
	CHECK(cuKernelGetName(&name, ks[0]));
	expect(name && strcmp(name, "readGlobal") == 0,
	       "it is readGlobal, by name");
	CHECK(cuLibraryUnload(lib));
}

/* vecAdd launched in clusters by cuLaunchKernelEx: right sums in
 * clusters of 2 and of the largest the slice takes (opted in: 16 on a
 * whole H200, 8 on an MPS slice of 32 SMs), bad shapes refused. */
static void cluster_launches(CUfunction f, int largest)
{
	CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
	CUlaunchConfig cfg = {.gridDimX = 16,
			      .gridDimY = 1,
			      .gridDimZ = 1,
			      .blockDimX = 64,
			      .blockDimY = 1,
			      .blockDimZ = 1,
			      .attrs = &at,
			      .numAttrs = 1};
	CUdeviceptr none = 0; /* refused before they run */
	int n = 0;
	void *args[] = {&none, &none, &none, &n};

	expect(adds(f, 2), "a launch in clusters of 2 blocks adds right");
	expect(adds(f, (unsigned int)largest),
	       "a launch in clusters of the largest size adds right");
	at.value.clusterDim.x = 3; /* 16 blocks */
	at.value.clusterDim.y = 1;
	at.value.clusterDim.z = 1;
	expect(cuLaunchKernelEx(&cfg, f, args, NULL) ==
		       CUDA_ERROR_INVALID_CLUSTER_SIZE,
	       "clusters of 3 over 16 blocks: CUDA_ERROR_INVALID_CLUSTER_SIZE");
	at.value.clusterDim.x = 32;
	cfg.gridDimX = 32;
	expect(cuLaunchKernelEx(&cfg, f, args, NULL) ==
		       CUDA_ERROR_INVALID_CLUSTER_SIZE,
	       "clusters of 32 blocks: CUDA_ERROR_INVALID_CLUSTER_SIZE");
	CHECK(cuCtxSynchronize());
}

static void clusters(void)
{
	CUlaunchAttribute at = {.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION};
	CUlaunchConfig cfg = {.gridDimX = 64,
			      .gridDimY = 1,
			      .gridDimZ = 1,
			      .blockDimX = 128,
			      .blockDimY = 1,
			      .blockDimZ = 1,
			      .attrs = &at,
			      .numAttrs = 1};
	int v = -1, two = 0, size = 0;
	CUfunction f;
	CUmodule mod;

	CHECK(cuModuleLoad(&mod, prog_cubin_path("vector_add")));
	CHECK(cuModuleGetFunction(&f, mod, "vecAdd"));
	CHECK(cuFuncSetAttribute(
		f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1));
	CHECK(cuFuncGetAttribute(
		&v, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, f));
	expect(v == 1, "the non-portable cluster size opt-in is set");
	expect(cuFuncSetAttribute(
		       f, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED,
		       2) == CUDA_ERROR_INVALID_VALUE,
	       "an opt-in of 2 is CUDA_ERROR_INVALID_VALUE");

	at.value.clusterDim.x = 2;
	at.value.clusterDim.y = 1;
	at.value.clusterDim.z = 1;
	CHECK(cuOccupancyMaxActiveClusters(&two, f, &cfg));
	printf("# clusters of 2 blocks of 128 threads resident: %d\n", two);
	expect(two > 0, "clusters of 2 blocks fit");
	at.value.clusterDim.x = 32;
	expect(cuOccupancyMaxActiveClusters(&v, f, &cfg) ==
		       CUDA_ERROR_INVALID_CLUSTER_SIZE,
	       "clusters of 32 blocks are CUDA_ERROR_INVALID_CLUSTER_SIZE");
	cfg.numAttrs = 0;
	CHECK(cuOccupancyMaxPotentialClusterSize(&size, f, &cfg));
	printf("# largest cluster: %d blocks\n", size);
	expect(size >= 2 && size <= 16,
	       "the largest cluster is 2 to 16 blocks (opted in)");
	expect(cuOccupancyMaxActiveClusters(NULL, f, &cfg) ==
		       CUDA_ERROR_INVALID_VALUE,
	       "a NULL output is CUDA_ERROR_INVALID_VALUE");
	if (size == 2 || size == 4 || size == 8 || size == 16)
		cluster_launches(f, size); /* dividing the 16 blocks */
	else
		expect(0, "the largest cluster divides 16 blocks");
	CHECK(cuModuleUnload(mod));
}

static void buffer_ids(void)
{
	unsigned long long a = 0, b = 0, c = 0;
	CUdeviceptr pa, pb, pc;

	CHECK(cuMemAlloc(&pa, 4096));
	CHECK(cuMemAlloc(&pb, 4096));
	CHECK(cuPointerGetAttribute(&a, CU_POINTER_ATTRIBUTE_BUFFER_ID, pa));
	CHECK(cuPointerGetAttribute(&b, CU_POINTER_ATTRIBUTE_BUFFER_ID,
				    pb + 100));
	expect(a && b && a != b, "two allocations, two buffer ids");
	CHECK(cuMemFree(pa));
	CHECK(cuMemAlloc(&pc, 4096));
	CHECK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_BUFFER_ID, pc));
	expect(c && c != a && c != b, "a new allocation gets a new id");
	CHECK(cuMemFree(pb));
	CHECK(cuMemFree(pc));
}

int main(void)
{
	CUdevice dev;

	prog_init(&dev);
	contents();
	clusters();
	buffer_ids();
	prog_fini(dev);
	printf("library_query: %s\n", failures ? "FAILED" : "OK");
	return failures != 0;
}
