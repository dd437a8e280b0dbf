#!/bin/sh
# SPDX-License-Identifier: MIT
# Hot-unplug while a program runs: L1 removes the vGPU from the VM (QEMU
# monitor device_del, when this script prints "vgpu-l2: unplug-now"); the
# program gets a CUDA error and exits non-zero with a message, within a
# bounded time, never hangs. Must be the last L2 test: the device is gone.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

need_guest_driver "hot-unplug while a program runs"
cuda_bg "$TMP/prog" long_copy 600 4
prog=$BG_PID
if ! wait_for 60 "the program to start copying" \
	grep -q 'long_copy: copying' "$TMP/prog"; then
	not_ok "a program is copying before the unplug" "$(cat "$TMP/prog")"
	kill -KILL "$prog" 2>/dev/null
	finish
fi
echo "vgpu-l2: unplug-now"
t0=$(cut -d' ' -f1 /proc/uptime)
rc=0
wait_pid "$prog" "${L2_UNPLUG_TIMEOUT:-120}" || rc=$?
secs=$(echo "$(cut -d' ' -f1 /proc/uptime) $t0" | awk '{ printf "%.1f", $1 - $2 }')
if [ "$rc" -eq 124 ]; then
	not_ok "the program ends after the unplug" "still running after $secs s (killed)"
elif [ "$rc" -ne 0 ] && grep -q 'CUDA_ERROR' "$TMP/prog"; then
	ok "the program fails with a CUDA error $secs s after the unplug request (exit $rc)"
else
	not_ok "the program fails with a CUDA error after the unplug" "exit $rc"
fi
diag_file "$TMP/prog"
if wait_for 60 "the device to leave" sh -c "! test -e $(guest_dev)"; then
	ok "$(guest_dev) is gone"
else
	not_ok "$(guest_dev) is gone"
fi
# the driver lets go first (the node goes), then the PCI core removes it
check "lspci no longer lists the vGPU" \
	wait_for 30 "the PCI device to leave" sh -c "! lspci -n | grep -q 5647:0001"
dmesg | grep -iE 'vgpu|acpiphp|pci 0000' | tail -n 8 | sed 's/^/# dmesg: /'
# from the guest driver's first line on (the nested boot itself may warn
# about the CPU that TCG's SVM presents: xstate sizes)
check "the kernel log since vgpu_guest loaded has no BUG, Oops, WARNING" \
	sh -c "! dmesg | sed -n '/vgpu_guest/,\$p' |
		grep -E 'BUG|Oops|WARNING|general protection'"
finish
