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
: >"$ENV_FILE"
# the worker runs as vgpu: root may lack the right to read its
# environment (no CAP_SYS_PTRACE in some containers); its own user has it
read_environ() {
	cat "/proc/$1/environ" 2>/dev/null ||
		setpriv --reuid=vgpu --regid=vgpu --clear-groups cat "/proc/$1/environ"
}
if [[ "$pid" =~ ^[0-9]+$ ]] && read_environ "$pid" | tr '\0' '\n' >"$ENV_FILE" &&
	[ -s "$ENV_FILE" ]; then
	tap_ok "the worker's environment can be read (pid $pid)"
else
	tap_not_ok "the worker's environment can be read" "PID cell: '$pid'"
	tap_done # nothing below means anything without it
fi
for v in VGPU_CUDA_SLICE_CACHE=2 VGPU_CUDA_SERIALIZE=1; do
	if grep -qx "$v" "$ENV_FILE"; then
		tap_ok "the worker has ${v%=*}"
	else
		tap_not_ok "the worker has ${v%=*}" "$(tr '\n' ' ' <"$ENV_FILE")"
	fi
done
if grep -q "^PATH=" "$ENV_FILE"; then
	tap_ok "the worker has PATH"
else
	tap_not_ok "the worker has PATH" "$(tr '\n' ' ' <"$ENV_FILE")"
fi
for v in VGPU_TEST_NOT_FOR_WORKERS LD_LIBRARY_PATH; do
	if grep -q "^$v=" "$ENV_FILE"; then
		tap_not_ok "vgpud's $v is not the worker's" "$(grep "^$v=" "$ENV_FILE")"
	else
		tap_ok "vgpud's $v is not the worker's"
	fi
done
tap_vgpud_stops
tap_done
