# SPDX-License-Identifier: MIT
# host-daemon/: vgpud (the control plane) and vgpu-admin (its CLI).
#   make build/bin/vgpud build/bin/vgpu-admin
#
# Uses $(CTL_MSG_OBJ) from worker.mk (read before this fragment) for the
# control-message transport; adds rules only for its own objects.

DAEMON_OBJ_DIR := $(BUILD)/obj/host-daemon

VGPUD_OBJS := $(addprefix $(DAEMON_OBJ_DIR)/,vgpud_main.o daemon_admin.o \
	daemon_clients.o daemon_workers.o daemon_state.o plan.o mps.o \
	daemon_mdev.o daemon_mdev_inst.o daemon_mdev_chan.o \
	daemon_mdev_avail.o mdev_uuid.o \
	daemon_resize.o daemon_load.o plan_resize.o nvml_sym.o \
	plan_move.o daemon_state_ops.o daemon_ratelimit.o daemon_liveness.o)
VGPU_ADMIN_OBJS := $(addprefix $(DAEMON_OBJ_DIR)/,admin_main.o admin_mdev.o \
	plan.o mdev_uuid.o admin_dyn.o admin_state.o)
DAEMON_OBJS := $(sort $(VGPUD_OBJS) $(VGPU_ADMIN_OBJS))

all: $(BUILD)/bin/vgpud $(BUILD)/bin/vgpu-admin

# env_number.o: built by backend.mk (the workers read their knobs with it)
$(BUILD)/bin/vgpud: $(VGPUD_OBJS) $(CTL_MSG_OBJ) \
		$(BUILD)/obj/host-daemon/env_number.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(JANSSON_LIBS) -ldl

# BLUEPRINT_OBJS comes from blueprint.mk, read after this fragment: the
# prerequisite is expanded a second time, once every fragment is read.
.SECONDEXPANSION:
$(BUILD)/bin/vgpu-admin: $(VGPU_ADMIN_OBJS) $$(BLUEPRINT_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(YAML_LIBS) $(JANSSON_LIBS) -lm

$(DAEMON_OBJS): $(DAEMON_OBJ_DIR)/%.o: host-daemon/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
