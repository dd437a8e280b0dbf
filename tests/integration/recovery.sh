#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Fault recovery with save points on the simulator:
#   - three vGPUs in GPU 0's shared fault domain: a (it faults), b (save
#     points every second, from a blueprint's recovery: field) and c
#     (none). b and c hold patterns in memory; a writes out of bounds;
#     the domain restarts; the clients of b and c get an error;
#     afterwards b's memory is back at the same addresses with the saved
#     contents (a new client reads them through the old pointers), c's is
#     gone (the read is refused: no such allocation);
#   - an idle vGPU's save points copy nothing (incremental);
#   - what save points cost a running program: its launch rate with and
#     without them (recorded, not judged: a simulator's figure);
#   - blueprints: recovery: {save_interval: ...} checked (range, shape).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start

BP="$TEST_TMP/b.yaml"
cat >"$BP" <<'EOF'
version: 1
name: b
sms: 8
memory: 128M
gpu: 0
recovery:
  save_interval: 1s
EOF
tap_run "create a (the culprit)" vadmin create a --sms 8 --memory 64M --gpu 0
tap_run "create b from a blueprint with recovery: {save_interval: 1s}" \
	vadmin create -f "$BP"
tap_run "create c (no save points)" vadmin create c --sms 8 --memory 128M \
	--gpu 0
tap_expect "show b says its save points" 0 "save points +every 1 s" \
	vadmin show b
tap_expect "show --json has save_interval_ms" 0 '"save_interval_ms": 1000' \
	vadmin show b --json

hold() { # VGPU DIR
	mkdir -p "$2"
	client_bg "$TEST_TMP/$1.out" "$1" "$(prog state_pattern)" hold "$2" 8
	eval "hold_$1=$BG_PID"
	wait_for 60 "$1's state_pattern to be ready" test -e "$2/ready" ||
		true
}
hold b "$TEST_TMP/db"
hold c "$TEST_TMP/dc"
# a save point of b after the patterns were written
sleep 2.5
tap_expect "vgpud keeps b's save points" 0 "vGPU b: save points on" \
	cat "$VGPUD_LOG"
r_b=$(vgpu_field b RESTARTS)
tap_run "a's out-of-bounds write faults it" client a "$(prog fault_oob)"
restarted() { [ "$(vgpu_field "$1" RESTARTS)" -gt "$2" ] &&
	[ "$(vgpu_field "$1" STATE)" = running ]; }
if wait_for 60 "b to restart" restarted b "$r_b" &&
	wait_for 60 "c to restart" restarted c 0; then
	tap_ok "the shared domain restarted: b and c run again"
else
	tap_not_ok "the shared domain restarted: b and c run again"
fi
for v in b c; do
	rc=0
	pid=$(eval echo "\$hold_$v")
	touch "$TEST_TMP/d$v/go"
	wait_pid "$pid" 60 || rc=$?
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
		tap_ok "$v's client got an error for its work (status $rc)"
	else
		tap_not_ok "$v's client got an error for its work" "status $rc"
	fi
	tail -n 1 "$TEST_TMP/$v.out" | tap_diag
done
tap_expect "vgpud sent b's save point to its new worker" 0 \
	"vGPU b: memory back from its save point" cat "$VGPUD_LOG"
read -r a_b _ _ n_b <"$TEST_TMP/db/ptrs"
read -r a_c _ _ n_c <"$TEST_TMP/dc/ptrs"
tap_expect "b's memory is back: a new client reads the patterns through the old pointer" \
	0 "bytes at $a_b intact" client b "$(prog state_pattern)" read "$a_b" \
	"$n_b"
tap_expect "c's memory is gone (no save points): the read is refused" 3 \
	"refused" client c "$(prog state_pattern)" read "$a_c" "$n_c"
tap_expect "b runs new programs" 0 "in order" \
	client b "$(prog resize_chain)" 500

# ---- incremental ------------------------------------------------------------------
sleep 2.5
tap_expect "an idle vGPU's save points copy nothing (incremental)" 0 \
	'"save_last_kib": 0,' vadmin show b --json
grep '"save_points"' "$TAP_LOG" | tap_diag

# ---- what they cost a running program --------------------------------------------
tap_run "create s (save points every 1 s, 256 MiB)" vadmin create s --sms 16 \
	--memory 256M --save-interval 1
tap_run "create n (no save points, 256 MiB)" vadmin create n --sms 16 \
	--memory 256M
tap_run "savepoint_load on n (no save points)" \
	client n "$(prog savepoint_load)" 5 128
without=$(sed -n 's/.*: \([0-9]*\) launches\/s.*/\1/p' "$TAP_LOG")
tail -n 1 "$TAP_LOG" | tap_diag
tap_run "savepoint_load on s (a save point every second)" \
	client s "$(prog savepoint_load)" 5 128
with=$(sed -n 's/.*: \([0-9]*\) launches\/s.*/\1/p' "$TAP_LOG")
tail -n 1 "$TAP_LOG" | tap_diag
if [ -n "$with" ] && [ -n "$without" ] && [ "$without" -gt 0 ]; then
	tap_ok "launch rate with save points: $with/s, without: $without/s (ratio $(awk -v a="$with" -v b="$without" 'BEGIN { printf "%.3f", a / b }'), simulator)"
else
	tap_not_ok "launch rates measured" "with '$with', without '$without'"
fi

# ---- blueprints ---------------------------------------------------------------------
bp_bad() { # TITLE PATTERN YAML-LINES
	printf 'version: 1\nname: x\nsms: 8\nmemory: 64M\n%s\n' "$3" \
		>"$TEST_TMP/bad.yaml"
	tap_expect "$1" 1 "$2" vadmin validate "$TEST_TMP/bad.yaml"
}
bp_bad "save_interval below 100 ms is refused" \
	"recovery.save_interval.*out of range" \
	$'recovery:\n  save_interval: 5ms'
bp_bad "save_interval above 24 h is refused" "out of range" \
	$'recovery:\n  save_interval: 1441m'
bp_bad "recovery must be a mapping" "expected a mapping" "recovery: 10s"
bp_bad "an unknown recovery field is refused" \
	"unknown field 'every' in 'recovery'" $'recovery:\n  every: 1s'
tap_expect "--save-interval out of range is a usage error" 2 \
	"--save-interval needs seconds" \
	vadmin create y --sms 8 --memory 64M --save-interval 0.01
tap_vgpud_alive
tap_vgpud_stops
tap_done
