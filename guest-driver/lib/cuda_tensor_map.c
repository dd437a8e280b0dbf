/* SPDX-License-Identifier: MIT */
/*
 * Tensor maps (cuTensorMapEncodeTiled, _Im2col, _Im2colWide,
 * cuTensorMapReplaceAddress): 128 bytes a kernel's bulk tensor copies
 * (TMA) read, whose layout only the driver knows. The worker's driver
 * encodes them (VGPU_OP_TENSOR_MAP), so the bytes are the ones a native
 * program gets for the same arguments (a vGPU's device addresses are the
 * worker's). The arguments go as the request's fields; the driver checks
 * them as it does natively.
 */
#include <stddef.h>
#include <string.h>

#include "client.h"
#include "client_api.h"
#include "cuda_unsupported.h"

/* One request: t's map filled on success. */
static CUresult tensor_map_call(struct vgpu_tensor_map *t, CUtensorMap *out)
{
	struct client_push how = {.mode = CLIENT_SLOT_WAIT};
	struct vgpu_sqe sqe = {.opcode = VGPU_OP_TENSOR_MAP};
	struct client_ring *r;
	struct vgpu_cqe cqe;
	struct client *c;
	uint64_t off;
	uint32_t tag;
	CUresult err = client_get(&c);

	if (err != CUDA_SUCCESS)
		return err;
	if (!out)
		return CUDA_ERROR_INVALID_VALUE;
	if (c->transport.minor < VGPU_PROTO_MINOR_TENSOR_MAP) {
		static int said;

		cuda_say_once(&said,
			      "tensor maps need protocol 1.%d, the host "
			      "speaks 1.%u (CUDA_ERROR_NOT_SUPPORTED)",
			      VGPU_PROTO_MINOR_TENSOR_MAP, c->transport.minor);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	r = &c->ring;
	client_ring_lock(r);
	err = client_ring_data_alloc(r, sizeof(*t), &off);
	if (err != CUDA_SUCCESS)
		goto out;
	memcpy(client_ring_data(r, off), t, sizeof(*t));
	sqe.a[0] = off;
	sqe.a[1] = sizeof(*t);
	err = client_ring_push(r, &sqe, &how, &tag);
	if (err == CUDA_SUCCESS)
		err = client_ring_wait(r, tag, &cqe);
	if (err == CUDA_SUCCESS)
		err = (CUresult)cqe.status;
	if (err == CUDA_SUCCESS)
		memcpy(out,
		       (const uint8_t *)client_ring_data(r, off) +
			       offsetof(struct vgpu_tensor_map, map),
		       sizeof(*out));
	client_ring_data_free(r, off, sizeof(*t));
out:
	client_ring_unlock(r);
	return err;
}

/* The arguments every kind shares; NULL arrays or a rank out of range:
 * CUDA_ERROR_INVALID_VALUE, as natively. */
static CUresult tensor_map_common(struct vgpu_tensor_map *t, uint32_t kind,
				  CUtensorMapDataType type, cuuint32_t rank,
				  cuuint32_t min_rank, void *addr,
				  const cuuint64_t *dim,
				  const cuuint64_t *strides,
				  const cuuint32_t *elem_strides)
{
	memset(t, 0, sizeof(*t));
	if (rank < min_rank || rank > VGPU_TENSOR_MAP_RANK_MAX || !dim ||
	    !elem_strides || (rank > 1 && !strides))
		return CUDA_ERROR_INVALID_VALUE;
	t->kind = kind;
	t->data_type = (uint32_t)type;
	t->rank = rank;
	t->global_address = (uint64_t)(uintptr_t)addr;
	memcpy(t->global_dim, dim, rank * sizeof(*dim));
	if (rank > 1)
		memcpy(t->global_strides, strides,
		       (rank - 1) * sizeof(*strides));
	memcpy(t->element_strides, elem_strides, rank * sizeof(*elem_strides));
	return CUDA_SUCCESS;
}

/* The four modes every encoding takes. */
static void tensor_map_modes(struct vgpu_tensor_map *t,
			     CUtensorMapInterleave interleave,
			     CUtensorMapSwizzle swizzle,
			     CUtensorMapL2promotion l2Promotion,
			     CUtensorMapFloatOOBfill oobFill)
{
	t->interleave = (uint32_t)interleave;
	t->swizzle = (uint32_t)swizzle;
	t->l2_promotion = (uint32_t)l2Promotion;
	t->oob_fill = (uint32_t)oobFill;
}

VGPU_API CUresult CUDAAPI cuTensorMapEncodeTiled(
	CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
	cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
	const cuuint64_t *globalStrides, const cuuint32_t *boxDim,
	const cuuint32_t *elementStrides, CUtensorMapInterleave interleave,
	CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
	CUtensorMapFloatOOBfill oobFill)
{
	struct vgpu_tensor_map t;
	CUresult err = tensor_map_common(
		&t, VGPU_TENSOR_MAP_TILED, tensorDataType, tensorRank, 1,
		globalAddress, globalDim, globalStrides, elementStrides);

	if (err != CUDA_SUCCESS || !boxDim)
		return err != CUDA_SUCCESS ? err : CUDA_ERROR_INVALID_VALUE;
	memcpy(t.box_dim, boxDim, tensorRank * sizeof(*boxDim));
	tensor_map_modes(&t, interleave, swizzle, l2Promotion, oobFill);
	return tensor_map_call(&t, tensorMap);
}

VGPU_API CUresult CUDAAPI cuTensorMapEncodeIm2col(
	CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
	cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
	const cuuint64_t *globalStrides, const int *pixelBoxLowerCorner,
	const int *pixelBoxUpperCorner, cuuint32_t channelsPerPixel,
	cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
	CUtensorMapInterleave interleave, CUtensorMapSwizzle swizzle,
	CUtensorMapL2promotion l2Promotion, CUtensorMapFloatOOBfill oobFill)
{
	struct vgpu_tensor_map t;
	CUresult err = tensor_map_common(
		&t, VGPU_TENSOR_MAP_IM2COL, tensorDataType, tensorRank, 3,
		globalAddress, globalDim, globalStrides, elementStrides);

	if (err != CUDA_SUCCESS)
		return err;
	if (!pixelBoxLowerCorner || !pixelBoxUpperCorner)
		return CUDA_ERROR_INVALID_VALUE;
	memcpy(t.lower_corner, pixelBoxLowerCorner,
	       (tensorRank - 2) * sizeof(int));
	memcpy(t.upper_corner, pixelBoxUpperCorner,
	       (tensorRank - 2) * sizeof(int));
	t.channels_per_pixel = channelsPerPixel;
	t.pixels_per_column = pixelsPerColumn;
	tensor_map_modes(&t, interleave, swizzle, l2Promotion, oobFill);
	return tensor_map_call(&t, tensorMap);
}

VGPU_API CUresult CUDAAPI cuTensorMapEncodeIm2colWide(
	CUtensorMap *tensorMap, CUtensorMapDataType tensorDataType,
	cuuint32_t tensorRank, void *globalAddress, const cuuint64_t *globalDim,
	const cuuint64_t *globalStrides, int pixelBoxLowerCornerWidth,
	int pixelBoxUpperCornerWidth, cuuint32_t channelsPerPixel,
	cuuint32_t pixelsPerColumn, const cuuint32_t *elementStrides,
	CUtensorMapInterleave interleave, CUtensorMapIm2ColWideMode mode,
	CUtensorMapSwizzle swizzle, CUtensorMapL2promotion l2Promotion,
	CUtensorMapFloatOOBfill oobFill)
{
	struct vgpu_tensor_map t;
	CUresult err = tensor_map_common(
		&t, VGPU_TENSOR_MAP_IM2COL_WIDE, tensorDataType, tensorRank, 3,
		globalAddress, globalDim, globalStrides, elementStrides);

	if (err != CUDA_SUCCESS)
		return err;
	t.lower_corner[0] = pixelBoxLowerCornerWidth;
	t.upper_corner[0] = pixelBoxUpperCornerWidth;
	t.channels_per_pixel = channelsPerPixel;
	t.pixels_per_column = pixelsPerColumn;
	t.wide_mode = (uint32_t)mode;
	tensor_map_modes(&t, interleave, swizzle, l2Promotion, oobFill);
	return tensor_map_call(&t, tensorMap);
}

VGPU_API CUresult CUDAAPI cuTensorMapReplaceAddress(CUtensorMap *tensorMap,
						    void *globalAddress)
{
	struct vgpu_tensor_map t;

	if (!tensorMap)
		return CUDA_ERROR_INVALID_VALUE;
	memset(&t, 0, sizeof(t));
	t.kind = VGPU_TENSOR_MAP_REPLACE_ADDRESS;
	t.global_address = (uint64_t)(uintptr_t)globalAddress;
	memcpy(t.map, tensorMap, sizeof(t.map));
	return tensor_map_call(&t, tensorMap);
}
