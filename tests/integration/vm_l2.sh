#!/bin/bash
# SPDX-License-Identifier: MIT
# The nested VM suite (issue 6: an unmodified CUDA program inside a QEMU
# guest runs on a vGPU slice). Builds vgpu_mdev.ko, vgpu_guest.ko, the
# test VM's initramfs and the L2 archives (vm-images/l2/build.sh), boots
# the test VM (L1, TCG) with vm-images/l2/run-l1.sh; inside it vgpud
# (simulator) composes a vGPU on an mdev instance and QEMU boots the L2
# guest with it as a vfio-pci device, where the guest driver and our CUDA
# libraries run the runtime test programs, the hostile processes, the
# round-trip benchmark and a hot-unplug (tests/vm-l2/). Re-emits L1's TAP
# numbered after its own (once L1 is done: L1 is booted again when nested
# KVM wedged or crashed it), and the benchmark's figures with their ratio.
# Skipped, with the reason, when there is no mdev/ or QEMU, or nothing
# can be downloaded and nothing is cached.
#
# Knobs: BUILD, VM_BUILD, VM_L2_TIMEOUT (seconds for one L1 boot and the
# whole suite in it, default 600), VM_L2_BOOTS (L1 boots at most, 3: see
# below), L2_ACCEL (kvm|tcg|auto: how L1 runs L2),
# L2_RETRIES (runs of L2 that hang are retried this often, default 1),
# L2_TESTS (L2 scripts, default all), L2_RTT_ITERS (1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=${BUILD:-build}
VM_BUILD=${VM_BUILD:-$BUILD/vm}
export BUILD VM_BUILD L2_ACCEL=${L2_ACCEL:-auto} L2_RETRIES=${L2_RETRIES:-1}
LOG=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-vm-l2.XXXXXX")
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
	vm-images/build-initramfs.sh --fetch && vm-images/l2/build.sh --fetch
}
if ! fetch >"$LOG/fetch" 2>&1 &&
	! { [ "$(id -u)" -eq 0 ] && apt-get update -qq >>"$LOG/fetch" 2>&1 &&
		fetch >"$LOG/fetch" 2>&1; }; then
	echo "# $(tail -n 3 "$LOG/fetch" | tr '\n' ' ')"
	echo "1..0 # SKIP cannot download the Debian kernel or packages (no network?)"
	exit 0
fi

start=$SECONDS
targets=(modules "$BUILD/tests/vm/vfio_user" "$BUILD/tests/vm-l2/l2_ring"
	"$BUILD/bench/vm_rtt")
# the guest driver's target, once it exists
make -n guest-modules >/dev/null 2>&1 && targets+=(guest-modules)
if make --no-print-directory "${targets[@]}" >"$LOG/make" 2>&1; then
	ok "the modules and the in-VM programs build ($((SECONDS - start)) s)"
else
	not_ok "the modules and the in-VM programs build" "$LOG/make"
	done_tap
fi
start=$SECONDS
if vm-images/build-initramfs.sh >"$LOG/initramfs" 2>&1 &&
	vm-images/l2/build.sh >>"$LOG/initramfs" 2>&1; then
	ok "the L1 and L2 images build ($((SECONDS - start)) s)"
	sed 's/^/# /' "$LOG/initramfs"
else
	not_ok "the L1 and L2 images build" "$LOG/initramfs"
	done_tap
fi

# l1_broke_in_kvm LOG: L1's own kernel failed under L2 in a way that is
# TCG's SVM emulation's, not ours: a soft lockup or a panic in a QEMU
# thread (KVM_RUN), with none of our module's functions in the trace.
l1_broke_in_kvm()
{
	grep -Eq 'Kernel panic|soft lockup' "$1" &&
		grep -Eq 'Comm: qemu-system-x86|soft lockup.*qemu-system' "$1" &&
		! grep -q '\[vgpu_mdev\]' "$1"
}

# Boot L1 and run the suite. Nested KVM on TCG sometimes wedges or crashes
# L1 itself (vm-images/README.md: about one L2 run in 15); then L1 is booted
# again, up to VM_L2_BOOTS times (3) while less than 900 s have gone by.
# Each restarted run's console comes as comments; the last run's TAP is
# ours.
start=$SECONDS
boots=${VM_L2_BOOTS:-3}
for ((attempt = 1; ; attempt++)); do
	rc=0
	# (L2 under TCG takes about 15 minutes: L2_ACCEL=tcg gets 1800 s)
	vm-images/l2/run-l1.sh --timeout "${VM_L2_TIMEOUT:-$([ "$L2_ACCEL" = tcg ] && echo 1800 || echo 600)}" \
		>"$LOG/l1.out" 2>&1 || rc=$?
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
awk -v n="$n" -v out="$LOG/counts" -v res="$LOG/results" '
	/^(not )?ok [0-9]+ / {
		failed = /^not ok/
		sub(/^(not )?ok [0-9]+ /, "")
		n++; got++
		if (failed) bad++
		printf "%s %d %s\n", failed ? "not ok" : "ok", n, $0
		next }
	/^1\.\.[0-9]+$/ { plan = substr($0, 4); print "# L1 plan " $0; next }
	/RESULT name=/ { r = $0; sub(/^.*RESULT /, "", r); print r > res }
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

# The round trips: L2 (pci transport) against L1 (local) in this run.
if [ -s "$LOG/results" ]; then
	echo "# round trips of an empty command (simulator backend, TCG host):"
	awk '
		{ split($1, a, "="); split($2, b, "="); v[a[2]] = b[2] }
		END {
			split("ctx_sync launch_sync idle_sync", ops, " ")
			for (i = 1; i <= 3; i++) {
				o = ops[i]
				l1 = v["l1_" o "_median"]; l2 = v["l2_" o "_median"]
				if (l1 == "" || l2 == "") continue
				printf "#   %-12s L1 local %8.1f us, L2 pci %8.1f us: %.1fx (medians; p90 %.1f / %.1f)\n",
					o, l1, l2, l2 / l1, v["l1_" o "_p90"], v["l2_" o "_p90"]
			}
			if (v["l2_raw_nop_median"] != "")
				printf "#   %-12s L2 raw channel %8.1f us (median; p90 %.1f)\n",
					"nop", v["l2_raw_nop_median"], v["l2_raw_nop_p90"]
		}' "$LOG/results"
fi
done_tap
