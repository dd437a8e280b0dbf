// SPDX-License-Identifier: MIT
/*
 * memory_2d_rt: pitched memory. cudaMallocPitch rounds the row up to a
 * multiple of 512 bytes; cudaMemset2D, cudaMemcpy2D and their Async forms
 * touch exactly width bytes of each row (the padding keeps what it had),
 * host to device, device to device (pitched to packed, one copy) and back,
 * all checked on the CPU; a row wider than its pitch is
 * cudaErrorInvalidPitchValue.
 */
#include <string.h>

#include "rt_check.h"

static int failures;

static void expect(int ok, const char *what)
{
	printf("  %s: %s\n", ok ? "ok" : "FAILED", what);
	if (!ok)
		failures++;
}

int main(void)
{
	const size_t width = 300, height = 37, hpitch = 333;
	size_t pitch = 0, bytes;
	unsigned char *d, *packed, *h, *back, *all;
	cudaStream_t s;
	cudaError_t err;
	int ok;

	CHECK(cudaMallocPitch((void **)&d, &pitch, width, height));
	expect(pitch >= width && pitch % 512 == 0,
	       "cudaMallocPitch: pitch is width rounded up to 512 bytes");
	printf("  pitch %zu for rows of %zu bytes\n", pitch, width);
	bytes = pitch * height;
	CHECK(cudaMalloc((void **)&packed, width * height));
	CHECK(cudaStreamCreate(&s));
	h = (unsigned char *)malloc(hpitch * height);
	back = (unsigned char *)malloc(width * height);
	all = (unsigned char *)malloc(bytes);
	if (!h || !back || !all)
		return 1;

	/* padding 0xab, rows 0x11 */
	CHECK(cudaMemset(d, 0xab, bytes));
	CHECK(cudaMemset2D(d, pitch, 0x11, width, height));
	CHECK(cudaMemcpy(all, d, bytes, cudaMemcpyDeviceToHost));
	ok = 1;
	for (size_t i = 0; i < bytes; i++)
		ok &= all[i] == ((i % pitch) < width ? 0x11 : 0xab);
	expect(ok, "cudaMemset2D fills the rows and leaves the padding");

	/* host rows with a pitch of their own -> device */
	for (size_t r = 0; r < height; r++)
		for (size_t c = 0; c < hpitch; c++)
			h[r * hpitch + c] = (unsigned char)(r * 7 + c);
	CHECK(cudaMemcpy2D(d, pitch, h, hpitch, width, height,
			   cudaMemcpyHostToDevice));
	CHECK(cudaMemcpy(all, d, bytes, cudaMemcpyDeviceToHost));
	ok = 1;
	for (size_t r = 0; r < height; r++)
		for (size_t c = 0; c < pitch; c++)
			ok &= all[r * pitch + c] ==
			      (c < width ? (unsigned char)(r * 7 + c) : 0xab);
	expect(ok, "cudaMemcpy2D host -> device: rows copied, padding kept");

	/* device pitched -> device packed, then packed -> host in one */
	CHECK(cudaMemcpy2DAsync(packed, width, d, pitch, width, height,
				cudaMemcpyDeviceToDevice, s));
	CHECK(cudaMemcpy2DAsync(back, width, packed, width, width, height,
				cudaMemcpyDeviceToHost, s));
	CHECK(cudaStreamSynchronize(s));
	ok = 1;
	for (size_t r = 0; r < height; r++)
		for (size_t c = 0; c < width; c++)
			ok &= back[r * width + c] == (unsigned char)(r * 7 + c);
	expect(ok, "cudaMemcpy2DAsync device -> device -> host");

	/* async fill of a sub-rectangle */
	CHECK(cudaMemset2DAsync(d + pitch + 10, pitch, 0x5c, 20, 3, s));
	CHECK(cudaMemcpy2D(back, width, d, pitch, width, height,
			   cudaMemcpyDefault));
	ok = 1;
	for (size_t r = 0; r < height; r++)
		for (size_t c = 0; c < width; c++) {
			int in = r >= 1 && r < 4 && c >= 10 && c < 30;

			ok &= back[r * width + c] ==
			      (in ? 0x5c : (unsigned char)(r * 7 + c));
		}
	expect(ok, "cudaMemset2DAsync of a 20x3 rectangle, read back with "
		   "cudaMemcpyDefault");

	expect(cudaMemcpy2D(d, 100, h, hpitch, 200, 2,
			    cudaMemcpyHostToDevice) ==
		       cudaErrorInvalidPitchValue,
	       "a row wider than its pitch: cudaErrorInvalidPitchValue");
	/* NVIDIA's CUDA 13 runtime leaves this check to the driver, whose
	 * CUDA_ERROR_INVALID_VALUE it reports as cudaErrorInvalidValue */
	err = cudaMemset2D(d, 16, 0, 32, 2);
	expect(err == cudaErrorInvalidPitchValue || err == cudaErrorInvalidValue,
	       "cudaMemset2D with width > pitch: cudaErrorInvalidPitchValue");
	cudaGetLastError();
	expect(cudaMemcpy2D(d, pitch, h, hpitch, 0, height,
			    cudaMemcpyHostToDevice) == cudaSuccess,
	       "zero width: nothing to do, cudaSuccess");

	CHECK(cudaFree(d));
	CHECK(cudaFree(packed));
	CHECK(cudaStreamDestroy(s));
	free(h);
	free(back);
	free(all);
	if (failures) {
		printf("memory_2d_rt: FAILED (%d checks)\n", failures);
		return 1;
	}
	printf("memory_2d_rt: OK\n");
	return 0;
}
