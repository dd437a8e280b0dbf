#!/bin/sh
# SPDX-License-Identifier: MIT
# The VM path's own cost: round trips of an empty command from L2 through
# the guest driver, QEMU (vfio-pci), vgpu_mdev.ko and the worker in L1
# (bench/vm_rtt through our library; l2_ring nop without it). L1 measures
# the local transport in the same run (l1_suite.sh); the host runner prints
# both and their ratio (docs/PERF.md).
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

need_guest_driver "round trips through the VM path"
n=${L2_RTT_ITERS:-1000}
if cuda vm_rtt "$n" /vgpu/kernels/vector_add.cubin l2 >"$TMP/rtt" 2>&1; then
	ok "vm_rtt: $n empty commands and $n empty launches through the pci transport"
else
	not_ok "vm_rtt through the pci transport"
fi
sed 's/^/# /' "$TMP/rtt"
if timeout 120 l2_ring nop "$(guest_dev)" "$n" >"$TMP/nop" 2>&1; then
	ok "l2_ring nop: $n NOPs on a raw channel"
else
	not_ok "l2_ring nop: $n NOPs on a raw channel"
fi
sed 's/^/# /' "$TMP/nop"
finish
