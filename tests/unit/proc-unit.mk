# SPDX-License-Identifier: MIT
# tests/unit/test_cuda_proc.c: libcuda.so.1's entry-point surface
# (cuGetProcAddress against NVIDIA's measured answers, the generated
# stubs). Linked against the built library itself, so dladdr names the
# exported function each answer is; reads the map, the inventory and
# the generated stub list from where the build keeps them.
#   make unit-proc      build and run it

PROC_TEST_BIN := $(BUILD)/tests/unit/test_cuda_proc
PROC_TEST_OBJ := $(BUILD)/obj/tests/unit/test_cuda_proc.o

unit-tests: $(PROC_TEST_BIN)

$(PROC_TEST_OBJ): tests/unit/test_cuda_proc.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) \
		-DPROCMAP='"$(abspath $(PROCMAP))"' \
		-DINVENTORY='"$(abspath tests/trace/inventory-cuda13.txt)"' \
		-DSTUBS_SRC='"$(abspath $(CUDA_STUBS_SRC))"' -c -o $@ $<

$(PROC_TEST_BIN): $(PROC_TEST_OBJ) $(BUILD)/lib/libcuda.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(PROC_TEST_OBJ) -L$(BUILD)/lib -lcuda \
		-Wl,-rpath,$(abspath $(BUILD)/lib) -lcmocka -ldl -pthread

.PHONY: unit-proc
unit-proc: $(PROC_TEST_BIN)
	$(PROC_TEST_BIN)

# tests/unit/test_cuda_export.c: the export tables (cuda_export.c), linked
# against the built library.
EXPORT_TEST_BIN := $(BUILD)/tests/unit/test_cuda_export
EXPORT_TEST_OBJ := $(BUILD)/obj/tests/unit/test_cuda_export.o

unit-tests: $(EXPORT_TEST_BIN)

$(EXPORT_TEST_OBJ): tests/unit/test_cuda_export.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(EXPORT_TEST_BIN): $(EXPORT_TEST_OBJ) $(BUILD)/lib/libcuda.so
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $(EXPORT_TEST_OBJ) -L$(BUILD)/lib -lcuda \
		-Wl,-rpath,$(abspath $(BUILD)/lib) -lcmocka -pthread
