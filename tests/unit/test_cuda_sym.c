/* SPDX-License-Identifier: MIT */
/*
 * The worker loads NVIDIA's driver by its path, never by soname search
 * (issue 17): a relative VGPU_REAL_LIBCUDA is refused, so is vgpu's own
 * libcuda.so.1 (even by path), and with no driver in the places vgpu knows
 * the error says where it looked (no soname search that vgpu's library
 * on a library path could answer). A driver given by its path loads (the
 * fake one of extent-unit.mk).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cuda_sym.h"

static void relative_paths_are_refused(void **state)
{
	struct cuda_sym cs;
	char err[512] = "";

	setenv("VGPU_REAL_LIBCUDA", "libcuda.so.1", 1);
	assert_int_not_equal(cuda_sym_load(&cs, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "not an absolute path"));
}

static void vgpus_own_library_is_refused(void **state)
{
	struct cuda_sym cs;
	char err[512] = "";

	setenv("VGPU_REAL_LIBCUDA", OUR_LIBCUDA, 1);
	assert_int_not_equal(cuda_sym_load(&cs, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "vgpu's own guest library"));
}

static void no_driver_says_where_it_looked(void **state)
{
	struct cuda_sym cs;
	char err[512] = "";

	if (access("/usr/lib/x86_64-linux-gnu/libcuda.so.1", F_OK) == 0 ||
	    access("/usr/local/nvidia/lib64/libcuda.so.1", F_OK) == 0)
		skip(); /* a machine with NVIDIA's driver */
	unsetenv("VGPU_REAL_LIBCUDA");
	assert_int_not_equal(cuda_sym_load(&cs, err, sizeof(err)), 0);
	assert_non_null(strstr(err, "no NVIDIA driver library"));
	assert_non_null(strstr(err, "VGPU_REAL_LIBCUDA"));
}

static void a_driver_by_its_path_loads(void **state)
{
	struct cuda_sym cs;
	char err[512] = "";

	setenv("VGPU_REAL_LIBCUDA", FAKE_LIBCUDA, 1);
	assert_int_equal(cuda_sym_load(&cs, err, sizeof(err)), 0);
	assert_non_null(cs.cuInit);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(relative_paths_are_refused),
		cmocka_unit_test(vgpus_own_library_is_refused),
		cmocka_unit_test(no_driver_says_where_it_looked),
		cmocka_unit_test(a_driver_by_its_path_loads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
