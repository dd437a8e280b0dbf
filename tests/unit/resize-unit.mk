# SPDX-License-Identifier: MIT
# tests/unit/: dynamic partitioning's unit tests (cmocka): the planner's
# resize rules and the sim backend's resize (order kept, bad ones refused,
# busy time).
#   make unit-resize           build and run them
#   make unit-resize-valgrind  the same under valgrind --leak-check=full

RESIZE_TEST_BINS := $(BUILD)/tests/unit/test_plan_resize \
	$(BUILD)/tests/unit/test_sim_resize

unit-tests: $(RESIZE_TEST_BINS)

$(BUILD)/tests/unit/test_plan_resize: \
		$(BUILD)/obj/tests/unit/test_plan_resize.o \
		$(BUILD)/obj/host-daemon/plan.o \
		$(BUILD)/obj/host-daemon/plan_resize.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lcmocka

# The cubins are read at run time from VGPU_KERNEL_DIR (default: here).
$(BUILD)/tests/unit/test_sim_resize: \
		$(BUILD)/obj/tests/unit/test_sim_resize.o \
		$(BACKEND_OBJS) $(SIM_KERNEL_OBJS) | $(KERNEL_CUBINS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(BACKEND_LIBS) -lcmocka -lm

$(BUILD)/obj/tests/unit/test_plan_resize.o \
$(BUILD)/obj/tests/unit/test_sim_resize.o: \
		$(BUILD)/obj/tests/unit/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon -Ikernels $(CFLAGS) \
		-DVGPU_KERNEL_DIR='"$(abspath $(BUILD)/kernels)"' -c -o $@ $<

.PHONY: unit-resize unit-resize-valgrind
unit-resize: $(RESIZE_TEST_BINS)
	@for t in $(RESIZE_TEST_BINS); do $$t || exit 1; done

unit-resize-valgrind: $(RESIZE_TEST_BINS)
	@for t in $(RESIZE_TEST_BINS); do \
		valgrind -q --leak-check=full --error-exitcode=1 $$t || exit 1; \
	done
