// SPDX-License-Identifier: MIT
// cuSOLVER's dense solvers, the way its documentation shows: a Cholesky
// factorisation and solve of a symmetric positive definite float system
// (n = 256: cusolverDnSpotrf_bufferSize, cusolverDnSpotrf,
// cusolverDnSpotrs) and an LU factorisation with pivoting and solve of a
// random double system (n = 300: cusolverDnDgetrf_bufferSize,
// cusolverDnDgetrf, cusolverDnDgetrs). Each must report devInfo 0 and leave
// a small residual ||Ax - b|| relative to ||A|| ||x|| + ||b||, computed on
// the CPU in double. Its kernels need a GPU (the simulator has no twins of
// them): scripts/nvrt-check.sh runs this on the GPU machine. Prints
// "potrf: ok (...)" or "potrf: FAILS (...)", the same for getrf, and exits
// 0 when both are ok.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cusolverDn.h>

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

/*
 * ||Ax - b||_inf / (||A||_inf ||x||_inf + ||b||_inf), A column-major n x n,
 * in double whatever the solver's type: a backward error, small for a
 * stable solver however ill-conditioned A is.
 */
template <typename T>
static double residual(int n, const T *a, const T *x, const T *b)
{
	double r = 0, an = 0, xn = 0, bn = 0;

	for (int i = 0; i < n; i++) {
		double s = 0, row = 0;

		for (int j = 0; j < n; j++) {
			s += (double)a[i + (size_t)j * n] * x[j];
			row += fabs((double)a[i + (size_t)j * n]);
		}
		r = fmax(r, fabs(s - b[i]));
		an = fmax(an, row);
		xn = fmax(xn, fabs((double)x[i]));
		bn = fmax(bn, fabs((double)b[i]));
	}
	return r / (an * xn + bn);
}

static int potrf(cusolverDnHandle_t h)
{
	const char *what = "potrf";
	const int n = 256;
	std::vector<float> m((size_t)n * n), a((size_t)n * n), b(n), x(n);
	std::vector<float> want(n);
	float *da, *db, *work;
	int *dinfo, lwork = 0, info[2];
	double res, xerr = 0, xmax = 0;

	/* A = M M^T + n I: symmetric, positive definite, well conditioned */
	for (size_t i = 0; i < m.size(); i++)
		m[i] = (float)rand() / RAND_MAX - 0.5f;
	for (int j = 0; j < n; j++)
		for (int i = 0; i < n; i++) {
			double s = i == j ? n : 0;

			for (int k = 0; k < n; k++)
				s += (double)m[i + (size_t)k * n] *
				     m[j + (size_t)k * n];
			a[i + (size_t)j * n] = (float)s;
		}
	for (int i = 0; i < n; i++)
		want[i] = (float)rand() / RAND_MAX - 0.5f;
	for (int i = 0; i < n; i++) {
		double s = 0;

		for (int j = 0; j < n; j++)
			s += (double)a[i + (size_t)j * n] * want[j];
		b[i] = (float)s;
	}
	CK(cudaMalloc(&da, sizeof(float) * a.size()));
	CK(cudaMalloc(&db, sizeof(float) * n));
	CK(cudaMalloc(&dinfo, sizeof(int) * 2));
	CK(cudaMemcpy(da, a.data(), sizeof(float) * a.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
	CK(cudaMemset(dinfo, 0xff, sizeof(int) * 2)); /* -1 until written */
	CK(cusolverDnSpotrf_bufferSize(h, CUBLAS_FILL_MODE_LOWER, n, da, n,
				       &lwork));
	CK(cudaMalloc(&work, sizeof(float) * (lwork > 0 ? lwork : 1)));
	CK(cusolverDnSpotrf(h, CUBLAS_FILL_MODE_LOWER, n, da, n, work, lwork,
			    dinfo));
	CK(cusolverDnSpotrs(h, CUBLAS_FILL_MODE_LOWER, n, 1, da, n, db, n,
			    dinfo + 1));
	CK(cudaMemcpy(info, dinfo, sizeof(int) * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(x.data(), db, sizeof(float) * n, cudaMemcpyDeviceToHost));
	cudaFree(da);
	cudaFree(db);
	cudaFree(dinfo);
	cudaFree(work);
	if (info[0] || info[1]) {
		printf("potrf: FAILS (n %d: devInfo %d after potrf, %d after "
		       "potrs)\n",
		       n, info[0], info[1]);
		return 1;
	}
	res = residual(n, a.data(), x.data(), b.data());
	for (int i = 0; i < n; i++) {
		xerr = fmax(xerr, fabs((double)x[i] - want[i]));
		xmax = fmax(xmax, fabs((double)want[i]));
	}
	/* float: a few units of 6e-8 expected; the answer too (cond ~ 1) */
	if (!(res < 1e-5) || !(xerr / xmax < 1e-4)) {
		printf("potrf: FAILS (Cholesky solve, float, n %d: relative "
		       "residual %g, error in x %g)\n",
		       n, res, xerr / xmax);
		return 1;
	}
	printf("potrf: ok (Cholesky solve, float, n %d, workspace %d floats: "
	       "devInfo 0, relative residual %.2g, error in x %.2g)\n",
	       n, lwork, res, xerr / xmax);
	return 0;
}

static int getrf(cusolverDnHandle_t h)
{
	const char *what = "getrf";
	const int n = 300;
	std::vector<double> a((size_t)n * n), b(n), x(n);
	double *da, *db, *work, res;
	int *dipiv, *dinfo, lwork = 0, info[2];

	for (size_t i = 0; i < a.size(); i++)
		a[i] = (double)rand() / RAND_MAX - 0.5;
	for (int i = 0; i < n; i++)
		b[i] = (double)rand() / RAND_MAX - 0.5;
	CK(cudaMalloc(&da, sizeof(double) * a.size()));
	CK(cudaMalloc(&db, sizeof(double) * n));
	CK(cudaMalloc(&dipiv, sizeof(int) * n));
	CK(cudaMalloc(&dinfo, sizeof(int) * 2));
	CK(cudaMemcpy(da, a.data(), sizeof(double) * a.size(),
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy(db, b.data(), sizeof(double) * n,
		      cudaMemcpyHostToDevice));
	CK(cudaMemset(dinfo, 0xff, sizeof(int) * 2));
	CK(cusolverDnDgetrf_bufferSize(h, n, n, da, n, &lwork));
	CK(cudaMalloc(&work, sizeof(double) * (lwork > 0 ? lwork : 1)));
	CK(cusolverDnDgetrf(h, n, n, da, n, work, dipiv, dinfo));
	CK(cusolverDnDgetrs(h, CUBLAS_OP_N, n, 1, da, n, dipiv, db, n,
			    dinfo + 1));
	CK(cudaMemcpy(info, dinfo, sizeof(int) * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(x.data(), db, sizeof(double) * n,
		      cudaMemcpyDeviceToHost));
	cudaFree(da);
	cudaFree(db);
	cudaFree(dipiv);
	cudaFree(dinfo);
	cudaFree(work);
	if (info[0] || info[1]) {
		printf("getrf: FAILS (n %d: devInfo %d after getrf, %d after "
		       "getrs)\n",
		       n, info[0], info[1]);
		return 1;
	}
	res = residual(n, a.data(), x.data(), b.data());
	/* double: partial pivoting's backward error, ~1e-16 times a little */
	if (!(res < 1e-11)) {
		printf("getrf: FAILS (LU solve, double, n %d: relative "
		       "residual %g)\n",
		       n, res);
		return 1;
	}
	printf("getrf: ok (LU solve, double, n %d, workspace %d doubles: "
	       "devInfo 0, relative residual %.2g)\n",
	       n, lwork, res);
	return 0;
}

int main()
{
	const char *what = "cusolver";
	cusolverDnHandle_t h;
	int bad;

	srand(1);
	CK(cusolverDnCreate(&h));
	bad = potrf(h);
	bad |= getrf(h);
	CK(cusolverDnDestroy(h));
	return bad;
}
