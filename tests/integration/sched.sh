#!/bin/bash
# shellcheck disable=SC2317 # helpers called indirectly (wait_for)
# SPDX-License-Identifier: MIT
# The scheduler on the simulator (one GPU, 16 SM groups of 8):
#   - fair: two busy vGPUs and an idle one: the idle one's groups are
#     lent to the busy ones (down to its min) and taken back when it gets
#     work; vgpu-admin policy/show/top say who lent and borrowed what;
#   - priority: a high-priority vGPU with a small weight gets its size
#     back first (under fair its weight would keep it at its min);
#   - over-commit: three vGPUs whose mins do not fit together take turns,
#     each making progress;
#   - refusals with a sentence: admission per mode, a resize outside
#     min..max, a policy that no longer fits, bad values (usage);
#   - a blueprint's policy fields; the state file keeps the policies;
#   - steady bursts (100 ms on, 200 ms off) are seen with their period;
#   - the 4 SMs the split leaves (group 16) are lent on top of one busy
#     vGPU's groups under fair and priority, come back when all are
#     idle, and are not lent under static.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=1 VGPU_SIM_SMS=132 VGPU_SIM_MEMORY=16G
vgpu_test_start "vgpud starts on the simulator with --policy fair" \
	--policy fair

# sched NAME FIELD: a field of NAME in `vgpu-admin policy --json`
sched() {
	vadmin policy --json | python3 -c '
import json, sys
for v in json.load(sys.stdin)["vgpus"]:
	if v["name"] == sys.argv[1]:
		print(v[sys.argv[2]])' "$1" "$2"
}
sched_is() { [ "$(sched "$1" "$2")" = "$3" ]; }
holders_of_leftover() { # how many vGPUs hold group 16 with others
	vadmin list --json | python3 -c '
import json, sys
vs = json.load(sys.stdin)["vgpus"]
print(sum(1 for v in vs if 16 in v["groups"] and len(v["groups"]) > 1))'
}
leftover_back() { [ "$(holders_of_leftover)" = 0 ]; }
sched_ge() { [ "$(sched "$1" "$2")" -ge "$3" ]; }
sched_le() { [ "$(sched "$1" "$2")" -le "$3" ]; }
gpu_field() {
	vadmin policy --json | python3 -c '
import json, sys
print(json.load(sys.stdin)["gpus"][0][sys.argv[1]])' "$1"
}
busy() { # OUT VGPU SECONDS: a busy loop in the background
	client_bg "$1" "$2" "$(prog busy_loop)" "$3" 65536
}

tap_expect "policy shows GPU 0 fair" 0 "GPU 0: fair policy" vadmin policy
tap_expect "policy --gpu 0 sets the dwell and the reclaim bound" 0 \
	"dwell 200 ms, reclaim bound none" \
	vadmin policy --gpu 0 --dwell 200 --reclaim-bound none

# ---- fair: lend to the busy, take back when busy ---------------------------
tap_run "create a (40 SMs)" vadmin create a --sms 40 --memory 128M
tap_run "create b (40 SMs)" vadmin create b --sms 40 --memory 128M
tap_run "create c (48 SMs, min 8)" vadmin create c --sms 48 --memory 128M \
	--min-sms 8
busy "$TEST_TMP/a.out" a 120
busy "$TEST_TMP/b.out" b 120
if wait_for 60 "c to lend down to its min" sched_is c sms 8; then
	tap_ok "fair: idle c lends down to its min_sms (8 SMs)"
else
	tap_not_ok "fair: idle c lends down to its min_sms (8 SMs)"
	vadmin policy | tap_diag
fi
ab_sms_is() { [ "$(($(sched a sms) + $(sched b sms)))" = "$1" ]; }
# the slice goes once their grows are done: wait for it
if wait_for 10 "a and b to hold 124 SMs" ab_sms_is 124; then
	tap_ok "fair: a and b borrowed c's 40 SMs and the 4 the split left"
else
	tap_not_ok "fair: a and b borrowed c's 40 SMs and the 4 the split left"
	vadmin policy | tap_diag
fi
tap_expect "the leftover slice (group 16) is lent to one busy vGPU" 0 "^1$" \
	holders_of_leftover
tap_expect "policy shows c's lent SMs" 0 "^c +0 +normal +6\* +8 +128 +48 +8 +48 +40 +0 +no" \
	vadmin policy
tap_expect "show c says what it lent" 0 "lent +40 SMs to vGPUs with work" \
	vadmin show c
tap_expect "top prints the policy table" 0 "GPU 0: fair policy" \
	vadmin top --once
busy "$TEST_TMP/c.out" c 10
if wait_for 30 "c to take its SMs back" sched_is c sms 48; then
	tap_ok "fair: c gets work and takes its 48 SMs back"
else
	tap_not_ok "fair: c gets work and takes its 48 SMs back"
	vadmin policy | tap_diag
fi
tap_expect "the reclaim is counted and timed" 0 "^[1-9]" sched c reclaims
vadmin policy | tap_diag
tap_expect "a and b gave back what they borrowed (one keeps the leftover)" \
	0 "^84$" \
	python3 -c "print($(sched a sms) + $(sched b sms))"

# ---- priority: the high-priority vGPU's size is kept --------------------------
tap_run "weights: a 10, b 10, c 1 and high priority" sh -c "
	'$VGPU_ADMIN' --run-dir '$RUN_DIR' policy a --weight 10 &&
	'$VGPU_ADMIN' --run-dir '$RUN_DIR' policy b --weight 10 &&
	'$VGPU_ADMIN' --run-dir '$RUN_DIR' policy c --weight 1 --priority high"
busy "$TEST_TMP/c2.out" c 120
if wait_for 30 "c to drop to its weighted share" sched_le c sms 16; then
	tap_ok "fair: all busy, c (weight 1 of 21) holds about its min"
else
	tap_not_ok "fair: all busy, c (weight 1 of 21) holds about its min"
	vadmin policy | tap_diag
fi
tap_expect "policy --gpu 0 --mode priority" 0 "GPU 0: priority policy" \
	vadmin policy --gpu 0 --mode priority
if wait_for 30 "c to get its size back" sched_is c sms 48; then
	tap_ok "priority: high-priority c gets its 48 SMs first"
else
	tap_not_ok "priority: high-priority c gets its 48 SMs first"
	vadmin policy | tap_diag
fi
tap_expect "priority: a and b share the rest (and the leftover)" 0 "^84$" \
	python3 -c "print($(sched a sms) + $(sched b sms))"
stop_bg
grep -h "launches in" "$TEST_TMP"/*.out | tap_diag || true
if wait_for 30 "the leftover slice back" leftover_back; then
	tap_ok "all idle: the leftover slice comes back after the dwell"
else
	tap_not_ok "all idle: the leftover slice comes back after the dwell"
	vadmin list | tap_diag
	grep -E "scheduler" "$VGPUD_LOG" | tail -20 | tap_diag
fi
tap_run "policy --gpu 0 --mode static" vadmin policy --gpu 0 --mode static
busy "$TEST_TMP/a.static.out" a 3
sleep 1
tap_expect "static: the leftover slice is not lent" 0 "^0$" holders_of_leftover
stop_bg
tap_run "policy --gpu 0 --mode priority" vadmin policy --gpu 0 --mode priority

# ---- refusals -------------------------------------------------------------
tap_expect "resize below min_sms is refused" 1 \
	"vGPU c: 4 SMs is below its min_sms 8 \(vgpu-admin policy c --min-sms N" \
	vadmin resize c --sms 4
tap_expect "resize above max_sms is refused" 1 "56 SMs is above its max_sms 48" \
	sh -c "'$VGPU_ADMIN' --run-dir '$RUN_DIR' policy c --max-sms 48 >/dev/null &&
	'$VGPU_ADMIN' --run-dir '$RUN_DIR' resize c --sms 56"
tap_expect "a min_sms the GPU does not have is refused" 1 \
	"min_sms 200 is more than GPU 0 has in SM groups \(128\)" \
	vadmin policy a --min-sms 200
tap_expect "mins that do not fit together are refused" 1 \
	"priority: GPU 0 keeps its high-priority vGPUs at their sizes and the others at their min_sms: 176 SMs" \
	vadmin policy a --min-sms 120
tap_expect "priority admission: a high vGPU's size must fit beside the others' mins" \
	1 "priority: GPU 0 keeps its high-priority vGPUs at their sizes" \
	vadmin create h --sms 120 --memory 64M --priority high
tap_expect "bad values are usage errors" 2 "--weight needs 1 to 1000" \
	vadmin policy a --weight 0
tap_expect "GPU options need --gpu" 2 "need --gpu N" vadmin policy --mode fair
tap_expect "vGPU and GPU options do not mix" 2 "not both" \
	vadmin policy a --gpu 0
tap_expect "create: min_sms above sms is refused" 1 "below its min_sms 64" \
	vadmin create x --sms 16 --memory 64M --min-sms 64
tap_run "destroy a, b, c" sh -c "
	'$VGPU_ADMIN' --run-dir '$RUN_DIR' destroy a &&
	'$VGPU_ADMIN' --run-dir '$RUN_DIR' destroy b &&
	'$VGPU_ADMIN' --run-dir '$RUN_DIR' destroy c"

# ---- over-commit: turns ---------------------------------------------------------
tap_run "policy --gpu 0 --mode fair --quantum 300" \
	vadmin policy --gpu 0 --mode fair --quantum 300
for v in d e; do
	tap_run "create $v (48 SMs, min 48)" vadmin create $v --sms 48 \
		--memory 64M --min-sms 48
done
tap_expect "fair: a third min of 48 is refused without over-commit" 1 \
	"guarantees each vGPU its min_sms: 144 SMs, more than its 128 .*--overcommit on" \
	vadmin create f --sms 48 --memory 64M --min-sms 48
tap_expect "policy --gpu 0 --overcommit on" 0 "over-commit on" \
	vadmin policy --gpu 0 --overcommit on
tap_expect "create f: admitted over-committed (idle d and e give groups)" 0 \
	"created vGPU f" vadmin create f --sms 48 --memory 64M --min-sms 48
tap_expect "static refuses the over-committed sizes" 1 \
	"static: the vGPUs of GPU 0 need 144 SMs at their sizes, more than its 128" \
	vadmin policy --gpu 0 --mode static
for v in d e f; do
	busy "$TEST_TMP/$v.ts.out" $v 8
done
seen=0
for _ in $(seq 40); do
	if [ "$(gpu_field timeslicing)" = True ]; then
		seen=1
		break
	fi
	sleep 0.2
done
[ $seen = 1 ] && tap_ok "the GPU takes turns (three mins of 48 on 128 SMs)" ||
	tap_not_ok "the GPU takes turns (three mins of 48 on 128 SMs)"
if wait_for 5 "the leftover slice back" leftover_back; then
	tap_ok "while the vGPUs take turns the leftover slice is not lent"
else
	tap_not_ok "while the vGPUs take turns the leftover slice is not lent"
fi
vadmin policy | tap_diag
pids=("${BG_PIDS[@]}")
ok=0
for i in 0 1 2; do
	wait_pid "${pids[$i]}" 90 || true
done
for v in d e f; do
	n=$(sed -n 's/^busy_loop: \([0-9]*\) launches.*/\1/p' "$TEST_TMP/$v.ts.out")
	echo "$v: ${n:-none} launches, $(sched $v turns) turns" | tap_diag
	[ "${n:-0}" -gt 0 ] && [ "$(sched $v turns)" -ge 2 ] && ok=$((ok + 1))
done
BG_PIDS=()
if [ $ok = 3 ]; then
	tap_ok "over-commit: each of d, e, f made progress in its turns"
else
	tap_not_ok "over-commit: each of d, e, f made progress in its turns"
	grep -E "scheduler|hold|resiz" "$VGPUD_LOG" | tail -80 | tap_diag
fi
if wait_for 20 "the holds to end" test "$(gpu_field timeslicing)" = False; then
	tap_ok "idle again: nobody is held"
else
	tap_not_ok "idle again: nobody is held"
fi

# ---- blueprints and the state file --------------------------------------------
for v in d e f; do vadmin destroy $v >/dev/null; done
tap_expect "create -f latency-critical.yaml (priority high, 8..16 SMs)" 0 \
	"created vGPU latency-critical" \
	vadmin create -f "$VGPU_SRC/blueprints/latency-critical.yaml"
tap_expect "show prints its policy" 0 "policy +fair \(GPU 0's\): 8 to 16 SMs, weight 2 \(its size in SM groups\), priority high" \
	vadmin show latency-critical
tap_expect "show --json has it" 0 '"priority": "high"' \
	vadmin show latency-critical --json
state_has() {
	python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
v = [v for v in s["vgpus"] if v["name"] == "latency-critical"][0]
print(s["scheduler"][0]["mode"], s["scheduler"][0]["overcommit"],
      v["policy"]["priority"], v["policy"]["min_sms"], v["policy"]["max_sms"])' \
		"$RUN_DIR/state.json"
}
tap_expect "the state file keeps the policies" 0 "^fair True 3 8 16$" state_has
tap_expect "policy --json parses" 0 '"mode": "fair"' vadmin policy --json

# ---- steady bursts are seen (plan_burst.c) --------------------------------------
# 100 ms of kernels every 300 ms: a period near 300 ms, its SMs due back
# ahead of each burst
MW="$BUILD/bench/mixed_workload"
client_bg "$TEST_TMP/bursts.out" latency-critical "$MW" lc \
	"$VGPU_KERNEL_DIR" --blocks 64 --iters 1 --on-ms 100 --off-ms 200 \
	--seconds 4 --start "$(date +%s%3N)"
bursts_pid=$BG_PID
period=
for _ in $(seq 60); do
	period=$(sched latency-critical burst_period_ms)
	case $period in [0-9]*) break ;; esac
	sleep 0.1
done
wait_pid "$bursts_pid" 30 || true
BG_PIDS=()
if [[ $period =~ ^[0-9]+$ ]] && [ "$period" -ge 250 ] &&
	[ "$period" -le 350 ]; then
	tap_ok "steady bursts are seen: a period of $period ms (300 asked)"
else
	tap_not_ok "steady bursts are seen (a period near 300 ms)" \
		"burst_period_ms: ${period:-none}"
fi

rc=0
vgpu_stop || rc=$?
[ "$rc" -eq 0 ] && tap_ok "vgpud stops cleanly" ||
	tap_not_ok "vgpud stops cleanly" "exit status $rc"
grep -c "scheduler:" "$VGPUD_LOG" | sed 's/^/scheduler log lines: /' | tap_diag
tap_done
