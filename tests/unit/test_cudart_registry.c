/* SPDX-License-Identifier: MIT */
/*
 * Registration bookkeeping: kernels and variables are found by their host
 * address, a second registration of the same address keeps the first,
 * a bad fatbin wrapper is remembered as having no image,
 * unregistering a fatbin drops exactly its entries, and a reset forgets
 * what loading made but keeps every registration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "cudart_registry.h"

static const char image1[16], image2[16];
static struct cudart_fatbin_wrapper wrap1 = {CUDART_FATBIN_MAGIC, 1, image1,
					     NULL};
static struct cudart_fatbin_wrapper wrap2 = {CUDART_FATBIN_MAGIC, 1, image2,
					     NULL};
static int stub_a, stub_b, stub_c, var_x, var_y;

static void registry_finds_kernels_and_variables_by_host_address(void **state)
{
	struct cudart_registry r;
	struct cudart_fatbin *fb;
	struct cudart_func *f;
	struct cudart_var *v;

	(void)state;
	cudart_registry_init(&r);
	fb = cudart_registry_add_fatbin(&r, &wrap1);
	assert_non_null(fb);
	assert_ptr_equal(fb->image, image1);
	assert_int_equal(cudart_registry_add_func(&r, fb, &stub_a, "vecAdd"),
			 0);
	assert_int_equal(cudart_registry_add_func(&r, fb, &stub_b,
						  "_Z5scaleIfEvPT_S0_i"),
			 0);
	assert_int_equal(cudart_registry_add_var(&r, fb, &var_x, "coef", 16, 1),
			 0);
	f = cudart_registry_func(&r, &stub_b);
	assert_non_null(f);
	assert_string_equal(f->name, "_Z5scaleIfEvPT_S0_i");
	assert_int_equal(f->magic, CUDART_FUNC_MAGIC);
	assert_ptr_equal(f->fb, fb);
	assert_null(f->kernel);
	v = cudart_registry_var(&r, &var_x);
	assert_non_null(v);
	assert_string_equal(v->name, "coef");
	assert_int_equal(v->size, 16);
	assert_int_equal(v->constant, 1);
	assert_null(cudart_registry_func(&r, &stub_c));
	assert_null(cudart_registry_var(&r, &var_y));
	cudart_registry_fini(&r);
}

static void registry_keeps_the_first_registration(void **state)
{
	struct cudart_registry r;
	struct cudart_fatbin *fb1, *fb2;

	(void)state;
	cudart_registry_init(&r);
	fb1 = cudart_registry_add_fatbin(&r, &wrap1);
	fb2 = cudart_registry_add_fatbin(&r, &wrap2);
	assert_int_equal(cudart_registry_add_func(&r, fb1, &stub_a, "k"), 0);
	assert_int_equal(cudart_registry_add_func(&r, fb2, &stub_a, "k"), 0);
	assert_ptr_equal(cudart_registry_func(&r, &stub_a)->fb, fb1);
	cudart_registry_fini(&r);
}

static void registry_rejects_bad_registrations(void **state)
{
	struct cudart_registry r;
	struct cudart_fatbin *fb, bogus = {0};
	struct cudart_fatbin_wrapper bad = {0x1234, 1, image1, NULL};

	(void)state;
	cudart_registry_init(&r);
	fb = cudart_registry_add_fatbin(&r, &bad);
	assert_non_null(fb);
	assert_null(fb->image);
	assert_int_equal(cudart_registry_add_func(&r, NULL, &stub_a, "k"), -1);
	assert_int_equal(cudart_registry_add_func(&r, &bogus, &stub_a, "k"),
			 -1);
	assert_int_equal(cudart_registry_add_func(&r, fb, &stub_a, ""), -1);
	assert_int_equal(cudart_registry_add_func(&r, fb, NULL, "k"), -1);
	assert_int_equal(cudart_registry_add_var(&r, fb, &var_x, NULL, 4, 0),
			 -1);
	assert_false(cudart_registry_has_fatbin(&r, &bogus));
	assert_true(cudart_registry_has_fatbin(&r, fb));
	cudart_registry_fini(&r);
}

static void unregistering_a_fatbin_drops_only_its_entries(void **state)
{
	struct cudart_registry r;
	struct cudart_fatbin *fb1, *fb2;
	CUlibrary lib;
	int loaded = -1;

	(void)state;
	cudart_registry_init(&r);
	fb1 = cudart_registry_add_fatbin(&r, &wrap1);
	fb2 = cudart_registry_add_fatbin(&r, &wrap2);
	cudart_registry_add_func(&r, fb1, &stub_a, "a");
	cudart_registry_add_func(&r, fb2, &stub_b, "b");
	cudart_registry_add_var(&r, fb1, &var_x, "x", 4, 0);
	cudart_registry_add_var(&r, fb2, &var_y, "y", 8, 0);
	assert_int_equal(cudart_registry_remove_fatbin(&r, fb1, &lib, &loaded),
			 0);
	assert_int_equal(loaded, 0);
	assert_null(cudart_registry_func(&r, &stub_a));
	assert_null(cudart_registry_var(&r, &var_x));
	assert_non_null(cudart_registry_func(&r, &stub_b));
	assert_non_null(cudart_registry_var(&r, &var_y));
	assert_int_equal(cudart_registry_remove_fatbin(&r, fb1, &lib, &loaded),
			 -1);
	cudart_registry_fini(&r);
}

/* cudaDeviceReset: what loading made is forgotten, registrations stay. */
static void forgetting_loads_keeps_the_registrations(void **state)
{
	struct cudart_registry r;
	struct cudart_fatbin *fb;
	struct cudart_func *f;
	struct cudart_var *v;

	(void)state;
	cudart_registry_init(&r);
	fb = cudart_registry_add_fatbin(&r, &wrap1);
	cudart_registry_add_func(&r, fb, &stub_a, "a");
	cudart_registry_add_var(&r, fb, &var_x, "x", 4, 0);
	f = cudart_registry_func(&r, &stub_a);
	v = cudart_registry_var(&r, &var_x);
	/* as cudart_module.c leaves them after a first use */
	fb->loaded = 1;
	fb->lib = (CUlibrary)0x1000;
	f->kernel = (CUkernel)0x2000;
	v->resolved = 1;
	v->dptr = 0x3000;
	v->bytes = 4;

	cudart_registry_forget_loaded(&r);
	assert_int_equal(fb->loaded, 0);
	assert_null(fb->lib);
	assert_null(f->kernel);
	assert_int_equal(v->resolved, 0);
	assert_int_equal(v->dptr, 0);
	assert_ptr_equal(cudart_registry_func(&r, &stub_a), f);
	assert_ptr_equal(cudart_registry_var(&r, &var_x), v);
	assert_ptr_equal(fb->image, image1);
	assert_int_equal(f->magic, CUDART_FUNC_MAGIC);
	cudart_registry_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			registry_finds_kernels_and_variables_by_host_address),
		cmocka_unit_test(registry_keeps_the_first_registration),
		cmocka_unit_test(registry_rejects_bad_registrations),
		cmocka_unit_test(unregistering_a_fatbin_drops_only_its_entries),
		cmocka_unit_test(forgetting_loads_keeps_the_registrations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
