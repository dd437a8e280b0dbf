#!/bin/sh
# SPDX-License-Identifier: MIT
# The end of the suite: nothing left, the module unloads, and the kernel
# log has no oops, BUG, WARNING or general protection fault.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

module_load
mdev_remove_all
check_fails "no instances are left" sh -c 'ls /sys/bus/mdev/devices | grep -q .'
check "the debugfs object counters are all zero" objects_zero
check "vgpu_mdev unloads" rmmod vgpu_mdev
if dmesg | grep -E 'BUG|Oops|WARNING|general protection' >"$TMP/bad"; then
	not_ok "the kernel log has no BUG, Oops, WARNING, general protection"
	diag_file "$TMP/bad"
else
	ok "the kernel log has no BUG, Oops, WARNING, general protection"
fi
finish
