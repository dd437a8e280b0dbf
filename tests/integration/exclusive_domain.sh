#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Fault domains on the simulator: s1 and s2 are shared (the GPU's MPS
# domain), e is exclusive (its own domain). An out-of-bounds write in e
# restarts only e: the shared vGPUs keep RESTARTS 0 and a program running
# on s1 completes. A fault in s2 restarts the shared domain (s1 and s2)
# and leaves e and the program running on it alone.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start
tap_run "create s1 (shared)" vadmin create s1 --sms 8 --memory 256M
tap_run "create s2 (shared)" vadmin create s2 --sms 8 --memory 256M
tap_run "create e (exclusive)" vadmin create e --sms 8 --memory 256M --isolation exclusive
tap_expect "show e: its own fault domain" 0 'exclusive: its own fault domain' vadmin show e
tap_expect "show s1: the shared (MPS) domain" 0 'shared: the shared \(MPS\) domain' vadmin show s1
tap_expect "gpus: the shared domain holds s1, s2; e is exclusive" 0 \
	'shared \(MPS\): 2 vGPUs: s1, s2' vadmin gpus
tap_expect "gpus: e is its own domain" 0 'exclusive: e' vadmin gpus

restarts() { vgpu_field "$1" RESTARTS; }
recovered() # VGPU OLD: restarted since OLD and running again
{
	local r
	r=$(restarts "$1") || return 1
	[ "$r" -gt "$2" ] && [ "$(vgpu_field "$1" STATE)" = running ]
}

# ---- a fault in the exclusive vGPU ----------------------------------------
pid_s1=$(vgpu_field s1 PID)
client_bg "$TEST_TMP/s1.out" s1 "$(prog long_copy)" 6 16
bystander=$BG_PID
wait_for 30 "s1's program to copy" grep -q copying "$TEST_TMP/s1.out" || true
tap_expect "fault_oob in e gets a CUDA error" 0 'CUDA_ERROR' client e "$(prog fault_oob)"
if wait_for 30 "e to restart" recovered e 0; then
	tap_ok "e's worker is restarted and running (RESTARTS $(restarts e))"
else
	tap_not_ok "e's worker is restarted and running" "RESTARTS $(restarts e || true)"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi
for v in s1 s2; do
	r=$(restarts $v || true)
	[ "$r" = 0 ] && tap_ok "$v (shared) was not restarted (RESTARTS 0)" ||
		tap_not_ok "$v (shared) was not restarted" "RESTARTS $r"
done
[ "$(vgpu_field s1 PID)" = "$pid_s1" ] && tap_ok "s1 keeps its worker (pid $pid_s1)" ||
	tap_not_ok "s1 keeps its worker" "pid now $(vgpu_field s1 PID || true)"
rc=0
wait_pid "$bystander" 60 || rc=$?
[ "$rc" -eq 0 ] && tap_ok "the program on s1 ran on and completed correctly" ||
	tap_not_ok "the program on s1 ran on and completed correctly" "exit $rc"
tail -n 1 "$TEST_TMP/s1.out" | tap_diag

# ---- a fault in a shared vGPU ---------------------------------------------
pid_e=$(vgpu_field e PID)
re=$(restarts e)
client_bg "$TEST_TMP/e.out" e "$(prog long_copy)" 6 16
bystander=$BG_PID
wait_for 30 "e's program to copy" grep -q copying "$TEST_TMP/e.out" || true
tap_expect "fault_oob in s2 gets a CUDA error" 0 'CUDA_ERROR' client s2 "$(prog fault_oob)"
for v in s1 s2; do
	if wait_for 30 "$v to restart" recovered $v 0; then
		tap_ok "$v (shared domain) is restarted and running"
	else
		tap_not_ok "$v (shared domain) is restarted and running" "RESTARTS $(restarts $v || true)"
	fi
done
[ "$(restarts e)" = "$re" ] && [ "$(vgpu_field e PID)" = "$pid_e" ] &&
	tap_ok "e (exclusive) keeps its worker and RESTARTS $re" ||
	tap_not_ok "e (exclusive) keeps its worker" "RESTARTS $(restarts e || true), pid $(vgpu_field e PID || true)"
rc=0
wait_pid "$bystander" 60 || rc=$?
[ "$rc" -eq 0 ] && tap_ok "the program on e ran on and completed correctly" ||
	tap_not_ok "the program on e ran on and completed correctly" "exit $rc"
tail -n 1 "$TEST_TMP/e.out" | tap_diag
for v in s1 s2 e; do
	tap_run "afterwards vector_add is correct on $v" client $v "$(prog vector_add)" 65536
done
rc=0
vgpu_stop || rc=$?
[ "$rc" -eq 0 ] && tap_ok "vgpud exits 0 on SIGTERM" || tap_not_ok "vgpud exits 0 on SIGTERM" "status $rc"
tap_done
