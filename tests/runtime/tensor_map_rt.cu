// SPDX-License-Identifier: MIT
/*
 * tensor_map_rt: a bulk tensor copy (TMA), as the CUDA programming guide
 * writes one: the host encodes a 2D tensor map with
 * cuTensorMapEncodeTiled (through cudaGetDriverEntryPointByVersion: the
 * runtime has no wrapper), passes it to a kernel as a __grid_constant__
 * parameter, and each block copies its 32 x 16 tile into shared memory
 * with cp.async.bulk.tensor, waits on a barrier and writes the tile back
 * doubled. Every element is checked on the CPU. A tile at the tensor's
 * edge reads zeros past it (the map's out-of-bounds fill). Needs sm_90
 * and a GPU: the simulator has no bulk copies.
 */
#include <cuda.h>
#include <cuda/barrier>
#include <cudaTypedefs.h>

#include "rt_check.h"

using barrier = cuda::barrier<cuda::thread_scope_block>;
namespace cde = cuda::device::experimental;

static const int W = 200, H = 64, BW = 32, BH = 16; /* W: not a multiple */

__global__ void tileDouble(const __grid_constant__ CUtensorMap map,
			   float *out, int w, int h)
{
	__shared__ alignas(128) float tile[BH][BW];
#pragma nv_diag_suppress static_var_with_dynamic_init
	__shared__ barrier bar;
	int x = blockIdx.x * BW, y = blockIdx.y * BH;
	barrier::arrival_token token;

	if (threadIdx.x == 0) {
		init(&bar, blockDim.x);
		cde::fence_proxy_async_shared_cta();
	}
	__syncthreads();
	if (threadIdx.x == 0) {
		cde::cp_async_bulk_tensor_2d_global_to_shared(&tile, &map, x,
							      y, bar);
		token = cuda::device::barrier_arrive_tx(bar, 1, sizeof(tile));
	} else {
		token = bar.arrive();
	}
	bar.wait(std::move(token));
	for (int i = threadIdx.x; i < BW * BH; i += blockDim.x) {
		int r = i / BW, c = i % BW;

		if (y + r < h && x + c < w)
			out[(y + r) * w + x + c] = tile[r][c] * 2.0f;
		/* past the right edge: the fill, zeros */
		else if (y + r < h && tile[r][c] != 0.0f)
			out[0] = -1.0f;
	}
}

int main(void)
{
	PFN_cuTensorMapEncodeTiled_v12000 encode = NULL;
	cudaDriverEntryPointQueryResult q;
	float *in, *out, *h_in, *h_out;
	CUtensorMap map;
	int bad = 0;

	CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled",
					       (void **)&encode, 12000,
					       cudaEnableDefault, &q));
	if (q != cudaDriverEntryPointSuccess || !encode) {
		printf("tensor_map_rt: FAILED (no cuTensorMapEncodeTiled: "
		       "%d)\n",
		       (int)q);
		return 1;
	}
	h_in = (float *)malloc(W * H * sizeof(float));
	h_out = (float *)malloc(W * H * sizeof(float));
	if (!h_in || !h_out)
		return 1;
	for (int i = 0; i < W * H; i++)
		h_in[i] = (float)(i % 977) - 300.0f;
	CHECK(cudaMalloc((void **)&in, W * H * sizeof(float)));
	CHECK(cudaMalloc((void **)&out, W * H * sizeof(float)));
	CHECK(cudaMemcpy(in, h_in, W * H * sizeof(float),
			 cudaMemcpyHostToDevice));
	CHECK(cudaMemset(out, 0, W * H * sizeof(float)));

	const cuuint64_t dim[2] = {W, H}, strides[1] = {W * sizeof(float)};
	const cuuint32_t box[2] = {BW, BH}, elem[2] = {1, 1};
	CUresult rc = encode(&map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 2, in,
			     dim, strides, box, elem,
			     CU_TENSOR_MAP_INTERLEAVE_NONE,
			     CU_TENSOR_MAP_SWIZZLE_NONE,
			     CU_TENSOR_MAP_L2_PROMOTION_NONE,
			     CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
	if (rc != CUDA_SUCCESS) {
		printf("tensor_map_rt: FAILED (cuTensorMapEncodeTiled: %d)\n",
		       (int)rc);
		return 1;
	}
	tileDouble<<<dim3((W + BW - 1) / BW, H / BH), 128>>>(map, out, W, H);
	CHECK(cudaGetLastError());
	CHECK(cudaMemcpy(h_out, out, W * H * sizeof(float),
			 cudaMemcpyDeviceToHost));
	for (int i = 0; i < W * H; i++)
		if (h_out[i] != 2.0f * h_in[i] && !bad++)
			printf("  element %d: %g, not %g\n", i, h_out[i],
			       2.0f * h_in[i]);
	printf("  %s: %d x %d floats through 32 x 16 bulk tensor copies\n",
	       bad ? "FAILED" : "ok", W, H);
	CHECK(cudaFree(in));
	CHECK(cudaFree(out));
	free(h_in);
	free(h_out);
	printf("tensor_map_rt: %s\n", bad ? "FAILED" : "ok");
	return bad ? 1 : 0;
}
