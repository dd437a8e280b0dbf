# shellcheck shell=bash
# shellcheck disable=SC2034 # variables for the scripts that source this
# SPDX-License-Identifier: MIT
#
# The host side of the VM suites (tests/integration/vm.sh, vm_l2.sh,
# vm_libvirt.sh; bash, from the repository root): source it, then call
# vm_host_init. Not a test itself: tests/run.sh runs only
# tests/integration/*.sh.
#
#   vm_host_init NAME           BUILD, VM_BUILD (exported), LOG (a scratch
#                               directory, removed on exit), the TAP counters
#   ok, not_ok, done_tap        numbered TAP lines; done_tap ends the script
#   vm_host_fetch_or_skip REASON CMD...
#                               skips the whole script (with the reason) when
#                               there is no mdev/ or QEMU, or CMD (the
#                               builders' --fetch) cannot download
#   vm_host_build [--failed TEXT] WHAT LOGNAME CMD...
#                               one build step as one TAP result
#   vm_host_make_nested         make's step of vm_l2.sh and vm_libvirt.sh
#   vm_host_retap WHO [FILE]    a guest's TAP numbered after ours;
#                               vm_host_counts books it
#   vm_host_l1 TIMEOUT [ARGS]   boots L1 (vm-images/l2/run-l1.sh ARGS) again
#                               while nested KVM broke it, re-emits its TAP
#                               and gives the verdict on the run

# vm_host_init NAME: the settings every VM suite shares; LOG is a scratch
# directory named after NAME.
vm_host_init()
{
	BUILD=${BUILD:-build}
	VM_BUILD=${VM_BUILD:-$BUILD/vm}
	export BUILD VM_BUILD
	LOG=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	trap 'rm -rf "$LOG"' EXIT
	n=0
	failed=0
}

ok()
{
	n=$((n + 1))
	echo "ok $n - $1"
}

# not_ok WHAT [LOG]: the failure and the end of the log
not_ok()
{
	n=$((n + 1))
	failed=$((failed + 1))
	echo "not ok $n - $1"
	[ -z "${2:-}" ] || tail -n 30 "$2" | sed 's/^/# /'
}

done_tap()
{
	echo "1..$n"
	[ "$failed" -eq 0 ]
	exit $?
}

# vm_host_fetch_or_skip REASON CMD...: the suite needs mdev/, QEMU and
# the Debian packages. CMD fetches them (a no-op when cached); it runs
# once more after an apt-get update (as root), since a fresh machine may
# have no package lists. Otherwise the script ends with a TAP skip: the
# missing piece, or REASON after the end of CMD's output.
vm_host_fetch_or_skip()
{
	local reason=$1
	shift
	[ -d mdev ] || { echo "1..0 # SKIP no mdev/ in this tree"; exit 0; }
	command -v qemu-system-x86_64 >/dev/null || {
		echo "1..0 # SKIP no qemu-system-x86_64 (scripts/install-deps.sh test)"
		exit 0
	}
	if ! "$@" >"$LOG/fetch" 2>&1 &&
		! { [ "$(id -u)" -eq 0 ] && apt-get update -qq >>"$LOG/fetch" 2>&1 &&
			"$@" >"$LOG/fetch" 2>&1; }; then
		echo "# $(tail -n 3 "$LOG/fetch" | tr '\n' ' ')"
		echo "1..0 # SKIP $reason"
		exit 0
	fi
}

# vm_host_build [--failed TEXT] WHAT LOGNAME CMD...: runs CMD with its
# output in $LOG/LOGNAME: "ok - WHAT (N s)", or "not ok - WHAT" (or TEXT)
# with the end of the log, and then the script ends (nothing after a
# failed build can run).
vm_host_build()
{
	local what failed_what t0=$SECONDS log
	if [ "$1" = --failed ]; then
		failed_what=$2
		shift 2
	fi
	what=$1
	log=$LOG/$2
	shift 2
	if "$@" >"$log" 2>&1; then
		ok "$what ($((SECONDS - t0)) s)"
	else
		not_ok "${failed_what:-$what}" "$log"
		done_tap
	fi
}

# vm_host_make_nested: the modules and the programs that the nested
# suites (vm_l2.sh, vm_libvirt.sh) put into L1 and L2, as one result.
vm_host_make_nested()
{
	local targets=(modules "$BUILD/tests/vm/vfio_user"
		"$BUILD/tests/vm-l2/l2_ring" "$BUILD/bench/vm_rtt")
	# the guest driver's target, once it exists
	make -n guest-modules >/dev/null 2>&1 && targets+=(guest-modules)
	vm_host_build "the modules and the in-VM programs build" make \
		make --no-print-directory "${targets[@]}"
}

# vm_host_retap WHO [FILE]: re-emits a guest's TAP (FILE, or stdin as it
# comes) numbered after ours: its results as ours, its plan as
# "# WHO plan 1..N", everything else as "#" lines; "RESULT name=..." lines
# (benchmark figures) also go to $LOG/results. Our count, its results,
# its plan and its failures go to $LOG/counts (vm_host_counts).
vm_host_retap()
{
	awk -v n="$n" -v who="$1" -v out="$LOG/counts" -v res="$LOG/results" '
		/^(not )?ok [0-9]+ / {
			failed = /^not ok/
			sub(/^(not )?ok [0-9]+ /, "")
			n++; got++
			if (failed) bad++
			printf "%s %d %s\n", failed ? "not ok" : "ok", n, $0
			fflush(); next }
		/^1\.\.[0-9]+$/ { plan = substr($0, 4); print "# " who " plan " $0
			fflush(); next }
		/RESULT name=/ { r = $0; sub(/^.*RESULT /, "", r); print r > res }
		{ print "# " $0; fflush() }
		END { print n, got + 0, plan + 0, bad + 0 > out }' "${@:2}"
}

# vm_host_counts: after vm_host_retap, n is our count again (the guest's
# results included), got and plan the guest's results and plan; its
# failures are ours.
vm_host_counts()
{
	local bad
	read -r n got plan bad <"$LOG/counts"
	failed=$((failed + bad))
}

# l1_broke_in_kvm LOG: L1's own kernel failed under L2 in a way that is
# TCG's SVM emulation's, not ours: a soft lockup or a panic in a QEMU
# thread (KVM_RUN), or L1 reset with no panic at all (a triple fault:
# QEMU's -no-reboot exits 0) once its KVM was running L2 (its "kvm [pid]:
# vcpu" lines; seen once in CI right after virsh start, 2026-11-23) or
# once it began loading KVM (kvm_load's line; seen in CI between vm_rtt
# and L2's boot, 2026-11-28), with none of our module's functions in the
# log.
l1_broke_in_kvm()
{
	! grep -q '\[vgpu_mdev\]' "$1" || return 1
	if grep -Eq 'Kernel panic|soft lockup' "$1" &&
		grep -Eq 'Comm: qemu-system-x86|soft lockup.*qemu-system' "$1"; then
		return 0
	fi
	grep -q 'L1 stopped without an exit status' "$1" || return 1
	grep -Eq 'kvm \[[0-9]+\]: vcpu' "$1" && return 0
	grep -q 'L1: loading KVM' "$1" &&
		! grep -Eq 'Kernel panic|Oops|BUG:|general protection' "$1"
}

# l1_froze_in_kvm LOG: L1 timed out and its console stopped while L2 was
# booting: L1 had started L2 (its hooks' lines), L2 never said it was up,
# and L1's own watchdog (L2_UP_TIMEOUT, 180 s under KVM) never said it
# gave up, so L1 itself stood still: TCG's SVM emulation wedged it (seen
# in a fresh-clone CI run, 2026-11-28), with none of our module in the
# log.
l1_froze_in_kvm()
{
	! grep -q '\[vgpu_mdev\]' "$1" || return 1
	grep -q 'L1: device_del vgpu0 sent\|L1: vgpu-admin resize' "$1" &&
		! grep -q 'vgpu-l2: up ' "$1" &&
		! grep -q "no 'vgpu-l2: up' in" "$1"
}

# vm_host_l1 TIMEOUT [ARGS...]: boots L1 and runs its suite
# (vm-images/l2/run-l1.sh --timeout TIMEOUT ARGS; an empty TIMEOUT: 600 s,
# 1800 with L2_ACCEL=tcg, since L2 under TCG takes about 15 minutes), then
# re-emits L1's TAP after ours and books the run as one more result.
# Nested KVM on TCG sometimes wedges or crashes L1 itself
# (vm-images/README.md: about one L2 run in 15); then L1 is booted again,
# up to VM_L2_BOOTS times (3) while less than 900 s have gone by. Each
# restarted run's console comes as comments; the last run's TAP is ours.
vm_host_l1()
{
	local timeout=$1 t0=$SECONDS boots=${VM_L2_BOOTS:-3} attempt rc why secs
	shift
	[ -n "$timeout" ] ||
		timeout=$([ "$L2_ACCEL" = tcg ] && echo 1800 || echo 600)
	for ((attempt = 1; ; attempt++)); do
		rc=0
		vm-images/l2/run-l1.sh --timeout "$timeout" "$@" \
			>"$LOG/l1.out" 2>&1 || rc=$?
		why=
		if [ "$rc" -eq 126 ] && ! grep -q '\[vgpu_mdev\]' "$LOG/l1.out"; then
			why="L2 got stuck in L1's KVM (a soft lockup)"
		elif [ "$rc" -eq 125 ] && l1_broke_in_kvm "$LOG/l1.out"; then
			why="L1's kernel crashed or reset in KVM, under QEMU, not in vgpu_mdev"
		elif [ "$rc" -eq 124 ] && l1_froze_in_kvm "$LOG/l1.out"; then
			why="L1 went silent while L2 booted under its KVM"
		fi
		if [ -z "$why" ] || [ "$attempt" -ge "$boots" ] ||
			[ $((SECONDS - t0)) -ge 900 ]; then
			break
		fi
		echo "# L1 boot $attempt: $why; booting L1 again. Its console:"
		sed 's/^/# (restarted) /' "$LOG/l1.out"
	done
	vm_host_retap L1 "$LOG/l1.out"
	vm_host_counts
	secs=$((SECONDS - t0))
	if [ "$rc" -eq 124 ]; then
		not_ok "L1 finished the suite in time (timed out after $secs s)"
	elif [ -n "$why" ]; then
		not_ok "L1 ran the suite ($attempt boots; the last: $why)"
	elif [ "$plan" -eq 0 ] || [ "$got" -ne "$plan" ]; then
		not_ok "L1 reported every test ($got of plan $plan; exit $rc)"
	else
		ok "L1 ran $got tests (L2's among them) and powered off in $secs s (exit $rc, L1 boots: $attempt)"
	fi
}
