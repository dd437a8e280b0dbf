#!/bin/bash
# SPDX-License-Identifier: MIT
# The libvirt suite (issue 6, item 4): in the test VM (L1, TCG) Debian
# 12's libvirtd runs a guest (L2, nested KVM) and our vGPU is hot-plugged
# into it and out again with `virsh attach-device/detach-device --live`
# and vm-images/examples/vgpu-hostdev.xml (tests/vm-libvirt/). Builds the
# modules, the test VM's images and the libvirt part
# (vm-images/libvirt/build.sh), boots L1 with vm-images/l2/run-l1.sh and
# re-emits L1's TAP numbered after its own (L1 is booted again when nested
# KVM wedged or crashed it, as in vm_l2.sh). Skipped, with the reason,
# when there is no mdev/ or QEMU, or nothing can be downloaded and
# nothing is cached.
#
# Knobs: BUILD, VM_BUILD, VM_LIBVIRT_TIMEOUT (seconds for one L1 boot,
# default 600), VM_L2_BOOTS (L1 boots at most, 3), L2_ACCEL (kvm|tcg|auto),
# L2_RETRIES (hung L2 runs are retried this often, 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
VM_BUILD=${VM_BUILD:-$BUILD/vm}
export BUILD VM_BUILD L2_ACCEL=${L2_ACCEL:-auto} L2_RETRIES=${L2_RETRIES:-1}
LOG=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-vm-libvirt.XXXXXX")
trap 'rm -rf "$LOG"' EXIT
n=0
failed=0

ok()
{
	n=$((n + 1))
	echo "ok $n - $1"
}

not_ok()
{
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	tail -n 30 "$2" | sed 's/^/# /'
}

done_tap()
{
	echo "1..$n"
	[ "$failed" -eq 0 ]
	exit $?
}

[ -d mdev ] || { echo "1..0 # SKIP no mdev/ in this tree"; exit 0; }
command -v qemu-system-x86_64 >/dev/null || {
	echo "1..0 # SKIP no qemu-system-x86_64 (scripts/install-deps.sh test)"
	exit 0
}
fetch()
{
	vm-images/build-initramfs.sh --fetch && vm-images/l2/build.sh --fetch &&
		vm-images/libvirt/build.sh --fetch
}
if ! fetch >"$LOG/fetch" 2>&1 &&
	! { [ "$(id -u)" -eq 0 ] && apt-get update -qq >>"$LOG/fetch" 2>&1 &&
		fetch >"$LOG/fetch" 2>&1; }; then
	echo "# $(tail -n 3 "$LOG/fetch" | tr '\n' ' ')"
	echo "1..0 # SKIP cannot download the Debian kernel or packages (libvirt: vm-images/libvirt/build.sh; no network?)"
	exit 0
fi

start=$SECONDS
targets=(modules "$BUILD/tests/vm/vfio_user" "$BUILD/tests/vm-l2/l2_ring"
	"$BUILD/bench/vm_rtt")
make -n guest-modules >/dev/null 2>&1 && targets+=(guest-modules)
if make --no-print-directory "${targets[@]}" >"$LOG/make" 2>&1; then
	ok "the modules and the in-VM programs build ($((SECONDS - start)) s)"
else
	not_ok "the modules and the in-VM programs build" "$LOG/make"
	done_tap
fi
start=$SECONDS
if vm-images/build-initramfs.sh >"$LOG/images" 2>&1 &&
	vm-images/l2/build.sh >>"$LOG/images" 2>&1 &&
	vm-images/libvirt/build.sh >>"$LOG/images" 2>&1; then
	ok "the L1, L2 and libvirt images build ($((SECONDS - start)) s)"
	sed 's/^/# /' "$LOG/images"
else
	not_ok "the L1, L2 and libvirt images build" "$LOG/images"
	done_tap
fi

# l1_broke_in_kvm LOG: L1's kernel failed under L2 in TCG's SVM emulation,
# not in our code (vm_l2.sh has the same test and says why)
l1_broke_in_kvm()
{
	grep -Eq 'Kernel panic|soft lockup' "$1" &&
		grep -Eq 'Comm: qemu-system-x86|soft lockup.*qemu-system' "$1" &&
		! grep -q '\[vgpu_mdev\]' "$1"
}

start=$SECONDS
boots=${VM_L2_BOOTS:-3}
export VM_L1_EXTRA=$VM_BUILD/libvirt/libvirt.cpio.gz
export VM_L1_LOG=$VM_BUILD/libvirt/console.log
for ((attempt = 1; ; attempt++)); do
	rc=0
	vm-images/l2/run-l1.sh --timeout "${VM_LIBVIRT_TIMEOUT:-$([ "$L2_ACCEL" = tcg ] && echo 1800 || echo 600)}" \
		-- /vgpu/tests/run.sh l1_libvirt.sh >"$LOG/l1.out" 2>&1 || rc=$?
	why=
	if [ "$rc" -eq 126 ]; then
		why="L2 got stuck in L1's KVM (a soft lockup)"
	elif [ "$rc" -eq 125 ] && l1_broke_in_kvm "$LOG/l1.out"; then
		why="L1's kernel crashed in KVM, under QEMU, not in vgpu_mdev"
	fi
	if [ -z "$why" ] || [ "$attempt" -ge "$boots" ] ||
		[ $((SECONDS - start)) -ge 900 ]; then
		break
	fi
	echo "# L1 boot $attempt: $why; booting L1 again. Its console:"
	sed 's/^/# (restarted) /' "$LOG/l1.out"
done
awk -v n="$n" -v out="$LOG/counts" '
	/^(not )?ok [0-9]+ / {
		failed = /^not ok/
		sub(/^(not )?ok [0-9]+ /, "")
		n++; got++
		if (failed) bad++
		printf "%s %d %s\n", failed ? "not ok" : "ok", n, $0
		next }
	/^1\.\.[0-9]+$/ { plan = substr($0, 4); print "# L1 plan " $0; next }
	{ print "# " $0 }
	END { print n, got + 0, plan + 0, bad + 0 > out }' "$LOG/l1.out"
read -r n got plan bad <"$LOG/counts"
failed=$((failed + bad))
secs=$((SECONDS - start))
if [ "$rc" -eq 124 ]; then
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - L1 finished the suite in time (timed out after $secs s)"
elif [ -n "$why" ]; then
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - L1 ran the suite ($attempt boots; the last: $why)"
elif [ "$plan" -eq 0 ] || [ "$got" -ne "$plan" ]; then
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - L1 reported every test ($got of plan $plan; exit $rc)"
else
	ok "L1 ran $got tests (L2's among them) and powered off in $secs s (exit $rc, L1 boots: $attempt)"
fi
done_tap
