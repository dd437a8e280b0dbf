/* SPDX-License-Identifier: MIT */
/*
 * A string answer into the caller's buffer, NVML's way: all of it and
 * its NUL, or NVML_ERROR_INSUFFICIENT_SIZE and nothing written.
 */
#ifndef VGPU_NVML_STRING_H
#define VGPU_NVML_STRING_H

#include <string.h>

#include "nvml.h"

static inline nvmlReturn_t nvml_string_put(char *buf, unsigned int length,
					   const char *s)
{
	size_t n = strlen(s);

	if (!buf)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (n + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(buf, s, n + 1);
	return NVML_SUCCESS;
}

#endif /* VGPU_NVML_STRING_H */
