/* SPDX-License-Identifier: MIT */
/*
 * The guest library's data-area allocator: regions never overlap, come
 * back whole, small ones stay away from the large ones' end, and a full
 * area says so instead of handing out what is in use.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "client_data.h"

#define AREA (1u << 20)

static void data_alloc_free_coalesces_to_one_extent(void **state)
{
	struct client_data d;
	uint64_t a, b, c;

	(void)state;
	assert_int_equal(client_data_init(&d, AREA), 0);
	assert_int_equal(client_data_alloc(&d, 100, &a), 0);
	assert_int_equal(client_data_alloc(&d, 200, &b), 0);
	assert_int_equal(client_data_alloc(&d, 300, &c), 0);
	assert_int_equal(a % CLIENT_DATA_ALIGN, 0);
	assert_int_equal(d.free_bytes, AREA - 128 - 256 - 320);
	client_data_free(&d, b, 200);
	client_data_free(&d, a, 100);
	client_data_free(&d, c, 300);
	assert_int_equal(d.nfree, 1);
	assert_int_equal(d.free[0].off, 0);
	assert_int_equal(d.free[0].len, AREA);
	assert_int_equal(d.live, 0);
	client_data_fini(&d);
}

static void data_small_regions_come_from_the_top(void **state)
{
	struct client_data d;
	uint64_t small, big;

	(void)state;
	assert_int_equal(client_data_init(&d, AREA), 0);
	assert_int_equal(client_data_alloc(&d, 64, &small), 0);
	assert_int_equal(client_data_alloc(&d, CLIENT_DATA_SMALL, &big), 0);
	assert_int_equal(small, AREA - 64);
	assert_int_equal(big, 0);
	client_data_fini(&d);
}

static void data_full_area_refuses(void **state)
{
	struct client_data d;
	uint64_t a, b;

	(void)state;
	assert_int_equal(client_data_init(&d, AREA), 0);
	assert_int_equal(client_data_alloc(&d, AREA, &a), 0);
	assert_int_equal(client_data_alloc(&d, 1, &b), -1);
	client_data_free(&d, a, AREA);
	assert_int_equal(client_data_alloc(&d, AREA + 1, &b), -1);
	assert_int_equal(client_data_alloc(&d, 0, &b), -1);
	assert_int_equal(client_data_alloc(&d, 1, &b), 0);
	client_data_fini(&d);
}

/* Random alloc/free against a byte map: no region overlaps another. */
static void data_random_regions_never_overlap(void **state)
{
	enum { N = 200 };
	static unsigned char owner[AREA / CLIENT_DATA_ALIGN];
	struct {
		uint64_t off, len;
		int live;
	} r[N];
	struct client_data d;

	(void)state;
	memset(r, 0, sizeof(r));
	memset(owner, 0, sizeof(owner));
	srand(7);
	assert_int_equal(client_data_init(&d, AREA), 0);
	for (int step = 0; step < 20000; step++) {
		int i = rand() % N;

		if (r[i].live) {
			for (uint64_t k = r[i].off / CLIENT_DATA_ALIGN;
			     k < (r[i].off + client_data_round(r[i].len)) /
					 CLIENT_DATA_ALIGN;
			     k++)
				owner[k] = 0;
			client_data_free(&d, r[i].off, r[i].len);
			r[i].live = 0;
			continue;
		}
		r[i].len = 1 + (uint64_t)(rand() % 3 ? rand() % 4096
						     : rand() % (128 << 10));
		if (client_data_alloc(&d, r[i].len, &r[i].off))
			continue;
		assert_true(r[i].off + r[i].len <= AREA);
		for (uint64_t k = r[i].off / CLIENT_DATA_ALIGN;
		     k < (r[i].off + client_data_round(r[i].len)) /
				 CLIENT_DATA_ALIGN;
		     k++) {
			assert_int_equal(owner[k], 0);
			owner[k] = 1;
		}
		r[i].live = 1;
	}
	for (int i = 0; i < N; i++)
		if (r[i].live)
			client_data_free(&d, r[i].off, r[i].len);
	assert_int_equal(d.nfree, 1);
	assert_int_equal(d.free_bytes, AREA);
	client_data_fini(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(data_alloc_free_coalesces_to_one_extent),
		cmocka_unit_test(data_small_regions_come_from_the_top),
		cmocka_unit_test(data_full_area_refuses),
		cmocka_unit_test(data_random_regions_never_overlap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
