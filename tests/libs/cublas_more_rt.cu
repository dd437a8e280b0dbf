// SPDX-License-Identifier: MIT
// More of cuBLAS than libs_compute.cu's SGEMM, the way its documentation
// shows: a half-precision product (cublasGemmEx, CUDA_R_16F in and out,
// CUBLAS_COMPUTE_32F) of 1024, SGEMMs in batches given by a stride
// (cublasSgemmStridedBatched, 16 of 128) and by arrays of pointers in
// device memory (cublasSgemmBatched), and one cuBLASLt product
// (cublasLtMatmul with a matmul descriptor, layouts, an algorithm from
// cublasLtMatmulAlgoGetHeuristic and a workspace), each checked against
// the CPU: the large ones at sampled entries. The inputs are multiples of
// 1/16 in [-1/2, 1/2], so float sums are exact and only the half output's
// rounding (2^-11 relative) is allowed for. Their kernels need a GPU (the
// simulator has no twins of them): scripts/nvrt-check.sh runs this on the
// GPU machine. Prints one line per product, "NAME: ok (...)" or
// "NAME: FAILS (...)", and exits 0 when all four are ok.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

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

/* multiples of 1/16 in [-1/2, 1/2]: exact in half, products exact */
static void fill(std::vector<float> &v)
{
	for (size_t i = 0; i < v.size(); i++)
		v[i] = (float)(rand() % 17 - 8) / 16;
}

/*
 * Entry (i, j) of op(A) op(B), in double: op(A)(i, l) is a[i * ar + l * ac]
 * and op(B)(l, j) is b[l * br + j * bc], which covers column-major storage
 * transposed or not.
 */
static double ref(const float *a, int ar, int ac, const float *b, int br,
		  int bc, int i, int j, int k)
{
	double s = 0;

	for (int l = 0; l < k; l++)
		s += (double)a[(size_t)i * ar + (size_t)l * ac] *
		     b[(size_t)l * br + (size_t)j * bc];
	return s;
}

static int hgemm(cublasHandle_t h)
{
	const char *what = "hgemm";
	const int n = 1024;
	std::vector<float> a((size_t)n * n), b((size_t)n * n);
	std::vector<__half> ha(a.size()), hb(b.size()), hc(a.size());
	__half *da, *db, *dc;
	float one = 1.0f, zero = 0.0f, worst = 0;
	int checked = 0;

	fill(a);
	fill(b);
	for (size_t i = 0; i < a.size(); i++) {
		ha[i] = __float2half(a[i]);
		hb[i] = __float2half(b[i]);
	}
	CK(cudaMalloc(&da, sizeof(__half) * a.size()));
	CK(cudaMalloc(&db, sizeof(__half) * b.size()));
	CK(cudaMalloc(&dc, sizeof(__half) * hc.size()));
	CK(cudaMemcpy(da, ha.data(), sizeof(__half) * a.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, hb.data(), sizeof(__half) * b.size(),
		      cudaMemcpyHostToDevice));
	/* half in and out, float accumulation: alpha and beta are floats */
	CK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da,
			CUDA_R_16F, n, db, CUDA_R_16F, n, &zero, dc, CUDA_R_16F,
			n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
	CK(cudaMemcpy(hc.data(), dc, sizeof(__half) * hc.size(),
		      cudaMemcpyDeviceToHost));
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	for (int j = 0; j < n; j += 7)
		for (int i = 0; i < n; i += 5) {
			double want =
				ref(a.data(), 1, n, b.data(), 1, n, i, j, n);
			float got = __half2float(hc[i + (size_t)j * n]);
			float e = (float)fabs(got - want);

			checked++;
			if (!(e <= worst))
				worst = e;
			/* the half result's rounding: 2^-11 relative */
			if (!(e <= 1e-3 * fabs(want) + 1e-3)) {
				printf("hgemm: FAILS (GemmEx half %d: C[%d,%d] "
				       "is %g, the CPU says %g)\n",
				       n, i, j, got, want);
				return 1;
			}
		}
	printf("hgemm: ok (GemmEx half in and out, float compute, %d: %d "
	       "entries checked, worst error %.2g)\n",
	       n, checked, worst);
	return 0;
}

static int strided(cublasHandle_t h)
{
	const char *what = "sgemm_strided";
	const int n = 128, batch = 16;
	const long long stride = (long long)n * n;
	std::vector<float> a(stride * batch), b(stride * batch);
	std::vector<float> c(stride * batch);
	float *da, *db, *dc, one = 1.0f, zero = 0.0f, worst = 0;

	fill(a);
	fill(b);
	CK(cudaMalloc(&da, sizeof(float) * a.size()));
	CK(cudaMalloc(&db, sizeof(float) * b.size()));
	CK(cudaMalloc(&dc, sizeof(float) * c.size()));
	CK(cudaMemcpy(da, a.data(), sizeof(float) * a.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), sizeof(float) * b.size(),
		      cudaMemcpyHostToDevice));
	CK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one,
				     da, n, stride, db, n, stride, &zero, dc, n,
				     stride, batch));
	CK(cudaMemcpy(c.data(), dc, sizeof(float) * c.size(),
		      cudaMemcpyDeviceToHost));
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	for (int m = 0; m < batch; m++)
		for (int j = 0; j < n; j++)
			for (int i = 0; i < n; i++) {
				size_t o = (size_t)m * stride;
				double want =
					ref(&a[o], 1, n, &b[o], 1, n, i, j, n);
				float got = c[o + i + (size_t)j * n];
				float e = (float)fabs(got - want);

				if (!(e <= worst))
					worst = e;
				if (!(e <= 1e-4)) {
					printf("sgemm_strided: FAILS (%d of "
					       "%d: product %d, C[%d,%d] is "
					       "%g, the CPU says %g)\n",
					       batch, n, m, i, j, got, want);
					return 1;
				}
			}
	printf("sgemm_strided: ok (%d products of %d, all entries, worst "
	       "error %.2g)\n",
	       batch, n, worst);
	return 0;
}

static int batched(cublasHandle_t h)
{
	const char *what = "sgemm_batched";
	/* C (m x n) = A (m x k) B (k x n), column-major, packed */
	const int m = 96, n = 64, k = 80, batch = 8;
	const size_t sa = (size_t)m * k, sb = (size_t)k * n, sc = (size_t)m * n;
	std::vector<float> a(sa * batch), b(sb * batch), c(sc * batch);
	std::vector<float *> pa(batch), pb(batch), pc(batch);
	float *da, *db, *dc, **dpa, **dpb, **dpc;
	float one = 1.0f, zero = 0.0f, worst = 0;

	fill(a);
	fill(b);
	CK(cudaMalloc(&da, sizeof(float) * a.size()));
	CK(cudaMalloc(&db, sizeof(float) * b.size()));
	CK(cudaMalloc(&dc, sizeof(float) * c.size()));
	CK(cudaMemcpy(da, a.data(), sizeof(float) * a.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), sizeof(float) * b.size(),
		      cudaMemcpyHostToDevice));
	/* the arrays of pointers live in device memory, as cuBLAS asks */
	for (int i = 0; i < batch; i++) {
		pa[i] = da + sa * i;
		pb[i] = db + sb * i;
		pc[i] = dc + sc * i;
	}
	CK(cudaMalloc(&dpa, sizeof(float *) * batch));
	CK(cudaMalloc(&dpb, sizeof(float *) * batch));
	CK(cudaMalloc(&dpc, sizeof(float *) * batch));
	CK(cudaMemcpy(dpa, pa.data(), sizeof(float *) * batch,
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dpb, pb.data(), sizeof(float *) * batch,
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dpc, pc.data(), sizeof(float *) * batch,
		      cudaMemcpyHostToDevice));
	CK(cublasSgemmBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, dpa,
			      m, dpb, k, &zero, dpc, m, batch));
	CK(cudaMemcpy(c.data(), dc, sizeof(float) * c.size(),
		      cudaMemcpyDeviceToHost));
	cudaFree(dpa);
	cudaFree(dpb);
	cudaFree(dpc);
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	for (int p = 0; p < batch; p++)
		for (int j = 0; j < n; j++)
			for (int i = 0; i < m; i++) {
				double want = ref(&a[sa * p], 1, m, &b[sb * p],
						  1, k, i, j, k);
				float got = c[sc * p + i + (size_t)j * m];
				float e = (float)fabs(got - want);

				if (!(e <= worst))
					worst = e;
				if (!(e <= 1e-4)) {
					printf("sgemm_batched: FAILS (%d of "
					       "%dx%dx%d: product %d, C[%d,%d] "
					       "is %g, the CPU says %g)\n",
					       batch, m, n, k, p, i, j, got,
					       want);
					return 1;
				}
			}
	printf("sgemm_batched: ok (%d products of %dx%dx%d by pointer arrays, "
	       "all entries, worst error %.2g)\n",
	       batch, m, n, k, worst);
	return 0;
}

/*
 * D = alpha A^T B + beta C through cuBLASLt, as its LtSgemm sample: A is
 * stored k x m and transposed by the descriptor, D apart from C.
 */
static int lt(void)
{
	const char *what = "lt_matmul";
	const int m = 384, n = 256, k = 512;
	std::vector<float> a((size_t)k * m), b((size_t)k * n);
	std::vector<float> c((size_t)m * n), d((size_t)m * n);
	float *da, *db, *dc, *dd, alpha = 1.0f, beta = 0.5f, worst = 0;
	size_t wsize = 4 << 20;
	void *work;
	cublasLtHandle_t lh;
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t la, lb, lc;
	cublasLtMatmulPreference_t pref;
	cublasLtMatmulHeuristicResult_t heur = {};
	cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
	int found = 0;

	fill(a);
	fill(b);
	fill(c);
	CK(cudaMalloc(&da, sizeof(float) * a.size()));
	CK(cudaMalloc(&db, sizeof(float) * b.size()));
	CK(cudaMalloc(&dc, sizeof(float) * c.size()));
	CK(cudaMalloc(&dd, sizeof(float) * d.size()));
	CK(cudaMalloc(&work, wsize));
	CK(cudaMemcpy(da, a.data(), sizeof(float) * a.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), sizeof(float) * b.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(dc, c.data(), sizeof(float) * c.size(),
		      cudaMemcpyHostToDevice));
	CK(cublasLtCreate(&lh));
	CK(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
	CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta,
					  sizeof(ta)));
	CK(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb,
					  sizeof(tb)));
	/* layouts as stored: A k x m, B k x n, C and D m x n */
	CK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, k, m, k));
	CK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
	CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));
	CK(cublasLtMatmulPreferenceCreate(&pref));
	CK(cublasLtMatmulPreferenceSetAttribute(
		pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsize,
		sizeof(wsize)));
	CK(cublasLtMatmulAlgoGetHeuristic(lh, op, la, lb, lc, lc, pref, 1,
					  &heur, &found));
	if (found == 0) {
		printf("lt_matmul: FAILS (no algorithm from "
		       "cublasLtMatmulAlgoGetHeuristic)\n");
		return 1;
	}
	CK(heur.state);
	CK(cublasLtMatmul(lh, op, &alpha, da, la, db, lb, &beta, dc, lc, dd, lc,
			  &heur.algo, work, wsize, 0));
	CK(cudaMemcpy(d.data(), dd, sizeof(float) * d.size(),
		      cudaMemcpyDeviceToHost));
	CK(cublasLtMatmulPreferenceDestroy(pref));
	CK(cublasLtMatrixLayoutDestroy(la));
	CK(cublasLtMatrixLayoutDestroy(lb));
	CK(cublasLtMatrixLayoutDestroy(lc));
	CK(cublasLtMatmulDescDestroy(op));
	CK(cublasLtDestroy(lh));
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	cudaFree(dd);
	cudaFree(work);
	/* op(A)(i, l) = A(l, i) = a[l + i * k] */
	for (int j = 0; j < n; j++)
		for (int i = 0; i < m; i++) {
			double want = alpha * ref(a.data(), k, 1, b.data(), 1,
						  k, i, j, k) +
				      beta * c[i + (size_t)j * m];
			float got = d[i + (size_t)j * m];
			float e = (float)fabs(got - want);

			if (!(e <= worst))
				worst = e;
			if (!(e <= 1e-4)) {
				printf("lt_matmul: FAILS (A^T B + C/2, "
				       "%dx%dx%d: D[%d,%d] is %g, the CPU "
				       "says %g)\n",
				       m, n, k, i, j, got, want);
				return 1;
			}
		}
	printf("lt_matmul: ok (cublasLtMatmul A^T B + C/2, %dx%dx%d, float, "
	       "heuristic's algorithm, workspace %zu of %zu bytes, all "
	       "entries, worst error %.2g)\n",
	       m, n, k, heur.workspaceSize, wsize, worst);
	return 0;
}

int main()
{
	const char *what = "cublas";
	cublasHandle_t h;
	int bad;

	srand(1);
	CK(cublasCreate(&h));
	bad = hgemm(h);
	bad |= strided(h);
	bad |= batched(h);
	CK(cublasDestroy(h));
	bad |= lt();
	return bad;
}
