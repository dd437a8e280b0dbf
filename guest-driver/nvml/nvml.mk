# SPDX-License-Identifier: MIT
# guest-driver/nvml/: the guest libnvidia-ml.so.1, NVML answered from the
# vGPU through vgpu's libcuda.so.1 (guest-driver/nvml/README.md).
#
# It goes to $(BUILD)/lib/nvml, a directory of its own: only a program
# that puts it on its library path loads it (in a VM, beside
# libcuda.so.1), never vgpud (which reads NVIDIA's NVML on the host) nor
# the programs that run with $(BUILD)/lib alone.

NVML_LIB_SRCS := \
	guest-driver/nvml/nvml_attr.c \
	guest-driver/nvml/nvml_cuda.c \
	guest-driver/nvml/nvml_device.c \
	guest-driver/nvml/nvml_error.c \
	guest-driver/nvml/nvml_gpu_state.c \
	guest-driver/nvml/nvml_memory.c \
	guest-driver/nvml/nvml_pci.c \
	guest-driver/nvml/nvml_process.c \
	guest-driver/nvml/nvml_state.c \
	guest-driver/nvml/nvml_system.c \
	guest-driver/nvml/nvml_unsupported.c

NVML_LIB_HAND_OBJS := $(NVML_LIB_SRCS:%.c=$(BUILD)/obj/%.o)
# our nvml.h (include/) before the toolkit's, which may have one: the
# library is built against the one declaration this repository keeps
NVML_LIB_CPPFLAGS := -Iguest-driver/nvml/include -Iguest-driver/nvml \
	-DNVML_NO_UNVERSIONED_FUNC_DEFS
NVML_LIB_CFLAGS := -fPIC -fvisibility=hidden

$(NVML_LIB_HAND_OBJS): $(BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(NVML_LIB_CPPFLAGS) $(CPPFLAGS) $(CFLAGS) $(NVML_LIB_CFLAGS) \
		-c -o $@ $<

# Generated at build time, never committed: a NOT_SUPPORTED stub for
# every NVML function nvml-api.txt lists (and the toolkit's nvml.h
# declares, where there is one) that the hand-written objects do not
# define (gen_nvml_stubs.py).
NVML_API_LIST := guest-driver/nvml/nvml-api.txt
NVML_STUBS_SRC := $(BUILD)/gen/guest-driver/nvml/nvml_stubs.c
NVML_STUBS_OBJ := $(BUILD)/obj/gen/guest-driver/nvml/nvml_stubs.o

$(NVML_STUBS_SRC): guest-driver/nvml/gen_nvml_stubs.py \
		guest-driver/lib/gen_nm.py $(NVML_API_LIST) \
		$(wildcard $(CUDA_HOME)/include/nvml.h) $(NVML_LIB_HAND_OBJS)
	@mkdir -p $(@D)
	guest-driver/nvml/gen_nvml_stubs.py $(CUDA_HOME) $(NVML_API_LIST) \
		$(NVML_LIB_HAND_OBJS) > $@.tmp
	mv $@.tmp $@

$(NVML_STUBS_OBJ): $(NVML_STUBS_SRC)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Iguest-driver/nvml $(CFLAGS) $(NVML_LIB_CFLAGS) \
		-c -o $@ $<

NVML_LIB := $(BUILD)/lib/nvml/libnvidia-ml.so.1

$(NVML_LIB): $(NVML_LIB_HAND_OBJS) $(NVML_STUBS_OBJ)
	@mkdir -p $(@D)
	$(CC) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,--no-undefined \
		$(LDFLAGS) -o $@ $^ -pthread -ldl

$(BUILD)/lib/nvml/libnvidia-ml.so: $(NVML_LIB)
	ln -sf libnvidia-ml.so.1 $@

all: $(NVML_LIB) $(BUILD)/lib/nvml/libnvidia-ml.so
