# SPDX-License-Identifier: MIT
# host-daemon/: swapping idle vGPUs out to make room (docs/DESIGN.md,
# "Swap"): its pieces of vgpud and vgpu-admin. Extra prerequisites of
# their links (the link rules use $^), with rules for these objects only.
#
#   plan_swap.c        which idle vGPUs go out (pure logic, unit-tested)
#   daemon_swap.c      vgpud: swap-outs for a create or a resume, swap-ins
#                      when a swapped vGPU's client has work or connects
#   daemon_swap_admin.c  vgpud: SWAP (settings, the view), state file
#   admin_swap.c       vgpu-admin policy --swap, and swap in show

SWAP_OBJ_DIR := $(BUILD)/obj/host-daemon
SWAP_VGPUD_OBJS := $(addprefix $(SWAP_OBJ_DIR)/,plan_swap.o daemon_swap.o \
	daemon_swap_admin.o)
SWAP_ADMIN_OBJS := $(SWAP_OBJ_DIR)/admin_swap.o

$(BUILD)/bin/vgpud: $(SWAP_VGPUD_OBJS)
$(BUILD)/bin/vgpu-admin: $(SWAP_ADMIN_OBJS)

$(sort $(SWAP_VGPUD_OBJS) $(SWAP_ADMIN_OBJS)): \
		$(SWAP_OBJ_DIR)/%.o: host-daemon/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
