// SPDX-License-Identifier: MIT
/*
 * templates_rt [N]: C++ kernels. A templated kernel (y = a * x + y) is
 * instantiated for float and int, and a templated transform kernel takes
 * a functor template (Affine<T>: v -> a * v + b) by value, for int and
 * float. The values are small enough that every float result is exact,
 * so all are compared exactly with the CPU.
 */
#include "rt_check.h"

template <typename T> __global__ void axpyT(T a, const T *x, T *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		y[i] = a * x[i] + y[i];
}

template <typename T> struct Affine {
	T a, b;
	__host__ __device__ T operator()(T v) const
	{
		return a * v + b;
	}
};

template <typename T, typename F>
__global__ void transformT(const T *in, T *out, int n, F f)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		out[i] = f(in[i]);
}

/* One type through both kernels; returns the number of wrong values. */
template <typename T> static int run(int n, T a, Affine<T> f, const char *name)
{
	size_t bytes = (size_t)n * sizeof(T);
	T *x = (T *)malloc(bytes), *y = (T *)malloc(bytes);
	T *out = (T *)malloc(bytes), *dx, *dy, *dout;
	int bad = 0;

	if (!x || !y || !out) {
		fprintf(stderr, "templates_rt: out of host memory\n");
		exit(1);
	}
	for (int i = 0; i < n; i++) {
		x[i] = (T)(i % 100);
		y[i] = (T)(i % 37);
	}
	CHECK(cudaMalloc(&dx, bytes));
	CHECK(cudaMalloc(&dy, bytes));
	CHECK(cudaMalloc(&dout, bytes));
	CHECK(cudaMemcpy(dx, x, bytes, cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(dy, y, bytes, cudaMemcpyHostToDevice));
	axpyT<T><<<(n + 255) / 256, 256>>>(a, dx, dy, n);
	CHECK_LAUNCH();
	transformT<<<(n + 127) / 128, 128>>>(dx, dout, n, f);
	CHECK_LAUNCH();
	CHECK(cudaMemcpy(y, dy, bytes, cudaMemcpyDeviceToHost));
	CHECK(cudaMemcpy(out, dout, bytes, cudaMemcpyDeviceToHost));
	for (int i = 0; i < n; i++) {
		T want_y = a * (T)(i % 100) + (T)(i % 37);
		T want_out = f((T)(i % 100));

		if ((y[i] != want_y || out[i] != want_out) && bad++ < 5)
			fprintf(stderr,
				"%s [%d]: axpy %g (expected %g), transform %g "
				"(expected %g)\n",
				name, i, (double)y[i], (double)want_y,
				(double)out[i], (double)want_out);
	}
	CHECK(cudaFree(dx));
	CHECK(cudaFree(dy));
	CHECK(cudaFree(dout));
	free(x);
	free(y);
	free(out);
	return bad;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100000;
	int bad;

	if (n <= 0) {
		fprintf(stderr, "usage: templates_rt [N > 0]\n");
		return 2;
	}
	bad = run<float>(n, 0.5f, Affine<float>{2.0f, -3.5f}, "float");
	bad += run<int>(n, -3, Affine<int>{7, 11}, "int");
	if (bad) {
		printf("templates_rt: n=%d FAILED (%d wrong)\n", n, bad);
		return 1;
	}
	printf("templates_rt: n=%d OK (axpyT<float>, axpyT<int>, "
	       "transformT<float, Affine<float>>, transformT<int, "
	       "Affine<int>>)\n",
	       n);
	return 0;
}
