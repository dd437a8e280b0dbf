#!/bin/bash
# SPDX-License-Identifier: MIT
# The VM suite: builds vgpu_mdev.ko (make modules) and the test VM's
# initramfs, boots the Debian kernel in QEMU (vm-images/run-vm.sh) and
# re-emits the guest's TAP lines (tests/vm/run.sh) numbered after its own;
# the rest of the console comes as "#" lines. Skipped, with the reason,
# when there is no mdev/ or no QEMU, or the Debian packages cannot be
# downloaded (no network and nothing cached).
#
# Knobs: BUILD (build), VM_BUILD ($BUILD/vm), VM_TIMEOUT (seconds for the
# boot and the whole in-VM suite, default 600), VM_TESTS (in-VM scripts to
# run, default all), VM_ACCEL (kvm|tcg: skip the KVM probe).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
VM_BUILD=${VM_BUILD:-$BUILD/vm}
export BUILD VM_BUILD
LOG=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-vm.XXXXXX")
trap 'rm -rf "$LOG"' EXIT
n=0
failed=0

ok()
{
	n=$((n + 1))
	echo "ok $n - $1"
}

# not_ok WHAT LOG: the failure and the end of the log
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
# fetch (a no-op when cached); once more after an apt-get update, since
# a fresh machine may have no package lists
if ! vm-images/build-initramfs.sh --fetch >"$LOG/fetch" 2>&1 &&
	! { [ "$(id -u)" -eq 0 ] && apt-get update -qq >>"$LOG/fetch" 2>&1 &&
		vm-images/build-initramfs.sh --fetch >"$LOG/fetch" 2>&1; }; then
	echo "# $(tail -n 3 "$LOG/fetch" | tr '\n' ' ')"
	echo "1..0 # SKIP cannot download the Debian kernel, busybox or mdevctl packages (no network?)"
	exit 0
fi

start=$SECONDS
if make --no-print-directory modules "$BUILD/tests/vm/vfio_user" >"$LOG/make" 2>&1; then
	ok "vgpu_mdev.ko builds against Debian's kernel headers ($((SECONDS - start)) s)"
else
	not_ok "vgpu_mdev.ko and vfio_user build" "$LOG/make"
	done_tap
fi
start=$SECONDS
if vm-images/build-initramfs.sh >"$LOG/initramfs" 2>&1; then
	ok "the test VM's initramfs builds ($((SECONDS - start)) s)"
	sed 's/^/# /' "$LOG/initramfs"
else
	not_ok "the test VM's initramfs builds" "$LOG/initramfs"
	done_tap
fi

# Boot; renumber the guest's TAP after ours, pass the rest on as comments.
start=$SECONDS
rc=0
# shellcheck disable=SC2086 # VM_TESTS is a list of script names
vm-images/run-vm.sh --timeout "${VM_TIMEOUT:-600}" -- \
	/vgpu/tests/run.sh ${VM_TESTS:-} 2>&1 |
	awk -v n="$n" -v out="$LOG/counts" '
		/^(not )?ok [0-9]+ / {
			failed = /^not ok/
			sub(/^(not )?ok [0-9]+ /, "")
			n++; got++
			if (failed) bad++
			printf "%s %d %s\n", failed ? "not ok" : "ok", n, $0
			fflush(); next }
		/^1\.\.[0-9]+$/ { plan = substr($0, 4); print "# guest plan " $0
			fflush(); next }
		{ print "# " $0; fflush() }
		END { print n, got + 0, plan + 0, bad + 0 > out }' ||
	rc=${PIPESTATUS[0]}
read -r n got plan bad <"$LOG/counts"
failed=$((failed + bad))
secs=$((SECONDS - start))
if [ "$rc" -eq 124 ]; then
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - the VM finished the suite in time (timed out after $secs s)"
elif [ "$plan" -eq 0 ] || [ "$got" -ne "$plan" ]; then
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - the guest reported every test ($got of plan $plan; exit $rc)"
else
	ok "the VM ran $got tests and powered off in $secs s (guest exit $rc)"
fi
done_tap
