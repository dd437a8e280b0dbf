#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Cross-GPU migration on the simulator (VGPU_SIM_GPUS=2):
#   - a long chain of dependent launches on two streams with events
#     across them (resize_chain) comes out exactly right while its vGPU is
#     migrated between the two GPUs again and again: nothing lost,
#     repeated or reordered;
#   - a client's memory (copies, a memset, kernel writes) reads back the
#     same through its old pointers after a migration, and its kernels run
#     on there;
#   - list, show and the state file follow it to the other GPU, and a
#     shared vGPU moves to that GPU's fault domain: a fault on the GPU it
#     left does not restart it;
#   - refused with a sentence, nothing changed: the target lacks memory,
#     the target lacks SM groups, the same GPU, no such GPU, no such vGPU.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=2
vgpu_test_start "vgpud starts on the simulator (2 GPUs)"

tap_run "create vGPU m (16 SMs, 256 MiB) on GPU 0" vadmin create m --sms 16 \
	--memory 256M --gpu 0

# ---- the chain under migrations ------------------------------------------------
out="$TEST_TMP/chain.out"
client_bg "$out" m "$(prog resize_chain)" 20000
chain=$BG_PID
wait_for 30 "resize_chain to start" grep -q started "$out" || true
ok=0
failed=0
i=0
start=$SECONDS
while [ "$i" -lt 12 ] || kill -0 "$chain" 2>/dev/null; do
	[ $((SECONDS - start)) -lt 120 ] || break
	to=$(((i + 1) % 2))
	if vadmin migrate m --gpu "$to" >"$TEST_TMP/mig.$i.log" 2>&1; then
		ok=$((ok + 1))
	else
		failed=$((failed + 1))
		tap_diag <"$TEST_TMP/mig.$i.log"
	fi
	i=$((i + 1))
done
rc=0
wait_pid "$chain" 60 || rc=$?
if [ "$failed" -eq 0 ] && [ "$ok" -ge 12 ]; then
	tap_ok "$ok migrations of m between GPU 0 and 1 while it ran, none refused"
else
	tap_not_ok "$ok migrations of m while it ran, none refused" "$failed refused"
fi
tail -n 1 "$TEST_TMP/mig.0.log" | tap_diag
if [ "$rc" -eq 0 ] && grep -q "ran once each, in order" "$out"; then
	tap_ok "resize_chain across migrations: no launch lost, repeated or reordered"
else
	tap_not_ok "resize_chain across migrations: no launch lost, repeated or reordered" \
		"exit status $rc"
	tail -n 5 "$out" | tap_diag
fi

# ---- memory through the old pointers ---------------------------------------------
gpu_now=$(vgpu_field m GPU)
other=$((1 - gpu_now))
D="$TEST_TMP/pat"
mkdir -p "$D"
client_bg "$TEST_TMP/pat.out" m "$(prog state_pattern)" hold "$D" 16
pat=$BG_PID
wait_for 60 "state_pattern to be ready" test -e "$D/ready" || true
tap_expect "migrate m to GPU $other (--json)" 0 '"to_gpu": '"$other" \
	vadmin migrate m --gpu "$other" --json
grep -E '"(copy|blackout|total)_ms"' "$TAP_LOG" | tap_diag
touch "$D/go"
rc=0
wait_pid "$pat" 60 || rc=$?
if [ "$rc" -eq 0 ] && grep -q "contents intact" "$TEST_TMP/pat.out"; then
	tap_ok "the client's memory reads back the same through its old pointers on GPU $other"
else
	tap_not_ok "the client's memory reads back the same on GPU $other" \
		"exit status $rc"
	tail -n 5 "$TEST_TMP/pat.out" | tap_diag
fi
tap_expect "list shows m on GPU $other" 0 "^$other$" vgpu_field m GPU
tap_expect "show --json says GPU $other" 0 "\"gpu\": $other" \
	vadmin show m --json
state_gpu() {
	python3 -c '
import json, sys
for v in json.load(open(sys.argv[1]))["vgpus"]:
	if v["name"] == sys.argv[2]:
		print("gpu", v["gpu"], "groups", v["groups"])' "$RUN_DIR/state.json" "$1"
}
tap_expect "the state file has m on GPU $other" 0 "gpu $other" state_gpu m

# ---- the fault domain follows it ------------------------------------------------
tap_run "create f on GPU $gpu_now (its old GPU)" vadmin create f --sms 8 \
	--memory 64M --gpu "$gpu_now"
r0=$(vgpu_field m RESTARTS)
client f "$(prog fault_oob)" >/dev/null 2>&1 || true
f_again() {
	[ "$(vgpu_field f RESTARTS)" -ge 1 ] &&
		[ "$(vgpu_field f STATE)" = running ]
}
wait_for 60 "f to restart" f_again || true
tap_expect "a fault on GPU $gpu_now restarted f" 0 "^[1-9]" vgpu_field f RESTARTS
tap_expect "but not m, now in GPU $other's domain" 0 "^$r0$" \
	vgpu_field m RESTARTS
tap_expect "m runs programs after it all" 0 "in order" \
	client m "$(prog resize_chain)" 500

# ---- refusals ----------------------------------------------------------------------
tap_run "create big: most of GPU $gpu_now's memory" vadmin create big --sms 8 \
	--memory 15G --gpu "$gpu_now"
tap_expect "migrate refused: the target lacks memory" 1 \
	"cannot go there: asked for 256.0 MiB of memory, .* free on GPU $gpu_now" \
	vadmin migrate m --gpu "$gpu_now"
tap_run "destroy big" vadmin destroy big
tap_run "create wide: every SM group of GPU $gpu_now but f's" vadmin create \
	wide --sms 120 --memory 64M --gpu "$gpu_now"
tap_expect "migrate refused: the target lacks SM groups" 1 \
	"cannot go there: asked for 16 SMs, 0 SMs .* are free on GPU $gpu_now" \
	vadmin migrate m --gpu "$gpu_now"
tap_expect "migrate refused: the GPU it is on" 1 "is on GPU $other already" \
	vadmin migrate m --gpu "$other"
tap_expect "migrate refused: no such GPU" 1 "there is no GPU 5" \
	vadmin migrate m --gpu 5
tap_expect "migrate refused: no such vGPU" 1 "no vGPU named 'nosuch'" \
	vadmin migrate nosuch --gpu 0
tap_expect "migrate without --gpu is a usage error" 2 "--gpu N is required" \
	vadmin migrate m
tap_expect "m is where it was, running" 0 "^$other$" vgpu_field m GPU
tap_expect "and runs programs" 0 "in order" \
	client m "$(prog resize_chain)" 500
tap_vgpud_alive
tap_vgpud_stops
tap_done
