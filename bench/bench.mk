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

# lib_bench: CUDA's libraries (cuBLAS, cuFFT, cuDNN) timed natively on a
# raw green context and on a vGPU (scripts/lib-bench.sh), built with nvcc's
# default (NVIDIA's static runtime). No -lcuda: its green context loads
# NVIDIA's libcuda.so.1 at run time. cuDNN found as tests/libs/libs.mk
# finds it (the same test, names of its own); without one the program is
# built without its conv cases (-DLIB_BENCH_NO_CUDNN).
ifneq ($(wildcard $(CUDA_HOME)/include/cudnn.h),)
LIB_BENCH_CUDNN_INC := $(CUDA_HOME)/include
LIB_BENCH_CUDNN_LIB := $(CUDA_HOME)/lib64
else
LIB_BENCH_CUDNN_WHEEL := $(shell python3 -c 'import nvidia.cudnn as m; \
	print(list(m.__path__)[0])' 2>/dev/null)
ifneq ($(LIB_BENCH_CUDNN_WHEEL),)
ifneq ($(wildcard $(LIB_BENCH_CUDNN_WHEEL)/include/cudnn.h),)
LIB_BENCH_CUDNN_INC := $(LIB_BENCH_CUDNN_WHEEL)/include
LIB_BENCH_CUDNN_LIB := $(LIB_BENCH_CUDNN_WHEEL)/lib
endif
endif
endif
ifneq ($(LIB_BENCH_CUDNN_LIB),)
LIB_BENCH_CUDNN_SO := $(firstword $(wildcard \
	$(LIB_BENCH_CUDNN_LIB)/libcudnn.so \
	$(LIB_BENCH_CUDNN_LIB)/libcudnn.so.[0-9]*))
endif
ifneq ($(LIB_BENCH_CUDNN_SO),)
LIB_BENCH_LDLIBS := -I$(LIB_BENCH_CUDNN_INC) -L$(LIB_BENCH_CUDNN_LIB) \
	-l:$(notdir $(LIB_BENCH_CUDNN_SO)) \
	-Xlinker -rpath=$(LIB_BENCH_CUDNN_LIB)
else
LIB_BENCH_LDLIBS := -DLIB_BENCH_NO_CUDNN
endif

all: $(BUILD)/bench/lib_bench

$(BUILD)/bench/lib_bench: bench/lib_bench.cu bench/rt_common.h \
		tests/runtime/rt_check.h | check-nvcc
	@mkdir -p $(dir $@)
	$(NVCC) -O2 -arch=$(CUDA_ARCH) -o $@ $< -lcublas -lcufft -ldl \
		$(LIB_BENCH_LDLIBS)
