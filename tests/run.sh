#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/run.sh [NAME...]: the test runner `make test` calls (after building).
#   1. every unit test binary in $BUILD/tests/unit/ (cmocka), with its output
#   2. every tests/integration/*.sh (TAP), each under a timeout
# then a summary, ending with exactly one line "N passed, N failed" that
# counts test cases: TAP "ok"/"not ok" lines and cmocka's
# "[  PASSED  ] N test(s)." / "[  FAILED  ] N test(s)" lines. A binary or
# script that fails without reporting a failed case (a crash, a timeout, a
# broken script) counts as one failed case. Exit status 1 if any failed.
#
# With NAMEs, runs only the unit binaries and scripts whose names contain
# one of them (e.g. tests/run.sh admin quota).
#
# Knobs: BUILD (default build), UNIT_TIMEOUT (120 s per binary),
# SCRIPT_TIMEOUT (300 s per script; vm.sh: VM_SCRIPT_TIMEOUT, 600 s, the
# 10 minutes issue 5 gives the VM tests in CI, builds included;
# vm_l2.sh: VM_L2_SCRIPT_TIMEOUT, 1500 s; vm_libvirt.sh:
# VM_LIBVIRT_SCRIPT_TIMEOUT, 1500 s).
set -uo pipefail

cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
UNIT_TIMEOUT=${UNIT_TIMEOUT:-120}
SCRIPT_TIMEOUT=${SCRIPT_TIMEOUT:-300}
export BUILD
unset CMOCKA_MESSAGE_OUTPUT # cmocka's default format is what we parse

passed=0
failed=0
skipped=0
summary=()
filters=("$@")
scratch=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-run.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

# selected NAME: true when no filter was given or NAME contains one.
selected()
{
	local f
	[ ${#filters[@]} -eq 0 ] && return 0
	for f in "${filters[@]}"; do
		case "$1" in
		*"$f"*) return 0 ;;
		esac
	done
	return 1
}

# Sums the N of every line matching "PREFIX N test(s)" in a file.
cmocka_count()
{
	sed -n "s/^\[  $1  \] \([0-9][0-9]*\) test(s).*/\1/p" "$2" |
		awk '{ n += $1 } END { print n + 0 }'
}

# verdict NAME PASSED FAILED SKIPPED STATUS SECONDS: books one binary/script.
verdict()
{
	local name=$1 p=$2 f=$3 s=$4 rc=$5 secs=$6 note=""

	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1 # failed without saying which case: count the whole thing
		if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
			note=" (timed out)"
		else
			note=" (exit status $rc)"
		fi
	fi
	passed=$((passed + p))
	failed=$((failed + f))
	skipped=$((skipped + s))
	if [ "$f" -eq 0 ]; then
		summary+=("$(printf '  PASS  %-32s %4d passed %4d skipped %5d s' \
			"$name" "$p" "$s" "$secs")")
	else
		summary+=("$(printf '  FAIL  %-32s %4d passed %4d failed %5d s%s' \
			"$name" "$p" "$f" "$secs" "$note")")
	fi
	echo "--- $name: $p passed, $f failed, $s skipped in $secs s$note"
}

echo "=== unit tests ($BUILD/tests/unit)"
for t in "$BUILD"/tests/unit/*; do
	if [ ! -f "$t" ] || [ ! -x "$t" ]; then
		continue
	fi
	name=$(basename "$t")
	selected "$name" || continue
	log="$scratch/$name.log"
	start=$SECONDS
	rc=0
	timeout -k 5 "$UNIT_TIMEOUT" "$t" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
	p=$(cmocka_count PASSED "$log")
	f=$(cmocka_count FAILED "$log")
	# a binary that passes without cmocka's summary is one passed case
	if [ "$rc" -eq 0 ] && [ "$p" -eq 0 ] && [ "$f" -eq 0 ]; then
		p=1
	fi
	verdict "unit/$name" "$p" "$f" 0 "$rc" $((SECONDS - start))
done

echo "=== integration tests (tests/integration)"
for s in tests/integration/*.sh; do
	[ -f "$s" ] || continue
	name=$(basename "$s")
	selected "$name" || continue
	log="$scratch/$name.log"
	echo "--- $name"
	start=$SECONDS
	rc=0
	limit=$SCRIPT_TIMEOUT
	# vm.sh builds a module and an image, then boots a VM (TCG)
	[ "$name" = vm.sh ] && limit=${VM_SCRIPT_TIMEOUT:-600}
	# vm_l2.sh boots a VM in the VM (tests/vm-l2)
	[ "$name" = vm_l2.sh ] && limit=${VM_L2_SCRIPT_TIMEOUT:-1500}
	# vm_libvirt.sh: libvirt in the VM (tests/vm-libvirt)
	[ "$name" = vm_libvirt.sh ] && limit=${VM_LIBVIRT_SCRIPT_TIMEOUT:-1500}
	timeout -k 10 "$limit" bash "$s" 2>&1 | tee "$log" ||
		rc=${PIPESTATUS[0]}
	p=$(grep -Ec '^ok [0-9]+' "$log")
	s_=$(grep -Ec '^ok [0-9]+.*# SKIP' "$log")
	f=$(grep -Ec '^not ok [0-9]+' "$log")
	if grep -Eq '^1\.\.0 # SKIP' "$log"; then
		s_=$((s_ + 1))
	fi
	verdict "$name" $((p - s_ < 0 ? 0 : p - s_)) "$f" "$s_" "$rc" \
		$((SECONDS - start))
done

echo
echo "=== summary"
for line in "${summary[@]}"; do
	echo "$line"
done
[ "$skipped" -gt 0 ] && echo "  ($skipped skipped, not counted)"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
