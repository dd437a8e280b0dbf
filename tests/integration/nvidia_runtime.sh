#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# NVIDIA's own CUDA runtime on our libcuda.so.1 (issue 17): the
# tests/runtime programs built with nvcc's default (the static runtime
# inside the program) and with -cudart shared against the toolkit's
# libcudart.so.13, run on a simulator vGPU with nothing of ours but the
# driver library on the library path. The runtime asks our driver for its
# private tables (cuGetExportTable) and checks its integrity answer; each
# program checks its results against the CPU (docs/COMPATIBILITY.md).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
ST="$BUILD/tests/runtime-static"
SH="$BUILD/tests/runtime"
[ -x "$ST/vector_add_rt" ] || tap_skip_all "$ST is not built"
[ -e "$CUDA_LIB/libcudart.so.13" ] ||
	tap_skip_all "no NVIDIA libcudart.so.13 in $CUDA_LIB"
vgpu_test_start
# only our driver: the directory with libcuda.so.1 and nothing else of
# ours, as vgpu-run uses it
DRV="$VGPU_LIB/vgpu"
nv() { # VGPU PROGRAM ARGS...: NVIDIA's runtime over our driver
	local v=$1
	shift
	VGPU="$v" VGPU_SOCKET="$RUN_DIR/client.sock" \
		LD_LIBRARY_PATH="$DRV:$CUDA_LIB" \
		timeout -k 5 "$PROGRAM_TIMEOUT" "$@"
}

tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G

# which runtime a -cudart shared program loads here: NVIDIA's
lib=$(LD_LIBRARY_PATH="$DRV:$CUDA_LIB" ldd "$SH/vector_add_rt" |
	awk '/libcudart.so.13/ { print $3 }')
if [ "$(readlink -f "$lib")" = "$(readlink -f "$CUDA_LIB/libcudart.so.13")" ]; then
	tap_ok "a -cudart shared program loads NVIDIA's libcudart.so.13"
else
	tap_not_ok "a -cudart shared program loads NVIDIA's libcudart.so.13" \
		"it loads $lib"
fi

for kind in static shared; do
	d=$ST
	[ $kind = shared ] && d=$SH
	tap_run "$kind: vector_add_rt (1M floats, cudaMalloc/cudaMemcpy/<<<>>>)" \
		nv a "$d/vector_add_rt"
	tap_run "$kind: device_props_rt (the vGPU's name, 16 SMs, 1 GiB)" \
		nv a "$d/device_props_rt" --vgpu --sms 16 --memory $((1 << 30))
	tap_run "$kind: matmul_shared_rt 128 (shared-memory tiles)" \
		nv a "$d/matmul_shared_rt" 128
	tap_run "$kind: events_rt (cudaStreamWaitEvent orders two streams)" \
		nv a "$d/events_rt" 200
	tap_run "$kind: callbacks_rt (host functions see the work before them)" \
		nv a "$d/callbacks_rt"
	tap_run "$kind: symbols_rt (__constant__ and __device__ variables)" \
		nv a "$d/symbols_rt"
	tap_run "$kind: templates_rt (template kernels, a functor template)" \
		nv a "$d/templates_rt"
	tap_run "$kind: func_attrs_rt (attributes, occupancy, shared memory)" \
		nv a "$d/func_attrs_rt"
	tap_run "$kind: pinned_many_rt (pinned buffers)" \
		nv a "$d/pinned_many_rt"
	tap_run "$kind: mapped_rt (zero-copy host memory read and written by a kernel)" \
		nv a "$d/mapped_rt"
	tap_run "$kind: streams_overlap_rt (4 streams, pinned buffers, async copies)" \
		nv a "$d/streams_overlap_rt" $((1 << 20)) 4
	tap_run "$kind: errors_rt (launch, allocation and unsupported-call errors)" \
		nv a "$d/errors_rt"
	tap_run "$kind: launch_ex_rt (cudaLaunchKernelEx, attributes, clusters, cooperative, refusals)" \
		nv a "$d/launch_ex_rt"
	tap_run "$kind: mempool_rt (cudaMallocAsync/cudaFreeAsync, pools, trim)" \
		nv a "$d/mempool_rt"
	tap_run "$kind: legacy_stream_rt (stream 0 and blocking streams wait for each other)" \
		nv a "$d/legacy_stream_rt"
	tap_run "$kind: memory_2d_rt (cudaMallocPitch, 2D copies and fills)" \
		nv a "$d/memory_2d_rt"
	tap_run "$kind: small_calls_rt (attributes, hints, flags, entry points)" \
		nv a "$d/small_calls_rt"
	tap_run "$kind: per_thread_rt (--default-stream per-thread, 4 threads)" \
		nv a "$d/per_thread_rt"
	tap_run "$kind: unsupported_rt (refusals are errors, never sticky)" \
		nv a "$d/unsupported_rt"
	tap_run "$kind: device_reset_rt (cudaDeviceReset, then kernels again)" \
		nv a "$d/device_reset_rt"
done

# the runtime's integrity check is answered, and the tables it asks for
# are served, as VGPU_TRACE=1 shows
out="$TEST_TMP/trace.err"
VGPU_TRACE=1 nv a "$ST/vector_add_rt" 2>"$out" >/dev/null || true
n=$(grep -c '^vgpu-trace: export .* -> ok 0$' "$out" || true)
if [ "$n" = 7 ]; then
	tap_ok "static: the runtime asked for 7 export tables, all served"
else
	tap_not_ok "static: the runtime asked for 7 export tables, all served" \
		"$n served"
	grep 'export' "$out" | tap_diag
fi
if grep -q '^vgpu-trace: integrity check version' "$out"; then
	tap_ok "static: the runtime's integrity check was answered"
else
	tap_not_ok "static: the runtime's integrity check was answered"
fi
n=$(grep -c '^vgpu-trace: proc ' "$out" || true)
if [ "$n" -ge 300 ]; then
	tap_ok "static: VGPU_TRACE=1 logs the runtime's $n cuGetProcAddress requests"
else
	tap_not_ok "static: VGPU_TRACE=1 logs the runtime's cuGetProcAddress requests" \
		"$n lines"
fi
# a device fault's sticky error with the static runtime (the shared one:
# runtime_sticky.sh); it faults its own vGPU, made for it
tap_run "create vGPU f (8 SMs, 256 MiB)" vadmin create f --sms 8 --memory 256M
tap_run "static: sticky_rt (a fault's error is sticky)" nv f "$ST/sticky_rt"
tap_vgpud_alive
tap_done
