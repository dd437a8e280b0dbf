// SPDX-License-Identifier: MIT
// What a user of CUDA's libraries writes first: a cuBLAS handle and one
// SGEMM, a cuFFT plan and one transform, a cuRAND generator and numbers,
// each as the libraries' documentation shows (issue 17's inventory runs
// it through the tracing driver). Prints one line per library.
#include <cstdio>
#include <cublas_v2.h>
#include <cufft.h>
#include <curand.h>

#define OK(what, call)                                                         \
	do {                                                                   \
		int rc_ = (int)(call);                                         \
		if (rc_) {                                                     \
			printf("%s: error %d\n", what, rc_);                   \
			return 1;                                              \
		}                                                              \
	} while (0)

int main()
{
	const int n = 64;
	float *a, *b, *c, one = 1.0f, zero = 0.0f;
	cufftComplex *f;
	cublasHandle_t h;
	cufftHandle plan;
	curandGenerator_t g;

	OK("cudaMalloc", cudaMalloc(&a, n * n * sizeof(float)));
	OK("cudaMalloc", cudaMalloc(&b, n * n * sizeof(float)));
	OK("cudaMalloc", cudaMalloc(&c, n * n * sizeof(float)));
	OK("cudaMalloc", cudaMalloc(&f, n * sizeof(cufftComplex)));
	OK("curandCreateGenerator",
	   curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT));
	OK("curandGenerateUniform", curandGenerateUniform(g, a, n * n));
	OK("curandGenerateUniform", curandGenerateUniform(g, b, n * n));
	printf("curand: ok\n");
	OK("cublasCreate", cublasCreate(&h));
	OK("cublasSgemm", cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n,
				      &one, a, n, b, n, &zero, c, n));
	OK("cudaDeviceSynchronize", cudaDeviceSynchronize());
	printf("cublas: ok\n");
	OK("cufftPlan1d", cufftPlan1d(&plan, n, CUFFT_C2C, 1));
	OK("cufftExecC2C", cufftExecC2C(plan, f, f, CUFFT_FORWARD));
	OK("cudaDeviceSynchronize", cudaDeviceSynchronize());
	printf("cufft: ok\n");
	cufftDestroy(plan);
	cublasDestroy(h);
	curandDestroyGenerator(g);
	return 0;
}
