#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# CUDA's libraries on a vGPU through NVIDIA's runtime and our driver
# (issue 17), on the simulator: a cuRAND generator is created and
# destroyed. cuBLAS handles and cuFFT plans are not created yet (they need
# export-table entries a vGPU does not serve, docs/COMPATIBILITY.md): they
# must fail with the library's own status, never crash, and the vGPU
# serves the next program. (cuFFT's stop is named on stderr; where cuBLAS
# stops is not found yet.)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
P="$BUILD/tests/libs/libs_handles"
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64
[ -x "$P" ] || tap_skip_all "$P is not built"
[ -e "$CUDA_LIB/libcublas.so.13" ] || tap_skip_all "no cuBLAS in $CUDA_LIB"
vgpu_test_start
nv() {
	timeout -k 5 "$PROGRAM_TIMEOUT" "$BUILD/bin/vgpu-run" \
		--socket "$RUN_DIR/client.sock" "$@"
}
tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
tap_run "cuRAND: a generator created and destroyed" nv a "$P" curand
for lib in cublas cufft; do
	rc=0
	nv a "$P" $lib >"$TEST_TMP/$lib.out" 2>&1 || rc=$?
	if [ $rc = 1 ] && grep -q "^$lib: status" "$TEST_TMP/$lib.out"; then
		tap_ok "$lib: not served yet: the library's own status, no crash"
		{ grep '^vgpu:' "$TEST_TMP/$lib.out" || true; } | tap_diag
	else
		tap_not_ok "$lib: the library's own status, no crash" "status $rc"
		tap_diag <"$TEST_TMP/$lib.out"
	fi
done
tap_run "the vGPU serves the next program" nv a "$BUILD/tests/runtime-static/vector_add_rt"
tap_vgpud_alive
tap_done
