# SPDX-License-Identifier: MIT
# tests/unit/: a worker's hold on its VA window and both backends taking
# it over (cmocka; the cuda backend against the fake driver of
# extent-unit.mk, which defines FAKE_LIBCUDA).
#   make unit-va        build and run them

VA_TEST_BIN := $(BUILD)/tests/unit/test_va

unit-tests: $(VA_TEST_BIN)

$(VA_TEST_BIN): $(BUILD)/obj/tests/unit/test_va.o $(BACKEND_OBJS) \
		$(SIM_KERNEL_OBJS) | $(FAKE_LIBCUDA)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(BACKEND_LIBS) -lcmocka -lm

$(BUILD)/obj/tests/unit/test_va.o: tests/unit/test_va.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) \
		-DFAKE_LIBCUDA='"$(abspath $(FAKE_LIBCUDA))"' -c -o $@ $<

.PHONY: unit-va
unit-va: $(VA_TEST_BIN)
	$(VA_TEST_BIN)

# tests/unit/test_cuda_sym.c: how the worker finds NVIDIA's driver.
CUDA_SYM_TEST_BIN := $(BUILD)/tests/unit/test_cuda_sym

unit-tests: $(CUDA_SYM_TEST_BIN)

$(CUDA_SYM_TEST_BIN): $(BUILD)/obj/tests/unit/test_cuda_sym.o \
		$(BUILD)/obj/host-daemon/cuda_sym.o | $(FAKE_LIBCUDA) \
		$(BUILD)/lib/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) -lcmocka -ldl

$(BUILD)/obj/tests/unit/test_cuda_sym.o: tests/unit/test_cuda_sym.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) \
		-DFAKE_LIBCUDA='"$(abspath $(FAKE_LIBCUDA))"' \
		-DOUR_LIBCUDA='"$(abspath $(BUILD)/lib/libcuda.so.1)"' -c -o $@ $<
