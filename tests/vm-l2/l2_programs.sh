#!/bin/sh
# SPDX-License-Identifier: MIT
# Unmodified CUDA runtime programs (build/tests/runtime, nvcc -cudart
# shared) run in L2 on the vGPU through NVIDIA's libcudart.so.13 over our
# libcuda.so.1
# and the pci transport (/dev/vgpu0, VGPU_SOCKET unset), each checking its
# results against the CPU; arguments as tests/integration/runtime_programs.sh.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

need_guest_driver "CUDA runtime programs in L2"

# run WHAT PROGRAM ARGS...: ok when it exits 0 and says OK
run()
{
	local what=$1 t0 secs
	shift
	t0=$(cut -d' ' -f1 /proc/uptime)
	if cuda "$@" >"$TMP/out" 2>&1 && grep -q OK "$TMP/out"; then
		secs=$(echo "$(cut -d' ' -f1 /proc/uptime) $t0" |
			awk '{ printf "%.1f", $1 - $2 }')
		ok "$what ($secs s)"
	else
		not_ok "$what" "exit status or no OK: $*"
		diag_file "$TMP/out"
	fi
}

sms=${L2_EXPECT_SMS:-16}
mem=${L2_EXPECT_MEMORY:-1073741824}
run "device_props_rt: a vGPU named vGPU, $sms SMs, $mem bytes" \
	device_props_rt --vgpu --sms "$sms" --memory "$mem"
run "vector_add_rt: 1M floats with cudaMalloc/cudaMemcpy/<<<>>>" vector_add_rt
run "vector_add_rt built with nvcc's default (NVIDIA's static runtime)" \
	vector_add_rt_static
run "matmul_shared_rt 128 (shared-memory tiles)" matmul_shared_rt 128
run "matmul_shared_rt 100 (edge tiles)" matmul_shared_rt 100
run "streams_overlap_rt: 4 streams, pinned buffers, async copies" \
	streams_overlap_rt $((1 << 20)) 4
run "events_rt: cudaStreamWaitEvent orders two streams; elapsed times" \
	events_rt 200
run "callbacks_rt: host functions see the work before them" callbacks_rt
run "symbols_rt: __constant__ and __device__ variables, atomics" symbols_rt
run "templates_rt: template kernels and a functor template" templates_rt
run "errors_rt: launch, allocation and unsupported-call errors" errors_rt
run "func_attrs_rt: kernel attributes, occupancy, shared memory opt-in" \
	func_attrs_rt

# two processes of the guest at once: two channels of one vGPU
cuda_bg "$TMP/s1" symbols_rt 200000
p1=$BG_PID
cuda_bg "$TMP/s2" symbols_rt 50000
p2=$BG_PID
rc1=0 rc2=0
wait_pid "$p1" "$L2_PROG_TIMEOUT" || rc1=$?
wait_pid "$p2" "$L2_PROG_TIMEOUT" || rc2=$?
if [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ]; then
	ok "two symbols_rt processes at once keep separate __device__ counters"
else
	not_ok "two symbols_rt processes at once keep separate __device__ counters" \
		"exit status $rc1 and $rc2"
	diag_file "$TMP/s1"
	diag_file "$TMP/s2"
fi
finish
