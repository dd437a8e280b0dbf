// SPDX-License-Identifier: MIT
// cuSPARSE's generic API, the way its documentation shows: a random sparse
// matrix (2000 x 2000, about 1% nonzeros, CSR, float) times a vector
// (cusparseSpMV) and times a dense matrix of 64 columns (cusparseSpMM),
// each with the buffer size asked first and a buffer of that size, and
// each checked against the same product on the CPU. Its kernels need a GPU
// (the simulator has no twins of them): scripts/nvrt-check.sh runs this
// on the GPU machine. The values are small multiples of powers of two, so
// the float sums are exact and any difference is a wrong answer, not
// rounding. Prints "spmv: ok (...)" or "spmv: FAILS (...)", the same for
// spmm, and exits 0 when both are ok.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cusparse.h>

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

/* a sparse matrix in CSR, on the host */
struct csr {
	int n, nnz;
	std::vector<int> ptr, col;
	std::vector<float> val;
};

/* n x n, each entry nonzero with probability 1/100, values +-k/8 */
static void csr_random(struct csr *a, int n)
{
	a->n = n;
	a->ptr.assign(1, 0);
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < n; j++) {
			if (rand() % 100)
				continue;
			a->col.push_back(j);
			a->val.push_back((float)(1 + rand() % 8) / 8 *
					 (rand() % 2 ? 1 : -1));
		}
		a->ptr.push_back((int)a->col.size());
	}
	a->nnz = (int)a->col.size();
}

/* the matrix on the device, and its descriptor */
struct csr_dev {
	int *ptr, *col;
	float *val;
	cusparseSpMatDescr_t desc;
};

static int csr_upload(const char *what, const struct csr *a, struct csr_dev *d)
{
	CK(cudaMalloc(&d->ptr, sizeof(int) * (a->n + 1)));
	CK(cudaMalloc(&d->col, sizeof(int) * a->nnz));
	CK(cudaMalloc(&d->val, sizeof(float) * a->nnz));
	CK(cudaMemcpy(d->ptr, a->ptr.data(), sizeof(int) * (a->n + 1),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d->col, a->col.data(), sizeof(int) * a->nnz,
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d->val, a->val.data(), sizeof(float) * a->nnz,
		      cudaMemcpyHostToDevice));
	CK(cusparseCreateCsr(&d->desc, a->n, a->n, a->nnz, d->ptr, d->col,
			     d->val, CUSPARSE_INDEX_32I, CUSPARSE_INDEX_32I,
			     CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
	return 0;
}

static void csr_free(struct csr_dev *d)
{
	cusparseDestroySpMat(d->desc);
	cudaFree(d->ptr);
	cudaFree(d->col);
	cudaFree(d->val);
}

/*
 * Row i of A times column j of B (ld rows each), in double, and the sum of
 * the terms' magnitudes: what an error is measured against.
 */
static double row_times(const struct csr *a, int i, const float *b, double *mag)
{
	double s = 0;

	*mag = 0;
	for (int p = a->ptr[i]; p < a->ptr[i + 1]; p++) {
		double t = (double)a->val[p] * b[a->col[p]];

		s += t;
		*mag += fabs(t);
	}
	return s;
}

/* |got - want| relative to the terms' magnitude (0 when both are 0) */
static double rel_err(double got, double want, double mag)
{
	double e = fabs(got - want);

	return e == 0 ? 0 : e / (mag > 0 ? mag : 1e-30);
}

static int spmv(cusparseHandle_t h, const struct csr *a)
{
	const char *what = "spmv";
	const int n = a->n;
	std::vector<float> x(n), y(n);
	struct csr_dev d;
	float *dx, *dy, one = 1.0f, zero = 0.0f;
	cusparseDnVecDescr_t vx, vy;
	size_t size = 0;
	void *buf = NULL;
	double worst = 0;

	for (int i = 0; i < n; i++)
		x[i] = (float)(rand() % 17 - 8) / 16;
	if (csr_upload(what, a, &d))
		return 1;
	CK(cudaMalloc(&dx, sizeof(float) * n));
	CK(cudaMalloc(&dy, sizeof(float) * n));
	CK(cudaMemcpy(dx, x.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
	CK(cudaMemset(dy, 0, sizeof(float) * n));
	CK(cusparseCreateDnVec(&vx, n, dx, CUDA_R_32F));
	CK(cusparseCreateDnVec(&vy, n, dy, CUDA_R_32F));
	CK(cusparseSpMV_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
				   d.desc, vx, &zero, vy, CUDA_R_32F,
				   CUSPARSE_SPMV_ALG_DEFAULT, &size));
	if (size)
		CK(cudaMalloc(&buf, size));
	CK(cusparseSpMV(h, CUSPARSE_OPERATION_NON_TRANSPOSE, &one, d.desc, vx,
			&zero, vy, CUDA_R_32F, CUSPARSE_SPMV_ALG_DEFAULT, buf));
	CK(cudaMemcpy(y.data(), dy, sizeof(float) * n, cudaMemcpyDeviceToHost));
	cusparseDestroyDnVec(vx);
	cusparseDestroyDnVec(vy);
	csr_free(&d);
	cudaFree(dx);
	cudaFree(dy);
	cudaFree(buf);
	for (int i = 0; i < n; i++) {
		double mag, want = row_times(a, i, x.data(), &mag);
		double e = rel_err(y[i], want, mag);

		if (!(e <= worst)) /* NaN too */
			worst = e;
		if (!(e <= 1e-5)) {
			printf("spmv: FAILS (%dx%d, %d nonzeros: y[%d] is %g, "
			       "the CPU says %g)\n",
			       n, n, a->nnz, i, y[i], want);
			return 1;
		}
	}
	printf("spmv: ok (%dx%d, %d nonzeros, buffer %zu bytes, worst "
	       "relative error %.2g)\n",
	       n, n, a->nnz, size, worst);
	return 0;
}

static int spmm(cusparseHandle_t h, const struct csr *a)
{
	const char *what = "spmm";
	const int n = a->n, cols = 64;
	std::vector<float> b((size_t)n * cols), c((size_t)n * cols);
	struct csr_dev d;
	float *db, *dc, one = 1.0f, zero = 0.0f;
	cusparseDnMatDescr_t mb, mc;
	size_t size = 0;
	void *buf = NULL;
	double worst = 0;

	for (size_t i = 0; i < b.size(); i++)
		b[i] = (float)(rand() % 17 - 8) / 16;
	if (csr_upload(what, a, &d))
		return 1;
	CK(cudaMalloc(&db, sizeof(float) * b.size()));
	CK(cudaMalloc(&dc, sizeof(float) * c.size()));
	CK(cudaMemcpy(db, b.data(), sizeof(float) * b.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemset(dc, 0, sizeof(float) * c.size()));
	/* column-major, leading dimension n */
	CK(cusparseCreateDnMat(&mb, n, cols, n, db, CUDA_R_32F,
			       CUSPARSE_ORDER_COL));
	CK(cusparseCreateDnMat(&mc, n, cols, n, dc, CUDA_R_32F,
			       CUSPARSE_ORDER_COL));
	CK(cusparseSpMM_bufferSize(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
				   CUSPARSE_OPERATION_NON_TRANSPOSE, &one,
				   d.desc, mb, &zero, mc, CUDA_R_32F,
				   CUSPARSE_SPMM_ALG_DEFAULT, &size));
	if (size)
		CK(cudaMalloc(&buf, size));
	CK(cusparseSpMM(h, CUSPARSE_OPERATION_NON_TRANSPOSE,
			CUSPARSE_OPERATION_NON_TRANSPOSE, &one, d.desc, mb,
			&zero, mc, CUDA_R_32F, CUSPARSE_SPMM_ALG_DEFAULT, buf));
	CK(cudaMemcpy(c.data(), dc, sizeof(float) * c.size(),
		      cudaMemcpyDeviceToHost));
	cusparseDestroyDnMat(mb);
	cusparseDestroyDnMat(mc);
	csr_free(&d);
	cudaFree(db);
	cudaFree(dc);
	cudaFree(buf);
	for (int j = 0; j < cols; j++)
		for (int i = 0; i < n; i++) {
			double mag,
				want = row_times(a, i, &b[(size_t)j * n], &mag);
			float got = c[i + (size_t)j * n];
			double e = rel_err(got, want, mag);

			if (!(e <= worst))
				worst = e;
			if (!(e <= 1e-5)) {
				printf("spmm: FAILS (%dx%d times %dx%d: "
				       "C[%d,%d] is %g, the CPU says %g)\n",
				       n, n, n, cols, i, j, got, want);
				return 1;
			}
		}
	printf("spmm: ok (%dx%d, %d nonzeros, times %dx%d, buffer %zu bytes, "
	       "worst relative error %.2g)\n",
	       n, n, a->nnz, n, cols, size, worst);
	return 0;
}

int main()
{
	const char *what = "cusparse";
	cusparseHandle_t h;
	struct csr a;
	int bad;

	srand(1);
	csr_random(&a, 2000);
	CK(cusparseCreate(&h));
	bad = spmv(h, &a);
	bad |= spmm(h, &a);
	CK(cusparseDestroy(h));
	return bad;
}
