# SPDX-License-Identifier: MIT
# tests/unit/: the guest library's unit tests (cmocka), linked with the
# library's objects; no vgpud needed. Under valgrind, threads that live
# as long as the process are suppressed (valgrind-client.supp); make test
# runs them so in tests/integration/valgrind.sh.
#   make unit-client            build and run them
#   make unit-client-valgrind   the same under valgrind --leak-check=full

CLIENT_TESTS := test_client_data test_client_params test_client_error \
	test_client_registry test_client_image test_client_ring \
	test_client_api test_client_memcpy test_client_alloc_table
CLIENT_TEST_BINS := $(CLIENT_TESTS:%=$(BUILD)/tests/unit/%)

unit-tests: $(CLIENT_TEST_BINS)

$(CLIENT_TEST_BINS): $(BUILD)/tests/unit/%: $(BUILD)/obj/tests/unit/%.o \
		     $(CLIENT_LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -pthread

$(CLIENT_TESTS:%=$(BUILD)/obj/tests/unit/%.o): \
		$(BUILD)/obj/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Iguest-driver/lib $(CFLAGS) -c -o $@ $<

.PHONY: unit-client unit-client-valgrind
unit-client: $(CLIENT_TEST_BINS)
	@for t in $(CLIENT_TEST_BINS); do $$t || exit 1; done

unit-client-valgrind: $(CLIENT_TEST_BINS)
	@for t in $(CLIENT_TEST_BINS); do \
		valgrind -q --leak-check=full --error-exitcode=1 \
			--suppressions=tests/unit/valgrind-client.supp \
			--trace-children=no --child-silent-after-fork=yes \
			$$t || exit 1; done
