#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# Unmodified CUDA driver-API programs (tests/programs/) run correctly
# through our libcuda.so.1 on vGPUs of a simulator vgpud: one by one, two
# vGPUs at once, two clients of one vGPU at once; and the SMs two vGPUs
# run on are disjoint and as many as planned.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start
tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
tap_run "create vGPU b (16 SMs, 1 GiB)" vadmin create b --sms 16 --memory 1G
tap_run "create vGPU small (8 SMs, 64 MiB)" \
	vadmin create small --sms 8 --memory 64M

tap_run "device_query sees a 16-SM vGPU named vGPU" \
	client a "$(prog device_query)" 16
tap_run "device_query on the small vGPU sees 8 SMs" \
	client small "$(prog device_query)" 8
tap_run "vector_add of 1M floats is correct" client a "$(prog vector_add)"
tap_run "matmul 256x256 matches a double-precision reference" \
	client a "$(prog matmul)" 256
tap_run "matmul 100x100 (edge tiles) is correct" client b "$(prog matmul)" 100
tap_run "streams_events keeps the order across streams via an event" \
	client a "$(prog streams_events)"
tap_run "copy_sizes: 1 B to 37 MiB copies and memsets are exact" \
	client a "$(prog copy_sizes)"
tap_run "ordering: 1000 dependent launches run in order" \
	client b "$(prog ordering)" 1000
tap_run "occupancy: cuOccupancyMaxPotentialBlockSize's best block and grid" \
	client a "$(prog occupancy)"
tap_run "library_query: kernels listed and named, clusters, buffer ids" \
	client a "$(prog library_query)"
tap_run "limits: cuCtxGetLimit/SetLimit, a quarter of the memory at most" \
	client a "$(prog limits)"
tap_run "mempool: stream-ordered allocation's edges, bad pools and frees refused" \
	client a "$(prog mempool)"
tap_run "tensor_map: maps encoded by the worker, replaced, bad ones refused" \
	client a "$(prog tensor_map)"
tap_run "driver_entries: cuBLASLt's context and stream entries, and their ids" \
	client a "$(prog driver_entries)"
tap_run "mapped_host: a kernel reads and writes mapped host memory, no copy" \
	client a "$(prog mapped_host)"
tap_run "alloc_many: 10,000 allocations of 256 B in a 64 MiB vGPU" \
	client small "$(prog alloc_many)" 10000 256
tap_run "long_copy: repeated 32 MiB copies for 2 s" \
	client b "$(prog long_copy)" 2 32

# two vGPUs at once
out_a="$TEST_TMP/concurrent_a.out"
out_b="$TEST_TMP/concurrent_b.out"
client_bg "$out_a" a "$(prog matmul)" 320
pid_a=$BG_PID
client_bg "$out_b" b "$(prog ordering)" 2000
pid_b=$BG_PID
rc_a=0 rc_b=0
wait_pid "$pid_a" "$PROGRAM_TIMEOUT" || rc_a=$?
wait_pid "$pid_b" "$PROGRAM_TIMEOUT" || rc_b=$?
if [ "$rc_a" -eq 0 ] && [ "$rc_b" -eq 0 ]; then
	tap_ok "two vGPUs run programs at the same time, both correct"
else
	tap_not_ok "two vGPUs run programs at the same time, both correct" \
		"matmul on a: $rc_a, ordering on b: $rc_b"
fi
tail -n 3 "$out_a" "$out_b" | tap_diag

# two clients of one vGPU at once
out_1="$TEST_TMP/shared_1.out"
out_2="$TEST_TMP/shared_2.out"
out_3="$TEST_TMP/shared_3.out"
client_bg "$out_1" a "$(prog vector_add)"
pid_1=$BG_PID
client_bg "$out_2" a "$(prog streams_events)"
pid_2=$BG_PID
client_bg "$out_3" a "$(prog copy_sizes)"
pid_3=$BG_PID
rc_1=0 rc_2=0 rc_3=0
wait_pid "$pid_1" "$PROGRAM_TIMEOUT" || rc_1=$?
wait_pid "$pid_2" "$PROGRAM_TIMEOUT" || rc_2=$?
wait_pid "$pid_3" "$PROGRAM_TIMEOUT" || rc_3=$?
if [ "$rc_1" -eq 0 ] && [ "$rc_2" -eq 0 ] && [ "$rc_3" -eq 0 ]; then
	tap_ok "three clients of one vGPU at the same time, all correct"
else
	tap_not_ok "three clients of one vGPU at the same time, all correct" \
		"vector_add: $rc_1, streams_events: $rc_2, copy_sizes: $rc_3"
fi
tail -n 3 "$out_1" "$out_2" "$out_3" | tap_diag

# SM ids: disjoint between vGPUs, as many as planned, inside the groups
# vgpu-admin list shows (the simulator's SM g * 8 + j is in group g).
smids()
{
	local out
	for _ in 1 2 3; do
		out=$(client "$1" "$(prog smid_map)" "$2" 2>&1 || true)
		if ! grep -q FAILED <<<"$out"; then
			break
		fi
	done
	sed -n 's/^smid_map: [0-9]* SMs: //p' <<<"$out" | tr ',' '\n' | sort -n
}
# planned_smids VGPU: the SM ids of its groups, one per line.
planned_smids()
{
	local g
	vgpu_field "$1" GROUPS | tr ',' '\n' | while IFS=- read -r lo hi; do
		for g in $(seq "$lo" "${hi:-$lo}"); do
			seq $((g * 8)) $((g * 8 + 7))
		done
	done | sort -n
}
sm_a=$(smids a 16)
sm_b=$(smids b 16)
sm_s=$(smids small 8)
count()
{
	if [ -z "$1" ]; then
		echo 0
	else
		echo "$1" | wc -l
	fi
}
if [ "$(count "$sm_a")" -eq 16 ] && [ "$(count "$sm_b")" -eq 16 ] &&
	[ "$(count "$sm_s")" -eq 8 ]; then
	tap_ok "each vGPU's kernels run on exactly its planned number of SMs"
else
	tap_not_ok "each vGPU's kernels run on exactly its planned number of SMs" \
		"a: $(count "$sm_a") b: $(count "$sm_b") small: $(count "$sm_s")"
fi
shared=$(printf '%s\n%s\n%s\n' "$sm_a" "$sm_b" "$sm_s" | sed '/^$/d' | sort -n | uniq -d)
if [ -z "$shared" ] && [ -n "$sm_a" ] && [ -n "$sm_b" ]; then
	tap_ok "the SM sets of the three vGPUs are disjoint"
else
	tap_not_ok "the SM sets of the three vGPUs are disjoint" \
		"shared SMs: $(echo "$shared" | tr '\n' ' ')"
fi
outside=""
for v in a b small; do
	case $v in
	a) used=$sm_a ;;
	b) used=$sm_b ;;
	*) used=$sm_s ;;
	esac
	extra=$(comm -23 <(echo "$used" | sort) <(planned_smids "$v" | sort) | sed '/^$/d')
	[ -z "$extra" ] || outside="$outside $v:$(echo "$extra" | tr '\n' ',')"
done
if [ -z "$outside" ]; then
	tap_ok "every vGPU's kernels stay on the SMs of its own groups"
else
	tap_not_ok "every vGPU's kernels stay on the SMs of its own groups" \
		"outside their groups:$outside"
fi
echo "a: $(echo "$sm_a" | tr '\n' ' ')" | tap_diag
echo "b: $(echo "$sm_b" | tr '\n' ' ')" | tap_diag
echo "small: $(echo "$sm_s" | tr '\n' ' ')" | tap_diag

tap_run "destroy a" vadmin destroy a
tap_run "b still runs vector_add after a is destroyed" \
	client b "$(prog vector_add)"
tap_expect "a client of a destroyed vGPU gets an error, not a hang" 1 '' \
	client a "$(prog vector_add)" 1024
rc=0
vgpu_stop || rc=$?
if [ "$rc" -eq 0 ]; then
	tap_ok "vgpud exits 0 on SIGTERM"
else
	tap_not_ok "vgpud exits 0 on SIGTERM" "status $rc"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi
tap_done
