// SPDX-License-Identifier: MIT
// cuDNN's convolution through its C API, the way cudnn_cnn.h documents it
// (the legacy descriptors and calls, still in cuDNN 9): a 3x3 convolution,
// pad 1, stride 1, of a float NCHW batch (N 2, C 3, H = W = 16) with 4
// filters, forward (cudnnConvolutionForward), backward to the data
// (cudnnConvolutionBackwardData) and backward to the filters
// (cudnnConvolutionBackwardFilter), each with the algorithm cuDNN's
// heuristics rank first (cudnnGet*Algorithm_v7) and the workspace that
// algorithm asks for, each checked against a direct convolution on the CPU.
// cuDNN's convolution is what frameworks call one: a cross-correlation.
// Its kernels need a GPU (the simulator has no twins of them):
// scripts/nvrt-check.sh runs this on the GPU machine. Built only where a
// cudnn.h is found (tests/libs/libs.mk). Prints one line per pass,
// "NAME: ok (...)" or "NAME: FAILS (...)", and exits 0 when all three are
// ok.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cudnn.h>

#define CK(x)                                                                  \
	do {                                                                   \
		int rc_ = (int)(x);                                            \
		if (rc_) {                                                     \
			printf("%s: FAILS (%s gave %d; the runtime's last "    \
			       "error: %s)\n",                                 \
			       what, #x, rc_,                                  \
			       cudaGetErrorName(cudaGetLastError()));          \
			return 1;                                              \
		}                                                              \
	} while (0)

enum { N = 2, C = 3, H = 16, W = 16, K = 4, R = 3, S = 3, PAD = 1 };

/*
 * An error is measured against the sum of its terms' magnitudes. With the
 * FMA algorithms (the H200's heuristics offer them, and pick() takes them)
 * the inputs below give exact sums; TF32 tensor cores, which cuDNN may
 * use for float otherwise, 2^-11 per product. A wrong convolution (a
 * flipped filter, a shifted pad, a missing channel) is off by the order
 * of the whole sum.
 */
#define REL_TOL 5e-3

/* everything a pass needs: the layer, host data, device copies */
struct conv {
	cudnnHandle_t h;
	cudnnTensorDescriptor_t xd, yd;
	cudnnFilterDescriptor_t wd;
	cudnnConvolutionDescriptor_t cd;
	std::vector<float> x, w, dy;	  /* inputs */
	std::vector<double> y, dx, dw;	  /* the CPU's answers */
	std::vector<double> ym, dxm, dwm; /* their terms' magnitudes */
	float *dev_x, *dev_w, *dev_dy, *dev_out;
};

static size_t ix(int n, int c, int h, int w)
{
	return (((size_t)n * C + c) * H + h) * W + w;
}

static size_t iy(int n, int k, int p, int q)
{
	return (((size_t)n * K + k) * H + p) * W + q;
}

static size_t iw(int k, int c, int r, int s)
{
	return (((size_t)k * C + c) * R + r) * S + s;
}

/* one term of each pass: input xi meets filter tap wi at output yi */
static void tap(struct conv *cv, size_t xi, size_t wi, size_t yi)
{
	double xv = cv->x[xi], wv = cv->w[wi], gv = cv->dy[yi];

	cv->y[yi] += xv * wv;
	cv->ym[yi] += fabs(xv * wv);
	cv->dx[xi] += gv * wv;
	cv->dxm[xi] += fabs(gv * wv);
	cv->dw[wi] += gv * xv;
	cv->dwm[wi] += fabs(gv * xv);
}

/*
 * The three passes on the CPU, directly: output (p, q) sees input
 * (p + r - PAD, q + s - PAD) through filter tap (r, s), where in bounds.
 */
static void cpu_conv(struct conv *cv)
{
	cv->y.assign((size_t)N * K * H * W, 0);
	cv->ym.assign(cv->y.size(), 0);
	cv->dx.assign(cv->x.size(), 0);
	cv->dxm.assign(cv->x.size(), 0);
	cv->dw.assign(cv->w.size(), 0);
	cv->dwm.assign(cv->w.size(), 0);
	for (int n = 0; n < N; n++)
		for (int k = 0; k < K; k++)
			for (int p = 0; p < H; p++)
				for (int q = 0; q < W; q++)
					for (int t = 0; t < C * R * S; t++) {
						int c = t / (R * S);
						int r = t / S % R, s = t % S;
						int h = p + r - PAD;
						int v = q + s - PAD;

						if (h < 0 || h >= H || v < 0 ||
						    v >= W)
							continue;
						tap(cv, ix(n, c, h, v),
						    iw(k, c, r, s),
						    iy(n, k, p, q));
					}
}

/*
 * Compare the GPU's answer (in dev_out, count floats) with the CPU's; on a
 * failure print the first entry off. Returns 0 when all are within
 * REL_TOL of their terms' magnitudes.
 */
static int compare(const char *what, const struct conv *cv,
		   const std::vector<double> &want,
		   const std::vector<double> &mag, double *worst)
{
	std::vector<float> got(want.size());

	CK(cudaMemcpy(got.data(), cv->dev_out, sizeof(float) * got.size(),
		      cudaMemcpyDeviceToHost));
	*worst = 0;
	for (size_t i = 0; i < got.size(); i++) {
		double e = fabs(got[i] - want[i]);
		double rel = e == 0 ? 0 : e / (mag[i] > 0 ? mag[i] : 1e-30);

		if (!(rel <= *worst))
			*worst = rel;
		if (!(rel <= REL_TOL)) {
			printf("%s: FAILS (entry %zu is %g, the CPU says %g)\n",
			       what, i, got[i], want[i]);
			return 1;
		}
	}
	return 0;
}

/*
 * The heuristics' first algorithm that can run; one restricted to FMA
 * (no TF32) first if there is one. Its math type goes on the descriptor,
 * as the documentation asks.
 */
template <typename P> static int pick(struct conv *cv, const P *perf, int count)
{
	int first = -1;

	for (int i = 0; i < count; i++) {
		if (perf[i].status != CUDNN_STATUS_SUCCESS)
			continue;
		if (perf[i].mathType == CUDNN_FMA_MATH) {
			first = i;
			break;
		}
		if (first < 0)
			first = i;
	}
	if (first >= 0 &&
	    cudnnSetConvolutionMathType(cv->cd, perf[first].mathType) !=
		    CUDNN_STATUS_SUCCESS)
		return -1;
	return first;
}

static int fwd(struct conv *cv)
{
	const char *what = "conv_fwd";
	cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
	int count = 0, i;
	size_t size = 0;
	void *work = NULL;
	float one = 1.0f, zero = 0.0f;
	double worst;

	CK(cudnnSetConvolutionMathType(cv->cd, CUDNN_FMA_MATH));
	CK(cudnnGetConvolutionForwardAlgorithm_v7(
		cv->h, cv->xd, cv->wd, cv->cd, cv->yd,
		CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count, perf));
	i = pick(cv, perf, count);
	if (i < 0) {
		printf("conv_fwd: FAILS (none of %d algorithms can run)\n",
		       count);
		return 1;
	}
	CK(cudnnGetConvolutionForwardWorkspaceSize(
		cv->h, cv->xd, cv->wd, cv->cd, cv->yd, perf[i].algo, &size));
	if (size)
		CK(cudaMalloc(&work, size));
	CK(cudaMemset(cv->dev_out, 0, sizeof(float) * cv->y.size()));
	CK(cudnnConvolutionForward(cv->h, &one, cv->xd, cv->dev_x, cv->wd,
				   cv->dev_w, cv->cd, perf[i].algo, work, size,
				   &zero, cv->yd, cv->dev_out));
	cudaFree(work);
	if (compare(what, cv, cv->y, cv->ym, &worst))
		return 1;
	printf("conv_fwd: ok (%dx%dx%dx%d, %d filters %dx%d, pad %d: "
	       "algorithm %d, math type %d, workspace %zu bytes, worst "
	       "relative error %.2g)\n",
	       N, C, H, W, K, R, S, PAD, (int)perf[i].algo,
	       (int)perf[i].mathType, size, worst);
	return 0;
}

static int bwd_data(struct conv *cv)
{
	const char *what = "conv_bwd_data";
	cudnnConvolutionBwdDataAlgoPerf_t
		perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
	int count = 0, i;
	size_t size = 0;
	void *work = NULL;
	float one = 1.0f, zero = 0.0f;
	double worst;

	CK(cudnnSetConvolutionMathType(cv->cd, CUDNN_FMA_MATH));
	CK(cudnnGetConvolutionBackwardDataAlgorithm_v7(
		cv->h, cv->wd, cv->yd, cv->cd, cv->xd,
		CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &count, perf));
	i = pick(cv, perf, count);
	if (i < 0) {
		printf("conv_bwd_data: FAILS (none of %d algorithms can "
		       "run)\n",
		       count);
		return 1;
	}
	CK(cudnnGetConvolutionBackwardDataWorkspaceSize(
		cv->h, cv->wd, cv->yd, cv->cd, cv->xd, perf[i].algo, &size));
	if (size)
		CK(cudaMalloc(&work, size));
	CK(cudaMemset(cv->dev_out, 0, sizeof(float) * cv->x.size()));
	CK(cudnnConvolutionBackwardData(cv->h, &one, cv->wd, cv->dev_w, cv->yd,
					cv->dev_dy, cv->cd, perf[i].algo, work,
					size, &zero, cv->xd, cv->dev_out));
	cudaFree(work);
	if (compare(what, cv, cv->dx, cv->dxm, &worst))
		return 1;
	printf("conv_bwd_data: ok (gradient of the input: algorithm %d, math "
	       "type %d, workspace %zu bytes, worst relative error %.2g)\n",
	       (int)perf[i].algo, (int)perf[i].mathType, size, worst);
	return 0;
}

static int bwd_filter(struct conv *cv)
{
	const char *what = "conv_bwd_filter";
	cudnnConvolutionBwdFilterAlgoPerf_t
		perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
	int count = 0, i;
	size_t size = 0;
	void *work = NULL;
	float one = 1.0f, zero = 0.0f;
	double worst;

	CK(cudnnSetConvolutionMathType(cv->cd, CUDNN_FMA_MATH));
	CK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
		cv->h, cv->xd, cv->yd, cv->cd, cv->wd,
		CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &count, perf));
	i = pick(cv, perf, count);
	if (i < 0) {
		printf("conv_bwd_filter: FAILS (none of %d algorithms can "
		       "run)\n",
		       count);
		return 1;
	}
	CK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
		cv->h, cv->xd, cv->yd, cv->cd, cv->wd, perf[i].algo, &size));
	if (size)
		CK(cudaMalloc(&work, size));
	CK(cudaMemset(cv->dev_out, 0, sizeof(float) * cv->w.size()));
	CK(cudnnConvolutionBackwardFilter(
		cv->h, &one, cv->xd, cv->dev_x, cv->yd, cv->dev_dy, cv->cd,
		perf[i].algo, work, size, &zero, cv->wd, cv->dev_out));
	cudaFree(work);
	if (compare(what, cv, cv->dw, cv->dwm, &worst))
		return 1;
	printf("conv_bwd_filter: ok (gradient of the filters: algorithm %d, "
	       "math type %d, workspace %zu bytes, worst relative error "
	       "%.2g)\n",
	       (int)perf[i].algo, (int)perf[i].mathType, size, worst);
	return 0;
}

/* multiples of 1/16 in [-1/2, 1/2]: exact in float and in TF32 */
static void fill(std::vector<float> &v, size_t n)
{
	v.resize(n);
	for (size_t i = 0; i < n; i++)
		v[i] = (float)(rand() % 17 - 8) / 16;
}

static int setup(struct conv *cv)
{
	const char *what = "cudnn";
	int n, c, h, w;

	fill(cv->x, (size_t)N * C * H * W);
	fill(cv->w, (size_t)K * C * R * S);
	fill(cv->dy, (size_t)N * K * H * W);
	cpu_conv(cv);
	CK(cudnnCreate(&cv->h));
	CK(cudnnCreateTensorDescriptor(&cv->xd));
	CK(cudnnCreateTensorDescriptor(&cv->yd));
	CK(cudnnCreateFilterDescriptor(&cv->wd));
	CK(cudnnCreateConvolutionDescriptor(&cv->cd));
	CK(cudnnSetTensor4dDescriptor(cv->xd, CUDNN_TENSOR_NCHW,
				      CUDNN_DATA_FLOAT, N, C, H, W));
	CK(cudnnSetFilter4dDescriptor(cv->wd, CUDNN_DATA_FLOAT,
				      CUDNN_TENSOR_NCHW, K, C, R, S));
	CK(cudnnSetConvolution2dDescriptor(cv->cd, PAD, PAD, 1, 1, 1, 1,
					   CUDNN_CROSS_CORRELATION,
					   CUDNN_DATA_FLOAT));
	CK(cudnnGetConvolution2dForwardOutputDim(cv->cd, cv->xd, cv->wd, &n, &c,
						 &h, &w));
	if (n != N || c != K || h != H || w != W) {
		printf("cudnn: FAILS (output %dx%dx%dx%d, not %dx%dx%dx%d)\n",
		       n, c, h, w, N, K, H, W);
		return 1;
	}
	CK(cudnnSetTensor4dDescriptor(cv->yd, CUDNN_TENSOR_NCHW,
				      CUDNN_DATA_FLOAT, n, c, h, w));
	CK(cudaMalloc(&cv->dev_x, sizeof(float) * cv->x.size()));
	CK(cudaMalloc(&cv->dev_w, sizeof(float) * cv->w.size()));
	CK(cudaMalloc(&cv->dev_dy, sizeof(float) * cv->dy.size()));
	/* the largest of the three outputs: y and dy have the same size */
	CK(cudaMalloc(&cv->dev_out, sizeof(float) * cv->dy.size()));
	CK(cudaMemcpy(cv->dev_x, cv->x.data(), sizeof(float) * cv->x.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(cv->dev_w, cv->w.data(), sizeof(float) * cv->w.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(cv->dev_dy, cv->dy.data(), sizeof(float) * cv->dy.size(),
		      cudaMemcpyHostToDevice));
	return 0;
}

int main()
{
	struct conv cv = {};
	int bad;

	srand(1);
	if (setup(&cv))
		return 1;
	bad = fwd(&cv);
	bad |= bwd_data(&cv);
	bad |= bwd_filter(&cv);
	cudaFree(cv.dev_x);
	cudaFree(cv.dev_w);
	cudaFree(cv.dev_dy);
	cudaFree(cv.dev_out);
	cudnnDestroyConvolutionDescriptor(cv.cd);
	cudnnDestroyFilterDescriptor(cv.wd);
	cudnnDestroyTensorDescriptor(cv.xd);
	cudnnDestroyTensorDescriptor(cv.yd);
	cudnnDestroy(cv.h);
	return bad;
}
