# SPDX-License-Identifier: MIT
# tests/vm-l2/: the nested VM test (vm-images/l2/, tests/integration/vm_l2.sh).
# l2_ring talks to /dev/vgpu0 in the L2 guest without our library; static
# so that it needs nothing there. vm_rtt (bench/) is built by bench.mk's
# pattern rule; it is listed here because the L2 suite needs it.

all: $(BUILD)/tests/vm-l2/l2_ring $(BUILD)/bench/vm_rtt

$(BUILD)/obj/tests/vm-l2/%.o: tests/vm-l2/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/vm-l2/l2_ring: $(BUILD)/obj/tests/vm-l2/l2_ring.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -static -o $@ $^
