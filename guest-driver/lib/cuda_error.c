/* SPDX-License-Identifier: MIT */
/*
 * cuGetErrorName, cuGetErrorString: lookups in the generated table.
 * Both work before cuInit, as in CUDA.
 */
#include "client_api.h"
#include "client_error.h"

const struct client_error_entry *client_error_find(CUresult code)
{
	unsigned int lo = 0, hi = client_error_count;

	/* the table is sorted by code */
	while (lo < hi) {
		unsigned int mid = lo + (hi - lo) / 2;

		if (client_error_table[mid].code == code)
			return &client_error_table[mid];
		if ((unsigned int)client_error_table[mid].code <
		    (unsigned int)code)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int client_error_is_sticky(CUresult code)
{
	const struct client_error_entry *e = client_error_find(code);

	return e && e->sticky;
}

VGPU_API CUresult CUDAAPI cuGetErrorName(CUresult error, const char **pStr)
{
	const struct client_error_entry *e = client_error_find(error);

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	*pStr = e ? e->name : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

VGPU_API CUresult CUDAAPI cuGetErrorString(CUresult error, const char **pStr)
{
	const struct client_error_entry *e = client_error_find(error);

	if (!pStr)
		return CUDA_ERROR_INVALID_VALUE;
	*pStr = e ? e->text : NULL;
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
