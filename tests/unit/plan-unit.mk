# SPDX-License-Identifier: MIT
# tests/unit/: the planner's unit tests (cmocka).
#   make build/tests/unit/test_plan && build/tests/unit/test_plan
#   make unit-plan        build and run them

PLAN_TEST_BIN := $(BUILD)/tests/unit/test_plan

unit-tests: $(PLAN_TEST_BIN)

$(PLAN_TEST_BIN): $(BUILD)/obj/tests/unit/test_plan.o \
		  $(BUILD)/obj/host-daemon/plan.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

$(BUILD)/obj/tests/unit/test_plan.o: tests/unit/test_plan.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<

.PHONY: unit-plan
unit-plan: $(PLAN_TEST_BIN)
	$(PLAN_TEST_BIN)
