# SPDX-License-Identifier: MIT
# guest-driver/: the guest CUDA library. libcuda.so.1 replaces NVIDIA's
# driver library for programs linked against it (LD_LIBRARY_PATH) and
# forwards their work to the vGPU's worker over the ring.

CLIENT_LIB_SRCS := \
	guest-driver/lib/client_alloc_table.c \
	guest-driver/lib/client_copy.c \
	guest-driver/lib/client_core.c \
	guest-driver/lib/client_data.c \
	guest-driver/lib/client_image.c \
	guest-driver/lib/client_params.c \
	guest-driver/lib/client_registry.c \
	guest-driver/lib/client_ring.c \
	guest-driver/lib/client_transport_local.c \
	guest-driver/lib/cuda_compat.c \
	guest-driver/lib/cuda_context.c \
	guest-driver/lib/cuda_device.c \
	guest-driver/lib/cuda_error.c \
	guest-driver/lib/cuda_error_table.c \
	guest-driver/lib/cuda_event.c \
	guest-driver/lib/cuda_init.c \
	guest-driver/lib/cuda_launch.c \
	guest-driver/lib/cuda_memory.c \
	guest-driver/lib/cuda_module.c \
	guest-driver/lib/cuda_proc.c \
	guest-driver/lib/cuda_stream.c

CLIENT_LIB_OBJS := $(CLIENT_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
CLIENT_LIB_CFLAGS := -fPIC -fvisibility=hidden

$(CLIENT_LIB_OBJS): $(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(CLIENT_LIB_CFLAGS) -c -o $@ $<

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
