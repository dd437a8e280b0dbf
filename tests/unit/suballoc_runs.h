/* SPDX-License-Identifier: MIT */
/*
 * The move tests' suspend and resume (test_cuda_move, test_sim_move): the
 * runs of mapped granules of a sub-allocator, found as the worker finds
 * them (worker_state.c: mapped_runs), unmapped as a suspend does and
 * mapped again, each run in one call, as a resume does. Header-only; the
 * two tests link different backends. Include it after <cmocka.h>.
 */
#ifndef VGPU_TEST_SUBALLOC_RUNS_H
#define VGPU_TEST_SUBALLOC_RUNS_H

#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "mem_suballoc.h"

/* The runs into start[i], end[i] (at most max of them); how many. */
static inline int suballoc_runs(const struct suballoc *sa, uint64_t granule,
				uint64_t *start, uint64_t *end, int max)
{
	uint64_t pos = 0, a, sz, s, e;
	uint32_t owner;
	int n = 0;

	while (suballoc_next(sa, &pos, &a, &sz, &owner)) {
		s = a / granule * granule;
		e = (a + sz + granule - 1) / granule * granule;
		if (n && s <= end[n - 1]) {
			if (e > end[n - 1])
				end[n - 1] = e;
			continue;
		}
		assert_true(n < max);
		start[n] = s;
		end[n++] = e;
	}
	return n;
}

/* A suspend's unmap of the n runs (map: a resume's map); each succeeds. */
static inline void suballoc_runs_remap(const struct backend_ops *ops,
				       struct backend *b, const uint64_t *start,
				       const uint64_t *end, int n, bool map)
{
	int i;

	for (i = 0; i < n; i++)
		assert_int_equal(
			map ? ops->mem_map(b, start[i], end[i] - start[i])
			    : ops->mem_unmap(b, start[i], end[i] - start[i]),
			0);
}

#endif /* VGPU_TEST_SUBALLOC_RUNS_H */
