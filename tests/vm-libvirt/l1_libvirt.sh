#!/bin/sh
# shellcheck disable=SC2317 # lv_hook runs through l2_follow
# SPDX-License-Identifier: MIT
# The libvirt test, L1's side (issue 6): libvirtd (Debian 12's, from
# vm-images/libvirt) runs a guest (L2: the nested test's kernel and
# initramfs, defined from vm-images/examples/vgpu-guest.xml) and our vGPU
# is hot-plugged into it with `virsh attach-device DOM vgpu-hostdev.xml
# --live` (vm-images/examples, the UUID that `vgpu-admin create -f BP
# --mdev UUID` bound), then unplugged with detach-device and plugged
# again. L2 (tests/vm-libvirt/l2_*.sh and the nested test's l2_pci.sh)
# asks for each step on its console ("vgpu-l2: attach-now", detach-now,
# reattach-now) and checks what it sees: the PCI device 5647:0001,
# vgpu_guest, /dev/vgpu0, a runtime program, the removal. Here: dumpxml
# before and after, the hostile cases (a UUID with no instance, the same
# instance twice, a domain that is not running), the vGPU and its instance
# sane afterwards, everything removed cleanly, a clean kernel log.
#
# L2 runs under nested KVM when L1 has it (else TCG), followed by
# l1_lib.sh's watchdogs; a run that hangs is destroyed and started again
# L2_RETRIES times (1), its lines as comments; one stuck in L1's KVM ends
# this L1 with "vgpu-l1: restart" (the host boots another).
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l1_lib.sh
. ./l1_lib.sh
# shellcheck source=tests/vm-libvirt/l1_libvirt_lib.sh
. ./l1_libvirt_lib.sh

NAME=lvgpu
SMS=16
MEMORY=1073741824
RUN=$TMP/l2
ATTACHED=
DETACHED=
REATTACHED=

# took CMD...: runs CMD; its duration in seconds in TOOK
took()
{
	local t0 rc=0
	t0=$(l2_uptime)
	"$@" || rc=$?
	TOOK=$(echo "$(l2_uptime) $t0" | awk '{ printf "%.1f", $1 - $2 }')
	return "$rc"
}

# last_line FILE: its last line that is not empty (virsh's reason)
last_line()
{
	grep . "$1" | tail -n 1
}

# The hostile attach, then the real one (L2 said "attach-now"). The
# hostile one is the example file as it is: its UUID has no instance.
attach_step()
{
	local dir=$1 bogus=$LV_EXAMPLE_UUID out=$TMP/attach.out
	if lv attach-device "$LV_DOM" "$LV_EXAMPLES/vgpu-hostdev.xml" --live \
		>"$out" 2>&1; then
		not_ok "attach-device of a UUID with no instance fails"
	elif grep -q "$bogus" "$out"; then
		ok "attach-device of a UUID with no instance (the example's) fails, naming it: $(last_line "$out")"
	else
		not_ok "attach-device of a UUID with no instance names it" "$(cat "$out")"
	fi
	check "the domain still runs after it" lv_state_is "$LV_DOM" running
	check "dumpxml lists no hostdev of that UUID" \
		test "$(hostdevs "$LV_DOM" "$bogus")" = 0
	if took lv attach-device "$LV_DOM" "$dir/hostdev.xml" --live >"$out" 2>&1; then
		ok "virsh attach-device $LV_DOM vgpu-hostdev.xml --live (the instance's UUID; $TOOK s)"
	else
		not_ok "virsh attach-device $LV_DOM vgpu-hostdev.xml --live" "$(cat "$out")"
	fi
	check "virsh dumpxml lists the hostdev once" \
		test "$(hostdevs "$LV_DOM" "$UUID")" = 1
	lv dumpxml "$LV_DOM" | sed -n '/<hostdev/,/<\/hostdev>/p' | sed 's/^/# /'
	check "the persistent definition has no hostdev (--live only)" \
		test "$(hostdevs "$LV_DOM" --inactive "$UUID")" = 0
	if lv attach-device "$LV_DOM" "$dir/hostdev.xml" --live >"$out" 2>&1; then
		not_ok "a second attach-device of the same instance fails"
	else
		ok "a second attach-device of the same instance fails: $(last_line "$out")"
	fi
	check "dumpxml still lists the hostdev once" \
		test "$(hostdevs "$LV_DOM" "$UUID")" = 1
}

detach_step()
{
	local dir=$1 out=$TMP/detach.out
	if took lv detach-device "$LV_DOM" "$dir/hostdev.xml" --live >"$out" 2>&1; then
		ok "virsh detach-device $LV_DOM vgpu-hostdev.xml --live ($TOOK s)"
	else
		not_ok "virsh detach-device $LV_DOM vgpu-hostdev.xml --live" "$(cat "$out")"
	fi
	check "virsh dumpxml no longer lists the hostdev (once the guest let go)" \
		wait_for 120 "the hostdev to leave the domain" \
		test "$(hostdevs "$LV_DOM" "$UUID")" = 0
	check "the instance is still there" mdev_exists "$UUID"
	if lv detach-device "$LV_DOM" "$dir/hostdev.xml" --live >"$out" 2>&1; then
		not_ok "a second detach-device (nothing attached) fails"
	else
		ok "a second detach-device (nothing attached) fails: $(last_line "$out")"
	fi
}

reattach_step()
{
	local dir=$1 out=$TMP/attach.out
	if took lv attach-device "$LV_DOM" "$dir/hostdev.xml" --live >"$out" 2>&1; then
		ok "attach-device again after the detach ($TOOK s)"
	else
		not_ok "attach-device again after the detach" "$(cat "$out")"
	fi
}

# The hook of l2_follow: each step once, when L2 asks for it; its TAP
# lines go to DIR/l1.tap (shown after the run, comments if it is retried).
lv_hook()
{
	local dir=$1
	if [ -z "$ATTACHED" ] && l2_has "$dir" 'vgpu-l2: attach-now$'; then
		ATTACHED=1
		attach_step "$dir" >>"$dir/l1.tap" 2>&1
	fi
	if [ -z "$DETACHED" ] && l2_has "$dir" 'vgpu-l2: detach-now$'; then
		DETACHED=1
		detach_step "$dir" >>"$dir/l1.tap" 2>&1
	fi
	if [ -z "$REATTACHED" ] && l2_has "$dir" 'vgpu-l2: reattach-now$'; then
		REATTACHED=1
		reattach_step "$dir" >>"$dir/l1.tap" 2>&1
	fi
}

cleanup_lv()
{
	[ -z "$L2_QEMU_PID" ] || lv_destroy "$RUN"
	libvirtd_stop
	cleanup
}
trap cleanup_lv EXIT

check "vgpu_mdev.ko loads" module_load || finish
check "vgpud starts with the mdev transport (simulator)" vgpud_start ||
	finish
accel=$(l2_accel)
l2_accel_note "$accel"
if took libvirtd_start >"$TMP/start" 2>&1 && lv version >>"$TMP/start" 2>&1; then
	ok "libvirtd starts, virsh version answers ($TOOK s)"
	sed 's/^/# /' "$TMP/start"
else
	not_ok "libvirtd starts, virsh version answers" "$(cat "$TMP/start")"
	diag_file /tmp/libvirtd.out
	diag_file "$LIBVIRTD_LOG"
	finish
fi

l1_vgpu_create

cmd="export L2_EXPECT_SMS=$SMS L2_EXPECT_MEMORY=$MEMORY L2_EXPECT_NAME=$NAME
sh /vgpu/tests/run.sh l2_attach.sh l2_pci.sh l2_detach.sh"
lv_domain "$RUN" "$accel" "$cmd"
lv_hostdev "$UUID" "$RUN/hostdev.xml"
check "virsh define --validate (vm-images/examples/vgpu-guest.xml, $accel)" \
	lv define --validate "$RUN/domain.xml" || finish

attempt=0
fails0=$FAILS
while :; do
	attempt=$((attempt + 1))
	ATTACHED='' DETACHED='' REATTACHED=''
	FAILS=$fails0
	rc=0
	if ! took lv_boot "$RUN" >"$TMP/boot" 2>&1; then
		not_ok "virsh start $LV_DOM" "$(cat "$TMP/boot")"
		diag_file "$LIBVIRTD_LOG"
		finish
	fi
	echo "# L1: virsh start took $TOOK s (QEMU pid $L2_QEMU_PID)"
	l2_follow "$RUN" lv_hook || rc=$?
	[ "$rc" -ne 0 ] || break
	echo "# L1: L2 run $attempt under $accel failed: $(cat "$RUN/why")"
	sed 's/^/# (failed run) /' "$RUN/l1.tap" 2>/dev/null
	l2_relay "$RUN/console" | sed 's/^/# (failed run) /'
	if [ "$rc" -eq 4 ] || ! lv_destroy "$RUN"; then
		l1_restart "$RUN" "$accel"
	fi
	[ "$attempt" -le "${L2_RETRIES:-1}" ] || break
done
if [ "$rc" -eq 0 ]; then
	# the steps L1 took, then what L2 saw
	cat "$RUN/l1.tap" 2>/dev/null
	l2_relay "$RUN/console"
	ok "L2 ($accel) was up after $(cat "$RUN/up") s and ran its tests in $(cat "$RUN/secs") s (run $attempt, guest exit $L2_STATUS)"
else
	not_ok "L2 ($accel) runs its tests ($attempt runs; the last: $(cat "$RUN/why"))"
fi
L2_QEMU_PID=
check "L1 took every step L2 asked for (attach, detach, attach)" \
	test -n "$ATTACHED" -a -n "$DETACHED" -a -n "$REATTACHED"

check "the domain is shut off after L2 powered off" \
	wait_for 60 "the domain to stop" lv_state_is "$LV_DOM" "shut off"
if lv attach-device "$LV_DOM" "$RUN/hostdev.xml" --live >"$TMP/out" 2>&1; then
	not_ok "attach-device --live to a domain that is not running fails"
else
	ok "attach-device --live to a domain that is not running fails: $(last_line "$TMP/out")"
fi
check "the instance is still on the mdev bus" mdev_exists "$UUID"
check "its device state is READY (vfio_user regs)" \
	test "$(regs "$UUID" state)" = 1
check "the vGPU still serves a local client after the VM is gone" \
	local_client vm_rtt 20 /vgpu/kernels/vector_add.cubin after
check "virsh undefine $LV_DOM" lv undefine "$LV_DOM"
check "the instance can be removed" mdev_remove "$UUID"
check "removing it destroyed the vGPU" \
	wait_for 30 "the vGPU to go" vgpu_absent "$NAME"
check "libvirtd exits cleanly" libvirtd_stop
check "vgpud exits cleanly" vgpud_stop
# (but for dmidecode, which the image lacks: libvirt's sysinfo only)
if grep -E ' error : ' "$LIBVIRTD_LOG" 2>/dev/null | grep -v dmidecode \
	>"$TMP/errors"; then
	echo "# libvirtd's errors (the hostile cases'):"
	sed 's/^/#   /' "$TMP/errors"
fi
check "L1's kernel log has no BUG, Oops, WARNING, soft lockup" sh -c \
	"! dmesg | grep -E 'BUG|Oops|WARNING|general protection|soft lockup'"
finish
