# SPDX-License-Identifier: MIT
# guest-driver/: the guest CUDA library. libcuda.so.1 replaces NVIDIA's
# driver library for programs linked against it (LD_LIBRARY_PATH) and
# forwards their work to the vGPU's worker over the ring.

CLIENT_LIB_SRCS := \
	guest-driver/lib/client_alloc_table.c \
	guest-driver/lib/client_copy.c \
	guest-driver/lib/client_core.c \
	guest-driver/lib/client_data.c \
	guest-driver/lib/client_memcpy.c \
	guest-driver/lib/client_order.c \
	guest-driver/lib/client_image.c \
	guest-driver/lib/client_info.c \
	guest-driver/lib/client_region.c \
	guest-driver/lib/client_params.c \
	guest-driver/lib/client_pool.c \
	guest-driver/lib/client_registry.c \
	guest-driver/lib/client_trace.c \
	guest-driver/lib/client_ring.c \
	guest-driver/lib/client_transport_local.c \
	guest-driver/lib/client_transport_pci.c \
	guest-driver/lib/client_va.c \
	guest-driver/lib/cuda_capture.c \
	guest-driver/lib/cuda_compat.c \
	guest-driver/lib/cuda_context.c \
	guest-driver/lib/cuda_debugger.c \
	guest-driver/lib/cuda_device.c \
	guest-driver/lib/cuda_error.c \
	guest-driver/lib/cuda_error_table.c \
	guest-driver/lib/cuda_event.c \
	guest-driver/lib/cuda_export.c \
	guest-driver/lib/cuda_export_entries.c \
	guest-driver/lib/cuda_export_integrity.c \
	guest-driver/lib/cuda_hostfn.c \
	guest-driver/lib/cuda_init.c \
	guest-driver/lib/cuda_kernel_attr.c \
	guest-driver/lib/cuda_launch.c \
	guest-driver/lib/cuda_launch_ex.c \
	guest-driver/lib/cuda_limit.c \
	guest-driver/lib/cuda_memory.c \
	guest-driver/lib/cuda_memory_2d.c \
	guest-driver/lib/cuda_mempool.c \
	guest-driver/lib/cuda_module.c \
	guest-driver/lib/cuda_module_enum.c \
	guest-driver/lib/cuda_pointer.c \
	guest-driver/lib/cuda_profiler.c \
	guest-driver/lib/cuda_proc.c \
	guest-driver/lib/cuda_reset.c \
	guest-driver/lib/cuda_stream.c \
	guest-driver/lib/cuda_tensor_map.c \
	guest-driver/lib/cuda_unsupported.c

CLIENT_LIB_HAND_OBJS := $(CLIENT_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CLIENT_LIB_CFLAGS := -fPIC -fvisibility=hidden

$(CLIENT_LIB_HAND_OBJS): $(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(CLIENT_LIB_CFLAGS) -c -o $@ $<

# Generated at build time, never committed (guest-driver/lib/README.md):
# - cuda_stubs.c: every function NVIDIA's stub libcuda.so exports, or that
#   PROCMAP names, and the hand-written objects do not define, failing
#   with CUDA_ERROR_NOT_SUPPORTED and saying so (gen_cuda_stubs.py);
# - cuda_proc_table.c: cuGetProcAddress's answers, from what NVIDIA's
#   driver answered (PROCMAP, measured on the GPU machine; gen_proc_table.py).
#   A function it names that the library lacks fails the link.
PROCMAP := guest-driver/lib/procmap-cuda13.txt
CUDA_STUBS_SRC := $(BUILD)/gen/guest-driver/cuda_stubs.c
CUDA_PROC_TABLE_SRC := $(BUILD)/gen/guest-driver/cuda_proc_table.c
CLIENT_LIB_GEN_OBJS := $(BUILD)/obj/gen/guest-driver/cuda_stubs.o \
	$(BUILD)/obj/gen/guest-driver/cuda_proc_table.o
CLIENT_LIB_OBJS := $(CLIENT_LIB_HAND_OBJS) $(CLIENT_LIB_GEN_OBJS)

$(CUDA_STUBS_SRC): guest-driver/lib/gen_cuda_stubs.py guest-driver/lib/gen_nm.py \
		$(PROCMAP) \
		  $(CLIENT_LIB_HAND_OBJS) $(CUDA_HOME)/lib64/stubs/libcuda.so
	@mkdir -p $(@D)
	guest-driver/lib/gen_cuda_stubs.py $(CUDA_HOME) $(PROCMAP) \
		$(CLIENT_LIB_HAND_OBJS) > $@.tmp
	mv $@.tmp $@

$(CUDA_PROC_TABLE_SRC): guest-driver/lib/gen_proc_table.py $(PROCMAP)
	@mkdir -p $(@D)
	guest-driver/lib/gen_proc_table.py $(PROCMAP) > $@.tmp
	mv $@.tmp $@

$(CLIENT_LIB_GEN_OBJS): $(BUILD)/obj/gen/guest-driver/%.o: \
			$(BUILD)/gen/guest-driver/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Iguest-driver/lib $(CFLAGS) $(CLIENT_LIB_CFLAGS) \
		-c -o $@ $<

$(BUILD)/lib/libcuda.so.1: $(CLIENT_LIB_OBJS)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libcuda.so.1 -Wl,--no-undefined $(LDFLAGS) \
		-o $@ $^ -pthread

$(BUILD)/lib/libcuda.so: $(BUILD)/lib/libcuda.so.1
	ln -sf libcuda.so.1 $@

all: $(BUILD)/lib/libcuda.so.1 $(BUILD)/lib/libcuda.so

# Regenerate the CUresult table after a CUDA upgrade (not part of all).
.PHONY: client-error-table
client-error-table:
	guest-driver/lib/gen_error_table.py $(CUDA_HOME)/include/cuda.h \
		> guest-driver/lib/cuda_error_table.c
	clang-format -i guest-driver/lib/cuda_error_table.c

# Our own libcudart.so.13 retired (issue 17): a build directory from before
# may still hold it, where it would shadow NVIDIA's on LD_LIBRARY_PATH.
$(shell rm -f $(BUILD)/lib/libcudart.so.13 $(BUILD)/lib/libcudart.so \
	$(BUILD)/tests/unit/test_cudart_error $(BUILD)/tests/unit/test_cudart_callcfg \
	$(BUILD)/tests/unit/test_cudart_registry)
