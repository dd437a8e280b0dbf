// SPDX-License-Identifier: MIT
/*
 * lib_bench [--green SMS | --groups G,G,...] [--sm-target N]
 *           [--target-ms MS] [--batches B] CASE...
 *
 * CUDA's libraries timed as a program calls them (issue 18), one binary
 * (nvcc's default: NVIDIA's static runtime) natively and on a vGPU.
 * CASE is one of
 *   sgemm:N    cublasSgemm, N x N x N, float (cuBLAS's default math)
 *   hgemm:N    cublasHgemm, N x N x N, half
 *   sgemm_t:N, hgemm_t:N  the same with cublasSetSmCountTarget(the SMs
 *              of the green context, else the SMs the runtime reports):
 *              cuBLAS's heuristics told the slice's size
 *   fft2d:N    cufftExecC2C forward, N x N, out of place, a batch of
 *              2^24 / N^2 transforms (at least 1): 128 MiB in, 128 out
 *   conv       cudnnConvolutionForward, float NCHW, N 32, C 64, 56 x 56,
 *              64 filters 3 x 3, pad 1, stride 1: the algorithm cuDNN's
 *              heuristics rank first (cudnnGetConvolutionForwardAlgorithm_v7)
 *   convfind   the same with the algorithm cudnnFindConvolutionForward-
 *              Algorithm measures fastest here
 * For each: one op to warm up, one timed to size the batches, then B
 * (default 7; 3 for an op of 50 ms or more) batches of R ops on one
 * stream timed with CUDA events, R such that a batch takes about MS
 * (default 25) ms; prints the median ms per op as
 *   RESULT name=sgemm_4096 value=MS unit=ms
 * (rt_common.h's format; ":" becomes "_").
 *
 * --green SMS / --groups LIST: BEFORE any runtime call, a green context
 * (NVIDIA's libcuda.so.1, loaded with dlopen: nothing of the driver is
 * linked, so the program also loads where vgpu's libcuda.so.1 is first on
 * the library path and has no green-context entry points) over the first
 * SMS / minSmPartitionSize groups of cuDevSmResourceSplitByCount, or
 * over the listed groups (as `vgpu-admin show NAME --json` lists a
 * vGPU's; the index equal to the number of groups names the SMs the split
 * left over), split as bench/raw_slice.c and the workers split; made
 * current (cuCtxFromGreenCtx, cuCtxSetCurrent), so NVIDIA's runtime and
 * the libraries run on it: "the raw green context" baseline of gpu-check's
 * slice fidelity, for CUDA's libraries. What shows it worked, as RESULT
 * lines with unit=sms or unit=flag:
 *   green_sms         the green context's SMs (cuGreenCtxGetDevResource)
 *   runtime_sms       what cudaDevAttrMultiProcessorCount says (the
 *                     device's, natively; a vGPU says its slice's)
 *   smid_sms          how many distinct %smid a many-block kernel on the
 *                     benchmarks' stream saw, before the cases ...
 *   smid_sms_end      ... and after them (a library that made another
 *                     context current, or a stream outside the slice,
 *                     shows here)
 *   green_ctx_kept    1 when after the cases the green context is still
 *                     current and the stream belongs to it
 * Without --green it just runs: on a vGPU the guest library gives the
 * runtime its context. Built without cuDNN (-DLIB_BENCH_NO_CUDNN) the conv
 * cases print a "# ... skipped" line and give no figure.
 * Exit 0 when every case ran, 1 on an error, 2 on bad arguments.
 */
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cufft.h>
#ifndef LIB_BENCH_NO_CUDNN
#include <cudnn.h>
#endif

#include "rt_common.h" /* CHECK (runtime), rt_median, rt_result */

#define LIB_CK(lib, call)                                                      \
	do {                                                                   \
		int rc_ = (int)(call);                                         \
		if (rc_) {                                                     \
			fprintf(stderr,                                        \
				"lib_bench: %s:%d: %s: %s status %d (the "     \
				"runtime's last error: %s)\n",                 \
				__FILE__, __LINE__, #call, lib, rc_,           \
				cudaGetErrorName(cudaGetLastError()));         \
			exit(1);                                               \
		}                                                              \
	} while (0)
#define BLAS_CK(call) LIB_CK("cuBLAS", call)
#define FFT_CK(call)  LIB_CK("cuFFT", call)
#define DNN_CK(call)  LIB_CK("cuDNN", call)

/* ---- the green context, through NVIDIA's driver loaded at run time ---- */

static struct {
	void *lib;
	decltype(&cuInit) Init;
	decltype(&cuGetErrorName) GetErrorName;
	decltype(&cuDeviceGet) DeviceGet;
	decltype(&cuDeviceGetDevResource) DeviceGetDevResource;
	decltype(&cuDevSmResourceSplitByCount) DevSmResourceSplitByCount;
	decltype(&cuDevResourceGenerateDesc) DevResourceGenerateDesc;
	decltype(&cuGreenCtxCreate) GreenCtxCreate;
	decltype(&cuGreenCtxGetDevResource) GreenCtxGetDevResource;
	decltype(&cuCtxFromGreenCtx) CtxFromGreenCtx;
	decltype(&cuCtxSetCurrent) CtxSetCurrent;
	decltype(&cuCtxGetCurrent) CtxGetCurrent;
	decltype(&cuStreamGetGreenCtx) StreamGetGreenCtx;
} drv;

static CUgreenCtx green; /* NULL without --green */
static CUcontext green_ctx;
static unsigned green_sms;

static void *drv_sym(const char *name)
{
	void *p = dlsym(drv.lib, name);

	if (!p) {
		fprintf(stderr,
			"lib_bench: --green: %s is not in this "
			"libcuda.so.1\n",
			name);
		exit(1);
	}
	return p;
}

#define DRV_CK(call)                                                           \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != CUDA_SUCCESS) {                                      \
			const char *n_ = "?";                                  \
			drv.GetErrorName(r_, &n_);                             \
			fprintf(stderr, "lib_bench: %s:%d: %s: %s (%d)\n",     \
				__FILE__, __LINE__, #call, n_, (int)r_);       \
			exit(1);                                               \
		}                                                              \
	} while (0)

/*
 * A green context over the listed groups of the device's split (want[i]
 * == the number of groups: the SMs left over), or, with nwant 0, over
 * enough groups from group 0 for `sms` SMs; made current to this thread.
 */
static void green_make(int sms, const int *want, int nwant)
{
	CUdevice dev;
	CUdevResource whole, groups[64], rest, sel[65], got;
	unsigned n = 64;
	CUdevResourceDesc desc;
	const int listed = nwant > 0;

	drv.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
	if (!drv.lib) {
		fprintf(stderr, "lib_bench: --green: %s\n", dlerror());
		exit(1);
	}
#define DRV_LOAD(f) drv.f = (decltype(drv.f))drv_sym("cu" #f)
	DRV_LOAD(GetErrorName);
	DRV_LOAD(Init);
	DRV_LOAD(DeviceGet);
	DRV_LOAD(DeviceGetDevResource);
	DRV_LOAD(DevSmResourceSplitByCount);
	DRV_LOAD(DevResourceGenerateDesc);
	DRV_LOAD(GreenCtxCreate);
	DRV_LOAD(GreenCtxGetDevResource);
	DRV_LOAD(CtxFromGreenCtx);
	DRV_LOAD(CtxSetCurrent);
	DRV_LOAD(CtxGetCurrent);
	DRV_LOAD(StreamGetGreenCtx);
#undef DRV_LOAD
	DRV_CK(drv.Init(0));
	DRV_CK(drv.DeviceGet(&dev, 0));
	DRV_CK(drv.DeviceGetDevResource(dev, &whole, CU_DEV_RESOURCE_TYPE_SM));
	memset(&rest, 0, sizeof(rest));
	DRV_CK(drv.DevSmResourceSplitByCount(groups, &n, &whole, &rest, 0,
					     whole.sm.minSmPartitionSize));
	if (n > 64)
		n = 64;
	if (!listed) {
		unsigned per = whole.sm.minSmPartitionSize;

		nwant = (int)((sms + per - 1) / per);
		if (sms < 1 || nwant > (int)n) {
			fprintf(stderr,
				"lib_bench: --green %d: the device has %u "
				"groups of %u SMs\n",
				sms, n, per);
			exit(2);
		}
		for (int i = 0; i < nwant; i++)
			sel[i] = groups[i];
	} else {
		for (int i = 0; i < nwant; i++) {
			if (want[i] == (int)n && rest.sm.smCount) {
				sel[i] = rest;
				continue;
			}
			if (want[i] < 0 || want[i] >= (int)n) {
				fprintf(stderr,
					"lib_bench: --groups: group %d is not "
					"one of the %u groups%s\n",
					want[i], n,
					rest.sm.smCount ? " (or the leftover)"
							: "");
				exit(2);
			}
			sel[i] = groups[want[i]];
		}
	}
	DRV_CK(drv.DevResourceGenerateDesc(&desc, sel, (unsigned)nwant));
	DRV_CK(drv.GreenCtxCreate(&green, desc, dev,
				  CU_GREEN_CTX_DEFAULT_STREAM));
	memset(&got, 0, sizeof(got));
	DRV_CK(drv.GreenCtxGetDevResource(green, &got,
					  CU_DEV_RESOURCE_TYPE_SM));
	green_sms = got.sm.smCount;
	DRV_CK(drv.CtxFromGreenCtx(&green_ctx, green));
	DRV_CK(drv.CtxSetCurrent(green_ctx));
	printf("# green context: group(s)");
	for (int i = 0; i < nwant; i++)
		printf("%s%d", i ? "," : " ", listed ? want[i] : i);
	printf(" of the %u (%u SMs each; %u left over), %u SMs\n", n,
	       whole.sm.minSmPartitionSize, rest.sm.smCount, green_sms);
	fflush(stdout);
}

/* Is the green context still current, and is stream s in it? */
static int green_kept(cudaStream_t s)
{
	CUcontext cur = NULL;
	CUgreenCtx of_stream = NULL;

	DRV_CK(drv.CtxGetCurrent(&cur));
	DRV_CK(drv.StreamGetGreenCtx((CUstream)s, &of_stream));
	if (cur != green_ctx || of_stream != green) {
		printf("# green context lost: current context %p (green %p), "
		       "the stream's green context %p (green %p)\n",
		       (void *)cur, (void *)green_ctx, (void *)of_stream,
		       (void *)green);
		return 0;
	}
	return 1;
}

/* ---- which SMs run the stream's work ---------------------------------- */

#define MAX_SMID 4096

__global__ void record_smid(unsigned *out, long long spin)
{
	unsigned id;
	long long t0 = clock64();

	asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
	if (threadIdx.x == 0)
		out[blockIdx.x] = id;
	while (clock64() - t0 < spin)
		;
}

/*
 * Distinct %smid over three grids (4096, 8192, 16384 blocks of 64
 * threads, each about 10 us): how many SMs the stream's kernels get. Under
 * MPS the ids are the client's own, but their count is the SMs it has.
 */
static int smid_count(cudaStream_t s)
{
	static unsigned char seen[MAX_SMID];
	const int most = 16384;
	unsigned *d, *h;
	int count = 0;

	memset(seen, 0, sizeof(seen));
	h = (unsigned *)malloc(most * sizeof(*h));
	if (!h) {
		fprintf(stderr, "lib_bench: out of host memory\n");
		exit(1);
	}
	CHECK(cudaMalloc(&d, most * sizeof(*d)));
	for (int blocks = 4096; blocks <= most; blocks *= 2) {
		CHECK(cudaMemsetAsync(d, 0xff, blocks * sizeof(*d), s));
		record_smid<<<blocks, 64, 0, s>>>(d, 20000);
		CHECK_LAUNCH();
		CHECK(cudaMemcpyAsync(h, d, blocks * sizeof(*d),
				      cudaMemcpyDeviceToHost, s));
		CHECK(cudaStreamSynchronize(s));
		for (int b = 0; b < blocks; b++) {
			if (h[b] >= MAX_SMID) {
				fprintf(stderr,
					"lib_bench: block %d reports SM %u\n",
					b, h[b]);
				exit(1);
			}
			count += !seen[h[b]];
			seen[h[b]] = 1;
		}
	}
	CHECK(cudaFree(d));
	free(h);
	return count;
}

/* ---- data and timing -------------------------------------------------- */

__device__ static float hash_unit(size_t i, unsigned seed)
{
	unsigned x = (unsigned)i * 2654435761u ^ (unsigned)(i >> 32) ^ seed;

	x ^= x >> 16;
	x *= 0x7feb352du;
	x ^= x >> 15;
	x *= 0x846ca68bu;
	x ^= x >> 16;
	return (float)(x >> 8) * (2.0f / 16777216.0f) - 1.0f; /* [-1, 1) */
}

__global__ void fill_f32(float *p, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = hash_unit(i, seed);
}

__global__ void fill_f16(__half *p, size_t n, unsigned seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		p[i] = __float2half(hash_unit(i, seed));
}

static void fill(float *p, size_t n, unsigned seed, cudaStream_t s)
{
	fill_f32<<<1024, 256, 0, s>>>(p, n, seed);
	CHECK_LAUNCH();
}

static void fill(__half *p, size_t n, unsigned seed, cudaStream_t s)
{
	fill_f16<<<1024, 256, 0, s>>>(p, n, seed);
	CHECK_LAUNCH();
}

static cudaStream_t stream;
static cudaEvent_t ev0, ev1;
static double target_ms = 25;
static int batches_opt; /* 0: 7, or 3 for ops of 50 ms or more */

/*
 * Times op() on `stream`: a warm-up, one timed op to size the batches,
 * then the batches; prints the figure and returns the median ms per op.
 * flop: the op's floating-point operations (0: none printed).
 */
template <typename Op>
static double time_op(const char *name, Op op, double flop)
{
	double t[64], one;
	float ms;
	int reps, batches;

	op(); /* warm-up: module loads, plans, first-launch costs */
	CHECK(cudaStreamSynchronize(stream));
	CHECK(cudaGetLastError());
	CHECK(cudaEventRecord(ev0, stream));
	op();
	CHECK(cudaEventRecord(ev1, stream));
	CHECK(cudaEventSynchronize(ev1));
	CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
	one = ms > 0 ? ms : 1e-3;
	reps = (int)ceil(target_ms / one);
	reps = reps < 1 ? 1 : reps > 2000 ? 2000 : reps;
	batches = batches_opt ? batches_opt : one >= 50 ? 3 : 7;
	if (batches > 64)
		batches = 64;
	for (int b = 0; b < batches; b++) {
		CHECK(cudaEventRecord(ev0, stream));
		for (int r = 0; r < reps; r++)
			op();
		CHECK(cudaEventRecord(ev1, stream));
		CHECK(cudaEventSynchronize(ev1));
		CHECK(cudaGetLastError());
		CHECK(cudaEventElapsedTime(&ms, ev0, ev1));
		t[b] = (double)ms / reps;
	}
	double lo = t[0], hi = t[0];

	for (int b = 1; b < batches; b++) {
		lo = fmin(lo, t[b]);
		hi = fmax(hi, t[b]);
	}
	double med = rt_median(t, batches);

	printf("# %s: %.4f ms/op (median of %d batches x %d ops, %.4f-%.4f)",
	       name, med, batches, reps, lo, hi);
	if (flop > 0)
		printf(", %.2f TFLOP/s", flop / (med * 1e9));
	printf("\n");
	rt_result(name, med, "ms");
	fflush(stdout);
	return med;
}

/* ---- the cases -------------------------------------------------------- */

static cublasHandle_t blas;
static int sm_target_opt = -1; /* -1: none given */
static int runtime_sms;

static cublasHandle_t blas_handle(void)
{
	if (!blas) {
		BLAS_CK(cublasCreate(&blas));
		BLAS_CK(cublasSetStream(blas, stream));
		if (sm_target_opt >= 0) {
			BLAS_CK(cublasSetSmCountTarget(blas, sm_target_opt));
			printf("# cuBLAS: SM count target %d for every GEMM\n",
			       sm_target_opt);
		}
	}
	return blas;
}

/* targeted: the _t cases, cuBLAS told the slice's SMs for this case */
static void gemm(const char *name, int n, int half, int targeted)
{
	cublasHandle_t h = blas_handle();
	size_t elems = (size_t)n * n;
	size_t size = half ? sizeof(__half) : sizeof(float);
	void *a, *b, *c;
	int before = 0;

	CHECK(cudaMalloc(&a, elems * size));
	CHECK(cudaMalloc(&b, elems * size));
	CHECK(cudaMalloc(&c, elems * size));
	if (half) {
		fill((__half *)a, elems, 1, stream);
		fill((__half *)b, elems, 2, stream);
		fill((__half *)c, elems, 3, stream);
	} else {
		fill((float *)a, elems, 1, stream);
		fill((float *)b, elems, 2, stream);
		fill((float *)c, elems, 3, stream);
	}
	if (targeted) {
		int want = green ? (int)green_sms : runtime_sms;

		BLAS_CK(cublasGetSmCountTarget(h, &before));
		BLAS_CK(cublasSetSmCountTarget(h, want));
		printf("# %s: cuBLAS SM count target %d\n", name, want);
	}
	double flop = 2.0 * n * n * (double)n;

	if (half) {
		const __half one = __float2half(1.0f),
			     zero = __float2half(0.0f);

		time_op(
			name,
			[&] {
				BLAS_CK(cublasHgemm(h, CUBLAS_OP_N, CUBLAS_OP_N,
						    n, n, n, &one,
						    (const __half *)a, n,
						    (const __half *)b, n, &zero,
						    (__half *)c, n));
			},
			flop);
	} else {
		const float one = 1.0f, zero = 0.0f;

		time_op(
			name,
			[&] {
				BLAS_CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N,
						    n, n, n, &one,
						    (const float *)a, n,
						    (const float *)b, n, &zero,
						    (float *)c, n));
			},
			flop);
	}
	if (targeted)
		BLAS_CK(cublasSetSmCountTarget(h, before));
	CHECK(cudaStreamSynchronize(stream));
	CHECK(cudaFree(a));
	CHECK(cudaFree(b));
	CHECK(cudaFree(c));
}

static void fft2d(const char *name, int n)
{
	size_t per = (size_t)n * n;
	int batch = per >= (1u << 24) ? 1 : (int)((1u << 24) / per);
	int dims[2] = {n, n};
	cufftComplex *in, *out;
	cufftHandle plan;

	CHECK(cudaMalloc(&in, per * batch * sizeof(*in)));
	CHECK(cudaMalloc(&out, per * batch * sizeof(*out)));
	fill((float *)in, per * batch * 2, 4, stream);
	FFT_CK(cufftPlanMany(&plan, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_C2C,
			     batch));
	FFT_CK(cufftSetStream(plan, stream));
	printf("# %s: %d x %d C2C forward, out of place, batch %d\n", name, n,
	       n, batch);
	/* 5 N log2 N per transform of N points, the usual FFT figure */
	double flop = 5.0 * per * log2((double)per) * batch;

	time_op(
		name,
		[&] { FFT_CK(cufftExecC2C(plan, in, out, CUFFT_FORWARD)); },
		flop);
	CHECK(cudaStreamSynchronize(stream));
	FFT_CK(cufftDestroy(plan));
	CHECK(cudaFree(in));
	CHECK(cudaFree(out));
}

#ifndef LIB_BENCH_NO_CUDNN
/* a ResNet-like layer (conv2_x of ResNet-34 at batch 32) */
enum { L_N = 32, L_C = 64, L_H = 56, L_W = 56, L_K = 64, L_R = 3, L_S = 3 };

static void conv(const char *name, int find)
{
	static cudnnHandle_t h;
	cudnnTensorDescriptor_t xd, yd;
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cd;
	cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	const size_t max_work = (size_t)1 << 30;
	int n, c, oh, ow, count = 0, pick = -1;
	size_t wsize = 0;
	float *x, *w, *y;
	void *work = NULL;
	const float one = 1.0f, zero = 0.0f;

	if (!h) {
		DNN_CK(cudnnCreate(&h));
		DNN_CK(cudnnSetStream(h, stream));
	}
	DNN_CK(cudnnCreateTensorDescriptor(&xd));
	DNN_CK(cudnnCreateTensorDescriptor(&yd));
	DNN_CK(cudnnCreateFilterDescriptor(&wd));
	DNN_CK(cudnnCreateConvolutionDescriptor(&cd));
	DNN_CK(cudnnSetTensor4dDescriptor(
		xd, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, L_N, L_C, L_H, L_W));
	DNN_CK(cudnnSetFilter4dDescriptor(
		wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, L_K, L_C, L_R, L_S));
	DNN_CK(cudnnSetConvolution2dDescriptor(cd, 1, 1, 1, 1, 1, 1,
					       CUDNN_CROSS_CORRELATION,
					       CUDNN_DATA_FLOAT));
	DNN_CK(cudnnGetConvolution2dForwardOutputDim(cd, xd, wd, &n, &c, &oh,
						     &ow));
	DNN_CK(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NCHW,
					  CUDNN_DATA_FLOAT, n, c, oh, ow));
	CHECK(cudaMalloc(&x, sizeof(float) * L_N * L_C * L_H * L_W));
	CHECK(cudaMalloc(&w, sizeof(float) * L_K * L_C * L_R * L_S));
	CHECK(cudaMalloc(&y, sizeof(float) * n * c * oh * ow));
	fill(x, (size_t)L_N * L_C * L_H * L_W, 5, stream);
	fill(w, (size_t)L_K * L_C * L_R * L_S, 6, stream);
	CHECK(cudaStreamSynchronize(stream));
	if (find)
		DNN_CK(cudnnFindConvolutionForwardAlgorithm(
			h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
			&count, perf));
	else
		DNN_CK(cudnnGetConvolutionForwardAlgorithm_v7(
			h, xd, wd, cd, yd, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
			&count, perf));
	for (int i = 0; i < count && pick < 0; i++)
		if (perf[i].status == CUDNN_STATUS_SUCCESS &&
		    perf[i].memory <= max_work)
			pick = i;
	if (pick < 0) {
		fprintf(stderr,
			"lib_bench: %s: none of %d algorithms can run\n", name,
			count);
		exit(1);
	}
	DNN_CK(cudnnSetConvolutionMathType(cd, perf[pick].mathType));
	DNN_CK(cudnnGetConvolutionForwardWorkspaceSize(
		h, xd, wd, cd, yd, perf[pick].algo, &wsize));
	if (wsize)
		CHECK(cudaMalloc(&work, wsize));
	printf("# %s: %dx%dx%dx%d, %d filters %dx%d, pad 1: algorithm %d, "
	       "math type %d, workspace %zu bytes (%s, rank %d of %d)\n",
	       name, L_N, L_C, L_H, L_W, L_K, L_R, L_S, (int)perf[pick].algo,
	       (int)perf[pick].mathType, wsize,
	       find ? "measured here" : "heuristics", pick + 1, count);
	char label[80];

	snprintf(label, sizeof(label), "%s_algo", name);
	rt_result(label, perf[pick].algo, "id");
	double flop = 2.0 * L_N * L_K * oh * ow * (double)L_C * L_R * L_S;

	time_op(
		name,
		[&] {
			DNN_CK(cudnnConvolutionForward(
				h, &one, xd, x, wd, w, cd, perf[pick].algo,
				work, wsize, &zero, yd, y));
		},
		flop);
	CHECK(cudaStreamSynchronize(stream));
	CHECK(cudaFree(work));
	CHECK(cudaFree(x));
	CHECK(cudaFree(w));
	CHECK(cudaFree(y));
	DNN_CK(cudnnDestroyConvolutionDescriptor(cd));
	DNN_CK(cudnnDestroyFilterDescriptor(wd));
	DNN_CK(cudnnDestroyTensorDescriptor(xd));
	DNN_CK(cudnnDestroyTensorDescriptor(yd));
}
#endif

/* ---- main ------------------------------------------------------------- */

static int usage(void)
{
	fprintf(stderr,
		"usage: lib_bench [--green SMS | --groups G,G,...] "
		"[--sm-target N] [--target-ms MS] [--batches B] CASE...\n"
		"  CASE: sgemm:N hgemm:N sgemm_t:N hgemm_t:N fft2d:N conv "
		"convfind\n");
	return 2;
}

/* "sgemm:4096" -> kind "sgemm", n 4096; name "sgemm_4096" */
static int parse_case(const char *arg, char *kind, size_t klen, int *n,
		      char *name, size_t nlen)
{
	const char *colon = strchr(arg, ':');
	size_t k = colon ? (size_t)(colon - arg) : strlen(arg);

	if (k == 0 || k >= klen)
		return -1;
	memcpy(kind, arg, k);
	kind[k] = '\0';
	*n = 0;
	if (colon) {
		char *end;
		long v = strtol(colon + 1, &end, 10);

		if (*end || v < 1 || v > 65536)
			return -1;
		*n = (int)v;
		snprintf(name, nlen, "%s_%d", kind, *n);
	} else {
		snprintf(name, nlen, "%s", kind);
	}
	return 0;
}

static int known(const char *kind, int n)
{
	static const char *const sized[] = {"sgemm", "hgemm", "sgemm_t",
					    "hgemm_t", "fft2d"};

	for (size_t i = 0; i < sizeof(sized) / sizeof(*sized); i++)
		if (strcmp(kind, sized[i]) == 0)
			return n > 0;
	return n == 0 &&
	       (strcmp(kind, "conv") == 0 || strcmp(kind, "convfind") == 0);
}

int main(int argc, char **argv)
{
	int green_req = 0, want[65], nwant = 0, first_case = 0;
	char kind[32], name[64];
	int n;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--green") == 0 && i + 1 < argc) {
			green_req = atoi(argv[++i]);
			if (green_req < 1)
				return usage();
		} else if (strcmp(a, "--groups") == 0 && i + 1 < argc) {
			char *s = argv[++i], *end;

			for (nwant = 0; *s && nwant < 65; nwant++) {
				long v = strtol(s, &end, 10);

				if (end == s || v < 0 || v > 64)
					return usage();
				want[nwant] = (int)v;
				s = *end == ',' ? end + 1 : end;
				if (*end && *end != ',')
					return usage();
			}
			if (nwant == 0)
				return usage();
		} else if (strcmp(a, "--sm-target") == 0 && i + 1 < argc) {
			sm_target_opt = atoi(argv[++i]);
		} else if (strcmp(a, "--target-ms") == 0 && i + 1 < argc) {
			target_ms = atof(argv[++i]);
			if (!(target_ms > 0))
				return usage();
		} else if (strcmp(a, "--batches") == 0 && i + 1 < argc) {
			batches_opt = atoi(argv[++i]);
			if (batches_opt < 1 || batches_opt > 64)
				return usage();
		} else if (a[0] == '-') {
			return usage();
		} else {
			if (parse_case(a, kind, sizeof(kind), &n, name,
				       sizeof(name)) ||
			    !known(kind, n)) {
				fprintf(stderr, "lib_bench: unknown case %s\n",
					a);
				return usage();
			}
			if (!first_case)
				first_case = i;
		}
	}
	if (!first_case)
		return usage();

	/* the green context first: the runtime then takes it as its own */
	if (green_req || nwant)
		green_make(green_req, want, nwant);
	CHECK(cudaFree(0));
	if (green && !green_kept(0)) {
		fprintf(stderr, "lib_bench: the runtime did not take the green "
				"context\n");
		return 1;
	}

	cudaDeviceProp p;

	CHECK(cudaGetDeviceProperties(&p, 0));
	CHECK(cudaDeviceGetAttribute(&runtime_sms,
				     cudaDevAttrMultiProcessorCount, 0));
	printf("# lib_bench on %s (%d SMs as the runtime says, %zu MiB), %s\n",
	       p.name, runtime_sms, p.totalGlobalMem >> 20,
	       green ? "a green context of NVIDIA's driver"
		     : "no green context");
	CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	CHECK(cudaEventCreate(&ev0));
	CHECK(cudaEventCreate(&ev1));
	if (green)
		rt_result("green_sms", green_sms, "sms");
	rt_result("runtime_sms", runtime_sms, "sms");
	rt_result("smid_sms", smid_count(stream), "sms");
	fflush(stdout);

	for (int i = first_case; i < argc; i++) {
		if (argv[i][0] == '-') { /* an option after the cases */
			i++;
			continue;
		}
		parse_case(argv[i], kind, sizeof(kind), &n, name, sizeof(name));
		if (strcmp(kind, "sgemm") == 0 || strcmp(kind, "sgemm_t") == 0)
			gemm(name, n, 0, kind[5] == '_');
		else if (strcmp(kind, "hgemm") == 0 ||
			 strcmp(kind, "hgemm_t") == 0)
			gemm(name, n, 1, kind[5] == '_');
		else if (strcmp(kind, "fft2d") == 0)
			fft2d(name, n);
#ifndef LIB_BENCH_NO_CUDNN
		else
			conv(name, strcmp(kind, "convfind") == 0);
#else
		else
			printf("# %s: skipped (built without cuDNN)\n", name);
#endif
		if (green && !green_kept(stream)) {
			/* put it back for the next cases; the flag below
			 * says the figures are not the slice's */
			DRV_CK(drv.CtxSetCurrent(green_ctx));
			rt_result("green_ctx_lost_after", i, "argv");
		}
	}

	rt_result("smid_sms_end", smid_count(stream), "sms");
	if (green)
		rt_result("green_ctx_kept", green_kept(stream), "flag");
	if (blas)
		BLAS_CK(cublasDestroy(blas));
	CHECK(cudaStreamDestroy(stream));
	return 0;
}
