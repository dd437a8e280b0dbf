// SPDX-License-Identifier: MIT
// CUDA's libraries computing, the way their documentation shows: a cuBLAS
// SGEMM checked against the CPU, a cuFFT forward and inverse transform
// that must give back its input (times n), and cuRAND uniform numbers
// whose mean must be near 1/2. Their kernels need a GPU (the simulator has
// no twins of them): scripts/nvrt-check.sh runs this on the GPU machine.
// Prints one line per library, "LIB: ok (...)" or "LIB: FAILS (...)", and
// exits 0 when all three are ok.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cufft.h>
#include <curand.h>

#define CK(x)                                                                  \
	do {                                                                   \
		int rc_ = (int)(x);                                            \
		if (rc_) {                                                     \
			printf("%s: FAILS (%s gave %d; the runtime's last "    \
			       "error: %s)\n",                                 \
			       lib, #x, rc_,                                   \
			       cudaGetErrorName(cudaGetLastError()));          \
			return 1;                                              \
		}                                                              \
	} while (0)

static int sgemm(void)
{
	const char *lib = "cublas";
	const int n = 512;
	std::vector<float> a(n * n), b(n * n), c(n * n);
	float *da, *db, *dc, one = 1.0f, zero = 0.0f, worst = 0;
	cublasHandle_t h;

	srand(1);
	for (int i = 0; i < n * n; i++) {
		a[i] = (float)(rand() % 17) / 16 - 0.5f;
		b[i] = (float)(rand() % 13) / 12 - 0.5f;
	}
	CK(cudaMalloc(&da, sizeof(float) * n * n));
	CK(cudaMalloc(&db, sizeof(float) * n * n));
	CK(cudaMalloc(&dc, sizeof(float) * n * n));
	CK(cublasCreate(&h));
	CK(cublasSetMatrix(n, n, sizeof(float), a.data(), n, da, n));
	CK(cublasSetMatrix(n, n, sizeof(float), b.data(), n, db, n));
	CK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, da, n, db,
		       n, &zero, dc, n));
	CK(cublasGetMatrix(n, n, sizeof(float), dc, n, c.data(), n));
	CK(cublasDestroy(h));
	/* column-major, as cuBLAS: c[i + j*n] = sum_k a[i + k*n] b[k + j*n] */
	for (int j = 0; j < n; j += 7)
		for (int i = 0; i < n; i += 5) {
			double s = 0;

			for (int k = 0; k < n; k++)
				s += (double)a[i + k * n] * b[k + j * n];
			worst = fmaxf(worst, (float)fabs(s - c[i + j * n]));
		}
	cudaFree(da);
	cudaFree(db);
	cudaFree(dc);
	/* TF32 is off by default for SGEMM: float accuracy is expected */
	if (worst > 1e-2f) {
		printf("cublas: FAILS (SGEMM %d: worst error %g)\n", n, worst);
		return 1;
	}
	printf("cublas: ok (SGEMM %d, worst error %.2g)\n", n, worst);
	return 0;
}

static int fft(void)
{
	const char *lib = "cufft";
	const int n = 4096;
	std::vector<cufftComplex> x(n), y(n);
	cufftComplex *d;
	cufftHandle plan;
	float worst = 0;

	for (int i = 0; i < n; i++) {
		x[i].x = sinf(0.01f * i);
		x[i].y = cosf(0.03f * i);
	}
	CK(cudaMalloc(&d, sizeof(cufftComplex) * n));
	CK(cudaMemcpy(d, x.data(), sizeof(cufftComplex) * n,
		      cudaMemcpyHostToDevice));
	CK(cufftPlan1d(&plan, n, CUFFT_C2C, 1));
	CK(cufftExecC2C(plan, d, d, CUFFT_FORWARD));
	CK(cufftExecC2C(plan, d, d, CUFFT_INVERSE));
	CK(cudaMemcpy(y.data(), d, sizeof(cufftComplex) * n,
		      cudaMemcpyDeviceToHost));
	CK(cufftDestroy(plan));
	cudaFree(d);
	for (int i = 0; i < n; i++) /* the inverse is unnormalised */
		worst = fmaxf(worst, fmaxf(fabsf(y[i].x / n - x[i].x),
					   fabsf(y[i].y / n - x[i].y)));
	if (worst > 1e-4f) {
		printf("cufft: FAILS (C2C %d there and back: worst error %g)\n",
		       n, worst);
		return 1;
	}
	printf("cufft: ok (C2C %d there and back, worst error %.2g)\n", n,
	       worst);
	return 0;
}

static int rng(void)
{
	const char *lib = "curand";
	const size_t n = 1 << 20;
	std::vector<float> h(n);
	float *d;
	curandGenerator_t g;
	double mean = 0;

	CK(cudaMalloc(&d, sizeof(float) * n));
	CK(curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT));
	CK(curandSetPseudoRandomGeneratorSeed(g, 1234ULL));
	CK(curandGenerateUniform(g, d, n));
	CK(cudaMemcpy(h.data(), d, sizeof(float) * n, cudaMemcpyDeviceToHost));
	CK(curandDestroyGenerator(g));
	cudaFree(d);
	for (size_t i = 0; i < n; i++) {
		if (!(h[i] > 0.0f && h[i] <= 1.0f)) {
			printf("curand: FAILS (number %zu is %g, not in (0, 1])\n",
			       i, h[i]);
			return 1;
		}
		mean += h[i];
	}
	mean /= n;
	/* the mean of 2^20 uniforms: standard deviation 0.00028 */
	if (fabs(mean - 0.5) > 0.002) {
		printf("curand: FAILS (mean of %zu uniforms is %f)\n", n, mean);
		return 1;
	}
	printf("curand: ok (%zu uniforms, mean %.4f)\n", n, mean);
	return 0;
}

int main()
{
	int bad = sgemm();

	bad |= fft();
	bad |= rng();
	return bad;
}
