/* SPDX-License-Identifier: MIT */
#ifndef VGPU_ENV_NUMBER_H
#define VGPU_ENV_NUMBER_H

#include <stddef.h>
#include <stdint.h>

/*
 * The setting var: unset means def; anything else must be a plain
 * decimal number (with a K/M/G suffix when suffix_ok) within [min, max].
 * 0, or -1 with "VAR='value' is ..." in err.
 */
int env_number(const char *var, uint64_t def, int suffix_ok, uint64_t min,
	       uint64_t max, uint64_t *out, char *err, size_t errlen);

#endif /* VGPU_ENV_NUMBER_H */
