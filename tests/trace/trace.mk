# SPDX-License-Identifier: MIT
# tests/trace/: a tracing libcuda.so.1 in front of NVIDIA's driver, for
# the inventory of what NVIDIA's runtime and libraries ask the driver for
# (issue 17; scripts/trace-inventory.sh runs it on the GPU machine). Its
# forwarders are generated from the toolkit's stub libcuda.

TRACE_DIR := $(BUILD)/tests/trace
TRACE_GEN := $(BUILD)/gen/trace
TRACE_LIB := $(TRACE_DIR)/libcuda.so.1
TRACE_STUB := $(CUDA_HOME)/lib64/stubs/libcuda.so

all: $(TRACE_LIB)

# one run writes both files
$(TRACE_GEN)/cuda_trace_fwd.h: $(TRACE_GEN)/cuda_trace_fwd.c
$(TRACE_GEN)/cuda_trace_fwd.c: tests/trace/gen_forwarders.sh $(TRACE_STUB)
	@mkdir -p $(TRACE_GEN)
	tests/trace/gen_forwarders.sh $(TRACE_STUB) \
		$(TRACE_GEN)/cuda_trace_fwd.c $(TRACE_GEN)/cuda_trace_fwd.h

$(TRACE_LIB): tests/trace/cuda_trace.c $(TRACE_GEN)/cuda_trace_fwd.c \
		$(TRACE_GEN)/cuda_trace_fwd.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -I$(TRACE_GEN) $(CFLAGS) -fPIC -shared \
		-Wl,-soname,libcuda.so.1 -o $@ tests/trace/cuda_trace.c \
		$(TRACE_GEN)/cuda_trace_fwd.c -ldl -pthread
