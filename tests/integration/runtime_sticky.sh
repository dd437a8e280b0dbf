#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# Sticky errors through the CUDA runtime, end to end: sticky_rt's kernel
# writes far out of bounds (oobWrite), the simulator's worker dies of it
# and the program sees a sticky error that every later call that needs
# the device returns, cudaDeviceReset too (on a vGPU the process must
# start over: its worker and context are gone), through NVIDIA's runtime.
# vgpud restarts the worker; a new process then runs correctly.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
RT="$BUILD/tests/runtime"
[ -e "$CUDA_LIB/libcudart.so.13" ] ||
	tap_skip_all "no NVIDIA libcudart.so.13 in $CUDA_LIB"
[ -x "$RT/sticky_rt" ] || tap_skip_all "$RT/sticky_rt is not built"
vgpu_test_start
tap_run "create vGPU f (8 SMs, 256 MiB)" vadmin create f --sms 8 --memory 256M

restarts_before=$(vgpu_field f RESTARTS)
tap_run "sticky_rt: the fault's error is sticky, cudaDeviceReset keeps it" \
	client f "$RT/sticky_rt"

# restarted since then and running again
recovered()
{
	local r
	r=$(vgpu_field f RESTARTS) || return 1
	[ "$r" -gt "$restarts_before" ] && [ "$(vgpu_field f STATE)" = running ]
}
if wait_for 60 "f to restart" recovered; then
	tap_ok "vgpud restarts f's worker (RESTARTS $restarts_before -> $(vgpu_field f RESTARTS))"
else
	tap_not_ok "vgpud restarts f's worker" \
		"RESTARTS $(vgpu_field f RESTARTS || true), STATE $(vgpu_field f STATE || true)"
fi
tap_run "a new process on f runs correctly (vector_add_rt)" \
	client f "$RT/vector_add_rt"
tap_vgpud_alive
tap_vgpud_stops
tap_done
