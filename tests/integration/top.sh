#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# The workload analyzer and vgpu-admin top on the simulator:
#   - top --once --json has every field, plausible: busy near 0 idle, near
#     1 while a program keeps the vGPU busy (kernels/s > 0, a client,
#     memory in use), near 0 again afterwards; power and energy n/a (no
#     NVML on the simulator);
#   - the live form prints a table per interval (-n);
#   - with a stand-in NVML (VGPU_NVML_LIBRARY, 200 W): the busy vGPU gets
#     the GPU's power and its energy grows, the idle one gets none; the
#     device's 90% SM / 20% memory make it compute-bound.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
FAKE_NVML="$BUILD/tests/lib/libfake-nvml.so"
[ -e "$FAKE_NVML" ] || { tap_init; tap_skip_all "$FAKE_NVML is not built"; }
vgpu_test_start

tap_run "create vGPU t (16 SMs)" vadmin create t --sms 16 --memory 256M
tap_run "create vGPU i (8 SMs, idle)" vadmin create i --sms 8 --memory 64M

# field NAME EXPR: a Python expression over one vGPU's object `v` in
# `vgpu-admin top --once --json`, printed
field()
{
	vadmin top --once --json | python3 -c '
import json, sys
for v in json.load(sys.stdin)["vgpus"]:
	if v["name"] == sys.argv[1]:
		print(eval(sys.argv[2]))' "$1" "$2"
}
# check TITLE NAME EXPR: ok when the expression is true for that vGPU
check()
{
	local got
	got=$(field "$2" "$3" 2>&1) || true
	if [ "$got" = True ]; then
		tap_ok "$1"
	else
		tap_not_ok "$1" "$3 is $got" \
			"$(field "$2" 'json.dumps(v)' 2>&1 || true)"
	fi
}

# wait for the first windows
sleep 2.5
keys="name gpu simulated state sms clients window_ms age_ms busy busy_source kernels_per_s copy_bytes_per_s queue_depth memory_used memory_quota bandwidth_class sm_util mem_util power_w gpu_power_w energy_j change_count resizes last_switch_us last_build_ms last_waits barrier_us_per_s"
check "top --once --json has every field" t \
	"all(k in v for k in '$keys'.split())"
check "idle: busy < 0.1, measured by the backend" t \
	"v['busy'] is not None and v['busy'] < 0.1 and v['busy_source'] == 'backend'"
check "idle: no kernels, a window of about a second" t \
	"v['kernels_per_s'] == 0 and 500 < v['window_ms'] < 2500"
check "the simulator has no power, energy or bandwidth class" t \
	"v['power_w'] is None and v['energy_j'] is None and v['bandwidth_class'] == 'n/a'"

out="$TEST_TMP/busy.out"
client_bg "$out" t "$(prog busy_loop)" 8
busy=$BG_PID
wait_for 30 "busy_loop to start" grep -q started "$out" || true
sleep 2.5
check "busy: busy > 0.8 while a program keeps t busy" t "v['busy'] > 0.8"
check "busy: kernels/s > 0, one client, memory in use" t \
	"v['kernels_per_s'] > 0 and v['clients'] == 1 and v['memory_used'] > 0"
check "busy: the idle vGPU next to it stays idle" i "v['busy'] < 0.1"
vadmin top --once --json | tap_diag
tap_expect "top --once prints the table" 0 "^t +0 +16 +[0-9.]+%" \
	vadmin top --once
rc=0
wait_pid "$busy" 60 || rc=$?
[ "$rc" -eq 0 ] && tap_ok "busy_loop ends" || tap_not_ok "busy_loop ends" \
	"exit status $rc"
sleep 2.5
check "afterwards: busy < 0.1 again" t "v['busy'] < 0.1"
tap_expect "top -n 3 --interval 0.2 prints three tables" 0 "" \
	test "$(vadmin top -n 3 --interval 0.2 | grep -c '^vgpu top:')" = 3
tap_expect "top refuses a bad interval (usage)" 2 "from 0.1 to 3600" \
	vadmin top --interval 0
tap_run "resize t to 24 SMs" vadmin resize t --sms 24
sleep 1.5
check "top shows t's new size and its change count" t \
	"v['sms'] == 24 and v['change_count'] == 1 and v['resizes'] == 1"

# ---- a stand-in NVML -----------------------------------------------------
rc=0
vgpu_stop || rc=$?
[ "$rc" -eq 0 ] && tap_ok "vgpud exits 0 on SIGTERM" ||
	tap_not_ok "vgpud exits 0 on SIGTERM" "status $rc"
export VGPU_NVML_LIBRARY="$FAKE_NVML"
if vgpu_start; then
	tap_ok "vgpud starts with a stand-in NVML"
else
	tap_not_ok "vgpud starts with a stand-in NVML"
	tap_done
fi
tap_run "create vGPU t again" vadmin create t --sms 16 --memory 256M
tap_run "create vGPU i again" vadmin create i --sms 8 --memory 64M
out="$TEST_TMP/busy2.out"
client_bg "$out" t "$(prog busy_loop)" 8
busy=$BG_PID
wait_for 30 "busy_loop to start" grep -q started "$out" || true
sleep 2.5
e1=$(field t "v['energy_j']")
check "NVML: the busy vGPU gets the GPU's 200 W" t \
	"v['gpu_power_w'] == 200 and v['power_w'] > 150"
check "NVML: the idle vGPU gets none of it" i \
	"v['power_w'] == 0 and v['energy_j'] == 0"
check "NVML: 90% SMs, 20% memory: compute-bound" t \
	"v['bandwidth_class'] == 'compute' and v['sm_util'] == 90"
sleep 1.5
e2=$(field t "v['energy_j']")
if python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (b > a and a >= 0))" "$e1" "$e2"; then
	tap_ok "NVML: the busy vGPU's energy grows ($e1 J -> $e2 J)"
else
	tap_not_ok "NVML: the busy vGPU's energy grows" "$e1 J -> $e2 J"
fi
grep "NVML" "$VGPUD_LOG" | tap_diag
wait_pid "$busy" 60 || true
rc=0
vgpu_stop || rc=$?
[ "$rc" -eq 0 ] && tap_ok "vgpud exits 0 on SIGTERM (NVML unloaded)" ||
	tap_not_ok "vgpud exits 0 on SIGTERM (NVML unloaded)" "status $rc"
tap_done
