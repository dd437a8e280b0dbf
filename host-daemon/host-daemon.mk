# SPDX-License-Identifier: MIT
# host-daemon/: vgpud, vgpu-worker, vgpu-admin. One fragment per piece.
include host-daemon/backend.mk
include host-daemon/worker.mk
include host-daemon/daemon.mk
include host-daemon/blueprint.mk
include host-daemon/sched.mk
include host-daemon/swap.mk
