/* SPDX-License-Identifier: MIT */
/*
 * What tests/unit/fake_libcuda.c counts, for the tests that load it
 * (fake_cuda_stats, found with dlsym).
 */
#ifndef VGPU_FAKE_LIBCUDA_H
#define VGPU_FAKE_LIBCUDA_H

#include <stdint.h>

#define FAKE_CUDA_NDEV 2 /* the GPUs it has */

struct fake_cuda_stats {
	uint64_t creates, maps, unmaps, access_calls;
	uint64_t handles, mappings, reservations; /* live */
	uint64_t bytes[FAKE_CUDA_NDEV];		  /* live physical memory */
	uint64_t greens, greens_live;		  /* green contexts */
	uint64_t streams, streams_live;		  /* streams */
	uint64_t violations;
	char last[256];
};

#endif
