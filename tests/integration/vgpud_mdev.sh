#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vgpud's VM path without vgpu_mdev.ko: tests/mdev/vgpud_mdev plays the
# module behind fakectl_shim.so (preloaded into vgpud: /dev/vgpu-ctl is
# the test program) and the guest. It checks the type catalogue and what
# vgpud publishes as available, CREATE/CREATE_DONE and the BAR2 memfd,
# channels (setup, OPEN, a ring in BAR2, CLOSE, VFIO close), a worker
# fault (device ERROR, then READY), REMOVE, vgpu-admin create --mdev and
# destroy through a fake sysfs, a fresh BAR2 memfd for each VFIO session,
# vgpud's answers where its view of a channel and the module's differ,
# rate-limited log lines, and EXISTS after vgpud is killed and started
# again (the module's BAR2 memfd from GET_BAR2, or a fresh one); the
# device lost while vgpud runs (reopened, the instance re-attached);
# --mdev off; --mdev auto with the module loaded after vgpud (attached
# within 2 s, no busy loop meanwhile) and available_instances bound by
# memory (12 GiB) following creates and removes. The program prints the
# TAP itself.
set -u
. "$(dirname "$0")/../lib.sh"

tap_init
need_root_and_build
BIN="$BUILD/tests/mdev/vgpud_mdev"
for f in "$BIN" "$BUILD/tests/mdev/fakectl_shim.so"; do
	[ -e "$f" ] || tap_skip_all "$f is not built"
done
ensure_vgpu_user
RUN_DIR=$(mktemp -d "${TMPDIR:-/tmp}/vgpu-run.XXXXXX")
chmod 0755 "$RUN_DIR"
rc=0
timeout -k 5 280 "$BIN" "$BUILD" "$RUN_DIR" "$TEST_TMP" || rc=$?
if [ "$rc" -ne 0 ]; then
	echo "# vgpud log (last 40 lines):"
	tail -n 40 "$TEST_TMP/vgpud.log" | tap_diag
fi
exit "$rc"
