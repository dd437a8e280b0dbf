/* SPDX-License-Identifier: MIT */
/*
 * VGPU_OP_TENSOR_MAP: a tensor map encoded by the backend (the real
 * driver's cuTensorMapEncode* on cuda), for a client whose library has
 * no driver of its own to encode it. The request is copied out of the
 * data area before anything reads it (the client may change the data
 * area at any time), checked as far as the copy must be (the ranks bound
 * the arrays), and the driver checks the rest as it does natively.
 */
#include <stddef.h>
#include <string.h>

#include <cuda.h>
#include <vgpu/ring.h>

#include "worker.h"

int worker_tensor_map_validate(struct worker_session *s,
			       const struct vgpu_sqe *q, struct worker_op *op,
			       const char **why)
{
	if (q->a[1] != sizeof(struct vgpu_tensor_map) || q->a[0] % 8 ||
	    !ring_range_ok(q->a[0], q->a[1], s->data_size)) {
		*why = "tensor map request not a struct vgpu_tensor_map "
		       "inside the data area";
		return CUDA_ERROR_INVALID_VALUE;
	}
	op->out = s->data + q->a[0];
	return CUDA_SUCCESS;
}

/* The ranks each kind allows (cuda.h): the arrays hold no more. */
static int tensor_map_rank_ok(const struct vgpu_tensor_map *t)
{
	switch (t->kind) {
	case VGPU_TENSOR_MAP_TILED:
		return t->rank >= 1 && t->rank <= VGPU_TENSOR_MAP_RANK_MAX;
	case VGPU_TENSOR_MAP_IM2COL:
	case VGPU_TENSOR_MAP_IM2COL_WIDE:
		return t->rank >= 3 && t->rank <= VGPU_TENSOR_MAP_RANK_MAX;
	case VGPU_TENSOR_MAP_REPLACE_ADDRESS:
		return 1;
	}
	return 0;
}

int worker_tensor_map_exec(struct worker_session *s, const struct worker_op *op)
{
	struct vgpu_tensor_map t;
	uint8_t map[VGPU_TENSOR_MAP_BYTES];
	int rc;

	if (!s->w->ops->tensor_map)
		return CUDA_ERROR_NOT_SUPPORTED;
	memcpy(&t, op->out, sizeof(t));
	if (!tensor_map_rank_ok(&t))
		return CUDA_ERROR_INVALID_VALUE;
	rc = s->w->ops->tensor_map(s->w->be, &t, map);
	if (rc)
		return worker_check(s->w, rc, "tensor map");
	memcpy(op->out + offsetof(struct vgpu_tensor_map, map), map,
	       sizeof(map));
	return CUDA_SUCCESS;
}
