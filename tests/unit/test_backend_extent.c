/* SPDX-License-Identifier: MIT */
/*
 * The physical extents of a VA window (host-daemon/backend_extent.c), as
 * both backends keep them: a map call backs each new run with one extent,
 * an unmap gives an extent back only as a whole (exactly the range its
 * one cuMemMap mapped), a partial unmap keeps granules until the extent's
 * last one goes, kept granules are taken back by a later map and never
 * push the backed total past the quota.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "backend_extent.h"

#define NGRAN 1024

/* What the drop callback saw (as cuMemUnmap would be called). */
struct drops {
	uint64_t first[64], count[64];
	int n;
	int fail_at;		 /* the n-th drop fails (-1: none) */
	int backs, back_fail_at; /* extent_fill's back calls (back_cb) */
};

static int drop_cb(void *ctx, const struct extent *e)
{
	struct drops *d = ctx;

	if (d->n == d->fail_at)
		return 700; /* a CUresult */
	d->first[d->n] = e->first;
	d->count[d->n++] = e->count;
	return 0;
}

/* extent_fill's back: handle 0x1000 + first, as a test can recognise;
 * with ctx, its back_fail_at-th call (from 1; 0: none) fails. */
static int back_cb(void *ctx, uint64_t first, uint64_t count, uint64_t *handle)
{
	struct drops *d = ctx;

	(void)count;
	if (d && ++d->backs == d->back_fail_at)
		return 701; /* a CUresult */
	*handle = 0x1000 + first;
	return 0;
}

/* Map [first, first + count) as a backend does: extents for the gaps
 * (at most max long each), kept granules revived. */
static int map(struct extent_map *em, uint64_t first, uint64_t count,
	       uint64_t limit, uint64_t max)
{
	uint64_t fresh;
	int rc = extent_map_check(em, first, count, limit, &fresh);

	if (!rc)
		rc = extent_fill(em, first, count, max, back_cb, NULL, NULL);
	if (rc)
		return rc;
	extent_revive(em, first, count);
	return 0;
}

static void extent_per_map_call_and_whole_unmap(void **state)
{
	struct extent_map em;
	struct drops d = {.fail_at = -1};
	struct extent *e;
	uint64_t pos = 0;

	assert_int_equal(extent_map_init(&em, NGRAN), 0);
	assert_int_equal(map(&em, 10, 512, 0, 0), 0);
	assert_int_equal(map(&em, 522, 3, 0, 0), 0); /* adjacent: its own */
	assert_int_equal(em.count, 2);
	assert_int_equal(em.nmapped, 515);
	e = extent_at(&em, 300);
	assert_non_null(e);
	assert_int_equal(e->first, 10);
	assert_int_equal(e->count, 512);
	assert_int_equal(e->handle, 0x1000 + 10);
	assert_null(extent_at(&em, 9));
	/* mapped twice: refused, nothing changed */
	assert_int_equal(map(&em, 500, 30, 0, 0), -EINVAL);
	assert_int_equal(em.count, 2);
	/* in address order */
	assert_int_equal(extent_next(&em, &pos)->first, 10);
	assert_int_equal(extent_next(&em, &pos)->first, 522);
	assert_null(extent_next(&em, &pos));
	/* an unmap over both gives each back exactly as mapped */
	assert_int_equal(extent_unmap(&em, 10, 515, drop_cb, &d), 0);
	assert_int_equal(d.n, 2);
	assert_int_equal(d.first[0], 10);
	assert_int_equal(d.count[0], 512);
	assert_int_equal(d.first[1], 522);
	assert_int_equal(d.count[1], 3);
	assert_int_equal(em.count, 0);
	assert_int_equal(em.nmapped, 0);
	assert_int_equal(em.nbacked, 0);
	/* not mapped: refused */
	assert_int_equal(extent_unmap(&em, 10, 1, drop_cb, &d), -EINVAL);
	extent_map_destroy(&em);
}

/* A map whose third new extent cannot be backed: the two it made are
 * dropped and forgotten, what was there before stays. */
static void extent_fill_failure_undoes_only_its_own(void **state)
{
	struct extent_map em;
	struct drops d = {.fail_at = -1, .back_fail_at = 3};

	assert_int_equal(extent_map_init(&em, NGRAN), 0);
	assert_int_equal(map(&em, 0, 4, 0, 0), 0);
	/* the gap [4, 20) in extents of 4: the third, [12, 16), fails */
	assert_int_equal(extent_fill(&em, 0, 20, 4, back_cb, drop_cb, &d), 701);
	assert_int_equal(d.n, 2);
	assert_int_equal(d.first[0], 4);
	assert_int_equal(d.first[1], 8);
	assert_int_equal(em.count, 1);
	assert_int_equal(em.nmapped, 4);
	assert_int_equal(em.nbacked, 4);
	assert_null(extent_at(&em, 4));
	assert_int_equal(extent_at(&em, 3)->handle, 0x1000);
	extent_map_destroy(&em);
}

static void extent_size_is_capped(void **state)
{
	struct extent_map em;
	struct drops d = {.fail_at = -1};

	assert_int_equal(extent_map_init(&em, NGRAN), 0);
	assert_int_equal(map(&em, 0, 1000, 0, 256), 0);
	assert_int_equal(em.count, 4); /* 256 + 256 + 256 + 232 */
	assert_int_equal(extent_at(&em, 999)->first, 768);
	assert_int_equal(extent_at(&em, 999)->count, 232);
	assert_int_equal(extent_unmap(&em, 0, 1000, drop_cb, &d), 0);
	assert_int_equal(d.n, 4);
	extent_map_destroy(&em);
}

/* A resume maps a run in one call; the allocations in it are freed one
 * by one later: the extent stays until its last granule goes. */
static void extent_partial_unmap_keeps_until_the_last(void **state)
{
	struct extent_map em;
	struct drops d = {.fail_at = -1};
	uint64_t fresh;

	assert_int_equal(extent_map_init(&em, NGRAN), 0);
	assert_int_equal(map(&em, 100, 10, 0, 0), 0);
	assert_int_equal(extent_unmap(&em, 100, 4, drop_cb, &d), 0);
	assert_int_equal(d.n, 0); /* kept: the extent lives on */
	assert_int_equal(em.nmapped, 6);
	assert_int_equal(em.nbacked, 10);
	assert_false(extent_range_mapped(&em, 100, 4));
	assert_true(extent_range_mapped(&em, 104, 6));
	/* a map over kept granules takes them back, no new extent */
	assert_int_equal(extent_map_check(&em, 98, 4, 0, &fresh), 0);
	assert_int_equal(fresh, 2);
	assert_int_equal(map(&em, 102, 2, 0, 0), 0);
	assert_int_equal(em.count, 1);
	assert_int_equal(extent_at(&em, 102)->live, 8);
	/* the rest, in two pieces: the second gives the extent back */
	assert_int_equal(extent_unmap(&em, 102, 6, drop_cb, &d), 0);
	assert_int_equal(d.n, 0);
	assert_int_equal(extent_unmap(&em, 108, 2, drop_cb, &d), 0);
	assert_int_equal(d.n, 1);
	assert_int_equal(d.first[0], 100);
	assert_int_equal(d.count[0], 10);
	assert_int_equal(em.nbacked, 0);
	assert_int_equal(em.nmapped, 0);
	extent_map_destroy(&em);
}

/* Kept granules never push the backed total over the quota; without kept
 * ones the caller's own quota governs. */
static void extent_kept_granules_respect_the_limit(void **state)
{
	struct extent_map em;
	struct drops d = {.fail_at = -1};

	assert_int_equal(extent_map_init(&em, NGRAN), 0);
	assert_int_equal(map(&em, 0, 64, 100, 0), 0);
	assert_int_equal(map(&em, 64, 64, 100, 0), 0); /* none kept: ok */
	assert_int_equal(extent_unmap(&em, 64, 64, drop_cb, &d), 0);
	assert_int_equal(extent_unmap(&em, 0, 32, drop_cb, &d), 0);
	/* 32 kept + 32 mapped: 40 more fits, 70 would not */
	assert_int_equal(map(&em, 200, 70, 100, 0), -ENOMEM);
	assert_int_equal(em.nbacked, 64);
	assert_int_equal(map(&em, 200, 36, 100, 0), 0);
	/* taking kept ones back costs nothing */
	assert_int_equal(map(&em, 0, 32, 100, 0), 0);
	assert_int_equal(em.nbacked, 100);
	assert_int_equal(em.nmapped, 100);
	extent_map_destroy(&em);
}

/* A failing drop leaves that extent and the rest of the range mapped. */
static void extent_failed_drop_stays_mapped(void **state)
{
	struct extent_map em;
	struct drops d = {.fail_at = 1};

	assert_int_equal(extent_map_init(&em, NGRAN), 0);
	assert_int_equal(map(&em, 0, 4, 0, 0), 0);
	assert_int_equal(map(&em, 4, 4, 0, 0), 0);
	assert_int_equal(map(&em, 8, 4, 0, 0), 0);
	assert_int_equal(extent_unmap(&em, 0, 12, drop_cb, &d), 700);
	assert_int_equal(d.n, 1);
	assert_false(extent_range_mapped(&em, 0, 4));
	assert_true(extent_range_mapped(&em, 4, 8));
	assert_int_equal(em.count, 2);
	d.fail_at = -1;
	assert_int_equal(extent_unmap(&em, 4, 8, drop_cb, &d), 0);
	assert_int_equal(em.count, 0);
	extent_map_destroy(&em);
}

/* Runs, gaps and slots reused across many maps and unmaps. */
static void extent_runs_and_slot_reuse(void **state)
{
	struct extent_map em;
	uint64_t pos = 0, f, c, ids;
	int i;

	assert_int_equal(extent_map_init(&em, NGRAN), 0);
	for (i = 0; i < 200; i++)
		assert_int_equal(map(&em, (uint64_t)i * 5, 3, 0, 0), 0);
	assert_int_equal(em.count, 200);
	assert_int_equal(extent_next_run(&em, em.mapped, &pos, NGRAN, &f, &c),
			 1);
	assert_int_equal(f, 0);
	assert_int_equal(c, 3);
	assert_int_equal(extent_next_run(&em, em.mapped, &pos, NGRAN, &f, &c),
			 1);
	assert_int_equal(f, 5);
	for (i = 0; i < 200; i += 2)
		assert_int_equal(
			extent_unmap(&em, (uint64_t)i * 5, 3, NULL, NULL), 0);
	assert_int_equal(em.count, 100);
	ids = em.ids;
	for (i = 0; i < 200; i += 2)
		assert_int_equal(map(&em, (uint64_t)i * 5, 4, 0, 0), 0);
	assert_int_equal(em.count, 200);
	assert_true(em.cap <= 256);		  /* freed slots were reused */
	assert_true(extent_at(&em, 0)->id > ids); /* ids are never reused */
	pos = 0;
	assert_int_equal(extent_next_gap(&em, &pos, 20, 0, &f, &c), 1);
	assert_int_equal(f, 4);
	assert_int_equal(c, 1);
	extent_map_destroy(&em);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(extent_per_map_call_and_whole_unmap),
		cmocka_unit_test(extent_size_is_capped),
		cmocka_unit_test(extent_fill_failure_undoes_only_its_own),
		cmocka_unit_test(extent_partial_unmap_keeps_until_the_last),
		cmocka_unit_test(extent_kept_granules_respect_the_limit),
		cmocka_unit_test(extent_failed_drop_stays_mapped),
		cmocka_unit_test(extent_runs_and_slot_reuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
