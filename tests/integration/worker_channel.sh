#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A vgpu-worker serves VM channels (VGPU_CTL_CHANNEL) without vgpud or the
# module: tests/mdev/worker_channel plays both (BAR2 memfd, eventfd
# doorbells, socketpair), runs descriptors through the ring, closes
# channels and checks the memory comes back, then tries the hostile
# cases (bad windows, wrong descriptor kinds, garbage ring, a channel
# dropped mid-copy). The program prints the TAP itself.
set -u
. "$(dirname "$0")/../lib.sh"

tap_init
BIN="$BUILD/tests/mdev/worker_channel"
[ -x "$BIN" ] || tap_skip_all "$BIN is not built"
[ -x "$VGPU_WORKER" ] || tap_skip_all "$VGPU_WORKER is not built"
LOG="$TEST_TMP/worker.log"
rc=0
timeout -k 5 180 "$BIN" "$VGPU_WORKER" "$LOG" || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "# worker log (last 30 lines):"
	tail -n 30 "$LOG" | tap_diag
fi
exit "$rc"
