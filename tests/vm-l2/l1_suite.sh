#!/bin/sh
# shellcheck disable=SC2317 # unplug_hook runs through l2_follow
# SPDX-License-Identifier: MIT
# The nested VM test, L1's side: vgpud (simulator) composes a vGPU bound
# to an mdev instance (vgpu-admin create -f BP --mdev UUID); the local
# transport's round trip is measured here; then QEMU boots the L2 guest
# with the instance as a vfio-pci device and runs the L2 tests there
# (l2_pci, l2_programs, l2_hostile, l2_rtt, l2_resize, l2_unplug); their
# TAP lines come back here as "l2 SCRIPT: ..." results. When L2 asks for
# it, L1 resizes the vGPU ("vgpu-l2: resize-now N": vgpu-admin resize) or
# the QEMU monitor unplugs the device ("vgpu-l2: unplug-now"). Afterwards
# the vGPU still serves a local client, and L1's kernel log is clean.
#
# L2 runs under nested KVM (L1's kvm_amd) unless L2_ACCEL=tcg or there is
# no usable /dev/kvm in L1 (vm-images/README.md has the measurements);
# a run that hangs (watchdogs in l1_lib.sh) is killed and retried
# L2_RETRIES times (default 1); a retried run's lines come as comments.
# A run stuck in L1's KVM (a soft lockup: QEMU cannot even be killed)
# ends this L1 with "vgpu-l1: restart", and the host boots a fresh one.
# L2_TESTS overrides the list of L2 scripts. L2_LIBS=1 adds l2_libs.sh
# (a cuBLAS handle, its libraries over 9p): not by default, since the
# page faults of loading them crashed L1's nested KVM under TCG in two
# of five CI runs (a stack overflow in exc_page_fault, or L2's QEMU gone).
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l1_lib.sh
. ./l1_lib.sh

NAME=l2gpu
SMS=16
MEMORY=1073741824
RESIZE_SMS=24
libs=
[ "${L2_LIBS:-0}" != 1 ] || libs=l2_libs.sh
L2_TESTS=${L2_TESTS:-l2_pci.sh l2_programs.sh $libs l2_hostile.sh l2_rtt.sh l2_resize.sh l2_unplug.sh}
L2_RUN=$TMP/l2
UNPLUGGED=
RESIZED=

# The monitor hook of l2_follow: unplug the vGPU once L2 asks for it.
unplug_hook()
{
	[ -z "$UNPLUGGED" ] || return 0
	# (L2's run.sh passes the line on as a comment: "# vgpu-l2: ...")
	l2_has "$1" 'vgpu-l2: unplug-now$' || return 0
	UNPLUGGED=$(l2_uptime)
	l2_monitor "$1" "device_del vgpu0"
	echo "# L1: device_del vgpu0 sent to QEMU at $UNPLUGGED s"
}

# The monitor hook's other half: resize the vGPU once L2 asks for it
# (l2_resize.sh); vgpu-admin's answer lands in $TMP/resize.{out,rc}.
resize_hook()
{
	local n
	[ -z "$RESIZED" ] || return 0
	l2_has "$1" 'vgpu-l2: resize-now [0-9]+$' || return 0
	n=$(tr -d '\r' <"$1/console" |
		sed -n 's/.*vgpu-l2: resize-now \([0-9]*\)$/\1/p' | head -n 1)
	RESIZED=$(l2_uptime)
	echo 1 >"$TMP/resize.rc"
	vadmin resize "$NAME" --sms "$n" >"$TMP/resize.out" 2>&1
	echo $? >"$TMP/resize.rc"
	echo "# L1: vgpu-admin resize $NAME --sms $n at $RESIZED s (status $(cat "$TMP/resize.rc"))"
}

l1_hooks()
{
	resize_hook "$1"
	unplug_hook "$1"
}

cleanup_l2()
{
	l2_stop "$L2_RUN"
	cleanup
}
trap cleanup_l2 EXIT

check "vgpu_mdev.ko loads" module_load || finish
check "vgpud starts with the mdev transport (simulator)" vgpud_start ||
	finish
l1_vgpu_create

if local_client vm_rtt "${L2_RTT_ITERS:-1000}" /vgpu/kernels/vector_add.cubin \
	l1 >"$TMP/rtt" 2>&1; then
	ok "vm_rtt in L1 through the local transport"
else
	not_ok "vm_rtt in L1 through the local transport"
fi
sed 's/^/# /' "$TMP/rtt"

accel=$(l2_accel)
l2_accel_note "$accel"
# the toolkit's libraries, for L2's cuBLAS (l2_libs.sh; only then)
if echo " $L2_TESTS " | grep -q ' l2_libs.sh ' &&
	! share_mount cuda "$L2_SHARE"; then
	echo "# L1: no 9p share of the toolkit's libraries: L2 cannot load cuBLAS"
fi
cmd="export L2_EXPECT_SMS=$SMS L2_EXPECT_MEMORY=$MEMORY L2_EXPECT_NAME=$NAME
export L2_RESIZE_SMS=$RESIZE_SMS
export L2_RTT_ITERS=${L2_RTT_ITERS:-1000}
sh /vgpu/tests/run.sh $L2_TESTS"
attempt=0
while :; do
	attempt=$((attempt + 1))
	# a run that failed may have resized the vGPU: each starts at SMS
	[ -z "$RESIZED" ] || vadmin resize "$NAME" --sms "$SMS" >/dev/null 2>&1 ||
		echo "# L1: could not resize $NAME back to $SMS SMs for run $attempt"
	UNPLUGGED=
	RESIZED=
	l2_start "$L2_RUN" "$accel" "$cmd" "$UUID"
	rc=0
	l2_follow "$L2_RUN" l1_hooks || rc=$?
	[ "$rc" -ne 0 ] || break
	echo "# L1: L2 run $attempt under $accel failed: $(cat "$L2_RUN/why")"
	l2_relay "$L2_RUN/console" | sed 's/^/# (failed run) /'
	sed 's/^/# qemu: /' "$L2_RUN/qemu.log"
	grep -v '=' "$L2_RUN/qemu-debug.log" | tail -n 5 | sed 's/^/# qemu -d: /'
	[ "$rc" -ne 4 ] || l1_restart "$L2_RUN" "$accel"
	[ "$attempt" -le "${L2_RETRIES:-1}" ] || break
done
if [ "$rc" -eq 0 ]; then
	l2_relay "$L2_RUN/console"
	ok "L2 ($accel) was up after $(cat "$L2_RUN/up") s and ran its tests in $(cat "$L2_RUN/secs") s (run $attempt, guest exit $L2_STATUS)"
	sed 's/^/# qemu: /' "$L2_RUN/qemu.log"
else
	not_ok "L2 ($accel) runs its tests ($attempt runs; the last: $(cat "$L2_RUN/why"))"
fi
if echo " $L2_TESTS " | grep -q ' l2_resize.sh '; then
	check "L1 resized the vGPU to $RESIZE_SMS SMs while L2 ran" \
		test "$(cat "$TMP/resize.rc" 2>/dev/null)" = 0
	sed 's/^/# vgpu-admin: /' "$TMP/resize.out" 2>/dev/null
fi
if echo " $L2_TESTS " | grep -q ' l2_unplug.sh '; then
	check "QEMU got the unplug request from L2" test -n "$UNPLUGGED"
fi

check "the vGPU still serves a local client after the VM is gone" \
	local_client vm_rtt 20 /vgpu/kernels/vector_add.cubin after
check "the instance can be removed" mdev_remove "$UUID"
check "vgpud exits cleanly" vgpud_stop
check "L1's kernel log has no BUG, Oops, WARNING, soft lockup" sh -c \
	"! dmesg | grep -E 'BUG|Oops|WARNING|general protection|soft lockup'"
finish
