# SPDX-License-Identifier: MIT
# bench/: slice benchmarks (run on the GPU machine by scripts/gpu-check.sh).
# raw_slice links NVIDIA's libcuda (green contexts); slice_kernel is an
# ordinary driver-API program that runs natively or on a vGPU. The rt_*
# benchmarks are runtime-API programs built with `nvcc -cudart shared`:
# NVIDIA's libcudart.so.13, natively and on a vGPU over our libcuda.so.1
# (scripts/rt-bench.sh runs both and prints the ratios).
BENCH_BINS := $(BUILD)/bench/raw_slice $(BUILD)/bench/slice_kernel \
	$(BUILD)/bench/marker_cost \
	$(BUILD)/bench/resize_stall $(BUILD)/bench/mixed_workload \
	$(BUILD)/bench/migrate

all: $(BENCH_BINS)

$(BUILD)/bench/%: bench/%.c bench/bench_common.h bench/bench_admin.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

RT_BENCH_BINS := $(BUILD)/bench/rt_launch $(BUILD)/bench/rt_copy \
	$(BUILD)/bench/rt_matmul

all: $(RT_BENCH_BINS)

$(RT_BENCH_BINS): $(BUILD)/bench/rt_%: bench/rt_%.cu bench/rt_common.h \
		tests/runtime/rt_check.h kernels/matmul_shared.cuh \
		kernels/matmul_tile.cuh | check-nvcc
	@mkdir -p $(dir $@)
	$(NVCC) -cudart shared -O2 -arch=$(CUDA_ARCH) -Ikernels -o $@ $<
