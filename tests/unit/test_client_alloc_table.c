/* SPDX-License-Identifier: MIT */
/*
 * The guest library's table of device allocations, and the two steps of
 * a free (issue 16): an allocation being freed is gone for lookups and
 * for a second free, comes back if the worker refuses, and gives way to
 * another thread's allocation of the same address, which the worker
 * hands out once its free is done, before the freeing thread hears.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "client_alloc_table.h"

#define A 0x500000001000ull

static void alloc_table_finds_live_allocations(void **state)
{
	struct client_alloc_table t;
	struct client_alloc a;

	(void)state;
	client_alloc_table_init(&t);
	assert_int_equal(client_alloc_add(&t, A, 0x100), 0);
	assert_int_equal(client_alloc_add(&t, A + 0x200, 0x100), 0);
	assert_true(client_alloc_find(&t, A + 0xff, &a));
	assert_int_equal(a.base, A);
	assert_int_equal(a.size, 0x100);
	assert_false(client_alloc_find(&t, A + 0x100, NULL));
	/* a live allocation's range cannot be handed out twice */
	assert_int_equal(client_alloc_add(&t, A + 0x80, 0x100), -1);
	assert_int_equal(client_alloc_add(&t, A + 0x100, 0x101), -1);
	assert_int_equal(client_alloc_add(&t, A + 0x100, 0x100), 0);
	assert_int_equal(client_alloc_add(&t, A + 0x300, 0), -1);
	client_alloc_table_fini(&t);
}

static void alloc_table_hides_an_allocation_being_freed(void **state)
{
	struct client_alloc_table t;
	uint64_t ticket, other;

	(void)state;
	client_alloc_table_init(&t);
	assert_int_equal(client_alloc_add(&t, A, 0x100), 0);
	/* only the start of a live allocation can be freed */
	assert_int_equal(client_alloc_free_begin(&t, A + 8, &ticket), -1);
	assert_int_equal(client_alloc_free_begin(&t, A + 0x1000, &ticket), -1);
	assert_int_equal(client_alloc_free_begin(&t, A, &ticket), 0);
	/* in flight: reads as freed, and a second free fails */
	assert_false(client_alloc_find(&t, A, NULL));
	assert_false(client_alloc_find(&t, A + 0x10, NULL));
	assert_true(client_alloc_freeing(&t, A + 0x10));
	assert_false(client_alloc_freeing(&t, A + 0x100));
	assert_int_equal(client_alloc_free_begin(&t, A, &other), -1);
	client_alloc_free_end(&t, A, ticket, 1);
	assert_false(client_alloc_find(&t, A, NULL));
	assert_false(client_alloc_freeing(&t, A));
	assert_int_equal(client_alloc_free_begin(&t, A, &ticket), -1);
	client_alloc_table_fini(&t);
}

static void alloc_table_keeps_an_allocation_whose_free_failed(void **state)
{
	struct client_alloc_table t;
	uint64_t ticket;

	(void)state;
	client_alloc_table_init(&t);
	assert_int_equal(client_alloc_add(&t, A, 0x100), 0);
	assert_int_equal(client_alloc_free_begin(&t, A, &ticket), 0);
	client_alloc_free_end(&t, A, ticket, 0);
	assert_true(client_alloc_find(&t, A + 0x10, NULL));
	assert_false(client_alloc_freeing(&t, A));
	/* the worker still holds it: no one else may record it */
	assert_int_equal(client_alloc_add(&t, A, 0x100), -1);
	assert_int_equal(client_alloc_free_begin(&t, A, &ticket), 0);
	client_alloc_free_end(&t, A, ticket, 1);
	assert_false(client_alloc_find(&t, A, NULL));
	client_alloc_table_fini(&t);
}

/* The race of issue 16, in the order it happens. */
static void
alloc_table_gives_a_freed_address_to_the_next_allocation(void **state)
{
	struct client_alloc_table t;
	struct client_alloc a;
	uint64_t t1, t2;

	(void)state;
	client_alloc_table_init(&t);
	assert_int_equal(client_alloc_add(&t, A, 0x100), 0);
	/* thread 1 frees A; the worker frees it ... */
	assert_int_equal(client_alloc_free_begin(&t, A, &t1), 0);
	/* ... and hands A to thread 2 before thread 1 hears */
	assert_int_equal(client_alloc_add(&t, A, 0x180), 0);
	assert_true(client_alloc_find(&t, A + 0x17f, &a));
	assert_int_equal(a.size, 0x180);
	/* thread 1's free ends: thread 2's allocation stays */
	client_alloc_free_end(&t, A, t1, 1);
	assert_true(client_alloc_find(&t, A, &a));
	assert_int_equal(a.size, 0x180);
	/* nor does an old ticket touch a newer free of the same address */
	assert_int_equal(client_alloc_free_begin(&t, A, &t1), 0);
	assert_int_equal(client_alloc_add(&t, A, 0x80), 0);
	assert_int_equal(client_alloc_free_begin(&t, A, &t2), 0);
	assert_int_not_equal(t1, t2);
	client_alloc_free_end(&t, A, t1, 1);
	assert_true(client_alloc_freeing(&t, A));
	client_alloc_free_end(&t, A, t2, 0);
	assert_true(client_alloc_find(&t, A + 0x7f, &a));
	assert_int_equal(a.size, 0x80);
	client_alloc_table_fini(&t);
}

/* A new allocation may span several freed ones (merged by the worker),
 * never a live one. */
static void alloc_table_drops_every_freed_entry_a_new_one_covers(void **state)
{
	struct client_alloc_table t;
	struct client_alloc *v;
	uint64_t t1, t2;
	long n;

	(void)state;
	client_alloc_table_init(&t);
	assert_int_equal(client_alloc_add(&t, A - 0x100, 0x100), 0);
	assert_int_equal(client_alloc_add(&t, A, 0x100), 0);
	assert_int_equal(client_alloc_add(&t, A + 0x100, 0x100), 0);
	assert_int_equal(client_alloc_add(&t, A + 0x200, 0x100), 0);
	assert_int_equal(client_alloc_free_begin(&t, A, &t1), 0);
	assert_int_equal(client_alloc_free_begin(&t, A + 0x100, &t2), 0);
	/* overlaps the live neighbours: refused, nothing dropped */
	assert_int_equal(client_alloc_add(&t, A - 0x80, 0x200), -1);
	assert_int_equal(client_alloc_add(&t, A + 0x80, 0x200), -1);
	assert_true(client_alloc_freeing(&t, A));
	assert_true(client_alloc_freeing(&t, A + 0x100));
	assert_int_equal(client_alloc_add(&t, A + 0x40, 0x180), 0);
	n = client_alloc_snapshot(&t, &v);
	assert_int_equal(n, 3);
	assert_int_equal(v[0].base, A - 0x100);
	assert_int_equal(v[1].base, A + 0x40);
	assert_int_equal(v[1].size, 0x180);
	assert_int_equal(v[1].freeing, 0);
	assert_int_equal(v[2].base, A + 0x200);
	free(v);
	client_alloc_free_end(&t, A, t1, 1);
	client_alloc_free_end(&t, A + 0x100, t2, 1);
	assert_true(client_alloc_find(&t, A + 0x100, NULL));
	assert_false(client_alloc_find(&t, A + 0x20, NULL));
	client_alloc_table_fini(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(alloc_table_finds_live_allocations),
		cmocka_unit_test(alloc_table_hides_an_allocation_being_freed),
		cmocka_unit_test(
			alloc_table_keeps_an_allocation_whose_free_failed),
		cmocka_unit_test(
			alloc_table_gives_a_freed_address_to_the_next_allocation),
		cmocka_unit_test(
			alloc_table_drops_every_freed_entry_a_new_one_covers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
