#!/bin/sh
# SPDX-License-Identifier: MIT
# A user-space VFIO driver (QEMU's place) on an instance: config space,
# BARs, MSI, channel 0, a NOP through the ring in BAR2 served by a sim
# worker through vgpud, and its completion interrupt (tests/vm/vfio_user.c);
# the same with INTx instead of MSI (automask, UNMASK, MASK, the two never
# on at once: tests/vm/vfio_intx.c); then BAR2 per VFIO session: the next
# user sees nothing of the last.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

module_load
if ! vgpud_has_mdev; then
	skip "VFIO user" "vgpud has no --mdev yet"
	finish
fi
if ! check "vgpud starts with the mdev transport" vgpud_start; then
	finish
fi
wait_for 10 "vgpud to publish what it can create" \
	available_is vgpu-16sm-8g -gt 0
t=vgpu-16sm-8g
u=$(new_uuid)
if check "create a $t instance" mdev_create "$t" "$u"; then
	rc=0
	vfio_user basic "$u" "$(type_sms $t)" "$(type_memory $t)" || rc=$?
	[ "$rc" -le 1 ] || not_ok "vfio_user basic exited with status $rc"
	rc=0
	vfio_user intx "$u" || rc=$?
	[ "$rc" -le 1 ] || not_ok "vfio_user intx exited with status $rc"
	rc=0
	vfio_user bar2 "$u" || rc=$?
	[ "$rc" -le 1 ] || not_ok "vfio_user bar2 exited with status $rc"
	check "remove it" mdev_remove "$u"
fi
vgpud_stop
finish
