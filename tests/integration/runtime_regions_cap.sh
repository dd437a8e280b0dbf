#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# The per-vGPU cap on pinned host memory (host regions of all clients
# together, WORKER_REGIONS_TOTAL_MAX), lowered for the test to 8 MiB with
# VGPU_SIM_REGIONS_TOTAL_MAX (vgpud passes VGPU_SIM_* to its workers).
# A region over the cap is refused with a log line naming the cap, and
# cudaMallocHost falls back to plain memory: the program still gets its
# buffers and correct copies. The cap counts every client of the vGPU,
# and regions give their bytes back when they are freed or their process
# ends.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
RT="$BUILD/tests/runtime"
[ -e "$CUDA_LIB/libcudart.so.13" ] ||
	tap_skip_all "no NVIDIA libcudart.so.13 in $CUDA_LIB"
[ -x "$RT/pinned_many_rt" ] || tap_skip_all "$RT/pinned_many_rt is not built"
export VGPU_SIM_REGIONS_TOTAL_MAX=8M
vgpu_test_start
tap_run "create vGPU p (8 SMs, 256 MiB)" vadmin create p --sms 8 --memory 256M

refusals() { grep -c "would exceed their cap of 8388608 bytes" "$VGPUD_LOG" || true; }

tap_run "one client, 4 x 3 MiB pinned: 2 regions, then plain memory" \
	client p "$RT/pinned_many_rt" 4 3
if grep -q "host regions capped at 8388608 bytes per vGPU" "$VGPUD_LOG"; then
	tap_ok "the worker logs the lowered cap"
else
	tap_not_ok "the worker logs the lowered cap"
fi
n1=$(refusals)
if [ "$n1" -ge 2 ]; then
	tap_ok "the regions over the cap are refused, the log names the cap ($n1 lines)"
else
	tap_not_ok "the regions over the cap are refused, the log names the cap" \
		"$n1 lines"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi

# the cap is per vGPU: a second client while the first holds 6 MiB
out="$TEST_TMP/holder.out"
client_bg "$out" p "$RT/pinned_many_rt" 2 3 6
holder=$BG_PID
wait_for 30 "the first client to hold its buffers" grep -q holding "$out" ||
	true
tap_run "a second client while the first holds 6 MiB: correct, plain memory" \
	client p "$RT/pinned_many_rt" 2 3
n2=$(refusals)
if [ "$n2" -gt "$n1" ]; then
	tap_ok "the second client's regions count against the same cap ($n1 -> $n2 refusals)"
else
	tap_not_ok "the second client's regions count against the same cap" \
		"$n1 -> $n2 refusals"
fi
tap_wait_pid "the first client's copies are correct too" "$holder" 60
tap_diag <"$out"

# everything was given back: 2 x 3 MiB fit again
tap_run "afterwards 2 x 3 MiB pinned" client p "$RT/pinned_many_rt" 2 3
n3=$(refusals)
if [ "$n3" -eq "$n2" ]; then
	tap_ok "freed regions gave their bytes back (no new refusal)"
else
	tap_not_ok "freed regions gave their bytes back (no new refusal)" \
		"$n2 -> $n3 refusals"
fi
tap_vgpud_alive
tap_vgpud_stops
tap_done
