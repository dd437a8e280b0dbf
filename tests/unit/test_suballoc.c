/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the vGPU memory sub-allocator (host-daemon/mem_suballoc.c)
 * on a cuda-like window: 1 TiB of addresses at 0x500000000000, 2 MiB
 * granules. The map/unmap callbacks keep a model of what is mapped and
 * fail the test on a double map, or on an unmap that is not exactly a
 * range mapped earlier (the CUDA driver only unmaps whole mappings).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mem_suballoc.h"

#define KiB	(1ull << 10)
#define MiB	(1ull << 20)
#define TiB	(1ull << 40)
#define BASE	0x500000000000ull
#define GRANULE (2 * MiB)

#define MAX_SPANS 4096

struct fake_vm {
	struct {
		uint64_t va, len;
	} spans[MAX_SPANS];
	int nspans;
	int maps, unmaps;
	int fail_map_at; /* fail the n-th map call (1-based); 0 = never */
	uint64_t mapped;
};

static int fake_map(void *ctx, uint64_t va, uint64_t len)
{
	struct fake_vm *vm = ctx;
	int i;

	vm->maps++;
	if (vm->fail_map_at && vm->maps == vm->fail_map_at)
		return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
	assert_int_equal(va % GRANULE, 0);
	assert_int_equal(len % GRANULE, 0);
	assert_true(len > 0);
	assert_true(va >= BASE && va + len <= BASE + TiB);
	for (i = 0; i < vm->nspans; i++)
		assert_true(va + len <= vm->spans[i].va ||
			    va >= vm->spans[i].va + vm->spans[i].len);
	assert_true(vm->nspans < MAX_SPANS);
	vm->spans[vm->nspans].va = va;
	vm->spans[vm->nspans].len = len;
	vm->nspans++;
	vm->mapped += len;
	return 0;
}

static int fake_unmap(void *ctx, uint64_t va, uint64_t len)
{
	struct fake_vm *vm = ctx;
	int i;

	vm->unmaps++;
	for (i = 0; i < vm->nspans; i++) {
		if (vm->spans[i].va == va) {
			assert_int_equal(vm->spans[i].len, len);
			vm->spans[i] = vm->spans[--vm->nspans];
			vm->mapped -= len;
			return 0;
		}
	}
	fail_msg("unmap of 0x%llx + 0x%llx that was never mapped",
		 (unsigned long long)va, (unsigned long long)len);
	return 1;
}

/* True when every granule of [a, a + len) lies in a mapped span. */
static int fake_covers(const struct fake_vm *vm, uint64_t a, uint64_t len)
{
	uint64_t g;
	int i, found;

	for (g = a & ~(GRANULE - 1); g < a + len; g += GRANULE) {
		found = 0;
		for (i = 0; i < vm->nspans && !found; i++)
			found = g >= vm->spans[i].va &&
				g < vm->spans[i].va + vm->spans[i].len;
		if (!found)
			return 0;
	}
	return 1;
}

struct fixture {
	struct suballoc sa;
	struct fake_vm vm;
};

static struct fixture *fixture_new(uint64_t quota)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(suballoc_init(&f->sa, BASE, TiB, GRANULE, quota, 0,
				       fake_map, fake_unmap, &f->vm),
			 0);
	return f;
}

static void fixture_free(struct fixture *f)
{
	suballoc_destroy(&f->sa);
	free(f);
}

static uint64_t must_alloc(struct fixture *f, uint64_t bytes, uint32_t owner)
{
	uint64_t a = 0;

	assert_int_equal(suballoc_alloc(&f->sa, bytes, owner, &a), 0);
	assert_int_equal(a % SUBALLOC_ALIGN, 0);
	assert_true(fake_covers(&f->vm, a, bytes));
	assert_int_equal(f->sa.mapped, f->vm.mapped);
	return a;
}

static void suballoc_fits_10000_small_allocations_in_64mib(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	static uint64_t addr[10000];
	int i;

	for (i = 0; i < 10000; i++) {
		addr[i] = must_alloc(f, 256, 1);
		if (i)
			assert_int_equal(addr[i], addr[i - 1] + 256);
	}
	/* 2,560,000 bytes: two granules, not 10,000 */
	assert_int_equal(f->sa.mapped, 2 * GRANULE);
	assert_int_equal(f->sa.used, 10000 * 256);
	assert_int_equal(f->vm.maps, 2);
	for (i = 0; i < 10000; i++)
		assert_int_equal(suballoc_free(&f->sa, addr[i], 1), 0);
	assert_int_equal(f->sa.mapped, 0);
	assert_int_equal(f->sa.used, 0);
	assert_int_equal(f->vm.unmaps, 2);
	assert_int_equal(f->vm.nspans, 0);
	fixture_free(f);
}

static void suballoc_rounds_sizes_to_256_bytes(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t a = must_alloc(f, 1, 1), b = must_alloc(f, 257, 1);
	uint64_t c = must_alloc(f, 1, 1);

	assert_int_equal(b, a + 256);
	assert_int_equal(c, b + 512);
	assert_int_equal(f->sa.used, 1024);
	fixture_free(f);
}

static void suballoc_reuses_freed_space(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t a = must_alloc(f, 256, 1), b = must_alloc(f, 256, 1);

	must_alloc(f, 256, 1);
	assert_int_equal(suballoc_free(&f->sa, b, 1), 0);
	assert_int_equal(must_alloc(f, 200, 1), b);
	assert_int_equal(suballoc_free(&f->sa, a, 1), 0);
	assert_int_equal(must_alloc(f, 256, 1), a);
	fixture_free(f);
}

static void suballoc_coalesces_free_neighbours(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t a = must_alloc(f, KiB, 1), b = must_alloc(f, KiB, 1);
	uint64_t c = must_alloc(f, KiB, 1);

	must_alloc(f, KiB, 1); /* keeps the hole closed above */
	assert_int_equal(suballoc_free(&f->sa, a, 1), 0);
	assert_int_equal(suballoc_free(&f->sa, c, 1), 0);
	/* two 1 KiB holes: 3 KiB does not fit yet */
	assert_int_not_equal(must_alloc(f, 3 * KiB, 1), a);
	assert_int_equal(suballoc_free(&f->sa, b, 1), 0);
	/* a, b and c merged into one 3 KiB hole */
	assert_int_equal(must_alloc(f, 3 * KiB, 1), a);
	fixture_free(f);
}

static void suballoc_aligns_large_allocations_to_granules(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t small = must_alloc(f, 256, 1);
	uint64_t big = must_alloc(f, 2 * MiB, 1);
	uint64_t odd = must_alloc(f, 3 * MiB + 256, 1);

	assert_int_equal(small, BASE);
	assert_int_equal(big, BASE + GRANULE);
	assert_int_equal(odd, BASE + 2 * GRANULE);
	/* small ones still pack into the first granule's free part */
	assert_int_equal(must_alloc(f, 256, 1), BASE + 256);
	assert_int_equal(must_alloc(f, 256, 1), BASE + 256 * 2);
	assert_int_equal(f->sa.mapped, 2 * GRANULE + 2 * GRANULE);
	fixture_free(f);
}

static void suballoc_fails_past_quota_and_leaves_no_state(void **state)
{
	struct fixture *f = fixture_new(4 * MiB);
	uint64_t a = must_alloc(f, 3 * MiB, 1), b = 0;
	int maps = f->vm.maps;

	assert_int_equal(f->sa.mapped, 4 * MiB);
	assert_int_equal(suballoc_alloc(&f->sa, 2 * MiB, 1, &b), -ENOMEM);
	assert_int_equal(suballoc_alloc(&f->sa, 5 * MiB, 1, &b), -ENOMEM);
	assert_int_equal(f->vm.maps, maps);
	assert_int_equal(f->sa.used, 3 * MiB);
	assert_int_equal(f->sa.mapped, 4 * MiB);
	/* what is left of the second granule is still usable */
	b = must_alloc(f, 1 * MiB, 1);
	assert_int_equal(b, a + 3 * MiB);
	assert_int_equal(f->vm.maps, maps);
	assert_int_equal(suballoc_alloc(&f->sa, 256, 1, &b), -ENOMEM);
	fixture_free(f);
}

static void suballoc_rolls_back_when_a_map_fails(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t a = 0;

	must_alloc(f, 256, 1);
	/* 5 MiB + 256 at granule 1: a full run and a tail; 2nd map fails */
	f->vm.fail_map_at = f->vm.maps + 2;
	assert_int_equal(suballoc_alloc(&f->sa, 5 * MiB + 256, 1, &a), 2);
	assert_int_equal(f->vm.nspans, 1);
	assert_int_equal(f->sa.mapped, GRANULE);
	assert_int_equal(f->sa.used, 256);
	assert_int_equal(f->sa.nallocs, 1);
	f->vm.fail_map_at = 0;
	assert_int_equal(must_alloc(f, 5 * MiB + 256, 1), BASE + GRANULE);
	fixture_free(f);
}

static void suballoc_rejects_zero_size_and_owner(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t a = 0;

	assert_int_equal(suballoc_alloc(&f->sa, 0, 1, &a), -EINVAL);
	assert_int_equal(suballoc_alloc(&f->sa, 256, 0, &a), -EINVAL);
	assert_int_equal(suballoc_alloc(&f->sa, 64 * MiB + 1, 1, &a), -ENOMEM);
	assert_int_equal(suballoc_alloc(&f->sa, UINT64_MAX, 1, &a), -ENOMEM);
	assert_int_equal(f->vm.maps, 0);
	fixture_free(f);
}

static void suballoc_rejects_double_free_and_interior_pointers(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t a = must_alloc(f, KiB, 1);

	must_alloc(f, KiB, 1);
	assert_int_equal(suballoc_free(&f->sa, a + 256, 1), -EINVAL);
	assert_int_equal(suballoc_free(&f->sa, 0, 1), -EINVAL);
	assert_int_equal(suballoc_free(&f->sa, BASE + TiB, 1), -EINVAL);
	assert_int_equal(suballoc_free(&f->sa, a, 1), 0);
	assert_int_equal(suballoc_free(&f->sa, a, 1), -EINVAL);
	assert_int_equal(f->sa.used, KiB);
	fixture_free(f);
}

static void suballoc_rejects_foreign_free(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t a = must_alloc(f, KiB, 1);

	assert_int_equal(suballoc_free(&f->sa, a, 2), -EPERM);
	assert_int_equal(suballoc_lookup(&f->sa, a, KiB, 1, NULL, NULL), 0);
	assert_int_equal(f->sa.used, KiB);
	assert_int_equal(suballoc_free(&f->sa, a, 1), 0);
	fixture_free(f);
}

static void suballoc_lookup_checks_range_edges(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t a = must_alloc(f, 1000, 1), start = 0, size = 0;
	uint64_t b = must_alloc(f, 256, 1);

	assert_int_equal(suballoc_lookup(&f->sa, a, 1024, 1, &start, &size), 0);
	assert_int_equal(start, a);
	assert_int_equal(size, 1024);
	assert_int_equal(suballoc_lookup(&f->sa, a + 1023, 1, 1, NULL, NULL),
			 0);
	assert_int_equal(suballoc_lookup(&f->sa, a + 512, 512, 1, NULL, NULL),
			 0);
	/* one byte into the next allocation: not inside ONE allocation */
	assert_int_equal(suballoc_lookup(&f->sa, a, 1025, 1, NULL, NULL),
			 -EINVAL);
	assert_int_equal(suballoc_lookup(&f->sa, a + 1023, 2, 1, NULL, NULL),
			 -EINVAL);
	assert_int_equal(suballoc_lookup(&f->sa, a - 1, 1, 1, NULL, NULL),
			 -EINVAL);
	assert_int_equal(suballoc_lookup(&f->sa, b + 256, 1, 1, NULL, NULL),
			 -EINVAL);
	assert_int_equal(suballoc_lookup(&f->sa, a, UINT64_MAX, 1, NULL, NULL),
			 -EINVAL);
	assert_int_equal(
		suballoc_lookup(&f->sa, a + 8, UINT64_MAX - 4, 1, NULL, NULL),
		-EINVAL);
	assert_int_equal(suballoc_lookup(&f->sa, a, 0, 1, NULL, NULL), -EINVAL);
	assert_int_equal(suballoc_lookup(&f->sa, 0, 1, 1, NULL, NULL), -EINVAL);
	assert_int_equal(suballoc_lookup(&f->sa, UINT64_MAX, 1, 1, NULL, NULL),
			 -EINVAL);
	assert_int_equal(suballoc_lookup(&f->sa, a, 16, 2, NULL, NULL), -EPERM);
	assert_int_equal(suballoc_free(&f->sa, a, 1), 0);
	assert_int_equal(suballoc_lookup(&f->sa, a, 16, 1, NULL, NULL),
			 -EINVAL);
	fixture_free(f);
}

static void suballoc_maps_a_granule_once_and_unmaps_it_when_unused(void **s)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t x = must_alloc(f, 256, 1), y = must_alloc(f, 256, 2), big;

	assert_int_equal(f->vm.maps, 1); /* both in granule 0 */
	assert_int_equal(suballoc_free(&f->sa, x, 1), 0);
	assert_int_equal(f->vm.unmaps, 0); /* y still uses it */
	assert_int_equal(suballoc_free(&f->sa, y, 2), 0);
	assert_int_equal(f->vm.unmaps, 1);
	assert_int_equal(f->sa.mapped, 0);

	x = must_alloc(f, 256, 1); /* granule 0 again */
	assert_int_equal(f->vm.maps, 2);
	/* 5 MiB: granules 1-2 in one map, granule 3 (partly) in another */
	big = must_alloc(f, 5 * MiB, 1);
	assert_int_equal(big, BASE + GRANULE);
	assert_int_equal(f->vm.maps, 4);
	assert_int_equal(f->sa.mapped, 4 * GRANULE);
	y = must_alloc(f, 2 * MiB - 256, 1); /* fills granule 0 */
	assert_int_equal(y, BASE + 256);
	assert_int_equal(f->vm.maps, 4);
	/* freeing big unmaps its own granules; granule 0 stays */
	assert_int_equal(suballoc_free(&f->sa, big, 1), 0);
	assert_int_equal(f->vm.unmaps, 3);
	assert_int_equal(f->sa.mapped, GRANULE);
	assert_true(fake_covers(&f->vm, x, 256));
	assert_int_equal(suballoc_free(&f->sa, x, 1), 0);
	assert_int_equal(suballoc_free(&f->sa, y, 1), 0);
	assert_int_equal(f->vm.nspans, 0);
	assert_int_equal(f->vm.maps, f->vm.unmaps);
	fixture_free(f);
}

static void suballoc_shares_a_partial_granule_between_neighbours(void **s)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t big = must_alloc(f, 2 * MiB + 512, 1);
	uint64_t small = must_alloc(f, 256, 2);

	/* big: granule 0 whole, granule 1 partly; small shares granule 1 */
	assert_int_equal(big, BASE);
	assert_int_equal(small, BASE + 2 * MiB + 512);
	assert_int_equal(f->vm.maps, 2);
	assert_int_equal(suballoc_free(&f->sa, big, 1), 0);
	assert_int_equal(f->sa.mapped, GRANULE);
	assert_true(fake_covers(&f->vm, small, 256));
	assert_int_equal(suballoc_free(&f->sa, small, 2), 0);
	assert_int_equal(f->sa.mapped, 0);
	fixture_free(f);
}

static void suballoc_frees_everything_of_one_owner(void **state)
{
	struct fixture *f = fixture_new(64 * MiB);
	uint64_t mine[300], theirs[300];
	int i;

	for (i = 0; i < 300; i++) {
		mine[i] = must_alloc(f, 256 + (i % 7) * 4096, 1);
		theirs[i] = must_alloc(f, 512 + (i % 5) * 8192, 2);
	}
	assert_int_equal(suballoc_free_owner(&f->sa, 1), 0);
	for (i = 0; i < 300; i++) {
		assert_int_equal(
			suballoc_lookup(&f->sa, mine[i], 1, 1, NULL, NULL),
			-EINVAL);
		assert_int_equal(
			suballoc_lookup(&f->sa, theirs[i], 1, 2, NULL, NULL),
			0);
		assert_true(fake_covers(&f->vm, theirs[i], 512));
	}
	assert_int_equal(f->sa.nallocs, 300);
	assert_int_equal(f->sa.mapped, f->vm.mapped);
	assert_int_equal(suballoc_free_owner(&f->sa, 2), 0);
	assert_int_equal(f->sa.used, 0);
	assert_int_equal(f->sa.mapped, 0);
	assert_int_equal(f->vm.nspans, 0);
	fixture_free(f);
}

static void suballoc_caps_the_number_of_allocations(void **state)
{
	struct suballoc sa;
	struct fake_vm *vm = calloc(1, sizeof(*vm));
	uint64_t a;
	int i;

	assert_int_equal(suballoc_init(&sa, BASE, TiB, GRANULE, 64 * MiB, 10,
				       fake_map, fake_unmap, vm),
			 0);
	for (i = 0; i < 10; i++)
		assert_int_equal(suballoc_alloc(&sa, 256, 1, &a), 0);
	assert_int_equal(suballoc_alloc(&sa, 256, 1, &a), -ENOMEM);
	assert_int_equal(suballoc_free_owner(&sa, 1), 0);
	suballoc_destroy(&sa);
	free(vm);
}

static void suballoc_init_rejects_bad_windows(void **state)
{
	struct suballoc sa;
	struct fake_vm vm;

	assert_int_equal(suballoc_init(&sa, BASE + 4096, TiB, GRANULE, MiB, 0,
				       fake_map, fake_unmap, &vm),
			 -EINVAL);
	assert_int_equal(suballoc_init(&sa, BASE, TiB + 4096, GRANULE, MiB, 0,
				       fake_map, fake_unmap, &vm),
			 -EINVAL);
	assert_int_equal(suballoc_init(&sa, BASE, TiB, 3 * MiB, MiB, 0,
				       fake_map, fake_unmap, &vm),
			 -EINVAL);
	assert_int_equal(suballoc_init(&sa, BASE, 0, GRANULE, MiB, 0, fake_map,
				       fake_unmap, &vm),
			 -EINVAL);
	assert_int_equal(suballoc_init(&sa, BASE, TiB, GRANULE, 0, 0, fake_map,
				       fake_unmap, &vm),
			 -EINVAL);
}

/* Random allocs and frees by three owners, checking the model each time. */
static void suballoc_random_workload_keeps_mapping_consistent(void **state)
{
	struct fixture *f = fixture_new(256 * MiB);
	struct {
		uint64_t a, n;
		uint32_t owner;
	} live[512];
	int nlive = 0, i, j, step, nallocs = 0;
	uint64_t a, n, used = 0;
	unsigned int seed = 12345;

	for (step = 0; step < 20000; step++) {
		if (nlive < 512 && (nlive == 0 || rand_r(&seed) % 3)) {
			switch (rand_r(&seed) % 4) {
			case 0:
				n = 1 + rand_r(&seed) % 512;
				break;
			case 1:
				n = 1 + rand_r(&seed) % (64 * KiB);
				break;
			case 2:
				n = 1 + rand_r(&seed) % (3 * MiB);
				break;
			default:
				n = GRANULE * (1 + rand_r(&seed) % 3);
				break;
			}
			if (suballoc_alloc(&f->sa, n, 1 + step % 3, &a))
				continue; /* quota: fine */
			live[nlive].a = a;
			live[nlive].n = n;
			live[nlive].owner = 1 + step % 3;
			nlive++;
			nallocs++;
			used += (n + 255) & ~255ull;
		} else {
			i = rand_r(&seed) % nlive;
			assert_int_equal(
				suballoc_free(&f->sa, live[i].a, live[i].owner),
				0);
			used -= (live[i].n + 255) & ~255ull;
			live[i] = live[--nlive];
		}
		assert_int_equal(f->sa.mapped, f->vm.mapped);
		assert_int_equal(f->sa.used, used);
		assert_true(f->sa.mapped <= f->sa.quota);
		if (step % 64)
			continue;
		for (i = 0; i < nlive; i++) {
			assert_true(fake_covers(&f->vm, live[i].a, live[i].n));
			assert_int_equal(
				suballoc_lookup(&f->sa, live[i].a, live[i].n,
						live[i].owner, NULL, NULL),
				0);
			for (j = i + 1; j < nlive; j++)
				assert_true(live[i].a + live[i].n <=
						    live[j].a ||
					    live[j].a + live[j].n <= live[i].a);
		}
	}
	assert_true(nallocs > 5000); /* the quota did not refuse them all */
	for (i = 1; i <= 3; i++)
		assert_int_equal(suballoc_free_owner(&f->sa, i), 0);
	assert_int_equal(f->sa.used, 0);
	assert_int_equal(f->sa.mapped, 0);
	assert_int_equal(f->vm.nspans, 0);
	/* everything merged back into one block: the whole quota fits */
	must_alloc(f, 256 * MiB, 1);
	fixture_free(f);
}

/*
 * A resume: everything unmapped behind the table's back, mapped again by
 * suballoc_map_live; then every allocation freed in an order unlike the
 * one they were made in, each unmap exactly a range mapped (fake_unmap).
 * A map failing half way leaves nothing mapped.
 */
static void suballoc_map_live_maps_what_frees_unmap(void **state)
{
	static const uint64_t sizes[] = {
		300 * KiB, 5 * MiB,	   1 * MiB, 2 * MiB,
		64,	   7 * MiB + 4096, 3 * MiB, 100,
		4 * MiB,   1536 * KiB,	   9 * MiB, 256 * KiB,
	};
	enum { N = sizeof(sizes) / sizeof(sizes[0]) };
	struct fixture *f = fixture_new(1ull << 36);
	uint64_t a[N], mapped;
	int i, fail_at;

	(void)state;
	for (i = 0; i < N; i++)
		a[i] = must_alloc(f, sizes[i], 1);
	assert_int_equal(suballoc_free(&f->sa, a[3], 1), 0); /* a hole */
	a[3] = 0;
	mapped = f->vm.mapped;
	for (fail_at = 1; fail_at <= 3; fail_at++) {
		/* suspend: the backend's memory goes, the table stays */
		assert_int_equal(
			suballoc_unmap_live(&f->sa, fake_unmap, &f->vm), 0);
		assert_int_equal(f->vm.nspans, 0);
		f->vm.maps = 0;
		f->vm.fail_map_at = fail_at;
		assert_int_equal(
			suballoc_map_live(&f->sa, fake_map, fake_unmap, &f->vm),
			2);
		assert_int_equal(f->vm.nspans, 0); /* rolled back */
		f->vm.fail_map_at = 0;
		assert_int_equal(
			suballoc_map_live(&f->sa, fake_map, fake_unmap, &f->vm),
			0);
		assert_int_equal(f->vm.mapped, mapped);
		for (i = 0; i < N; i++)
			if (a[i])
				assert_true(
					fake_covers(&f->vm, a[i], sizes[i]));
	}
	for (i = N - 1; i >= 0; i -= 2) /* odd ones from the top, then even */
		if (a[i])
			assert_int_equal(suballoc_free(&f->sa, a[i], 1), 0);
	for (i = 0; i < N; i += 2)
		if (a[i])
			assert_int_equal(suballoc_free(&f->sa, a[i], 1), 0);
	assert_int_equal(f->vm.nspans, 0);
	assert_int_equal(f->vm.mapped, 0);
	fixture_free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			suballoc_fits_10000_small_allocations_in_64mib),
		cmocka_unit_test(suballoc_rounds_sizes_to_256_bytes),
		cmocka_unit_test(suballoc_reuses_freed_space),
		cmocka_unit_test(suballoc_coalesces_free_neighbours),
		cmocka_unit_test(suballoc_aligns_large_allocations_to_granules),
		cmocka_unit_test(suballoc_fails_past_quota_and_leaves_no_state),
		cmocka_unit_test(suballoc_rolls_back_when_a_map_fails),
		cmocka_unit_test(suballoc_rejects_zero_size_and_owner),
		cmocka_unit_test(
			suballoc_rejects_double_free_and_interior_pointers),
		cmocka_unit_test(suballoc_rejects_foreign_free),
		cmocka_unit_test(suballoc_lookup_checks_range_edges),
		cmocka_unit_test(
			suballoc_maps_a_granule_once_and_unmaps_it_when_unused),
		cmocka_unit_test(
			suballoc_shares_a_partial_granule_between_neighbours),
		cmocka_unit_test(suballoc_frees_everything_of_one_owner),
		cmocka_unit_test(suballoc_caps_the_number_of_allocations),
		cmocka_unit_test(suballoc_init_rejects_bad_windows),
		cmocka_unit_test(
			suballoc_random_workload_keeps_mapping_consistent),
		cmocka_unit_test(suballoc_map_live_maps_what_frees_unmap),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
