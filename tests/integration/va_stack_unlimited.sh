#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# With no stack limit (ulimit -s unlimited) Linux maps bottom-up from about
# 20 TiB, inside the vGPU windows; vgpud gives its workers a finite stack
# limit, so creates in every window still succeed (review of issue 16).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
ulimit -s unlimited || tap_skip_all "cannot lift the stack limit here"
export VGPU_SIM_GPUS=2 VGPU_SIM_SMS=132 VGPU_SIM_MEMORY=16G
vgpu_test_start
for i in 0 1 2 3 4 5 6 7; do
	tap_run "under ulimit -s unlimited: create w$i (window $i)" \
		vadmin create "w$i" --sms 8 --memory 64M
done
tap_run "a program runs on w5" client w5 "$(prog vector_add)" 65536
tap_vgpud_stops
tap_done
