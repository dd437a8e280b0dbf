# SPDX-License-Identifier: MIT
# kernels/: the CUDA test kernels (one cubin each, for $(CUDA_ARCH)) and
# their C twins for the simulator (SIM_KERNEL_OBJS, linked into anything
# that carries the sim backend).
#
# Guarded, because host-daemon/backend.mk includes this fragment early so
# that SIM_KERNEL_OBJS is defined before the worker's link rule reads it.
ifndef VGPU_KERNELS_MK
VGPU_KERNELS_MK := 1

KERNEL_CU      := $(wildcard kernels/*.cu)
KERNEL_CUBINS  := $(patsubst kernels/%.cu,$(BUILD)/kernels/%.cubin,$(KERNEL_CU))
SIM_KERNEL_SRCS := $(wildcard kernels/*.c)
SIM_KERNEL_OBJS := $(patsubst kernels/%.c,$(BUILD)/obj/kernels/%.o,$(SIM_KERNEL_SRCS))

all: $(KERNEL_CUBINS) $(SIM_KERNEL_OBJS)

$(BUILD)/kernels/matmul_tiled.cubin: kernels/matmul_tile.cuh
$(KERNEL_CUBINS): $(BUILD)/kernels/%.cubin: kernels/%.cu | check-nvcc
	@mkdir -p $(dir $@)
	$(NVCC) -cubin -arch=$(CUDA_ARCH) -O3 -o $@ $<

$(SIM_KERNEL_OBJS): $(BUILD)/obj/kernels/%.o: kernels/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Ikernels $(CFLAGS) -c -o $@ $<

endif
