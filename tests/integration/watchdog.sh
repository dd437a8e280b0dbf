#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# The kernel time limit applies to one kernel's own run (issue 16, bug 3),
# on the simulator with a 1 s limit (--time-limit 1): legal work longer than
# the limit in all runs to the end (a chain of kernels each under it, a
# kernel queued behind a host function that sleeps longer, a kernel waiting
# for an event recorded after more than the limit of work on another
# stream), with no fault, so a bystander vGPU of the same fault domain runs
# on undisturbed; an endless kernel is still stopped, after the limit and
# not much later, with the watchdog's message.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start
LIMIT_MS=1000
MARGIN_MS=1000 # the poll (limit/10) and the fault's way to the client
tap_run "create vGPU w (--time-limit 1)" \
	vadmin create w --sms 8 --memory 64M --time-limit 1
tap_run "create vGPU b (a bystander in w's fault domain)" \
	vadmin create b --sms 8 --memory 64M

restarts() { vgpu_field "$1" RESTARTS; }
faults() { grep -c "reported a fault" "$VGPUD_LOG" || true; }
running() { [ "$(vgpu_field "$1" STATE)" = running ]; }
# legal LONG_WORK_ARGS...: long_work on w, once w runs (at once, unless an
# earlier case faulted it: then each case still fails for its own reason)
legal()
{
	wait_for 60 "w to run" running w || true
	client w "$(prog long_work)" "$@"
}
declare -A r0=([w]=$(restarts w) [b]=$(restarts b))

# the bystander: back-to-back kernels for longer than the legal work takes
by_out="$TEST_TMP/bystander.out"
client_bg "$by_out" b "$(prog busy_loop)" 12 4096
by=$BG_PID
wait_for 30 "the bystander to start" grep -q started "$by_out" || true

tap_expect "a chain of 8 kernels of 300 ms (2.4 s, each under the limit) runs to the end" \
	0 "chain ok" legal chain 8 300
tap_expect "a kernel queued behind a host function that sleeps 1.5 s runs" \
	0 "hostfn ok" legal hostfn 1500 200
tap_expect "a kernel waiting for an event recorded after 1.4 s of work on another stream runs" \
	0 "event ok" legal event 2 700 500

n=$(faults)
if [ "$n" -eq 0 ]; then
	tap_ok "no fault was reported"
else
	tap_not_ok "no fault was reported" "$n in vgpud's log"
	grep "reported a fault" "$VGPUD_LOG" | tail -n 3 | tap_diag
fi
for v in w b; do
	r1=$(restarts "$v")
	if [ "$r1" = "${r0[$v]}" ]; then
		tap_ok "$v's worker was not restarted (RESTARTS $r1)"
	else
		tap_not_ok "$v's worker was not restarted" "RESTARTS ${r0[$v]} -> $r1"
	fi
done
tap_wait_pid "the bystander's kernels on b ran to the end meanwhile" \
	"$by" 60 "$by_out"
tail -n 1 "$by_out" | tap_diag

# An endless kernel: stopped after the limit, within the margin.
wait_for 60 "w to run" running w || true
tap_expect "an endless kernel on w gets CUDA_ERROR_LAUNCH_TIMEOUT" \
	0 "got CUDA_ERROR_LAUNCH_TIMEOUT after" client w "$(prog fault_spin)"
ms=$(sed -n 's/.* after \([0-9.]*\) s.*/\1/p' "$TAP_LOG" |
	awk '{printf "%d", $1 * 1000}')
if [ -n "$ms" ] && [ "$ms" -ge "$LIMIT_MS" ] &&
	[ "$ms" -le $((LIMIT_MS + MARGIN_MS)) ]; then
	tap_ok "it was stopped ${ms} ms after its launch (limit $LIMIT_MS ms, margin $MARGIN_MS ms)"
else
	tap_not_ok "it was stopped between $LIMIT_MS and $((LIMIT_MS + MARGIN_MS)) ms after its launch" \
		"${ms:-?} ms"
fi
if wait_for 30 "the fault in vgpud's log" \
	grep -q "vGPU w: .*reported a fault (kernel time limit): kernel ran longer than the $LIMIT_MS ms limit" \
	"$VGPUD_LOG"; then
	tap_ok "vgpud logs the watchdog's fault on w"
else
	tap_not_ok "vgpud logs the watchdog's fault on w"
	grep "fault" "$VGPUD_LOG" | tail -n 3 | tap_diag
fi
# the real fault restarts the domain; both vGPUs run work again after it
recovered() { [ "$(restarts "$1")" -gt "$2" ] && running "$1"; }
for v in w b; do
	if wait_for 60 "$v to restart" recovered "$v" "${r0[$v]}"; then
		tap_run "after the fault, vector_add is correct on $v" \
			client "$v" "$(prog vector_add)" 65536
	else
		tap_not_ok "$v is restarted after the fault and running" \
			"RESTARTS $(restarts "$v" || true), STATE $(vgpu_field "$v" STATE || true)"
	fi
done
tap_vgpud_alive
tap_vgpud_stops
tap_done
