// SPDX-License-Identifier: MIT
// CUDA's libraries as their documentation starts: a cuRAND generator, a
// cuBLAS handle, a cuFFT plan, each created and destroyed (no kernel:
// handle creation is what a vGPU's driver must carry; their kernels need
// the GPU). Prints one line per library, "LIB: ok" or "LIB: status N",
// and exits 0 when every library it was asked for (argv, default all)
// gave ok.
#include <cstdio>
#include <cstring>
#include <cublas_v2.h>
#include <cufft.h>
#include <curand.h>

static int want(int argc, char **argv, const char *lib)
{
	if (argc < 2)
		return 1;
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], lib))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int bad = 0, rc;

	if (want(argc, argv, "curand")) {
		curandGenerator_t g;

		rc = (int)curandCreateGenerator(&g, CURAND_RNG_PSEUDO_DEFAULT);
		if (rc == 0)
			rc = (int)curandDestroyGenerator(g);
		printf(rc ? "curand: status %d\n" : "curand: ok\n", rc);
		bad |= rc != 0;
	}
	if (want(argc, argv, "cublas")) {
		cublasHandle_t h;

		rc = (int)cublasCreate(&h);
		if (rc == 0)
			rc = (int)cublasDestroy(h);
		printf(rc ? "cublas: status %d\n" : "cublas: ok\n", rc);
		bad |= rc != 0;
	}
	if (want(argc, argv, "cufft")) {
		cufftHandle plan;

		rc = (int)cufftPlan1d(&plan, 64, CUFFT_C2C, 1);
		if (rc == 0)
			rc = (int)cufftDestroy(plan);
		printf(rc ? "cufft: status %d\n" : "cufft: ok\n", rc);
		bad |= rc != 0;
	}
	return bad;
}
