# SPDX-License-Identifier: MIT
# tests/unit/: save/restore's unit tests (cmocka): the state file format
# and CRC32C (host-daemon/state_file.c), the planner's suspend, resume and
# migration rules (host-daemon/plan_move.c).
#   make unit-state           build and run them
#   make unit-state-valgrind  the same under valgrind --leak-check=full

STATE_TEST_BINS := $(BUILD)/tests/unit/test_state_file \
	$(BUILD)/tests/unit/test_plan_move

unit-tests: $(STATE_TEST_BINS)

$(BUILD)/tests/unit/test_state_file: \
		$(BUILD)/obj/tests/unit/test_state_file.o \
		$(BUILD)/obj/host-daemon/state_file.o \
		$(BUILD)/obj/host-daemon/crc32c.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka -pthread

$(BUILD)/tests/unit/test_plan_move: \
		$(BUILD)/obj/tests/unit/test_plan_move.o \
		$(BUILD)/obj/host-daemon/plan.o \
		$(BUILD)/obj/host-daemon/plan_move.o \
		$(BUILD)/obj/host-daemon/mem_suballoc.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

$(BUILD)/obj/tests/unit/test_state_file.o \
$(BUILD)/obj/tests/unit/test_plan_move.o: \
		$(BUILD)/obj/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<

.PHONY: unit-state unit-state-valgrind
unit-state: $(STATE_TEST_BINS)
	@for t in $(STATE_TEST_BINS); do $$t || exit 1; done

unit-state-valgrind: $(STATE_TEST_BINS)
	@for t in $(STATE_TEST_BINS); do \
		valgrind -q --leak-check=full --error-exitcode=1 $$t || exit 1; \
	done
