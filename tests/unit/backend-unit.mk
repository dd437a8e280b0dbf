# SPDX-License-Identifier: MIT
# tests/unit/: the sim backend's unit tests (cmocka), on the real cubins.
#   make build/tests/unit/test_backend_sim && build/tests/unit/test_backend_sim
#   make unit-backend           build and run them
#   make unit-backend-valgrind  the same under valgrind --leak-check=full

BACKEND_TEST_BIN := $(BUILD)/tests/unit/test_backend_sim

unit-tests: $(BACKEND_TEST_BIN)

# The cubins are read at run time from VGPU_KERNEL_DIR (default: here).
$(BACKEND_TEST_BIN): $(BUILD)/obj/tests/unit/test_backend_sim.o \
		     $(BACKEND_OBJS) $(SIM_KERNEL_OBJS) | $(KERNEL_CUBINS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(BACKEND_LIBS) -lcmocka -lm

$(BUILD)/obj/tests/unit/test_backend_sim.o: tests/unit/test_backend_sim.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) \
		-DVGPU_KERNEL_DIR='"$(abspath $(BUILD)/kernels)"' -c -o $@ $<

.PHONY: unit-backend unit-backend-valgrind
unit-backend: $(BACKEND_TEST_BIN) $(KERNEL_CUBINS)
	$(BACKEND_TEST_BIN)

unit-backend-valgrind: $(BACKEND_TEST_BIN) $(KERNEL_CUBINS)
	valgrind --leak-check=full --error-exitcode=1 --trace-children=no \
		$(BACKEND_TEST_BIN)

# sim_image (the simulator's reader of cubins, PTX and fatbins), on the
# same cubins.
SIM_IMAGE_TEST_BIN := $(BUILD)/tests/unit/test_sim_image

unit-tests: $(SIM_IMAGE_TEST_BIN)

$(SIM_IMAGE_TEST_BIN): $(BUILD)/obj/tests/unit/test_sim_image.o \
		       $(BUILD)/obj/host-daemon/sim_image.o \
		       $(BUILD)/obj/host-daemon/sim_image_ptx.o | $(KERNEL_CUBINS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(UNPACK_LIBS) -lcmocka

$(BUILD)/obj/tests/unit/test_sim_image.o: tests/unit/test_sim_image.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) \
		-DVGPU_KERNEL_DIR='"$(abspath $(BUILD)/kernels)"' -c -o $@ $<
