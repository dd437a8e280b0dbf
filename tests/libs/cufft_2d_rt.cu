// SPDX-License-Identifier: MIT
// More of cuFFT than libs_compute.cu's 1D C2C, the way its documentation
// shows: a 2D complex transform (256 x 256, cufftPlan2d) forward and back,
// a 2D real-to-complex transform (256 x 192) and its complex-to-real
// inverse, and a batch of 1D real-to-complex transforms (8 of 1000, a
// length that is not a power of two) from cufftPlanMany. The forward
// transforms are checked at a few bins against a DFT computed on the CPU
// in double, and the round trips must give back their input times the
// number of points (cuFFT's inverse is unnormalised). Their kernels need a
// GPU (the simulator has no twins of them): scripts/nvrt-check.sh runs
// this on the GPU machine. Prints one line per transform, "NAME: ok (...)"
// or "NAME: FAILS (...)", and exits 0 when all three are ok.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <cuda_runtime.h>
#include <cufft.h>

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
 * A forward float transform's bin may be off by rounding: allowed 2e-6 of
 * the sum of the input's magnitudes (a bound on any bin), some 100 times
 * what float's rounding gives at these sizes.
 */
#define BIN_TOL 2e-6

static float rnd(void)
{
	return (float)rand() / RAND_MAX - 0.5f;
}

/*
 * Bin (k1, k2) of the 2D DFT of x (n1 x n2, row-major: the last dimension
 * contiguous, as cuFFT lays it out), in double, with cuFFT's forward sign
 * (-1). im may be NULL for a real input. The phase is reduced modulo n so
 * that it stays exact.
 */
static void dft2(const float *re, const float *im, int stride, int n1, int n2,
		 int k1, int k2, double *out_re, double *out_im)
{
	double sr = 0, si = 0;

	for (int i1 = 0; i1 < n1; i1++)
		for (int i2 = 0; i2 < n2; i2++) {
			double ph = -2 * M_PI *
				    ((double)((long)k1 * i1 % n1) / n1 +
				     (double)((long)k2 * i2 % n2) / n2);
			size_t o = ((size_t)i1 * n2 + i2) * stride;
			double xr = re[o], xi = im ? im[o] : 0;

			sr += xr * cos(ph) - xi * sin(ph);
			si += xr * sin(ph) + xi * cos(ph);
		}
	*out_re = sr;
	*out_im = si;
}

static int c2c_2d(void)
{
	const char *what = "c2c_2d";
	const int n1 = 256, n2 = 256, n = n1 * n2;
	const int bins[][2] = {{0, 0},	 {1, 0},     {0, 1},
			       {3, 250}, {128, 128}, {255, 17}};
	std::vector<cufftComplex> x(n), f(n), y(n);
	cufftComplex *d, *dt;
	cufftHandle plan;
	double l1 = 0, worst_bin = 0;
	float worst = 0;

	for (int i = 0; i < n; i++) {
		x[i].x = rnd();
		x[i].y = rnd();
		l1 += fabs(x[i].x) + fabs(x[i].y);
	}
	CK(cudaMalloc(&d, sizeof(cufftComplex) * n));
	CK(cudaMalloc(&dt, sizeof(cufftComplex) * n));
	CK(cudaMemcpy(d, x.data(), sizeof(cufftComplex) * n,
		      cudaMemcpyHostToDevice));
	CK(cufftPlan2d(&plan, n1, n2, CUFFT_C2C));
	CK(cufftExecC2C(plan, d, dt, CUFFT_FORWARD));
	CK(cudaMemcpy(f.data(), dt, sizeof(cufftComplex) * n,
		      cudaMemcpyDeviceToHost));
	CK(cufftExecC2C(plan, dt, dt, CUFFT_INVERSE)); /* in place */
	CK(cudaMemcpy(y.data(), dt, sizeof(cufftComplex) * n,
		      cudaMemcpyDeviceToHost));
	CK(cufftDestroy(plan));
	cudaFree(d);
	cudaFree(dt);
	for (size_t b = 0; b < sizeof(bins) / sizeof(bins[0]); b++) {
		int k1 = bins[b][0], k2 = bins[b][1];
		const cufftComplex *g = &f[(size_t)k1 * n2 + k2];
		double wr, wi, e;

		dft2(&x[0].x, &x[0].y, 2, n1, n2, k1, k2, &wr, &wi);
		e = fmax(fabs(g->x - wr), fabs(g->y - wi));
		if (!(e <= worst_bin))
			worst_bin = e;
		if (!(e <= BIN_TOL * l1)) {
			printf("c2c_2d: FAILS (%dx%d forward: bin (%d,%d) is "
			       "(%g,%g), the CPU says (%g,%g))\n",
			       n1, n2, k1, k2, g->x, g->y, wr, wi);
			return 1;
		}
	}
	for (int i = 0; i < n; i++) /* the inverse is unnormalised */
		worst = fmaxf(worst, fmaxf(fabsf(y[i].x / n - x[i].x),
					   fabsf(y[i].y / n - x[i].y)));
	if (!(worst <= 1e-4f)) {
		printf("c2c_2d: FAILS (%dx%d there and back: worst error %g)\n",
		       n1, n2, worst);
		return 1;
	}
	printf("c2c_2d: ok (%dx%d: %zu bins as the CPU's DFT, worst %.2g; "
	       "there and back, worst error %.2g)\n",
	       n1, n2, sizeof(bins) / sizeof(bins[0]), worst_bin, worst);
	return 0;
}

static int r2c_2d(void)
{
	const char *what = "r2c_2d";
	/* the complex side is n1 x (n2/2 + 1): only half the last dimension */
	const int n1 = 256, n2 = 192, n = n1 * n2, h2 = n2 / 2 + 1;
	const int bins[][2] = {{0, 0},	{1, 0},	   {0, 1},
			       {5, 96}, {200, 33}, {255, 95}};
	std::vector<float> x(n), y(n);
	std::vector<cufftComplex> f((size_t)n1 * h2);
	float *dx, *dy, worst = 0;
	cufftComplex *df;
	cufftHandle fwd, inv;
	double l1 = 0, worst_bin = 0;

	for (int i = 0; i < n; i++) {
		x[i] = rnd();
		l1 += fabs(x[i]);
	}
	CK(cudaMalloc(&dx, sizeof(float) * n));
	CK(cudaMalloc(&dy, sizeof(float) * n));
	CK(cudaMalloc(&df, sizeof(cufftComplex) * f.size()));
	CK(cudaMemcpy(dx, x.data(), sizeof(float) * n, cudaMemcpyHostToDevice));
	CK(cufftPlan2d(&fwd, n1, n2, CUFFT_R2C));
	CK(cufftPlan2d(&inv, n1, n2, CUFFT_C2R));
	CK(cufftExecR2C(fwd, dx, df));
	CK(cudaMemcpy(f.data(), df, sizeof(cufftComplex) * f.size(),
		      cudaMemcpyDeviceToHost));
	CK(cufftExecC2R(inv, df, dy)); /* may overwrite df, as documented */
	CK(cudaMemcpy(y.data(), dy, sizeof(float) * n, cudaMemcpyDeviceToHost));
	CK(cufftDestroy(fwd));
	CK(cufftDestroy(inv));
	cudaFree(dx);
	cudaFree(dy);
	cudaFree(df);
	for (size_t b = 0; b < sizeof(bins) / sizeof(bins[0]); b++) {
		int k1 = bins[b][0], k2 = bins[b][1];
		const cufftComplex *g = &f[(size_t)k1 * h2 + k2];
		double wr, wi, e;

		dft2(x.data(), NULL, 1, n1, n2, k1, k2, &wr, &wi);
		e = fmax(fabs(g->x - wr), fabs(g->y - wi));
		if (!(e <= worst_bin))
			worst_bin = e;
		if (!(e <= BIN_TOL * l1)) {
			printf("r2c_2d: FAILS (%dx%d R2C: bin (%d,%d) is "
			       "(%g,%g), the CPU says (%g,%g))\n",
			       n1, n2, k1, k2, g->x, g->y, wr, wi);
			return 1;
		}
	}
	for (int i = 0; i < n; i++)
		worst = fmaxf(worst, fabsf(y[i] / n - x[i]));
	if (!(worst <= 1e-4f)) {
		printf("r2c_2d: FAILS (%dx%d R2C then C2R: worst error %g)\n",
		       n1, n2, worst);
		return 1;
	}
	printf("r2c_2d: ok (%dx%d: %zu bins as the CPU's DFT, worst %.2g; "
	       "R2C then C2R, worst error %.2g)\n",
	       n1, n2, sizeof(bins) / sizeof(bins[0]), worst_bin, worst);
	return 0;
}

static int r2c_many(void)
{
	const char *what = "r2c_many";
	const int len = 1000, batch = 8, h = len / 2 + 1;
	const int bins[] = {0, 1, 7, 250, 333, 499, 500};
	int dims[1] = {len}, inembed[1] = {len}, onembed[1] = {h};
	std::vector<float> x((size_t)len * batch);
	std::vector<cufftComplex> f((size_t)h * batch);
	float *dx;
	cufftComplex *df;
	cufftHandle plan;
	double worst_bin = 0;

	for (size_t i = 0; i < x.size(); i++)
		x[i] = rnd();
	CK(cudaMalloc(&dx, sizeof(float) * x.size()));
	CK(cudaMalloc(&df, sizeof(cufftComplex) * f.size()));
	CK(cudaMemcpy(dx, x.data(), sizeof(float) * x.size(),
		      cudaMemcpyHostToDevice));
	/* signal b at x[b * len], its spectrum at f[b * h] */
	CK(cufftPlanMany(&plan, 1, dims, inembed, 1, len, onembed, 1, h,
			 CUFFT_R2C, batch));
	CK(cufftExecR2C(plan, dx, df));
	CK(cudaMemcpy(f.data(), df, sizeof(cufftComplex) * f.size(),
		      cudaMemcpyDeviceToHost));
	CK(cufftDestroy(plan));
	cudaFree(dx);
	cudaFree(df);
	for (int b = 0; b < batch; b++) {
		const float *s = &x[(size_t)b * len];
		double l1 = 0;

		for (int i = 0; i < len; i++)
			l1 += fabs(s[i]);
		for (size_t j = 0; j < sizeof(bins) / sizeof(bins[0]); j++) {
			int k = bins[j];
			const cufftComplex *g = &f[(size_t)b * h + k];
			double wr, wi, e;

			dft2(s, NULL, 1, 1, len, 0, k, &wr, &wi);
			e = fmax(fabs(g->x - wr), fabs(g->y - wi));
			if (!(e <= worst_bin))
				worst_bin = e;
			if (!(e <= BIN_TOL * l1)) {
				printf("r2c_many: FAILS (%d R2C of %d: "
				       "signal %d, bin %d is (%g,%g), the "
				       "CPU says (%g,%g))\n",
				       batch, len, b, k, g->x, g->y, wr, wi);
				return 1;
			}
		}
	}
	printf("r2c_many: ok (cufftPlanMany, %d R2C of %d: %zu bins of each "
	       "as the CPU's DFT, worst error %.2g)\n",
	       batch, len, sizeof(bins) / sizeof(bins[0]), worst_bin);
	return 0;
}

int main()
{
	int bad;

	srand(1);
	bad = c2c_2d();
	bad |= r2c_2d();
	bad |= r2c_many();
	return bad;
}
