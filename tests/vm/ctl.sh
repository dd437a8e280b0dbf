#!/bin/sh
# SPDX-License-Identifier: MIT
# /dev/vgpu-ctl with vfio_user in vgpud's place (tests/vm/vfio_ctl.c), so
# that the daemon's side can answer wrongly, late or not at all: the
# checks of CREATE_DONE, the BAR2 memfd per VFIO session (SET_BAR2,
# GET_BAR2, the open that waits for a fresh one), one instance's events
# against the queue, and a removal's ERROR that stays.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

module_load
dmesg_mark
rc=0
vfio_user ctl vgpu-8sm-4g vgpu-32sm-16g || rc=$?
[ "$rc" -le 1 ] || not_ok "vfio_user ctl exited with status $rc"
if dmesg_since | grep -q "has not given a fresh BAR2 memfd"; then
	ok "the refused open says why in the kernel log:$(dmesg_since | grep -m1 'has not given a fresh BAR2' | cut -d: -f2-)"
else
	not_ok "the refused open says why in the kernel log" "$(dmesg_since | tail -n 5)"
fi
mdev_remove_all
check "afterwards the counters are zero" \
	wait_for 10 "the counters to drop" objects_zero
finish
