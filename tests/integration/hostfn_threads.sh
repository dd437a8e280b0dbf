#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Host functions from several threads (issue 16, bugs 1 and 2): threads
# that each queue host functions on their own stream and synchronise it
# never deadlock; a host function that sleeps holds up only its own
# stream; a client killed while the worker waits for one of its host
# functions that will never run (in a synchronise, a free, the free of a
# page-locked buffer, a context synchronise) is cleaned up within 5 s: no client left, no memory held,
# and the next client runs.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start
tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
tap_run "create vGPU b (bystander)" vadmin create b --sms 8 --memory 256M

used_is() { [ "$(vgpu_field a USED)" = "$1" ]; }
clients_is() { [ "$(vgpu_field a CLIENTS)" = "$1" ]; }
used0=$(vgpu_field a USED)
pid0=$(vgpu_worker_pid a)
# the worker itself cleaned up, not vgpud's liveness by replacing it
not_replaced()
{
	if [ "$(vgpu_worker_pid a)" = "$pid0" ] &&
		! grep -q "vGPU a: .*replacing it" "$VGPUD_LOG"; then
		tap_ok "$1: a's worker is the same (pid $pid0), not replaced"
	else
		tap_not_ok "$1: a's worker is the same, not replaced" \
			"was $pid0, now $(vgpu_worker_pid a)"
	fi
}

# the smallest case, then more threads: each run hung most of the time
for t in 2 4 8; do
	tap_run "$t threads queue host functions and synchronise their streams: all run once, in order, results correct" \
		client a "$(prog hostfn_threads)" run "$t" 150
done
# a host function that sleeps 6 s: another client of the vGPU (with host
# functions of its own) and the bystander vGPU go on meanwhile; the
# sleeper's own client finishes correctly after it
client_bg "$TEST_TMP/slow.out" a "$(prog hostfn_threads)" slow 6
slow=$BG_PID
sleep 0.5
tap_run "while a host function sleeps: another client's host functions run" \
	client a "$(prog hostfn_threads)" run 2 20
if kill -0 "$slow" 2>/dev/null; then
	tap_ok "... and finish before the sleeping one returns"
else
	tap_not_ok "... and finish before the sleeping one returns"
fi
tap_run "while a host function sleeps: the bystander vGPU runs" \
	client b "$(prog vector_add)" 65536
tap_wait_pid "a host function sleeping 6 s: its own client then finishes correctly" \
	"$slow" 60 "$TEST_TMP/slow.out"
tail -n 1 "$TEST_TMP/slow.out" | tap_diag

for how in sync free region ctxsync; do
	out="$TEST_TMP/stuck-$how.out"
	client_bg "$out" a "$(prog hostfn_threads)" stuck "$how"
	pid=$BG_PID
	if wait_for 30 "the program to queue its host function" \
		grep -q stuck "$out"; then
		tap_ok "stuck/$how: a host function that never returns is queued and the program waits in $how"
	else
		tap_not_ok "stuck/$how: the program queues its host function"
		tail -n 20 "$out" | tap_diag
	fi
	sleep 0.5 # the worker is waiting for the stream now
	if kill -0 "$pid" 2>/dev/null; then
		tap_ok "stuck/$how: the program still waits in $how"
	else
		tap_not_ok "stuck/$how: the program still waits in $how" \
			"it ended: $(tail -n 1 "$out")"
	fi
	t0=$(date +%s.%N)
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null || true
	if wait_for 5 "a to have no client" clients_is 0; then
		tap_ok "stuck/$how: killed, its client is gone within 5 s ($(echo "$(date +%s.%N) - $t0" | bc | cut -c1-4) s)"
	else
		tap_not_ok "stuck/$how: killed, its client is gone within 5 s" \
			"CLIENTS is $(vgpu_field a CLIENTS || true)"
		tail -n 20 "$VGPUD_LOG" | tap_diag
	fi
	if wait_for 5 "USED to return to $used0" used_is "$used0"; then
		tap_ok "stuck/$how: its memory is freed ($used0 in use)"
	else
		tap_not_ok "stuck/$how: its memory is freed" \
			"USED is $(vgpu_field a USED || true), want $used0"
	fi
	tap_run "stuck/$how: a new client runs on the same vGPU" \
		client a "$(prog vector_add)" 65536
	not_replaced "stuck/$how"
done

# 70 stuck clients killed one after the other: more than the vGPU's 64
# client slots, so a leak of one slot each would lock the vGPU
pids=()
for i in $(seq 1 70); do
	client_bg "$TEST_TMP/many-$i.out" a "$(prog hostfn_threads)" stuck sync
	pids+=("$BG_PID")
	wait_for 30 "client $i to be stuck" grep -q stuck \
		"$TEST_TMP/many-$i.out" || true
	kill -KILL "$BG_PID"
	wait "$BG_PID" 2>/dev/null || true
done
if wait_for 10 "a to have no client" clients_is 0; then
	tap_ok "70 clients killed while stuck: none is left on a"
else
	tap_not_ok "70 clients killed while stuck: none is left on a" \
		"CLIENTS is $(vgpu_field a CLIENTS || true)"
fi
tap_run "after 70 stuck clients: a new client runs on a" \
	client a "$(prog vector_add)" 65536
tap_run "the bystander b ran throughout" client b "$(prog vector_add)" 65536
not_replaced "after 70 stuck clients"
if wait_for 10 "USED to return to $used0" used_is "$used0"; then
	tap_ok "after 70 stuck clients: USED is back to $used0"
else
	tap_not_ok "after 70 stuck clients: USED is back to $used0" \
		"USED is $(vgpu_field a USED || true)"
fi
tap_vgpud_alive
tap_vgpud_stops
tap_done
