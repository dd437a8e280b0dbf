#!/bin/bash
# shellcheck disable=SC2317 # helpers called indirectly (wait_for)
# SPDX-License-Identifier: MIT
# Migration and the scheduler's loans, on the simulator (2 GPUs, fair):
# a busy vGPU that borrowed an idle neighbour's groups (and the leftover
# slice) migrates to a GPU with room for its size but not for what it
# borrowed. It asks the target for its size: the loans stay behind (the
# neighbour it borrowed from takes its SMs back when it has work), and
# its program runs on.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=2 VGPU_SIM_SMS=132 VGPU_SIM_MEMORY=16G
vgpu_test_start "vgpud starts on the simulator (2 GPUs, fair)" --policy fair

sched() { # NAME FIELD: a field of NAME in `vgpu-admin policy --json`
	vadmin policy --json | python3 -c '
import json, sys
for v in json.load(sys.stdin)["vgpus"]:
	if v["name"] == sys.argv[1]:
		print(v[sys.argv[2]])' "$1" "$2"
}
sched_gt() { [ "$(sched "$1" "$2")" -gt "$3" ]; }
sched_ge() { [ "$(sched "$1" "$2")" -ge "$3" ]; }

tap_run "GPU 0 lends to anyone (no reclaim bound)" vadmin policy --gpu 0 \
	--dwell 100 --reclaim-bound none
tap_run "create a (40 SMs) on GPU 0" vadmin create a --sms 40 --memory 128M \
	--gpu 0
tap_run "create c (48 SMs, min 8) on GPU 0" vadmin create c --sms 48 \
	--memory 128M --min-sms 8 --gpu 0
tap_run "create wide (88 SMs) on GPU 1: 40 SMs of groups left there" \
	vadmin create wide --sms 88 --memory 128M --gpu 1

out="$TEST_TMP/a.out"
client_bg "$out" a "$(prog busy_loop)" 30 65536
busy=$BG_PID
if wait_for 60 "a to borrow c's idle groups" sched_gt a sms 40; then
	tap_ok "fair: busy a borrowed idle c's groups ($(sched a sms) SMs)"
else
	tap_not_ok "fair: busy a borrowed idle c's groups"
	vadmin policy | tap_diag
fi
tap_expect "a migrates to GPU 1, asking for its size, not its loans" 0 \
	"migrated vGPU a: GPU 0 -> 1 \\(40 SMs\\)" vadmin migrate a --gpu 1
tap_expect "a is on GPU 1" 0 "^1$" vgpu_field a GPU
tap_expect "with at least its size" 0 "^(4[0-9]|[5-9][0-9]|1[0-9][0-9])$" \
	sched a sms
client_bg "$TEST_TMP/c.out" c "$(prog busy_loop)" 5 65536
if wait_for 30 "c to take its SMs back" sched_ge c sms 48; then
	tap_ok "a's loans stayed behind: c gets work and (at least) its 48 SMs"
else
	tap_not_ok "a's loans stayed behind: c gets work and its 48 SMs"
	vadmin policy | tap_diag
fi
wait_pid "$BG_PID" 60 || true
tap_wait_pid "a's program ran on across the migration (exit 0)" "$busy" 90 \
	"$out"
tap_vgpud_alive
tap_vgpud_stops
tap_done
