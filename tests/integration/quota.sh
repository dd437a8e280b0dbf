#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# A vGPU's memory quota is hard and its own: allocating past it gives
# CUDA_ERROR_OUT_OF_MEMORY in that vGPU only, freeing makes room again,
# and another vGPU is unaffected meanwhile.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start
tap_run "create vGPU q (8 SMs, 64 MiB)" vadmin create q --sms 8 --memory 64M
tap_run "create vGPU other (8 SMs, 256 MiB)" \
	vadmin create other --sms 8 --memory 256M

tap_expect "cuMemGetInfo on q reports a 64 MiB total" 0 \
	'free of 67108864$' client q "$(prog device_query)" 8
tap_run "q: allocating 8 MiB chunks ends in OUT_OF_MEMORY within 64 MiB" \
	client q "$(prog quota)" 8
tap_run "q: the same with 1 MiB chunks" client q "$(prog quota)" 1

holder_out="$TEST_TMP/holder.out"
client_bg "$holder_out" q "$(prog quota)" 4 8
holder=$BG_PID
if wait_for 30 "q's memory to be exhausted" \
	grep -q 'out of memory after' "$holder_out"; then
	tap_ok "a client holds all of q's memory"
else
	tap_not_ok "a client holds all of q's memory"
	tail -n 20 "$holder_out" | tap_diag
fi
tap_expect "while q is full: a second client of q gets CUDA_ERROR_OUT_OF_MEMORY" \
	1 'CUDA_ERROR_OUT_OF_MEMORY' client q "$(prog vector_add)"
tap_run "while q is full: vector_add of 1M floats is correct on other" \
	client other "$(prog vector_add)"
tap_run "while q is full: other can fill 128 MiB of its own" \
	client other "$(prog long_copy)" 1 128
tap_run "while q is full: other still has its whole quota" \
	client other "$(prog quota)" 16
rc=0
wait_pid "$holder" 60 || rc=$?
if [ "$rc" -eq 0 ]; then
	tap_ok "the holder frees a chunk, allocates it again, frees everything"
else
	tap_not_ok "the holder frees a chunk, allocates it again, frees everything" \
		"status $rc"
	tail -n 20 "$holder_out" | tap_diag
fi
tap_run "after the holder exits, vector_add runs on q again" \
	client q "$(prog vector_add)"
tap_expect "over-quota allocation on a fresh client still says OUT_OF_MEMORY" \
	1 'CUDA_ERROR_OUT_OF_MEMORY' client q "$(prog long_copy)" 1 100
tap_vgpud_stops
tap_done
