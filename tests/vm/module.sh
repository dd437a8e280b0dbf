#!/bin/sh
# shellcheck disable=SC2317 # functions run through check
# SPDX-License-Identifier: MIT
# vgpu_mdev.ko loads and unloads cleanly: the control device, the parent
# and its types come and go, the debugfs object counters start and end
# at zero, also when instances are present at rmmod.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

module_unload
if ! check "vgpu_mdev.ko loads" insmod "$MODULE"; then
	finish
fi
check "/dev/vgpu-ctl is a character device" test -c /dev/vgpu-ctl
check "the parent appears under /sys/class/mdev_bus" parent
n=$(types_dir | wc -l)
if [ "$n" -ge 2 ]; then
	ok "the parent offers $n types"
else
	not_ok "the parent offers types" "found $n"
fi
check "the debugfs object counters are all zero" objects_zero
check "vgpu_mdev unloads" rmmod vgpu_mdev
check_fails "the parent is gone after rmmod" parent
check_fails "/dev/vgpu-ctl is gone after rmmod" test -e /dev/vgpu-ctl
check "vgpu_mdev loads again" insmod "$MODULE"

if ! vgpud_has_mdev; then
	skip "rmmod with instances present" "vgpud has no --mdev yet"
	finish
fi
if ! check "vgpud starts with the mdev transport" vgpud_start; then
	finish
fi
wait_for 10 "vgpud to publish what it can create" \
	available_is vgpu-8sm-4g -gt 0
check_fails "rmmod is refused while vgpud holds /dev/vgpu-ctl" \
	rmmod vgpu_mdev
create_two()
{
	mdev_create vgpu-8sm-4g "$u1" && mdev_create vgpu-16sm-8g "$u2"
}
remove_two()
{
	mdev_remove "$u1" && mdev_remove "$u2"
}
both_exist()
{
	mdev_exists "$u1" && mdev_exists "$u2"
}
reload_clean()
{
	insmod "$MODULE" && objects_zero
}
u1=$(new_uuid)
u2=$(new_uuid)
check "two instances are created" create_two
check "... and removed" remove_two
check "the counters are back to zero" \
	wait_for 10 "the counters to drop" objects_zero
u1=$(new_uuid)
u2=$(new_uuid)
check "two more instances are created" create_two
vgpud_stop
check "the instances stay when vgpud stops" both_exist
check "... and their device state is ERROR" test "$(regs "$u1" state)" = 2
check "rmmod with two instances present succeeds" timeout 60 rmmod vgpu_mdev
check_fails "the instances are gone with the module" mdev_exists "$u1"
check "vgpu_mdev loads a third time, counters zero" reload_clean
finish
