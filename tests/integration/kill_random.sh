#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# The randomized kill test (issue 16): 50 times, a client with several
# threads that allocate, copy, launch and queue host functions and
# callbacks is killed with SIGKILL at a random moment (some of them two
# at once). Afterwards the vGPU has 0 clients and 0 bytes in use, and
# serves a new client; vgpud and the worker are the same as before.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start
tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
used_is() { [ "$(vgpu_field a USED)" = "$1" ]; }
clients_is() { [ "$(vgpu_field a CLIENTS)" = "$1" ]; }
used0=$(vgpu_field a USED)
pid0=$(vgpu_worker_pid a)
RANDOM=$$ # a failure prints its seed below
seed=$RANDOM
RANDOM=$seed
echo "seed $seed" | tap_diag

started=0
for i in $(seq 1 50); do
	out="$TEST_TMP/chaos-$i.out"
	client_bg "$out" a "$(prog hostfn_threads)" chaos $((1 + RANDOM % 4))
	victims=("$BG_PID")
	if [ $((i % 5)) -eq 0 ]; then # now and then two at once
		client_bg "$out.2" a "$(prog hostfn_threads)" chaos 2
		victims+=("$BG_PID")
	fi
	# a random moment: before, while or after it set up
	sleep "0.$(printf '%03d' $((RANDOM % 800)))"
	if grep -q chaos "$out" 2>/dev/null; then
		started=$((started + 1))
	fi
	kill -KILL "${victims[@]}" 2>/dev/null || true
	for p in "${victims[@]}"; do
		wait "$p" 2>/dev/null || true
	done
done
tap_ok "50 clients killed at random moments ($started of them mid-work)"
if wait_for 15 "a to have no client" clients_is 0; then
	tap_ok "afterwards a has 0 clients"
else
	tap_not_ok "afterwards a has 0 clients" \
		"CLIENTS is $(vgpu_field a CLIENTS || true)"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi
if wait_for 15 "USED to return to $used0" used_is "$used0"; then
	tap_ok "afterwards a has $used0 in use"
else
	tap_not_ok "afterwards a has $used0 in use" \
		"USED is $(vgpu_field a USED || true)"
fi
tap_run "a new client runs on a" client a "$(prog hostfn_threads)" run 4 50
if [ "$(vgpu_worker_pid a)" = "$pid0" ]; then
	tap_ok "the worker is the same (pid $pid0): nothing was restarted"
else
	tap_not_ok "the worker is the same" "was $pid0, now '$(vgpu_worker_pid a)'"
fi
tap_vgpud_alive
tap_vgpud_stops
tap_done
