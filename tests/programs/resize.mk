# SPDX-License-Identifier: MIT
# tests/programs/: the dynamic-partitioning test programs (resize and the
# workload analyzer), built like the others by programs.mk's pattern rule.
RESIZE_PROGRAMS := resize_chain resize_watch busy_loop

all: $(RESIZE_PROGRAMS:%=$(BUILD)/tests/programs/%)

# A stand-in NVML (tests/integration/top.sh): predictable power and energy.
FAKE_NVML := $(BUILD)/tests/lib/libfake-nvml.so

all: $(FAKE_NVML)

$(FAKE_NVML): tests/programs/fake_nvml.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $<
