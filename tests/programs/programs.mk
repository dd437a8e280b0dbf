# SPDX-License-Identifier: MIT
# tests/programs/: CUDA driver-API test programs, built the way a user
# builds them: against NVIDIA's stub libcuda. At run time
# LD_LIBRARY_PATH=$(BUILD)/lib makes them use the vgpu library instead.

TEST_PROGRAMS := vector_add matmul streams_events device_query smid_map \
	copy_sizes alloc_many quota long_copy fault_oob fault_spin ordering
# allocate and free from several threads at once (issue 16)
TEST_PROGRAMS += alloc_threads
# host functions from several threads, stuck ones (issue 16)
TEST_PROGRAMS += hostfn_threads
# the occupancy calls and context limits (issue 18)
TEST_PROGRAMS += occupancy limits
# what CUDA's libraries ask while they set up (issue 17)
TEST_PROGRAMS += library_query
# the private-table entries cuBLASLt calls, against the public calls (issue 17)
TEST_PROGRAMS += driver_entries
# mapped (zero-copy) host memory (issue 18)
TEST_PROGRAMS += mapped_host
# stream-ordered allocation and memory pools, their edges (issue 18)
TEST_PROGRAMS += mempool
# tensor maps encoded by the worker's driver (issue 18)
TEST_PROGRAMS += tensor_map
TEST_PROGRAM_BINS := $(TEST_PROGRAMS:%=$(BUILD)/tests/programs/%)

all: $(TEST_PROGRAM_BINS)

$(BUILD)/tests/programs/%: tests/programs/%.c tests/programs/prog.h
	@mkdir -p $(@D)
	$(NVCC) -O2 -o $@ $< -I$(CUDA_HOME)/include \
		-L$(CUDA_HOME)/lib64/stubs -lcuda -lm
