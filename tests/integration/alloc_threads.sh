#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# Threads of one process allocate and free device memory at the same
# time (issue 16): no call fails with a false out-of-memory while the
# vGPU has plenty free, every new buffer is known as device memory of
# its size, and all the memory is free again at the end.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start
tap_run "create vGPU m (8 SMs, 64 MiB)" vadmin create m --sms 8 --memory 64M

tap_expect "alloc_threads: 2 threads x 100,000 alloc/free pairs, all succeed, nothing leaked" \
	0 '^alloc_threads: 2 threads x 100000 alloc/free pairs OK' \
	client m "$(prog alloc_threads)" 100000 2
tap_vgpud_stops
tap_done
