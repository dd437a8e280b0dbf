/* SPDX-License-Identifier: MIT */
/*
 * The guest library's handle registry: a live handle of the right type
 * is found, anything else (garbage, stale, wrong type) is not, and an
 * object is freed only when its last reference goes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "client_registry.h"

static int released;

static void obj_release(struct client_obj *o)
{
	released++;
	free(o);
}

static struct client_obj *obj_new(uint32_t type)
{
	struct client_obj *o = calloc(1, sizeof(*o));

	assert_non_null(o);
	o->type = type;
	o->release = obj_release;
	return o;
}

static void registry_finds_live_handles_only(void **state)
{
	struct client_registry reg;
	struct client_obj *s = obj_new(CLIENT_OBJ_STREAM), *o;

	(void)state;
	released = 0;
	assert_int_equal(client_registry_init(&reg), 0);
	assert_int_equal(client_registry_add(&reg, s), 0);
	o = client_registry_get(&reg, s, CLIENT_OBJ_STREAM);
	assert_ptr_equal(o, s);
	client_obj_put(&reg, o);
	assert_null(client_registry_get(&reg, s, CLIENT_OBJ_EVENT));
	assert_null(client_registry_get(&reg, (void *)(uintptr_t)0xdeadbeef,
					CLIENT_OBJ_STREAM));
	assert_null(client_registry_get(&reg, NULL, CLIENT_OBJ_STREAM));
	assert_null(client_registry_take(&reg, s, CLIENT_OBJ_EVENT));
	o = client_registry_take(&reg, s, CLIENT_OBJ_STREAM);
	assert_ptr_equal(o, s);
	assert_null(client_registry_get(&reg, s, CLIENT_OBJ_STREAM));
	assert_int_equal(released, 0);
	client_obj_put(&reg, o);
	assert_int_equal(released, 1);
	client_registry_fini(&reg);
}

static void registry_keeps_a_held_object_until_put(void **state)
{
	struct client_registry reg;
	struct client_obj *e = obj_new(CLIENT_OBJ_EVENT), *held, *o;

	(void)state;
	released = 0;
	assert_int_equal(client_registry_init(&reg), 0);
	assert_int_equal(client_registry_add(&reg, e), 0);
	held = client_registry_get(&reg, e, CLIENT_OBJ_EVENT);
	o = client_registry_take(&reg, e, CLIENT_OBJ_EVENT);
	client_obj_put(&reg, o);
	assert_int_equal(released, 0);
	client_obj_put(&reg, held);
	assert_int_equal(released, 1);
	client_registry_fini(&reg);
}

/* Many objects: growth and deletions keep every other one findable. */
static void registry_survives_growth_and_deletion(void **state)
{
	enum { N = 5000 };
	static struct client_obj *objs[N];
	struct client_registry reg;
	struct client_obj *o;

	(void)state;
	released = 0;
	assert_int_equal(client_registry_init(&reg), 0);
	for (int i = 0; i < N; i++) {
		objs[i] = obj_new(CLIENT_OBJ_KERNEL);
		assert_int_equal(client_registry_add(&reg, objs[i]), 0);
	}
	for (int i = 0; i < N; i += 3) {
		o = client_registry_take(&reg, objs[i], CLIENT_OBJ_KERNEL);
		assert_ptr_equal(o, objs[i]);
		client_obj_put(&reg, o);
	}
	for (int i = 0; i < N; i++) {
		o = client_registry_get(&reg, objs[i], CLIENT_OBJ_KERNEL);
		if (i % 3 == 0) {
			assert_null(o);
		} else {
			assert_ptr_equal(o, objs[i]);
			client_obj_put(&reg, o);
		}
	}
	client_registry_fini(&reg);
	assert_int_equal(released, N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(registry_finds_live_handles_only),
		cmocka_unit_test(registry_keeps_a_held_object_until_put),
		cmocka_unit_test(registry_survives_growth_and_deletion),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
