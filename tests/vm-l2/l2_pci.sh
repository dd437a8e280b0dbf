#!/bin/sh
# SPDX-License-Identifier: MIT
# The vGPU as L2 sees it: a PCI device with our IDs (include/vgpu/pci.h),
# bound by vgpu_guest.ko, which makes /dev/vgpu0 and
# /sys/class/vgpu/vgpu0 describe the vGPU that L1 composed.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

# from include/vgpu/pci.h (VGPU_PCI_VENDOR_ID, _DEVICE_ID, _CLASS)
IDS=5647:0001
CLASS=0302

if lspci -n >"$TMP/lspci" 2>&1 && grep -q " $CLASS: $IDS" "$TMP/lspci"; then
	ok "lspci -n shows the vGPU ($CLASS: $IDS)"
else
	not_ok "lspci -n shows the vGPU ($CLASS: $IDS)"
	diag_file "$TMP/lspci"
fi
slot=$(awk -v ids="$IDS" '$3 == ids { print $1; exit }' "$TMP/lspci")
if [ -n "$slot" ]; then
	lspci -n -vv -s "$slot" >"$TMP/lspci-v" 2>&1
	check "it has MSI, a 4 KiB BAR0 and a prefetchable BAR2" sh -c "
		grep -q 'MSI:' $TMP/lspci-v &&
		grep -q 'Region 0: Memory at .* \[size=4K\]' $TMP/lspci-v &&
		grep -q 'Region 2: Memory at .*prefetchable' $TMP/lspci-v"
	diag_file "$TMP/lspci-v"
fi

need_guest_driver "the guest driver binds the vGPU"
ok "insmod vgpu_guest.ko; $(guest_dev) appears"
check "$(guest_dev) is a character device" test -c "$(guest_dev)"
if [ -n "$slot" ]; then
	check "the PCI device is bound to vgpu_guest" sh -c \
		"readlink /sys/bus/pci/devices/0000:$slot/driver | grep -q vgpu_guest"
fi
check "sysfs state is ready" test "$(guest_attr state)" = ready
check "sysfs sms is ${L2_EXPECT_SMS:-?} (the composed vGPU's)" \
	test "$(guest_attr sms)" = "${L2_EXPECT_SMS:-}"
check "sysfs memory is ${L2_EXPECT_MEMORY:-?} bytes" \
	test "$(guest_attr memory)" = "${L2_EXPECT_MEMORY:-}"
check "sysfs gpu is ${L2_EXPECT_GPU:-0} (the host GPU it lives on)" \
	test "$(guest_attr gpu)" = "${L2_EXPECT_GPU:-0}"
check "sysfs vgpu_name is ${L2_EXPECT_NAME:-?}" \
	test "$(guest_attr vgpu_name)" = "${L2_EXPECT_NAME:-}"
check "sysfs protocol_version is 1.7" \
	test "$(guest_attr protocol_version)" = 1.7
for a in sms memory gpu vgpu_name slice isolation protocol_version \
	change_count channels state; do
	echo "# /sys/class/vgpu/vgpu0/$a: $(guest_attr $a 2>&1)"
done
finish
