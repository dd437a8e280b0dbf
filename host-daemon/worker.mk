# SPDX-License-Identifier: MIT
# host-daemon/: vgpu-worker, the process that owns one vGPU.
#   make build/bin/vgpu-worker
#
# Links the backends ($(BACKEND_OBJS), $(BACKEND_LIBS): backend.mk, read
# before this fragment) and the simulator's kernel twins
# ($(SIM_KERNEL_OBJS): kernels/kernels.mk).
#
# Shared with other pieces (use these, do not add rules for the objects):
#   CTL_MSG_OBJ       control-message transport, also linked by vgpud
#   WORKER_CORE_OBJS  validation/execution, handles, watchdog and the
#                     sub-allocator: no backend, no ring (unit tests)

WORKER_OBJ_DIR   := $(BUILD)/obj/host-daemon
CTL_MSG_OBJ      := $(WORKER_OBJ_DIR)/ctl_msg.o
WORKER_CORE_OBJS := $(addprefix $(WORKER_OBJ_DIR)/,worker_exec.o \
		    worker_handles.o worker_watchdog.o worker_gate.o \
		    worker_defer.o worker_tensor_map.o worker_coop.o \
		    mem_suballoc.o)
WORKER_OBJS      := $(addprefix $(WORKER_OBJ_DIR)/,worker_main.o \
		    worker_client.o worker_channel.o worker_adopt.o \
		    worker_depart.o \
		    worker_resize.o worker_load.o worker_freeze.o \
		    worker_state.o worker_savepoint.o state_file.o crc32c.o) \
		    $(WORKER_CORE_OBJS) \
		    $(CTL_MSG_OBJ)
WORKER_BIN       := $(BUILD)/bin/vgpu-worker

all: $(WORKER_BIN)

$(WORKER_BIN): $(WORKER_OBJS) $(BACKEND_OBJS) $(SIM_KERNEL_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(BACKEND_LIBS) -ldl -pthread

$(WORKER_OBJS): $(WORKER_OBJ_DIR)/%.o: host-daemon/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<
