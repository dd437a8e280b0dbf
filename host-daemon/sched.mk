# SPDX-License-Identifier: MIT
# host-daemon/: the scheduler (docs/DESIGN.md, "Scheduling"): its pieces
# of vgpud, vgpu-worker and vgpu-admin. Extra prerequisites of their links
# (the link rules use $^), with rules for these objects only.
#
#   plan_policy.c         the policies as pure logic (unit-tested)
#   plan_burst.c          regular bursts, expected ahead (unit-tested)
#   daemon_sched*.c       vgpud: activity, targets, resizes, holds,
#                         admission, POLICY and SCHED; the leftover
#                         slice lent (daemon_sched_leftover.c)
#   worker_sched.c        vgpu-worker: holds and activity edges
#   admin_policy.c        vgpu-admin policy, and the policy in show/top

SCHED_OBJ_DIR := $(BUILD)/obj/host-daemon
SCHED_VGPUD_OBJS := $(addprefix $(SCHED_OBJ_DIR)/,plan_policy.o \
	plan_burst.o daemon_sched.o daemon_sched_admin.o \
	daemon_sched_leftover.o)
SCHED_WORKER_OBJS := $(SCHED_OBJ_DIR)/worker_sched.o
SCHED_ADMIN_OBJS := $(addprefix $(SCHED_OBJ_DIR)/,admin_policy.o)

$(BUILD)/bin/vgpud: $(SCHED_VGPUD_OBJS)
$(BUILD)/bin/vgpu-worker: $(SCHED_WORKER_OBJS)
$(BUILD)/bin/vgpu-admin: $(SCHED_ADMIN_OBJS)

$(sort $(SCHED_VGPUD_OBJS) $(SCHED_ADMIN_OBJS)): \
		$(SCHED_OBJ_DIR)/%.o: host-daemon/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(SCHED_WORKER_OBJS): $(SCHED_OBJ_DIR)/%.o: host-daemon/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<
