# SPDX-License-Identifier: MIT
# tests/vm/: the in-VM tests. vfio_user is linked statically so that it
# runs in the test VM's initramfs without more libraries; the shell
# scripts are copied in as they are (vm-images/build-initramfs.sh).

VFIO_USER_OBJS := $(addprefix $(BUILD)/obj/tests/vm/, \
	vfio_user.o vfio_dev.o vfio_chan.o vfio_hostile.o vfio_ctl.o \
	vfio_intx.o vfio_ctlopen.o)

all: $(BUILD)/tests/vm/vfio_user

$(BUILD)/obj/tests/vm/%.o: tests/vm/%.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/vm/vfio_user: $(VFIO_USER_OBJS)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -static -o $@ $^
