# SPDX-License-Identifier: MIT
# vgpu-run/: the wrapper that runs a program on a vGPU of this host
# (issue 17), and the directory it takes vgpu's driver from: $(BUILD)/lib/
# vgpu holds libcuda.so.1 and nothing else of vgpu's, so a program's own
# CUDA runtime (NVIDIA's) is the one it loads.

VGPU_RUN_BIN := $(BUILD)/bin/vgpu-run
VGPU_DRIVER_LINK := $(BUILD)/lib/vgpu/libcuda.so.1

all: $(VGPU_RUN_BIN) $(VGPU_DRIVER_LINK)

$(VGPU_RUN_BIN): vgpu-run/vgpu-run.sh
	@mkdir -p $(@D)
	install -m 0755 $< $@

$(VGPU_DRIVER_LINK): $(BUILD)/lib/libcuda.so.1
	@mkdir -p $(@D)
	ln -sf ../libcuda.so.1 $@
