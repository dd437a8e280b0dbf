# SPDX-License-Identifier: MIT
# tests/mdev/: the VM path without the module.
#   worker_channel    drives a vgpu-worker through VGPU_CTL_CHANNEL as vgpud
#                     and vgpu_mdev.ko would (integration/worker_channel.sh)
#   vgpud_mdev        plays vgpu_mdev.ko (fakemod.c) behind
#   fakectl_shim.so   (LD_PRELOAD into vgpud: /dev/vgpu-ctl -> the test)
#                     and the guest (integration/vgpud_mdev.sh)

MDEV_TEST_DIR := $(BUILD)/tests/mdev
MDEV_TEST_OBJ := $(BUILD)/obj/tests/mdev

all: $(MDEV_TEST_DIR)/worker_channel $(MDEV_TEST_DIR)/vgpud_mdev \
	$(MDEV_TEST_DIR)/fakectl_shim.so

$(MDEV_TEST_OBJ)/%.o: tests/mdev/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) -Ihost-daemon $(CFLAGS) -c -o $@ $<

$(MDEV_TEST_DIR)/worker_channel: $(MDEV_TEST_OBJ)/worker_channel.o \
		$(MDEV_TEST_OBJ)/tring.o $(CTL_MSG_OBJ)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

$(MDEV_TEST_DIR)/vgpud_mdev: $(MDEV_TEST_OBJ)/vgpud_mdev.o \
		$(MDEV_TEST_OBJ)/fakemod.o $(MDEV_TEST_OBJ)/tring.o \
		$(BUILD)/obj/host-daemon/mdev_uuid.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

$(MDEV_TEST_DIR)/fakectl_shim.so: tests/mdev/fakectl_shim.c tests/mdev/fakectl.h
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -shared -o $@ $< -ldl
