# SPDX-License-Identifier: MIT
# tests/programs/nvml_query: vgpu's guest NVML (guest-driver/nvml) on a
# vGPU, each answer against the CUDA driver's (tests/integration/nvml.sh).
# Linked against vgpu's libnvidia-ml.so ($(BUILD)/lib/nvml, named first,
# so never a system NVML) and NVIDIA's stub libcuda; at run time
# LD_LIBRARY_PATH puts $(BUILD)/lib/nvml and $(BUILD)/lib first. Built
# against NVIDIA's nvml.h where the toolkit has one (our library then
# answers a program built with NVIDIA's declarations), else ours.

NVML_QUERY := $(BUILD)/tests/programs/nvml_query
NVML_QUERY_INC := $(if $(wildcard $(CUDA_HOME)/include/nvml.h),,\
	-Iguest-driver/nvml/include)

all: $(NVML_QUERY)

$(NVML_QUERY): tests/programs/nvml_query.c tests/programs/prog.h \
		$(BUILD)/lib/nvml/libnvidia-ml.so
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(NVML_QUERY_INC) -I$(CUDA_HOME)/include -o $@ $< \
		-L$(BUILD)/lib/nvml -lnvidia-ml -L$(CUDA_HOME)/lib64/stubs \
		-lcuda -ldl
