# SPDX-License-Identifier: MIT
# tests/unit/: the scheduler's unit tests (cmocka): the policies as pure
# logic (host-daemon/plan_policy.c) and regular bursts (plan_burst.c).
#   make unit-sched           build and run them
#   make unit-sched-valgrind  the same under valgrind --leak-check=full

SCHED_TEST_BINS := $(BUILD)/tests/unit/test_plan_policy \
	$(BUILD)/tests/unit/test_plan_burst

unit-tests: $(SCHED_TEST_BINS)

$(BUILD)/tests/unit/test_plan_policy: \
		$(BUILD)/obj/tests/unit/test_plan_policy.o \
		$(BUILD)/obj/host-daemon/plan_policy.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

$(BUILD)/tests/unit/test_plan_burst: \
		$(BUILD)/obj/tests/unit/test_plan_burst.o \
		$(BUILD)/obj/host-daemon/plan_burst.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

$(BUILD)/obj/tests/unit/test_plan_policy.o \
$(BUILD)/obj/tests/unit/test_plan_burst.o: \
		$(BUILD)/obj/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<

.PHONY: unit-sched unit-sched-valgrind
unit-sched: $(SCHED_TEST_BINS)
	@for t in $(SCHED_TEST_BINS); do $$t || exit 1; done

unit-sched-valgrind: $(SCHED_TEST_BINS)
	@for t in $(SCHED_TEST_BINS); do \
		valgrind -q --leak-check=full --error-exitcode=1 $$t || exit 1; \
	done
