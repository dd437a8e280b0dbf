# SPDX-License-Identifier: MIT
# bench/: slice benchmarks (run on the GPU machine by scripts/gpu-check.sh).
# raw_slice links NVIDIA's libcuda (green contexts); slice_kernel is an
# ordinary driver-API program that runs natively or on a vGPU.
BENCH_BINS := $(BUILD)/bench/raw_slice $(BUILD)/bench/slice_kernel

all: $(BENCH_BINS)

$(BUILD)/bench/%: bench/%.c bench/bench_common.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda
