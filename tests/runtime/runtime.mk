# SPDX-License-Identifier: MIT
# tests/runtime/: CUDA runtime-API test programs, built the way a user builds
# them with `nvcc -cudart shared` (so they load NVIDIA's libcudart.so.13 at
# run time); with LD_LIBRARY_PATH=$(BUILD)/lib it runs over our
# libcuda.so.1 (tests/integration/runtime_*.sh).
# Their kernels' C twins for the simulator are kernels/rt_twins_*.c.

RT_TEST_PROGRAMS := vector_add_rt matmul_shared_rt streams_overlap_rt \
	events_rt callbacks_rt symbols_rt templates_rt errors_rt \
	device_props_rt func_attrs_rt unsupported_rt launch_ex_rt \
	per_thread_rt memory_2d_rt small_calls_rt device_reset_rt sticky_rt \
	pinned_many_rt mapped_rt mempool_rt legacy_stream_rt coop_bound_rt tensor_map_rt
RT_TEST_PROGRAM_BINS := $(RT_TEST_PROGRAMS:%=$(BUILD)/tests/runtime/%)

all: $(RT_TEST_PROGRAM_BINS)

# per_thread_rt is what nvcc --default-stream per-thread makes of a program:
# it links the _ptsz/_ptds names.
$(BUILD)/tests/runtime/per_thread_rt: RT_NVCC_FLAGS := --default-stream per-thread

$(BUILD)/tests/runtime/%: tests/runtime/%.cu tests/runtime/rt_check.h \
		kernels/matmul_shared.cuh kernels/matmul_tile.cuh | check-nvcc
	@mkdir -p $(@D)
	$(NVCC) -cudart shared $(RT_NVCC_FLAGS) -O2 -arch=$(CUDA_ARCH) \
		-Ikernels -o $@ $<

# The same programs built with nvcc's default, the static runtime: NVIDIA's
# runtime inside the program, over whichever libcuda.so.1 the loader finds
# (tests/integration/nvidia_runtime.sh, issue 17).
RT_STATIC_PROGRAM_BINS := $(RT_TEST_PROGRAMS:%=$(BUILD)/tests/runtime-static/%)

all: $(RT_STATIC_PROGRAM_BINS)

$(BUILD)/tests/runtime-static/per_thread_rt: RT_NVCC_FLAGS := --default-stream per-thread

$(BUILD)/tests/runtime-static/%: tests/runtime/%.cu tests/runtime/rt_check.h \
		kernels/matmul_shared.cuh kernels/matmul_tile.cuh | check-nvcc
	@mkdir -p $(@D)
	$(NVCC) $(RT_NVCC_FLAGS) -O2 -arch=$(CUDA_ARCH) -Ikernels -o $@ $<
