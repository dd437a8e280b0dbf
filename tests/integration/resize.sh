#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Resize and slice moves on the simulator (two simulated GPUs):
#   - a long chain of dependent launches (resize_chain: two streams,
#     events across them, a per-launch order log) comes out exactly right
#     while vgpu-admin resizes and moves its vGPU many times;
#   - a running program's new device queries see the new SM count
#     (cuDeviceGetAttribute, cudaGetDeviceProperties), list/show/state.json
#     the new groups;
#   - refusals with a sentence: no such vGPU, 0 SMs, more than is free,
#     another vGPU's groups, the leftover slice with others, a vGPU whose
#     fault domain is restarting.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=2
vgpu_test_start "vgpud starts on the simulator (2 GPUs)"
RT="$BUILD/tests/runtime"

tap_run "create vGPU r (16 SMs)" vadmin create r --sms 16 --memory 256M \
	--gpu 0
tap_run "create vGPU o (8 SMs, a neighbour)" vadmin create o --sms 8 \
	--memory 64M --gpu 0

# ---- the chain under resizes ----------------------------------------------
out="$TEST_TMP/chain.out"
client_bg "$out" r "$(prog resize_chain)" 30000
chain=$BG_PID
wait_for 30 "resize_chain to start" grep -q started "$out" || true
ok=0
failed=0
sizes=(8 24 16 32 40 8 16)
i=0
start=$SECONDS
# at least 25 resizes, and on until the program is done (at most 120 s)
while [ "$i" -lt 25 ] || kill -0 "$chain" 2>/dev/null; do
	[ $((SECONDS - start)) -lt 120 ] || break
	if [ $((i % 5)) -eq 4 ]; then
		# a move: onto groups 10 and 11, or back to 5 and 6
		if [ $((i % 10)) -eq 4 ]; then slice=10,11; else slice=5,6; fi
		cmd=(move r --slice "$slice")
	else
		cmd=(resize r --sms "${sizes[$((i % ${#sizes[@]}))]}")
	fi
	if vadmin "${cmd[@]}" >"$TEST_TMP/resize.$i.log" 2>&1; then
		ok=$((ok + 1))
	else
		failed=$((failed + 1))
		cat "$TEST_TMP/resize.$i.log" | tap_diag
	fi
	i=$((i + 1))
done
rc=0
wait_pid "$chain" 60 || rc=$?
if [ "$failed" -eq 0 ] && [ "$ok" -ge 25 ]; then
	tap_ok "$ok resizes and moves of r while it ran, none refused"
else
	tap_not_ok "$ok resizes and moves of r while it ran, none refused" \
		"$failed refused"
fi
if [ "$rc" -eq 0 ] && grep -q "ran once each, in order" "$out"; then
	tap_ok "resize_chain: no launch lost, repeated or reordered"
	grep "in order\|SM counts" "$out" | tap_diag
else
	tap_not_ok "resize_chain: no launch lost, repeated or reordered" \
		"exit status $rc"
	tail -n 5 "$out" | tap_diag
fi
counts=$(sed -n 's/.*SM counts seen:\([0-9 ]*\);.*/\1/p' "$out" | wc -w)
if [ "$counts" -ge 2 ]; then
	tap_ok "the program's device queries saw $counts different SM counts"
else
	tap_not_ok "the program's device queries saw several SM counts" \
		"$(grep 'SM counts' "$out" || true)"
fi
tap_expect "the chain runs again after the resizes" 0 "in order" \
	client r "$(prog resize_chain)" 2000

# ---- what a running program and vgpud see -----------------------------------
tap_run "resize r back to 16 SMs" vadmin resize r --sms 16
out="$TEST_TMP/watch.out"
client_bg "$out" r "$(prog resize_watch)" 30
watch=$BG_PID
wait_for 30 "resize_watch to start" grep -q "16 SMs" "$out" || true
tap_expect "resize r to 24 SMs" 0 "16 -> 24 SMs" vadmin resize r --sms 24
rc=0
wait_pid "$watch" 40 || rc=$?
if [ "$rc" -eq 0 ] && grep -q "16 -> 24 SMs (vGPU r: 24-SM slice" "$out"; then
	tap_ok "cuDeviceGetAttribute and cuDeviceGetName of a running program see 24 SMs"
else
	tap_not_ok "cuDeviceGetAttribute of a running program sees 24 SMs" \
		"exit status $rc: $(tail -n 1 "$out")"
fi
out="$TEST_TMP/props.out"
client_bg "$out" r "$RT/resize_props_rt" --wait 30
props=$BG_PID
wait_for 30 "resize_props_rt to start" grep -q "24 SMs" "$out" || true
tap_run "shrink r to 8 SMs" vadmin resize r --sms 8
rc=0
wait_pid "$props" 40 || rc=$?
if [ "$rc" -eq 0 ] && grep -q "24 -> 8 SMs" "$out"; then
	tap_ok "cudaDeviceGetAttribute of a running program sees 8 SMs"
else
	tap_not_ok "cudaDeviceGetAttribute of a running program sees 8 SMs" \
		"exit status $rc: $(tail -n 1 "$out")"
fi
tap_expect "a new program sees 8 SMs" 0 "8 SMs" \
	client r "$RT/resize_props_rt"
tap_expect "vgpu-admin list shows r with 8 SMs" 0 "^8$" vgpu_field r SMS
state_sms() { # NAME: its SMs and groups in the state file
	python3 -c '
import json, sys
for v in json.load(open(sys.argv[1]))["vgpus"]:
	if v["name"] == sys.argv[2]:
		print("sms", v["sms"], "groups", v["groups"])' "$RUN_DIR/state.json" "$1"
}
tap_expect "the state file holds r's new size" 0 "sms 8 groups \[0\]" \
	state_sms r
tap_expect "move r onto group 12" 0 "group 12" \
	vadmin move r --slice 12
tap_expect "show --json has r's new group" 0 '12' \
	vadmin show r --json
tap_expect "smid_map: r's blocks run on group 12's SMs (96-103)" 0 \
	"SMs: (9[6-9]|10[0-3])" client r "$(prog smid_map)" 8

# ---- refusals ------------------------------------------------------------------
tap_expect "resize refused: no such vGPU" 1 "no vGPU named 'nosuch'" \
	vadmin resize nosuch --sms 8
tap_expect "resize refused: 0 SMs (usage)" 2 "from 1 to 1024" \
	vadmin resize r --sms 0
tap_expect "resize refused: more than is free" 1 \
	"asked for 1000 SMs; vGPU r holds 8 SMs .* free on GPU 0" \
	vadmin resize r --sms 1000
groups_o=$(vadmin show o --json | python3 -c \
	'import json,sys; print(json.load(sys.stdin)["groups"][0])')
tap_expect "move refused: another vGPU's group" 1 "belongs to vGPU o" \
	vadmin move r --slice "$groups_o"
tap_expect "move refused: the leftover slice with others (only lent)" 1 \
	"only the scheduler lends it" vadmin move r --slice 12,16
tap_expect "move refused: no such group" 1 "has no SM group 40" \
	vadmin move r --slice 40
tap_expect "move refused: not a group list (usage)" 2 "like 4,5" \
	vadmin move r --slice 3-x
tap_expect "r still runs on group 12 after the refusals" 0 "in order" \
	client r "$(prog resize_chain)" 500

# ---- during a fault ---------------------------------------------------------
# f is alone in GPU 1's shared domain. A second fault within 10 s of the
# first restart makes the domain wait a second before it restarts: a
# resize then finds f restarting.
tap_run "create vGPU f on GPU 1" vadmin create f --sms 8 --memory 64M --gpu 1
f_running() { [ "$(vgpu_field f STATE)" = running ]; }
busy=0
for attempt in 1 2 3; do
	client f "$(prog fault_oob)" >/dev/null 2>&1 || true
	if vadmin resize f --sms 16 >"$TEST_TMP/fault.$attempt.log" 2>&1; then
		:
	elif grep -Eq "restarting|shared fault domain" \
		"$TEST_TMP/fault.$attempt.log"; then
		busy=1
		break
	fi
	wait_for 30 "f to run again" f_running || true
done
if [ "$busy" = 1 ]; then
	tap_ok "resize refused while f's fault domain restarts"
	tap_diag <"$TEST_TMP/fault.$attempt.log"
else
	tap_not_ok "resize refused while f's fault domain restarts" \
		"never caught it restarting in 3 faults"
fi
wait_for 60 "f to run again" f_running || true
tap_expect "after the fault f resizes (to 24 SMs)" 0 "-> 24 SMs" \
	vadmin resize f --sms 24
tap_expect "and runs there" 0 "in order" client f "$(prog resize_chain)" 500
# A cooperative kernel ends on the slice it was checked against: a resize
# issued while one runs waits for its end (the worker says so), and the
# kernel completes once; one that runs past the wait's bound (8 s) gets
# the resize refused, saying why, and runs on.
tap_expect "resize r to 16 SMs" 0 "-> 16 SMs" vadmin resize r --sms 16
coop_run() { # MS: a cooperative kernel of MS ms on r, started
	out="$TEST_TMP/coop.$1.out"
	client_bg "$out" r "$(prog long_work)" coop "$1"
	coop=$BG_PID
	wait_for 30 "the cooperative kernel to be queued" \
		grep -q "coop launched" "$out" || true
}
coop_done() { # TITLE
	local rc=0
	wait_pid "$coop" 40 || rc=$?
	if [ "$rc" -eq 0 ] && grep -q "long_work: coop ok" "$out"; then
		tap_ok "$1"
	else
		tap_not_ok "$1" "exit status $rc: $(tail -n 1 "$out")"
	fi
}
coop_run 1500
tap_expect "shrink r to 8 SMs while a cooperative kernel runs" 0 \
	"16 -> 8 SMs" vadmin resize r --sms 8
coop_done "the cooperative kernel ran to its end, once"
tap_expect "the resize waited for it first (worker log)" 0 \
	"resize waited [0-9.]+ ms for the cooperative kernels" \
	grep -E "resize waited" "$VGPUD_LOG"
coop_run 9500
tap_expect "a resize under a cooperative kernel longer than 8 s is refused, saying why" \
	1 "1 cooperative kernel of the vGPU still running after 8000 ms" \
	vadmin resize r --sms 16
coop_done "... and the kernel runs to its end"
tap_expect "r is still 8 SMs" 0 "^8$" vgpu_field r SMS

tap_vgpud_alive
tap_vgpud_stops
tap_done
