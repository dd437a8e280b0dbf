/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the ring index and range helpers (include/vgpu/ring.h)
 * that both ends of a ring use to check what the other side wrote.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include <vgpu/ring.h>

static void ring_used_counts_entries_between_head_and_tail(void **state)
{
	assert_int_equal(ring_used(0, 0), 0);
	assert_int_equal(ring_used(10, 17), 7);
	assert_int_equal(ring_used(100, 100 + VGPU_RING_SQ_ENTRIES),
			 VGPU_RING_SQ_ENTRIES);
}

static void ring_used_survives_wraparound_at_2_pow_32(void **state)
{
	assert_int_equal(ring_used(0xfffffffeu, 2u), 4);
	assert_int_equal(ring_used(0xffffffffu, 0u), 1);
	assert_int_equal(ring_used(0xffffff00u, 0u), 256);
}

static void ring_used_shows_a_tail_behind_the_head_as_corruption(void **state)
{
	/* a tail the client moved backwards looks like ~4 billion entries */
	assert_true(ring_used(5, 3) > VGPU_RING_SQ_ENTRIES);
	assert_true(ring_used(0, 0xffffffffu) > VGPU_RING_SQ_ENTRIES);
	assert_true(ring_used(0, VGPU_RING_SQ_ENTRIES + 1) >
		    VGPU_RING_SQ_ENTRIES);
}

static void ring_is_pow2_accepts_only_powers_of_two(void **state)
{
	assert_false(ring_is_pow2(0));
	assert_true(ring_is_pow2(1));
	assert_true(ring_is_pow2(256));
	assert_false(ring_is_pow2(255));
	assert_false(ring_is_pow2(257));
	assert_true(ring_is_pow2(0x80000000u));
	assert_false(ring_is_pow2(0xffffffffu));
}

static void ring_range_ok_accepts_ranges_inside_the_region(void **state)
{
	assert_true(ring_range_ok(0, 0, 0));
	assert_true(ring_range_ok(0, 100, 100));
	assert_true(ring_range_ok(99, 1, 100));
	assert_true(ring_range_ok(100, 0, 100)); /* empty range at the end */
	assert_true(ring_range_ok(0, UINT64_MAX, UINT64_MAX));
}

static void ring_range_ok_rejects_ranges_past_the_end(void **state)
{
	assert_false(ring_range_ok(0, 101, 100));
	assert_false(ring_range_ok(100, 1, 100));
	assert_false(ring_range_ok(101, 0, 100));
	assert_false(ring_range_ok(1, 0, 0));
}

static void ring_range_ok_rejects_offset_plus_length_overflow(void **state)
{
	/* off + len wraps to a small number: must still be rejected */
	assert_false(ring_range_ok(8, UINT64_MAX - 4, 100));
	assert_false(ring_range_ok(UINT64_MAX, 1, 100));
	assert_false(ring_range_ok(UINT64_MAX, 1, UINT64_MAX));
	assert_false(ring_range_ok(1, UINT64_MAX, UINT64_MAX));
	assert_true(ring_range_ok(UINT64_MAX, 0, UINT64_MAX));
}

static void ring_layout_places_queues_after_the_header_page(void **state)
{
	struct ring_layout l;

	ring_layout_compute(&l, VGPU_RING_SQ_ENTRIES, VGPU_RING_CQ_ENTRIES,
			    VGPU_RING_DATA_BYTES);
	assert_int_equal(l.sq_entries, VGPU_RING_SQ_ENTRIES);
	assert_int_equal(l.cq_entries, VGPU_RING_CQ_ENTRIES);
	assert_true(sizeof(struct vgpu_ring_header) <= l.sq_offset);
	assert_int_equal(l.sq_offset, 4096);
	assert_int_equal(l.cq_offset,
			 l.sq_offset + VGPU_RING_SQ_ENTRIES *
					       sizeof(struct vgpu_sqe));
	assert_true(l.data_offset >=
		    l.cq_offset +
			    VGPU_RING_CQ_ENTRIES * sizeof(struct vgpu_cqe));
	assert_int_equal(l.data_offset % 4096, 0);
	assert_int_equal(l.data_size, VGPU_RING_DATA_BYTES);
	assert_int_equal(l.total_size, l.data_offset + l.data_size);
}

static void ring_layout_pads_the_data_area_to_a_page(void **state)
{
	struct ring_layout l;

	/* 4096 + 3 * 64 + 5 * 32 = 4448 -> data at 8192 */
	ring_layout_compute(&l, 3, 5, 100);
	assert_int_equal(l.cq_offset, 4096 + 3 * 64);
	assert_int_equal(l.data_offset, 8192);
	assert_int_equal(l.total_size, 8192 + 100);
}

static void ring_slots_wrap_with_the_index_mask(void **state)
{
	static char base[4096 + 256 * 64 + 256 * 32];

	assert_ptr_equal(ring_sqe(base, 4096, 256, 0), base + 4096);
	assert_ptr_equal(ring_sqe(base, 4096, 256, 256), base + 4096);
	assert_ptr_equal(ring_sqe(base, 4096, 256, 0xffffffffu),
			 base + 4096 + 255 * 64);
	assert_ptr_equal(ring_cqe(base, 8192, 256, 257), base + 8192 + 32);
}

static void ring_release_store_is_seen_by_acquire_load(void **state)
{
	uint32_t idx = 0;

	ring_store_release(&idx, 0xdeadbeefu);
	ring_full_barrier();
	assert_int_equal(ring_load_acquire(&idx), 0xdeadbeefu);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			ring_used_counts_entries_between_head_and_tail),
		cmocka_unit_test(ring_used_survives_wraparound_at_2_pow_32),
		cmocka_unit_test(
			ring_used_shows_a_tail_behind_the_head_as_corruption),
		cmocka_unit_test(ring_is_pow2_accepts_only_powers_of_two),
		cmocka_unit_test(
			ring_range_ok_accepts_ranges_inside_the_region),
		cmocka_unit_test(ring_range_ok_rejects_ranges_past_the_end),
		cmocka_unit_test(
			ring_range_ok_rejects_offset_plus_length_overflow),
		cmocka_unit_test(
			ring_layout_places_queues_after_the_header_page),
		cmocka_unit_test(ring_layout_pads_the_data_area_to_a_page),
		cmocka_unit_test(ring_slots_wrap_with_the_index_mask),
		cmocka_unit_test(ring_release_store_is_seen_by_acquire_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
