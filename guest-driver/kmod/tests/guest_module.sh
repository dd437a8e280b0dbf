#!/bin/sh
# shellcheck disable=SC2317 # functions run through check
# SPDX-License-Identifier: MIT
# vgpu_guest.ko with no vGPU present (no L2 guest needed): it loads and
# unloads cleanly, registers its class and PCI driver, creates no device
# node, refuses a PCI device that is not a vGPU with a clear message, and
# leaves no BUG, Oops or WARNING in the kernel log. Runs in the test VM
# from /vgpu/tests (tests/vm/lib.sh's helpers), like tests/vm/*.sh.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

GUEST_MODULE=/lib/modules/vgpu_guest.ko
DRIVER=/sys/bus/pci/drivers/vgpu_guest

guest_loaded()
{
	[ -d /sys/module/vgpu_guest ]
}

# A PCI device no driver holds, as "VENDOR DEVICE" (hex, no 0x), or none.
spare_device()
{
	local d
	for d in /sys/bus/pci/devices/*; do
		[ -e "$d/driver" ] && continue
		echo "$(sed 's/^0x//' "$d/vendor") $(sed 's/^0x//' "$d/device")"
		return 0
	done
	return 1
}

module_unload
! guest_loaded || rmmod vgpu_guest
dmesg_mark
if ! check "vgpu_guest.ko loads with no vGPU present" insmod "$GUEST_MODULE"; then
	finish
fi
check "class vgpu is registered (/sys/class/vgpu)" test -d /sys/class/vgpu
check "the PCI driver vgpu_guest is registered" test -d "$DRIVER"
check "its alias claims vendor 5647 device 0001" \
	grep -q "alias=pci:v00005647d00000001" "$GUEST_MODULE"
check_fails "no /dev/vgpu0 without a device" test -e /dev/vgpu0
check_fails "no class devices without a device" \
	sh -c 'ls /sys/class/vgpu | grep -q .'

# A device that is not a vGPU, bound by hand (new_id): refused cleanly.
if ids=$(spare_device); then
	dmesg_mark
	echo "$ids" >"$DRIVER/new_id" 2>/dev/null
	sleep 0.2
	echo "$ids" >"$DRIVER/remove_id" 2>/dev/null
	if ls "$DRIVER" | grep -q '^0000:'; then
		not_ok "a PCI device that is not a vGPU ($ids) is refused" \
			"bound: $(ls "$DRIVER" | grep '^0000:')"
	elif dmesg_since | grep -q 'not a vGPU'; then
		ok "a PCI device that is not a vGPU ($ids) is refused with a clear message"
		dmesg_since | grep 'vgpu_guest' | sed 's/^/# /'
	else
		not_ok "a PCI device that is not a vGPU ($ids) is refused with a clear message"
		dmesg_since | tail -n 5 | sed 's/^/# /'
	fi
else
	skip "a PCI device that is not a vGPU is refused" "no spare PCI device"
fi

check "vgpu_guest unloads" rmmod vgpu_guest
check_fails "class vgpu is gone after rmmod" test -d /sys/class/vgpu
check_fails "the PCI driver is gone after rmmod" test -d "$DRIVER"
i=0
while [ $i -lt 5 ] && insmod "$GUEST_MODULE" && rmmod vgpu_guest; do
	i=$((i + 1))
done
if [ $i -eq 5 ]; then
	ok "five more load/unload cycles"
else
	not_ok "five more load/unload cycles" "cycle $((i + 1)) failed"
fi

# Beside the host module (a VM that is also a host: nested vGPUs). Both
# modules name their class "vgpu"; report what happens, cleanly either way.
if [ -f "$MODULE" ] && insmod "$MODULE" 2>/dev/null; then
	dmesg_mark
	if insmod "$GUEST_MODULE" 2>/dev/null; then
		ok "vgpu_guest loads beside vgpu_mdev"
		rmmod vgpu_guest
	elif dmesg_since | grep -q 'cannot create class vgpu'; then
		ok "beside vgpu_mdev (same class name) it refuses to load with a clear message"
		dmesg_since | grep vgpu_guest | sed 's/^/# /'
	else
		not_ok "beside vgpu_mdev it loads or refuses cleanly"
		dmesg_since | tail -n 5 | sed 's/^/# /'
	fi
	check_fails "vgpu_guest is not left half-loaded" guest_loaded
	rmmod vgpu_mdev
fi

if dmesg | grep -E 'BUG|Oops|WARNING|general protection' >"$TMP/bad"; then
	not_ok "the kernel log has no BUG, Oops, WARNING, general protection"
	diag_file "$TMP/bad"
else
	ok "the kernel log has no BUG, Oops, WARNING, general protection"
fi
finish
