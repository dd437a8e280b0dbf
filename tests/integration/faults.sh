#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Faults: an out-of-bounds write (fault_oob) and an endless kernel
# stopped by the watchdog (fault_spin, --time-limit 1). The faulting
# program gets a CUDA error; vgpud restarts the fault domain's workers
# (RESTARTS goes up, STATE is running again); a neighbour that was running
# gets an error or completes (recorded); new programs on every vGPU run
# correctly afterwards; nothing hangs.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start
tap_run "create vGPU a (faults)" vadmin create a --sms 8 --memory 256M
tap_run "create vGPU b (neighbour)" vadmin create b --sms 8 --memory 256M
tap_run "create vGPU s (--time-limit 1)" \
	vadmin create s --sms 8 --memory 64M --time-limit 1

restarts() { vgpu_field "$1" RESTARTS; }
# recovered VGPU OLD: restarted since OLD and running again
recovered()
{
	local r
	r=$(restarts "$1") || return 1
	[ "$r" -gt "$2" ] && [ "$(vgpu_field "$1" STATE)" = running ]
}

# fault_kind PROGRAM VGPU TITLE
fault()
{
	local program=$1 vgpu=$2 title=$3 v neighbour_out neighbour rc
	local -A before=()

	for v in a b s; do
		before[$v]=$(restarts "$v" || echo 0)
	done
	neighbour_out="$TEST_TMP/neighbour.$program.out"
	client_bg "$neighbour_out" b "$(prog long_copy)" 6 16
	neighbour=$BG_PID
	wait_for 30 "the neighbour to copy" grep -q copying "$neighbour_out" || true

	tap_run "$title: the faulting program gets a CUDA error" \
		client "$vgpu" "$(prog "$program")"
	for v in a b s; do
		if wait_for 60 "$v to restart" recovered "$v" "${before[$v]}"; then
			tap_ok "$title: $v's worker is restarted (RESTARTS ${before[$v]} -> $(restarts "$v")) and running"
		else
			tap_not_ok "$title: $v's worker is restarted and running" \
				"RESTARTS $(restarts "$v" || true), STATE $(vgpu_field "$v" STATE || true)"
		fi
	done
	rc=0
	wait_pid "$neighbour" 60 || rc=$?
	if [ "$rc" -eq 124 ]; then
		tap_not_ok "$title: the neighbour's program ends (no hang)"
	elif [ "$rc" -eq 0 ]; then
		tap_ok "$title: the neighbour's program ends: it completed correctly"
	else
		tap_ok "$title: the neighbour's program ends: it got a CUDA error"
	fi
	tail -n 2 "$neighbour_out" | tap_diag
	for v in a b s; do
		tap_run "$title: afterwards vector_add is correct on $v" \
			client "$v" "$(prog vector_add)" 65536
	done
	if vgpud_alive; then
		tap_ok "$title: vgpud is alive"
	else
		tap_not_ok "$title: vgpud is alive"
		tail -n 20 "$VGPUD_LOG" | tap_diag
		tap_done
	fi
}

fault fault_oob a "out-of-bounds write on a"
start=$SECONDS
fault fault_spin s "endless kernel on s (time limit 1 s)"
echo "the endless-kernel round took $((SECONDS - start)) s" | tap_diag
tap_run "after both faults: streams_events is correct on a" \
	client a "$(prog streams_events)"
vadmin list 2>&1 | tap_diag
tap_vgpud_stops
tap_done
