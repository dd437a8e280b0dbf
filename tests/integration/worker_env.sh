#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# A worker's environment is clean: vgpud hands it PATH, the MPS
# directories and our own backend settings (VGPU_SIM_*, VGPU_CUDA_*: the
# documented knobs, e.g. VGPU_CUDA_SLICE_CACHE, must reach the worker
# that reads them) and nothing else of vgpud's (no LD_LIBRARY_PATH, no
# other variable).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_CUDA_SLICE_CACHE=2 VGPU_CUDA_SERIALIZE=1
export VGPU_TEST_NOT_FOR_WORKERS=1 LD_LIBRARY_PATH=/nonexistent-vgpu-test
vgpu_test_start
tap_run "create vGPU a" vadmin create a --sms 8 --memory 64M
pid=$(vgpu_field a PID)
ENV_FILE=$TEST_TMP/worker.env
if [[ "$pid" =~ ^[0-9]+$ ]] && tr '\0' '\n' <"/proc/$pid/environ" >"$ENV_FILE"; then
	tap_ok "the worker's environment can be read (pid $pid)"
else
	tap_not_ok "the worker's environment can be read" "PID cell: '$pid'"
fi
for v in VGPU_CUDA_SLICE_CACHE=2 VGPU_CUDA_SERIALIZE=1 PATH=; do
	if grep -q "^$v" "$ENV_FILE"; then
		tap_ok "the worker has ${v%=*}"
	else
		tap_not_ok "the worker has ${v%=*}" "$(tr '\n' ' ' <"$ENV_FILE")"
	fi
done
for v in VGPU_TEST_NOT_FOR_WORKERS LD_LIBRARY_PATH; do
	if grep -q "^$v=" "$ENV_FILE"; then
		tap_not_ok "vgpud's $v is not the worker's" "$(grep "^$v=" "$ENV_FILE")"
	else
		tap_ok "vgpud's $v is not the worker's"
	fi
done
tap_vgpud_stops
tap_done
