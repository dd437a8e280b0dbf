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
# numbered after its own (once L1 is done: L1 is booted a second time when
# L2 got stuck in L1's KVM), and the benchmark's figures with their ratio.
# Skipped, with the reason, when there is no mdev/ or QEMU, or nothing
# can be downloaded and nothing is cached.
#
# Knobs: BUILD, VM_BUILD, VM_L2_TIMEOUT (seconds for the L1 boot and the
# whole suite, default 1200), L2_ACCEL (kvm|tcg|auto: how L1 runs L2),
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

# Boot L1 and run the suite; once more if L1 asks for it (exit 126: L2
# got stuck in L1's KVM, which only a fresh L1 gets past). Each run's
# console is kept; the last one's TAP is ours, a restarted one's comes as
# comments.
start=$SECONDS
for attempt in 1 2; do
	rc=0
	vm-images/l2/run-l1.sh --timeout "${VM_L2_TIMEOUT:-1200}" \
		>"$LOG/l1.out" 2>&1 || rc=$?
	if [ "$rc" -ne 126 ] || [ "$attempt" -eq 2 ]; then
		break
	fi
	echo "# L1 run 1 asked for a restart (L2 stuck in L1's KVM); its console:"
	grep -v '^\[ *[0-9.]*\] watchdog: BUG: soft lockup' "$LOG/l1.out" |
		sed 's/^/# (restarted) /'
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
elif [ "$rc" -eq 126 ]; then
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - L2 ran without getting stuck in L1's KVM (twice stuck)"
elif [ "$plan" -eq 0 ] || [ "$got" -ne "$plan" ]; then
	n=$((n + 1)) failed=$((failed + 1))
	echo "not ok $n - L1 reported every test ($got of plan $plan; exit $rc)"
else
	ok "L1 ran $got tests (L2's among them) and powered off in $secs s" \
		"(exit $rc, L1 boots: $attempt)"
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
