#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# CUDA's libraries on a vGPU through NVIDIA's runtime and our driver
# (issue 17), on the simulator: a cuRAND generator, a cuBLAS handle and a
# cuFFT plan are each created and destroyed, as their documentation
# starts. The simulator reads the code the libraries load (compressed
# cubins and PTX, host-daemon/sim_image.c) but has no twins of their
# kernels, so nothing they compute runs here (docs/COMPATIBILITY.md).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
P="$BUILD/tests/libs/libs_handles"
[ -x "$P" ] || tap_skip_all "$P is not built"
[ -e "$CUDA_LIB/libcublas.so.13" ] || tap_skip_all "no cuBLAS in $CUDA_LIB"
vgpu_test_start
nv() {
	timeout -k 5 "$PROGRAM_TIMEOUT" "$BUILD/bin/vgpu-run" \
		--socket "$RUN_DIR/client.sock" "$@"
}
tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
tap_run "cuRAND: a generator created and destroyed" nv a "$P" curand
tap_run "cuBLAS: a handle created and destroyed" nv a "$P" cublas
tap_run "cuFFT: a 1D C2C plan of 64 made and destroyed" nv a "$P" cufft
tap_run "all three in one process" nv a "$P"
tap_run "the vGPU serves the next program" nv a "$BUILD/tests/runtime-static/vector_add_rt"
tap_vgpud_alive
tap_done
