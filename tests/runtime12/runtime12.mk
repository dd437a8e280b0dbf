# SPDX-License-Identifier: MIT
# tests/runtime12/: a program of NVIDIA's CUDA 12 runtime, taken by dlopen
# (tests/integration/cuda12_runtime.sh fetches the runtime from Debian).

RT12_PROGRAM := $(BUILD)/tests/runtime12/rt12

all: $(RT12_PROGRAM)

$(RT12_PROGRAM): tests/runtime12/rt12.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< -ldl
