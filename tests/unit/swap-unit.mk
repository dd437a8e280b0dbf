# SPDX-License-Identifier: MIT
# tests/unit/: the swap victim choice's unit tests (cmocka,
# host-daemon/plan_swap.c).
#   make unit-swap            build and run them

SWAP_TEST_BIN := $(BUILD)/tests/unit/test_plan_swap

unit-tests: $(SWAP_TEST_BIN)

$(SWAP_TEST_BIN): $(BUILD)/obj/tests/unit/test_plan_swap.o \
		  $(BUILD)/obj/host-daemon/plan.o \
		  $(BUILD)/obj/host-daemon/plan_move.o \
		  $(BUILD)/obj/host-daemon/plan_swap.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

$(BUILD)/obj/tests/unit/test_plan_swap.o: tests/unit/test_plan_swap.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<

.PHONY: unit-swap
unit-swap: $(SWAP_TEST_BIN)
	$(SWAP_TEST_BIN)
