#!/bin/bash
# shellcheck disable=SC2317 # helpers called indirectly (wait_for)
# SPDX-License-Identifier: MIT
# The leftover slice lent by the scheduler, on the simulator (one GPU of
# 132 SMs: 16 groups of 8 and 4 SMs left over, group 16), fair policy:
#   - it is not lent past a busy vGPU's max_sms;
#   - it is lent on top of a busy vGPU's groups that has room, and given
#     back when that vGPU's max_sms drops below what it holds;
#   - a vGPU holding it suspends and resumes at its own size (the 4 SMs
#     are not asked for again: with them it would need a ninth group,
#     and only eight are free);
#   - a vGPU that sits on the leftover slice alone is outside all this:
#     the slice is not lent while it is there.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=1 VGPU_SIM_SMS=132 VGPU_SIM_MEMORY=16G
vgpu_test_start "vgpud starts on the simulator with --policy fair" \
	--policy fair

holder() { # the vGPU holding group 16 with other groups, or "none"
	vadmin list --json | python3 -c '
import json, sys
h = [v["name"] for v in json.load(sys.stdin)["vgpus"]
     if 16 in v["groups"] and len(v["groups"]) > 1]
print(h[0] if h else "none")'
}
holder_is() { [ "$(holder)" = "$1" ]; }
busy() { # OUT VGPU SECONDS: a busy loop in the background
	client_bg "$1" "$2" "$(prog busy_loop)" "$3" 65536
}

tap_run "policy --gpu 0: dwell 100 ms" vadmin policy --gpu 0 --dwell 100
tap_run "create a (64 SMs, max 64)" vadmin create a --sms 64 --memory 64M \
	--max-sms 64
tap_run "create b (64 SMs, min 64)" vadmin create b --sms 64 --memory 64M \
	--min-sms 64
busy "$TEST_TMP/a.out" a 60
sleep 1.5
tap_expect "busy a at its max_sms is not lent the leftover slice" 0 \
	"^none$" holder
busy "$TEST_TMP/b.out" b 60
if wait_for 20 "b to hold the leftover slice" holder_is b; then
	tap_ok "busy b (room under its max) is lent it: 64 + 4 SMs"
else
	tap_not_ok "busy b (room under its max) is lent it: 64 + 4 SMs"
	vadmin list | tap_diag
fi
tap_expect "b shows 68 SMs on groups and the leftover" 0 "^68$" \
	vgpu_field b SMS
tap_run "policy b --max-sms 64 (below what it holds with the slice)" \
	vadmin policy b --min-sms 64 --max-sms 64
if wait_for 20 "the slice back from b" holder_is none; then
	tap_ok "a holder whose max_sms drops below it gives it back"
else
	tap_not_ok "a holder whose max_sms drops below it gives it back"
	vadmin list | tap_diag
fi
tap_run "policy b --max-sms 128" vadmin policy b --max-sms 128
if wait_for 20 "b to hold the slice again" holder_is b; then
	tap_ok "b, busy and with room again, is lent it again"
else
	tap_not_ok "b, busy and with room again, is lent it again"
fi

# suspend_b: b to a file, once a resize of the scheduler's in flight
# (refused meanwhile: "being resized") is done
F=$TEST_TMP/b.vgpu
suspend_b() {
	local out
	for _ in $(seq 50); do
		out=$(vadmin suspend b --to "$F" 2>&1) && {
			echo "$out"
			return 0
		}
		grep -q "being resized" <<<"$out" || break
		sleep 0.1
	done
	echo "$out"
	return 1
}
tap_run "suspend b (busy) while it holds the leftover slice" suspend_b
tap_expect "resume b: it asks for its own 64 SMs, not 68 (8 groups free)" \
	0 "on GPU 0 \(64 SMs\)" vadmin resume b
stop_bg

tap_run "destroy b" vadmin destroy b
tap_expect "create s on the leftover slice alone (4 SMs)" 0 \
	"groups 16 \(leftover\)" vadmin create s --sms 4 --memory 64M
busy "$TEST_TMP/a2.out" a 5
tap_run "policy a: no max" vadmin policy a --max-sms 128
sleep 1.5
tap_expect "with s on it, the leftover slice is not lent" 0 "^none$" holder
tap_expect "s keeps it" 0 "^4$" vgpu_field s SMS
stop_bg
tap_vgpud_alive
tap_done
