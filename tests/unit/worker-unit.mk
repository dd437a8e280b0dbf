# SPDX-License-Identifier: MIT
# tests/unit/: unit tests of vgpu-worker's core (cmocka): the ring helpers,
# the memory sub-allocator and descriptor validation/execution against a
# stub backend (no real backend is linked).
#   make unit-worker           build and run them
#   make unit-worker-valgrind  the same under valgrind --leak-check=full

WORKER_TESTS    := test_ring test_suballoc test_worker_validate
WORKER_TEST_BIN := $(addprefix $(BUILD)/tests/unit/,$(WORKER_TESTS))
WORKER_TEST_OBJ_DIR := $(BUILD)/obj/tests/unit

unit-tests: $(WORKER_TEST_BIN)

$(BUILD)/tests/unit/test_ring: $(WORKER_TEST_OBJ_DIR)/test_ring.o
$(BUILD)/tests/unit/test_suballoc: $(WORKER_TEST_OBJ_DIR)/test_suballoc.o \
	$(BUILD)/obj/host-daemon/mem_suballoc.o
$(BUILD)/tests/unit/test_worker_validate: \
	$(WORKER_TEST_OBJ_DIR)/test_worker_validate.o $(WORKER_CORE_OBJS) \
	$(WORKER_OBJ_DIR)/env_number.o

$(WORKER_TEST_BIN):
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -pthread

$(WORKER_TESTS:%=$(WORKER_TEST_OBJ_DIR)/%.o): $(WORKER_TEST_OBJ_DIR)/%.o: \
		tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<

.PHONY: unit-worker unit-worker-valgrind
unit-worker: $(WORKER_TEST_BIN)
	@for t in $(WORKER_TEST_BIN); do $$t || exit 1; done

unit-worker-valgrind: $(WORKER_TEST_BIN)
	@for t in $(WORKER_TEST_BIN); do \
		valgrind -q --leak-check=full --error-exitcode=1 $$t || exit 1; \
	done
