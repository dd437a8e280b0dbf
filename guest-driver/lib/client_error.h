/* SPDX-License-Identifier: MIT */
/*
 * Every CUresult of cuda.h with its name and description
 * (cuda_error_table.c, generated from cuda.h by gen_error_table.py).
 */
#ifndef VGPU_CLIENT_ERROR_H
#define VGPU_CLIENT_ERROR_H

#include <cuda.h>

struct client_error_entry {
	CUresult code;
	int sticky; /* the process must start over after it */
	const char *name;
	const char *text;
};

extern const struct client_error_entry client_error_table[];
extern const unsigned int client_error_count;

/* The entry for code, or NULL when cuda.h does not know it. */
const struct client_error_entry *client_error_find(CUresult code);

/* True for the errors after which every CUDA call fails the same way
 * (an illegal address, a failed launch, ...). */
int client_error_is_sticky(CUresult code);

#endif /* VGPU_CLIENT_ERROR_H */
