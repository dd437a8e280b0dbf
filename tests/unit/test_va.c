/* SPDX-License-Identifier: MIT */
/*
 * A worker's hold on its VA window (host-daemon/va_hold.c) and the
 * backends taking it over (issue 16):
 *   - a hold that cannot be had names the address and what is there;
 *   - the sim backend opens on a held window (the hold becomes its own);
 *   - the cuda backend too, against a fake driver that, like the real
 *     one, takes a hint only where the process maps nothing: without the
 *     release the driver would put the window elsewhere;
 *   - a window something else holds fails the cuda backend's open with a
 *     sentence naming the address and the mapping.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>
#include <vgpu/va.h>

#include "backend.h"
#include "va_hold.h"

#ifndef FAKE_LIBCUDA
#define FAKE_LIBCUDA "build/tests/fake/libfakecuda.so"
#endif

/* Windows of the real range, as a worker gets them. */
#define WINDOW_A (VGPU_VA_FIRST + 3 * VGPU_VA_WINDOW)
#define WINDOW_B (VGPU_VA_FIRST + 4 * VGPU_VA_WINDOW)

/* The /proc/self/maps line that starts at base, "" when none does. */
static void maps_line_at(uint64_t base, char *out, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char want[32], line[512];

	assert_non_null(f);
	out[0] = '\0';
	snprintf(want, sizeof(want), "%llx-", (unsigned long long)base);
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, want, strlen(want)) == 0)
			snprintf(out, len, "%s", line);
	fclose(f);
}

static void config(struct vgpu_worker_config *c, uint32_t backend,
		   uint64_t base)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "va-test");
	c->backend = backend;
	c->ngroups = 1;
	c->groups[0] = 1;
	c->va_base = base;
	c->va_size = VGPU_VA_WINDOW;
	c->memory_quota = 64ull << 20;
}

static void hold_names_what_is_in_the_way(void **state)
{
	char err[512], line[512], addr[32], holder[64];
	void *page = (void *)(uintptr_t)(WINDOW_A + (8ull << 20));

	assert_ptr_equal(mmap(page, 4096, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			      -1, 0),
			 page);
	assert_int_equal(va_hold(WINDOW_A, VGPU_VA_WINDOW, err, sizeof(err)),
			 -1);
	munmap(page, 4096);
	snprintf(addr, sizeof(addr), "0x%llx ", (unsigned long long)WINDOW_A);
	snprintf(holder, sizeof(holder), "0x%llx-0x%llx rw-p",
		 (unsigned long long)(uintptr_t)page,
		 (unsigned long long)(uintptr_t)page + 4096);
	if (!strstr(err, addr) || !strstr(err, "already in use") ||
	    !strstr(err, holder))
		fail_msg("'%s' does not name %s and %s", err, addr, holder);

	assert_int_equal(va_hold(WINDOW_A, VGPU_VA_WINDOW, err, sizeof(err)),
			 0);
	maps_line_at(WINDOW_A, line, sizeof(line));
	snprintf(holder, sizeof(holder), "-%llx ---p 00000000 00:00 0",
		 (unsigned long long)(WINDOW_A + VGPU_VA_WINDOW));
	if (!strstr(line, holder))
		fail_msg("the hold shows as '%s'", line);
	/* one hold at a time, and a release elsewhere keeps it */
	assert_int_equal(va_hold(WINDOW_B, VGPU_VA_WINDOW, err, sizeof(err)),
			 -1);
	va_hold_release(WINDOW_B, VGPU_VA_WINDOW);
	maps_line_at(WINDOW_A, line, sizeof(line));
	assert_true(line[0]);
	va_hold_release(WINDOW_A, VGPU_VA_WINDOW);
	maps_line_at(WINDOW_A, line, sizeof(line));
	assert_false(line[0]);
}

static void sim_takes_over_a_held_window(void **state)
{
	const struct backend_ops *ops = &backend_sim_ops;
	struct vgpu_worker_config c;
	struct backend *b = NULL;
	char err[512] = "", line[512];

	setenv("VGPU_SIM_GPUS", "1", 1);
	setenv("VGPU_SIM_SMS", "32", 1);
	setenv("VGPU_SIM_MEMORY", "256M", 1);
	config(&c, VGPU_BACKEND_SIM, WINDOW_A);
	assert_int_equal(va_hold(WINDOW_A, VGPU_VA_WINDOW, err, sizeof(err)),
			 0);
	if (ops->open(&b, &c, err, sizeof(err)))
		fail_msg("sim open on a held window: %s", err);
	assert_int_equal(ops->mem_map(b, WINDOW_A, 2ull << 20), 0);
	*(volatile uint32_t *)(uintptr_t)WINDOW_A = 7; /* really there */
	maps_line_at(WINDOW_A, line, sizeof(line));
	assert_non_null(strstr(line, "rw-p"));
	ops->mem_unmap(b, WINDOW_A, 2ull << 20);
	ops->close(b);
	maps_line_at(WINDOW_A, line, sizeof(line));
	assert_false(line[0]);
}

static void cuda_takes_over_a_held_window(void **state)
{
	const struct backend_ops *ops = &backend_cuda_ops;
	struct vgpu_worker_config c;
	struct backend *b = NULL;
	char err[512] = "";

	setenv("VGPU_REAL_LIBCUDA", FAKE_LIBCUDA, 1);
	config(&c, VGPU_BACKEND_CUDA, WINDOW_B);
	assert_int_equal(va_hold(WINDOW_B, VGPU_VA_WINDOW, err, sizeof(err)),
			 0);
	if (ops->open(&b, &c, err, sizeof(err)))
		fail_msg("cuda open on a held window: %s", err);
	assert_int_equal(ops->mem_map(b, WINDOW_B, 2ull << 20), 0);
	ops->mem_unmap(b, WINDOW_B, 2ull << 20);
	ops->close(b);
}

static void cuda_names_what_holds_a_taken_window(void **state)
{
	const struct backend_ops *ops = &backend_cuda_ops;
	struct vgpu_worker_config c;
	struct backend *b = NULL;
	char err[512] = "", addr[32], holder[64];
	void *page = (void *)(uintptr_t)(WINDOW_B + VGPU_VA_WINDOW - 4096);

	setenv("VGPU_REAL_LIBCUDA", FAKE_LIBCUDA, 1);
	config(&c, VGPU_BACKEND_CUDA, WINDOW_B);
	assert_ptr_equal(mmap(page, 4096, PROT_READ,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			      -1, 0),
			 page);
	assert_int_not_equal(ops->open(&b, &c, err, sizeof(err)), 0);
	assert_null(b);
	munmap(page, 4096);
	snprintf(addr, sizeof(addr), "0x%llx ", (unsigned long long)WINDOW_B);
	snprintf(holder, sizeof(holder), "0x%llx-0x%llx r--p",
		 (unsigned long long)(uintptr_t)page,
		 (unsigned long long)(uintptr_t)page + 4096);
	if (!strstr(err, addr) || !strstr(err, holder))
		fail_msg("'%s' does not name %s and %s", err, addr, holder);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(hold_names_what_is_in_the_way),
		cmocka_unit_test(sim_takes_over_a_held_window),
		cmocka_unit_test(cuda_takes_over_a_held_window),
		cmocka_unit_test(cuda_names_what_holds_a_taken_window),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
