# SPDX-License-Identifier: MIT
# tests/libs/: programs that use CUDA's libraries (cuBLAS, cuFFT, cuRAND)
# the way their documentation shows, built with nvcc's default and linked
# against the toolkit's libraries (tests/integration/cuda_libs.sh; what they
# compute, on the GPU: scripts/nvrt-check.sh).

LIBS_TEST_PROGRAMS := $(BUILD)/tests/libs/libs_handles \
	$(BUILD)/tests/libs/cublas_handle $(BUILD)/tests/libs/libs_compute

all: $(LIBS_TEST_PROGRAMS)

$(BUILD)/tests/libs/libs_handles: LIBS_LDLIBS := -lcublas -lcufft -lcurand
$(BUILD)/tests/libs/cublas_handle: LIBS_LDLIBS := -lcublas
$(BUILD)/tests/libs/libs_compute: LIBS_LDLIBS := -lcublas -lcufft -lcurand

$(BUILD)/tests/libs/%: tests/libs/%.cu | check-nvcc
	@mkdir -p $(@D)
	$(NVCC) -O2 -arch=$(CUDA_ARCH) -o $@ $< $(LIBS_LDLIBS)
