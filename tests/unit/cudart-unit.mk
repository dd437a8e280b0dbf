# SPDX-License-Identifier: MIT
# tests/unit/: the runtime library's pure pieces (cmocka): the error table
# and last-error rules, the launch configuration stack, the registration
# bookkeeping; no vgpud, no libcuda calls.
#   make unit-cudart            build and run them
#   make unit-cudart-valgrind   the same under valgrind --leak-check=full

CUDART_TESTS := test_cudart_error test_cudart_callcfg test_cudart_registry
CUDART_TEST_BINS := $(CUDART_TESTS:%=$(BUILD)/tests/unit/%)
CUDART_ERROR_OBJS := $(BUILD)/obj/guest-driver/lib/cudart_error.o \
	$(BUILD)/obj/guest-driver/lib/cudart_error_table.o

unit-tests: $(CUDART_TEST_BINS)

$(BUILD)/tests/unit/test_cudart_error: \
		$(BUILD)/obj/tests/unit/test_cudart_error.o $(CUDART_ERROR_OBJS)
$(BUILD)/tests/unit/test_cudart_callcfg: \
		$(BUILD)/obj/tests/unit/test_cudart_callcfg.o \
		$(BUILD)/obj/guest-driver/lib/cudart_callcfg.o \
		$(CUDART_ERROR_OBJS)
$(BUILD)/tests/unit/test_cudart_registry: \
		$(BUILD)/obj/tests/unit/test_cudart_registry.o \
		$(BUILD)/obj/guest-driver/lib/cudart_registry.o

$(CUDART_TEST_BINS):
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -pthread

$(CUDART_TESTS:%=$(BUILD)/obj/tests/unit/%.o): \
		$(BUILD)/obj/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Iguest-driver/lib $(CFLAGS) -c -o $@ $<

.PHONY: unit-cudart unit-cudart-valgrind
unit-cudart: $(CUDART_TEST_BINS)
	@for t in $(CUDART_TEST_BINS); do $$t || exit 1; done

unit-cudart-valgrind: $(CUDART_TEST_BINS)
	@for t in $(CUDART_TEST_BINS); do \
		valgrind -q --leak-check=full --error-exitcode=1 $$t || exit 1; \
	done
