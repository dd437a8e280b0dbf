#!/bin/sh
# SPDX-License-Identifier: MIT
# A resize from L1 while L2 runs: this script prints "vgpu-l2: resize-now
# N" and L1 runs vgpu-admin resize (l1_suite.sh). The guest driver's
# poll() on /sys/class/vgpu/vgpu0/change_count wakes (the device
# interrupt), sysfs sms, slice and change_count show the new composition,
# a new program's cudaGetDeviceProperties says N SMs, and a program that
# was running sees cudaDeviceGetAttribute's SM count change (the library
# asks again when the ring's change_count moved; NVIDIA's runtime keeps
# the properties it read first).
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

need_guest_driver "BAR0 and sysfs follow a resize from L1"
old=${L2_EXPECT_SMS:-16}
new=${L2_RESIZE_SMS:-24}
attr=/sys/class/vgpu/vgpu0/change_count
cc0=$(guest_attr change_count)
l2_ring watch "$attr" 60 >"$TMP/watch" 2>&1 &
watcher=$!
props=
if command -v resize_props_rt >/dev/null 2>&1; then
	cuda_bg "$TMP/props" resize_props_rt --wait 60
	props=$BG_PID
	wait_for 30 "resize_props_rt to start" grep -q 'SMs$' "$TMP/props"
fi
wait_for 10 "the watcher to read $attr" grep -q waiting "$TMP/watch"
echo "vgpu-l2: resize-now $new"
rc=0
wait_pid "$watcher" 70 || rc=$?
if [ "$rc" -eq 0 ]; then
	ok "poll() on sysfs change_count wakes: $(tail -n 1 "$TMP/watch" | cut -d' ' -f2-)"
else
	not_ok "poll() on sysfs change_count wakes after the resize" \
		"$(cat "$TMP/watch")"
fi
check "sysfs sms is $new (was $old)" test "$(guest_attr sms)" = "$new"
check "sysfs slice has $((new / 8)) groups ($(guest_attr slice))" \
	test "$(guest_attr slice | cut -d' ' -f2)" = $((new / 8))
check "sysfs change_count went up ($cc0 -> $(guest_attr change_count))" \
	test "$(guest_attr change_count)" -gt "$cc0"
if cuda device_props_rt --vgpu --sms "$new" >"$TMP/out" 2>&1 &&
	grep -q OK "$TMP/out"; then
	ok "a new program's cudaGetDeviceProperties says $new SMs"
else
	not_ok "a new program's cudaGetDeviceProperties says $new SMs"
	diag_file "$TMP/out"
fi
if [ -n "$props" ]; then
	rc=0
	wait_pid "$props" 70 || rc=$?
	if [ "$rc" -eq 0 ] && grep -q "$old -> $new SMs" "$TMP/props"; then
		ok "a running program's SM count attribute goes $old -> $new"
	else
		not_ok "a running program's SM count attribute goes $old -> $new" \
			"exit $rc: $(tail -n 1 "$TMP/props")"
	fi
else
	skip "a running program's SM count attribute follows" \
		"no resize_props_rt in the L2 image"
fi
for a in sms slice change_count memory gpu state; do
	echo "# /sys/class/vgpu/vgpu0/$a: $(guest_attr $a 2>&1)"
done
finish
