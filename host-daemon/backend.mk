# SPDX-License-Identifier: MIT
# host-daemon/: the backends behind vgpu-worker (backend.h): "cuda" (the
# real driver through dlopen) and "sim" (the CPU simulator). Defines
# BACKEND_OBJS; whatever links them also links $(SIM_KERNEL_OBJS) and
# $(BACKEND_LIBS) (libzstd, liblz4: the simulator reads compressed code).
#
# kernels.mk is included here (it is guarded against the second include
# from the top Makefile) so that SIM_KERNEL_OBJS is already defined when
# the worker's link rule, read after this fragment, expands it.
include kernels/kernels.mk

BACKEND_SRCS := host-daemon/backend.c host-daemon/backend_sim.c \
		host-daemon/sim_exec.c host-daemon/sim_image.c \
		host-daemon/sim_image_ptx.c \
		host-daemon/backend_cuda.c \
		host-daemon/backend_cuda_move.c host-daemon/backend_cuda_cache.c \
		host-daemon/backend_extent.c host-daemon/env_number.c \
		host-daemon/cuda_sym.c host-daemon/va_hold.c
BACKEND_OBJS := $(patsubst host-daemon/%.c,$(BUILD)/obj/host-daemon/%.o,$(BACKEND_SRCS))
BACKEND_LIBS := -ldl $(UNPACK_LIBS)

all: $(BACKEND_OBJS)

$(BACKEND_OBJS): $(BUILD)/obj/host-daemon/%.o: host-daemon/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Ihost-daemon -Ikernels $(CFLAGS) -c -o $@ $<
