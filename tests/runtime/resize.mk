# SPDX-License-Identifier: MIT
# tests/runtime/: the runtime-API side of resize (cudaGetDeviceProperties
# sees the new SM count), built like the others by runtime.mk's rule.
all: $(BUILD)/tests/runtime/resize_props_rt
