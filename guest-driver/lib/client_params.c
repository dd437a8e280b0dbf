/* SPDX-License-Identifier: MIT */
/*
 * Kernel parameter layout checks and marshalling (see client_params.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "client_params.h"

#define EXTRA_MAX_WORDS 64 /* an extra array longer than this is garbage */

int client_params_check_layout(const struct vgpu_kernel_info *k, char *err,
			       size_t errlen)
{
	uint32_t i, j;

	if (k->nparams > VGPU_MAX_PARAMS) {
		snprintf(err, errlen, "kernel has %u parameters (at most %d)",
			 k->nparams, VGPU_MAX_PARAMS);
		return -1;
	}
	if (k->param_bytes > VGPU_MAX_PARAM_BYTES) {
		snprintf(err, errlen,
			 "kernel takes %u parameter bytes (at "
			 "most %d)",
			 k->param_bytes, VGPU_MAX_PARAM_BYTES);
		return -1;
	}
	for (i = 0; i < k->nparams; i++) {
		const struct vgpu_param *p = &k->params[i];

		if (p->size == 0 ||
		    (uint64_t)p->offset + p->size > k->param_bytes) {
			snprintf(err, errlen,
				 "kernel parameter %u (%u bytes "
				 "at %u) is outside its %u-byte buffer",
				 i, p->size, p->offset, k->param_bytes);
			return -1;
		}
		for (j = 0; j < i; j++) {
			const struct vgpu_param *q = &k->params[j];

			if (p->offset < q->offset + q->size &&
			    q->offset < p->offset + p->size) {
				snprintf(err, errlen,
					 "kernel parameters %u "
					 "and %u overlap",
					 j, i);
				return -1;
			}
		}
	}
	return 0;
}

/*
 * The packed buffer and its size from an extra array; *buf stays NULL
 * unless both were given (a pointer alone has no effect, says cuda.h).
 */
static CUresult parse_extra(void **extra, const void **buf, size_t *size)
{
	const void *p = NULL;
	int have_size = 0;

	*buf = NULL;
	for (int i = 0; i < EXTRA_MAX_WORDS; i += 2) {
		if (extra[i] == CU_LAUNCH_PARAM_END) {
			if (have_size)
				*buf = p;
			return CUDA_SUCCESS;
		}
		if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
			p = extra[i + 1];
		} else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
			if (!extra[i + 1])
				return CUDA_ERROR_INVALID_VALUE;
			*size = *(const size_t *)extra[i + 1];
			have_size = 1;
		} else {
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	return CUDA_ERROR_INVALID_VALUE;
}

CUresult client_params_marshal(const struct vgpu_kernel_info *k,
			       void **kernelParams, void **extra, void *buf)
{
	const void *packed;
	size_t size = 0;
	CUresult err;
	uint32_t i;

	if (kernelParams && extra)
		return CUDA_ERROR_INVALID_VALUE;
	memset(buf, 0, k->param_bytes);
	if (extra) {
		err = parse_extra(extra, &packed, &size);
		if (err != CUDA_SUCCESS)
			return err;
		if (k->param_bytes == 0)
			return CUDA_SUCCESS;
		if (!packed || size < k->param_bytes)
			return CUDA_ERROR_INVALID_VALUE;
		memcpy(buf, packed, k->param_bytes);
		return CUDA_SUCCESS;
	}
	if (k->nparams == 0)
		return CUDA_SUCCESS;
	if (!kernelParams)
		return CUDA_ERROR_INVALID_VALUE;
	for (i = 0; i < k->nparams; i++) {
		if (!kernelParams[i])
			return CUDA_ERROR_INVALID_VALUE;
		memcpy((char *)buf + k->params[i].offset, kernelParams[i],
		       k->params[i].size);
	}
	return CUDA_SUCCESS;
}
