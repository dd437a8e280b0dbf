#!/bin/sh
# shellcheck disable=SC2317 # has_vgpu runs through wait_for
# SPDX-License-Identifier: MIT
# The libvirt test, L2's side, last: a runtime program passes on the
# hot-plugged vGPU; L1 unplugs it ("vgpu-l2: detach-now": virsh
# detach-device) and /dev/vgpu0 and the PCI device go; L1 plugs it again
# ("vgpu-l2: reattach-now") and vgpu_guest binds it again, the program
# passes again; the kernel log stays clean. L2 then powers off with the
# device in (libvirt releases it).
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

IDS=5647:0001

has_vgpu()
{
	lspci -n | grep -q " 0302: $IDS"
}

# since T: seconds since the uptime T
since()
{
	echo "$(cut -d' ' -f1 /proc/uptime) $1" | awk '{ printf "%.1f", $1 - $2 }'
}

need_guest_driver "a program runs on the hot-plugged vGPU"
check "vector_add_rt passes on the hot-plugged vGPU" cuda vector_add_rt
diag_file "$TMP/out"
echo "vgpu-l2: detach-now"
t0=$(cut -d' ' -f1 /proc/uptime)
if wait_for "${L2_DETACH_TIMEOUT:-120}" "$(guest_dev) to go" \
	sh -c "! test -e $(guest_dev)"; then
	ok "$(guest_dev) goes after detach-device ($(since "$t0") s)"
else
	not_ok "$(guest_dev) goes after detach-device"
fi
check "lspci no longer lists the vGPU" \
	wait_for 30 "the PCI device to leave" sh -c "! lspci -n | grep -q $IDS"
echo "vgpu-l2: reattach-now"
t0=$(cut -d' ' -f1 /proc/uptime)
if wait_for "${L2_ATTACH_TIMEOUT:-180}" "the vGPU to come back" has_vgpu; then
	ok "the vGPU is back on the PCI bus after a second attach-device ($(since "$t0") s)"
else
	not_ok "the vGPU is back on the PCI bus after a second attach-device"
fi
check "vgpu_guest binds it again: $(guest_dev)" \
	wait_for 30 "$(guest_dev)" test -c "$(guest_dev)"
check "sysfs vgpu_name is still ${L2_EXPECT_NAME:-?}" \
	test "$(guest_attr vgpu_name)" = "${L2_EXPECT_NAME:-}"
check "vector_add_rt passes after the re-attach" cuda vector_add_rt
dmesg | grep -iE 'vgpu|acpiphp|pci 0000:00:0' | tail -n 8 | sed 's/^/# dmesg: /'
check "the kernel log since vgpu_guest loaded has no BUG, Oops, WARNING" \
	sh -c "! dmesg | sed -n '/vgpu_guest/,\$p' |
		grep -E 'BUG|Oops|WARNING|general protection'"
finish
