#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Swapping idle vGPUs out to make room (docs/DESIGN.md "Swap"), on one
# simulated GPU of 2 GiB (1.9 GiB usable) that two vGPUs of 896 MiB fill:
#   - swap off: a third create is refused as before;
#   - bad swap settings are refused with a sentence (vgpu-admin and the
#     raw admin socket);
#   - swap on: the third create swaps the idle vGPU a out (never b, whose
#     client keeps it busy): a log line, a's state "swapped", show says
#     why, its swap file is 0600; a fourth create is refused, saying why
#     no vGPU may go;
#   - a new client of swapped-out a waits for the bound and is refused
#     with a sentence while nothing may make room; a client call of a
#     waits the bound and fails with a CUDA error, not a hang;
#   - a's client sends work: a comes back by swapping out the idle c,
#     its call returns, its memory contents are intact, its file is gone;
#   - a swap-in that fails (a damaged file) leaves the file and the
#     vGPU out with the reason; vgpu-admin resume retries it;
#   - vgpud restarted (--keep-workers) keeps a swapped vGPU swapped, and
#     a new client then brings it back.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=1 VGPU_SIM_MEMORY=2G
vgpu_test_start "vgpud starts on the simulator (1 GPU, 2 GiB)" \
	--orphan-timeout 60 --keep-workers
LOG="$VGPUD_LOG"
trap 'kill_workers; cleanup' EXIT

tap_run "create a (896 MiB)" vadmin create a --sms 16 --memory 896M
tap_run "create b (896 MiB)" vadmin create b --sms 16 --memory 896M

# hold OUT DIR: a state_pattern client of a in the background
hold()
{
	mkdir -p "$2"
	client_bg "$1" a "$(prog state_pattern)" hold "$2" 8
	HOLD=$BG_PID
	wait_for 60 "state_pattern to be ready" test -e "$2/ready" || true
}
# wait_idle NAME: until vgpud has seen NAME idle for the GPU's 1 s (its
# worker's idle edge can come up to a stats period late)
wait_idle()
{
	local ms
	for _ in $(seq 1 60); do
		ms=$(vadmin --json show "$1" |
			sed -n 's/.*"idle_ms": \([0-9][0-9]*\).*/\1/p' | head -n 1)
		[ -n "$ms" ] && [ "$ms" -ge 1100 ] && return 0
		sleep 0.1
	done
	echo "# $1 was not idle for 1.1 s within 6 s" >&2
	return 1
}
DA="$TEST_TMP/a"
hold "$TEST_TMP/a.out" "$DA"
HOLD_A=$HOLD
client_bg "$TEST_TMP/b.out" b "$(prog busy_loop)" 120 4096
BUSY_B=$BG_PID
wait_for 30 "b's client to start" grep -q started "$TEST_TMP/b.out" || true

# ---- swap off ----------------------------------------------------------------
tap_expect "swap off: a third vGPU is refused as before" 1 \
	"^vgpu-admin: .*(memory|MiB|GiB)" \
	vadmin create c --sms 16 --memory 896M
if grep -qi "swap" "$TAP_LOG"; then
	tap_not_ok "the refusal does not talk about swapping" \
		"$(cat "$TAP_LOG")"
else
	tap_ok "the refusal does not talk about swapping"
fi

# ---- bad input ------------------------------------------------------------
tap_expect "--swap maybe is refused" 2 "--swap is on or off" \
	vadmin policy --gpu 0 --swap maybe
tap_expect "a GPU's --swap allowed is refused" 2 "a GPU's --swap is on or off" \
	vadmin policy --gpu 0 --swap allowed
tap_expect "a vGPU's --swap on is refused" 2 "a vGPU's --swap is allowed" \
	vadmin policy a --swap on
tap_expect "--swap-idle 5 (ms) is refused" 2 "--swap-idle needs milliseconds" \
	vadmin policy --gpu 0 --swap-idle 5
tap_expect "--swap-wait 99999 is refused" 2 "--swap-wait needs milliseconds" \
	vadmin policy --gpu 0 --swap-wait 99999
tap_expect "--swap-idle for a vGPU is refused" 2 "a GPU's" \
	vadmin policy a --swap-idle 1000
tap_expect "--swap without --gpu or NAME is refused" 2 "need --gpu N or" \
	vadmin policy --swap on
tap_expect "--swap on GPU 7 is refused" 1 "there is no GPU 7" \
	vadmin policy --gpu 7 --swap on
tap_expect "create --swap sometimes is refused" 2 "--swap is allowed, never" \
	vadmin create x --sms 8 --memory 8M --swap sometimes
printf 'version: 1\nname: x\nsms: 8\nmemory: 8M\nswap: sometimes\n' \
	>"$TEST_TMP/bad-swap.yaml"
tap_expect "a blueprint's swap: sometimes is refused" 1 \
	"bad-swap.yaml:5:7: field 'swap': 'sometimes' is not a swap choice" \
	vadmin validate "$TEST_TMP/bad-swap.yaml"
if [ -x "$HOSTILE/hostile_admin" ]; then
	for attack in swap-gpu-mode:"not 1 \(off\) or 2 \(on\)" \
		swap-vgpu-mode:"not 1 \(never\), 2" \
		swap-idle:"idle time of 1 ms" swap-wait:"wait of 65535 ms" \
		swap-reserved:"reserved byte" \
		swap-unterminated:"not NUL-terminated" \
		swap-no-gpu:"need a GPU" \
		swap-flags:"allowed and swap never at once"; do
		tap_expect "raw ${attack%%:*} is refused with a sentence" 0 \
			"${attack#*:}" \
			"$HOSTILE/hostile_admin" "$RUN_DIR/admin.sock" \
			"${attack%%:*}"
	done
	tap_expect "raw SWAP query past the end answers" 0 "status 0" \
		"$HOSTILE/hostile_admin" "$RUN_DIR/admin.sock" swap-query
else
	tap_skip "raw SWAP requests" "hostile_admin is not built"
fi

# ---- swap on: a goes out for c ----------------------------------------------
tap_expect "swap on for GPU 0 (idle 1 s, calls wait up to 2.5 s)" 0 \
	"GPU 0: swap on" \
	vadmin policy --gpu 0 --swap on --swap-idle 1000 --swap-wait 2500
tap_expect "the policy view shows it" 0 "GPU 0: swap on" vadmin policy
wait_idle a || true
tap_expect "a third vGPU (swap never) fits by swapping idle a out" 0 \
	"created vGPU c" vadmin create c --sms 16 --memory 896M --swap never
tap_expect "the log says so, with a sentence" 0 \
	"swap: swapping vGPU a out to .*to make room for vGPU c" cat "$LOG"
tap_expect "list shows a swapped" 0 "^swapped$" vgpu_field a STATE
tap_expect "b (busy) was never chosen: it runs" 0 "^running$" \
	vgpu_field b STATE
tap_expect "show a says why" 0 "why +to make room for vGPU c" vadmin show a
tap_expect "show --json a has the state and the reason" 0 \
	'"state": "swapped".*|"why": "to make room' vadmin --json show a
tap_expect "top shows a swapped" 0 "swapped" vadmin top --once
F="$RUN_DIR/swap/a.state"
tap_expect "a's swap file is 0600" 0 "^600$" stat -c %a "$F"
tap_expect "a fourth vGPU is refused, saying why none may go" 1 \
	"b: has work.*c: never swaps|c: never swaps.*b: has work" \
	vadmin create d --sms 8 --memory 512M

# ---- the bound: a new client and a waiting call -----------------------------
t0=$SECONDS
tap_expect "a new client of swapped-out a is refused after the bound" 1 \
	"swapped out and could not come back within" \
	client a "$(prog vector_add)" 1024
if [ $((SECONDS - t0)) -le 10 ]; then
	tap_ok "it waited about the bound ($((SECONDS - t0)) s), not longer"
else
	tap_not_ok "it waited about the bound" "$((SECONDS - t0)) s"
fi
# 40 clients at once: at most SWAP_HELLOS_MAX (32) wait, the rest are
# refused at once with a sentence; vgpud answers throughout
many=()
for i in $(seq 1 40); do
	client a "$(prog vector_add)" 1024 >"$TEST_TMP/many.$i.out" 2>&1 &
	many+=($!)
done
for p in "${many[@]}"; do
	wait "$p" || true
done
n=$(grep -l "clients already wait for it" "$TEST_TMP"/many.*.out | wc -l)
if [ "$n" -ge 1 ]; then
	tap_ok "40 clients at once: $n refused at once, the rest waited (32 at most)"
else
	tap_not_ok "40 clients at once: some are refused at once" \
		"$(cat "$TEST_TMP"/many.1.out)"
fi
tap_expect "vgpud still answers after the crowd" 0 "swapped" vadmin list
touch "$DA/suspended" # a's client makes a call: nothing may make room
if wait_pid "$HOLD_A" 20; then
	tap_not_ok "a's waiting call fails after the bound" \
		"$(tail -n 3 "$TEST_TMP/a.out")"
elif grep -qi "unavailable" "$TEST_TMP/a.out"; then
	tap_ok "a's waiting call fails after the bound with a CUDA error"
	grep -i "unavailable" "$TEST_TMP/a.out" | head -n 1 | tap_diag
else
	tap_not_ok "a's waiting call fails after the bound with a CUDA error" \
		"$(tail -n 3 "$TEST_TMP/a.out")"
fi
tap_expect "the log says its calls fail" 0 \
	"vGPU a could not come back within 2.5 s" cat "$LOG"

# ---- a comes back for a new client, by swapping idle c out ----------------
tap_run "vgpu-admin policy c --swap allowed" vadmin policy c --swap allowed
wait_idle c || true
tap_expect "a new client of a brings it back by swapping idle c out" 0 \
	"" client a "$(prog vector_add)" 1024
tap_expect "the log says c went out for a" 0 \
	"swapping vGPU c out .*to make room for vGPU a .*to come back" \
	cat "$LOG"
tap_expect "the log says a is back in" 0 "swap: vGPU a is back in" cat "$LOG"
tap_expect "list shows a running" 0 "^running$" vgpu_field a STATE
tap_expect "list shows c swapped" 0 "^swapped$" vgpu_field c STATE
if [ ! -e "$F" ]; then
	tap_ok "a's swap file is gone"
else
	tap_not_ok "a's swap file is gone"
fi

# ---- contents: a fresh holder goes out and comes back for its call --------
D3="$TEST_TMP/a3"
hold "$TEST_TMP/a3.out" "$D3"
HOLD_A=$HOLD
tap_run "destroy c (swapped out)" vadmin destroy c
if [ ! -e "$RUN_DIR/swap/c.state" ]; then
	tap_ok "c's swap file went with it"
else
	tap_not_ok "c's swap file went with it"
fi
wait_idle a || true
tap_expect "c2 fits by swapping a (idle, with a client) out" 0 \
	"created vGPU c2" vadmin create c2 --sms 16 --memory 896M
tap_expect "list shows a swapped again" 0 "^swapped$" vgpu_field a STATE
tap_run "destroy c2" vadmin destroy c2
touch "$D3/suspended"
if wait_for 20 "a's call to return" grep -q "returned after" \
	"$TEST_TMP/a3.out"; then
	tap_ok "a's client sends work: a comes back and its call returns"
	grep "returned after" "$TEST_TMP/a3.out" | tap_diag
else
	tap_not_ok "a's client sends work: a comes back and its call returns" \
		"$(tail -n 3 "$TEST_TMP/a3.out")"
fi
touch "$D3/go"
if wait_pid "$HOLD_A" 60 && grep -q "contents intact" "$TEST_TMP/a3.out"; then
	tap_ok "a's memory came back intact (copies, memset, kernel writes)"
else
	tap_not_ok "a's memory came back intact" \
		"$(tail -n 3 "$TEST_TMP/a3.out")"
fi
tap_expect "list shows a running" 0 "^running$" vgpu_field a STATE

# ---- a failed swap-in: the file stays, resume retries ---------------------
D4="$TEST_TMP/a4"
hold "$TEST_TMP/a4.out" "$D4"
HOLD_A=$HOLD
wait_idle a || true
tap_expect "c3 fits by swapping a out" 0 "created vGPU c3" \
	vadmin create c3 --sms 16 --memory 896M
tap_run "destroy c3" vadmin destroy c3
cp "$F" "$TEST_TMP/good.state"
size=$(stat -c %s "$F")
printf '\x55' | dd of="$F" bs=1 seek=$((size - 1000)) conv=notrunc \
	2>/dev/null
touch "$D4/suspended"
wait_for 20 "the swap-in to fail" grep -q "bringing vGPU a back in failed" \
	"$LOG" || true
tap_expect "the log says the swap-in failed and why" 0 \
	"bringing vGPU a back in failed: .*checksum" cat "$LOG"
tap_expect "a stays swapped, show says resume retries" 0 \
	"vgpu-admin resume a" vadmin show a
if [ -e "$F" ]; then
	tap_ok "the swap file stays in place"
else
	tap_not_ok "the swap file stays in place"
fi
cat "$TEST_TMP/good.state" >"$F" # the same file, repaired
tap_expect "vgpu-admin resume a brings it back" 0 "resumed vGPU a" \
	vadmin resume a
touch "$D4/go"
if wait_pid "$HOLD_A" 60 && grep -q "contents intact" "$TEST_TMP/a4.out"; then
	tap_ok "after the resume a's memory is intact"
else
	tap_not_ok "after the resume a's memory is intact" \
		"$(tail -n 3 "$TEST_TMP/a4.out")"
fi

# ---- vgpud restarts with a swapped-out vGPU ---------------------------------
wait_idle a || true
printf 'version: 1\nname: c4\nsms: 16\nmemory: 896M\nswap: never\n' \
	>"$TEST_TMP/c4.yaml"
tap_expect "c4 (a blueprint with swap: never) fits by swapping a out" 0 \
	"created vGPU c4" vadmin create -f "$TEST_TMP/c4.yaml"
tap_expect "show c4 says it never swaps" 0 "swap +never" vadmin show c4
mapfile -t WORKERS < <(pgrep -P "$VGPUD_PID" || true)
vgpu_stop || true
"$VGPUD" --run-dir "$RUN_DIR" --backend sim --worker-user vgpu \
	--orphan-timeout 60 --keep-workers >>"$LOG" 2>&1 &
VGPUD_PID=$!
wait_for 30 "the new vgpud to answer" vadmin list >/dev/null || true
tap_expect "after a vgpud restart a is still swapped" 0 "^swapped$" \
	vgpu_field a STATE
tap_expect "and show still says why" 0 "to make room for vGPU c4" \
	vadmin show a
tap_expect "the GPU's swap settings were kept" 0 "GPU 0: swap on" \
	vadmin policy
tap_run "destroy c4" vadmin destroy c4
tap_expect "a new client brings a back after the restart" 0 "" \
	client a "$(prog vector_add)" 1024
tap_expect "list shows a running" 0 "^running$" vgpu_field a STATE
kill "$BUSY_B" 2>/dev/null || true
tap_done
