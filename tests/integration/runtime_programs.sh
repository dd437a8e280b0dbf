#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# Unmodified CUDA runtime-API programs (tests/runtime/, built with
# `nvcc -cudart shared`) run correctly on vGPUs of a simulator vgpud
# through NVIDIA's libcudart.so.13 over our libcuda.so.1
# (LD_LIBRARY_PATH=build/lib): each checks its results against the CPU. Then the same with two clients
# at once, and the rt_* benchmarks as a smoke test at tiny sizes (no
# timing is checked here; scripts/rt-bench.sh measures on the GPU).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
RT="$BUILD/tests/runtime"
[ -e "$CUDA_LIB/libcudart.so.13" ] ||
	tap_skip_all "no NVIDIA libcudart.so.13 in $CUDA_LIB"
[ -x "$RT/vector_add_rt" ] || tap_skip_all "$RT is not built"
vgpu_test_start
rt() { echo "$RT/$1"; }

tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
tap_run "create vGPU small (8 SMs, 256 MiB)" \
	vadmin create small --sms 8 --memory 256M

tap_run "device_props_rt: a vGPU named vGPU, 16 SMs, 1 GiB" \
	client a "$(rt device_props_rt)" --vgpu --sms 16 --memory $((1 << 30))
tap_run "device_props_rt: the small vGPU has 8 SMs, 256 MiB" \
	client small "$(rt device_props_rt)" --vgpu --sms 8 \
	--memory $((256 << 20))
tap_run "vector_add_rt: 1M floats with cudaMalloc/cudaMemcpy/<<<>>>" \
	client a "$(rt vector_add_rt)"
tap_run "matmul_shared_rt 128 (shared-memory tiles)" \
	client a "$(rt matmul_shared_rt)" 128
tap_run "matmul_shared_rt 100 (edge tiles)" \
	client small "$(rt matmul_shared_rt)" 100
tap_run "streams_overlap_rt: 4 streams, pinned buffers, async copies" \
	client a "$(rt streams_overlap_rt)" $((1 << 20)) 4
tap_run "events_rt: cudaStreamWaitEvent orders two streams; elapsed times" \
	client a "$(rt events_rt)" 200
tap_run "callbacks_rt: host functions see the work before them" \
	client a "$(rt callbacks_rt)"
tap_run "symbols_rt: __constant__ and __device__ variables, atomics" \
	client a "$(rt symbols_rt)"
tap_run "templates_rt: template kernels and a functor template" \
	client a "$(rt templates_rt)"
tap_run "errors_rt: launch, allocation and unsupported-call errors" \
	client a "$(rt errors_rt)"
tap_run "func_attrs_rt: kernel attributes, occupancy, shared memory opt-in" \
	client a "$(rt func_attrs_rt)"
tap_run "launch_ex_rt: cudaLaunchKernelEx, hint attributes, cooperative, refusals" \
	client a "$(rt launch_ex_rt)"
tap_run "per_thread_rt: --default-stream per-thread, 4 threads (_ptsz/_ptds)" \
	client a "$(rt per_thread_rt)"
tap_run "memory_2d_rt: cudaMallocPitch, cudaMemcpy2D, cudaMemset2D" \
	client a "$(rt memory_2d_rt)"
tap_run "small_calls_rt: pointer attributes, hints, stream flags, entry points" \
	client a "$(rt small_calls_rt)"
tap_run "device_reset_rt: cudaDeviceReset frees everything, kernels load again" \
	client small "$(rt device_reset_rt)"
tap_run "mempool_rt: cudaMallocAsync/cudaFreeAsync on two streams, pools, trim" \
	client a "$(rt mempool_rt)"
tap_run "legacy_stream_rt: stream 0 and blocking streams wait for each other" \
	client a "$(rt legacy_stream_rt)"

# unsupported calls: cudaErrorNotSupported and one line on stderr naming
# each call (once, however often it is called)
err="$TEST_TMP/unsupported.err"
rc=0
client a "$(rt unsupported_rt)" 2>"$err" | tap_diag || rc=$?
if [ "$rc" -eq 0 ]; then
	tap_ok "unsupported_rt: unsupported calls fail with cudaErrorNotSupported"
else
	tap_not_ok "unsupported_rt: unsupported calls fail with cudaErrorNotSupported" \
		"status $rc"
fi
# (NVIDIA's runtime makes each call of the driver, which names it)
for call in cuGraphCreate cuMemAllocManaged cuIpcGetMemHandle \
	cuStreamBeginCapture_v2 cuMemcpy3D_v2 cuGraphAddEmptyNode \
	cuMemPoolExportPointer; do
	n=$(grep -c "^vgpu: $call is not supported on a vGPU (CUDA_ERROR_NOT_SUPPORTED)\$" \
		"$err" || true)
	if [ "$n" = 1 ]; then
		tap_ok "unsupported_rt: stderr names $call, once"
	else
		tap_not_ok "unsupported_rt: stderr names $call, once" \
			"$n matching lines"
		tap_diag <"$err"
	fi
done

# two clients of one vGPU at once, each with its own module variables
out_1="$TEST_TMP/symbols_1.out"
out_2="$TEST_TMP/symbols_2.out"
client_bg "$out_1" a "$(rt symbols_rt)" 200000
pid_1=$BG_PID
client_bg "$out_2" a "$(rt symbols_rt)" 50000
pid_2=$BG_PID
rc_1=0 rc_2=0
wait_pid "$pid_1" "$PROGRAM_TIMEOUT" || rc_1=$?
wait_pid "$pid_2" "$PROGRAM_TIMEOUT" || rc_2=$?
if [ "$rc_1" -eq 0 ] && [ "$rc_2" -eq 0 ]; then
	tap_ok "two symbols_rt clients at once keep separate __device__ counters"
else
	tap_not_ok "two symbols_rt clients at once keep separate __device__ counters" \
		"first: $rc_1, second: $rc_2"
fi
tail -n 2 "$out_1" "$out_2" | tap_diag

# the benchmarks, tiny
B="$BUILD/bench"
if [ -x "$B/rt_launch" ] && [ -x "$B/rt_copy" ] && [ -x "$B/rt_matmul" ]; then
	tap_expect "rt_launch runs (smoke, tiny)" 0 \
		'^RESULT name=launch_async_rate value=[0-9.e+]+ unit=' \
		client a "$B/rt_launch" 50 500 2
	tap_expect "rt_copy runs (smoke, 4 KiB to 1 MiB)" 0 \
		'^RESULT name=d2h_pageable_1MiB value=[0-9.e+]+ unit=GB/s' \
		client a "$B/rt_copy" $((1 << 20)) 3
	tap_expect "rt_matmul runs and is correct (smoke, 64 and 100)" 0 \
		'^RESULT name=matmul_e2e_100 value=[0-9.e+]+ unit=ms' \
		client a "$B/rt_matmul" -r 2 64 100
else
	tap_skip "the rt_* benchmarks run (smoke)" "$B/rt_* are not built"
fi

rc=0
vgpu_stop || rc=$?
if [ "$rc" -eq 0 ]; then
	tap_ok "vgpud exits 0 on SIGTERM"
else
	tap_not_ok "vgpud exits 0 on SIGTERM" "status $rc"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi
tap_done
