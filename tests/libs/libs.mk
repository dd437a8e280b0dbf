# SPDX-License-Identifier: MIT
# tests/libs/: programs that use CUDA's libraries (cuBLAS, cuFFT, cuRAND)
# the way their documentation shows, built with nvcc's default and linked
# against the toolkit's libraries (tests/integration/cuda_libs.sh).

LIBS_TEST_PROGRAMS := $(BUILD)/tests/libs/libs_handles

all: $(LIBS_TEST_PROGRAMS)

$(BUILD)/tests/libs/%: tests/libs/%.cu | check-nvcc
	@mkdir -p $(@D)
	$(NVCC) -O2 -arch=$(CUDA_ARCH) -o $@ $< -lcublas -lcufft -lcurand
