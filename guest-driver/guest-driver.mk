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
	guest-driver/lib/client_image.c \
	guest-driver/lib/client_info.c \
	guest-driver/lib/client_region.c \
	guest-driver/lib/client_params.c \
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
	guest-driver/lib/cuda_memory.c \
	guest-driver/lib/cuda_memory_2d.c \
	guest-driver/lib/cuda_module.c \
	guest-driver/lib/cuda_module_enum.c \
	guest-driver/lib/cuda_pointer.c \
	guest-driver/lib/cuda_profiler.c \
	guest-driver/lib/cuda_proc.c \
	guest-driver/lib/cuda_reset.c \
	guest-driver/lib/cuda_stream.c \
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

# libcudart.so.13: the CUDA runtime for programs built with
# nvcc -cudart shared, over our libcuda.so.1 (DT_NEEDED, found next to it
# through $ORIGIN), every symbol at the version node libcudart.so.13.
CUDART_LIB_SRCS := \
	guest-driver/lib/cudart_callcfg.c \
	guest-driver/lib/cudart_device.c \
	guest-driver/lib/cudart_entry.c \
	guest-driver/lib/cudart_error.c \
	guest-driver/lib/cudart_error_table.c \
	guest-driver/lib/cudart_hints.c \
	guest-driver/lib/cudart_launch.c \
	guest-driver/lib/cudart_launch_ex.c \
	guest-driver/lib/cudart_memory.c \
	guest-driver/lib/cudart_memory_2d.c \
	guest-driver/lib/cudart_module.c \
	guest-driver/lib/cudart_pointer.c \
	guest-driver/lib/cudart_ptsz.c \
	guest-driver/lib/cudart_registry.c \
	guest-driver/lib/cudart_stream.c \
	guest-driver/lib/cudart_unsupported.c

CUDART_LIB_OBJS := $(CUDART_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CUDART_MAP := guest-driver/lib/libcudart.map

$(CUDART_LIB_OBJS): $(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(CLIENT_LIB_CFLAGS) -c -o $@ $<

# Every other function NVIDIA's runtime exports, as a stub that fails with
# cudaErrorNotSupported and says so (gen_cudart_stubs.py reads NVIDIA's
# export list and the runtime headers at build time; nothing is committed).
CUDART_STUBS_SRC := $(BUILD)/gen/guest-driver/cudart_stubs.c
CUDART_STUBS_OBJ := $(BUILD)/obj/gen/guest-driver/cudart_stubs.o

$(CUDART_STUBS_SRC): guest-driver/lib/gen_cudart_stubs.py guest-driver/lib/gen_nm.py \
		$(CUDART_LIB_OBJS) \
		     $(CUDA_HOME)/lib64/libcudart.so.13
	@mkdir -p $(@D)
	guest-driver/lib/gen_cudart_stubs.py $(CUDA_HOME) $(CUDART_LIB_OBJS) \
		> $@.tmp
	mv $@.tmp $@

$(CUDART_STUBS_OBJ): $(CUDART_STUBS_SRC)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Iguest-driver/lib $(CFLAGS) $(CLIENT_LIB_CFLAGS) \
		-c -o $@ $<

$(BUILD)/lib/libcudart.so.13: $(CUDART_LIB_OBJS) $(CUDART_STUBS_OBJ) \
			      $(CUDART_MAP) $(BUILD)/lib/libcuda.so
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libcudart.so.13 -Wl,--no-undefined \
		-Wl,--version-script=$(CUDART_MAP) $(LDFLAGS) \
		-o $@ $(CUDART_LIB_OBJS) $(CUDART_STUBS_OBJ) -L$(BUILD)/lib \
		-lcuda -Wl,-rpath,'$$ORIGIN' -pthread

$(BUILD)/lib/libcudart.so: $(BUILD)/lib/libcudart.so.13
	ln -sf libcudart.so.13 $@

all: $(BUILD)/lib/libcudart.so.13 $(BUILD)/lib/libcudart.so

# Regenerate the cudaError_t table after a CUDA upgrade (not part of all).
.PHONY: cudart-error-table
cudart-error-table:
	guest-driver/lib/gen_error_table.py --runtime \
		$(CUDA_HOME)/include/driver_types.h \
		> guest-driver/lib/cudart_error_table.c
	clang-format -i guest-driver/lib/cudart_error_table.c
