#!/bin/sh
# shellcheck disable=SC2317 # has_vgpu runs through wait_for
# SPDX-License-Identifier: MIT
# The libvirt test, L2's side, first: the guest starts without a vGPU;
# it asks L1 for the hot-plug ("vgpu-l2: attach-now": L1 runs virsh
# attach-device with vm-images/examples/vgpu-hostdev.xml) and waits for
# the PCI device 5647:0001 to appear (ACPI hot-plug on i440fx's root bus).
# l2_pci.sh (tests/vm-l2) then checks the device and vgpu_guest.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

# from include/vgpu/pci.h (VGPU_PCI_VENDOR_ID, _DEVICE_ID, _CLASS)
IDS=5647:0001
CLASS=0302

has_vgpu()
{
	lspci -n | grep -q " $CLASS: $IDS"
}

check_fails "no vGPU on the PCI bus before attach-device" has_vgpu
echo "vgpu-l2: attach-now"
t0=$(cut -d' ' -f1 /proc/uptime)
if wait_for "${L2_ATTACH_TIMEOUT:-180}" "the vGPU to appear" has_vgpu; then
	ok "the vGPU appears on the PCI bus after attach-device ($(echo \
		"$(cut -d' ' -f1 /proc/uptime) $t0" | awk '{ printf "%.1f", $1 - $2 }') s)"
else
	not_ok "the vGPU appears on the PCI bus after attach-device"
	lspci -n | sed 's/^/# lspci: /'
fi
dmesg | grep -iE 'acpiphp|pci 0000:00:0' | tail -n 6 | sed 's/^/# dmesg: /'
finish
