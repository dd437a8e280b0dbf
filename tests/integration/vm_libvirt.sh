#!/bin/bash
# shellcheck disable=SC2317 # fetch and images run through vm_host_fetch_or_skip, vm_host_build
# SPDX-License-Identifier: MIT
# The libvirt suite (issue 6, item 4): in the test VM (L1, TCG) Debian
# 12's libvirtd runs a guest (L2, nested KVM) and our vGPU is hot-plugged
# into it and out again with `virsh attach-device/detach-device --live`
# and vm-images/examples/vgpu-hostdev.xml (tests/vm-libvirt/). Builds the
# modules, the test VM's images and the libvirt part
# (vm-images/libvirt/build.sh), boots L1 with vm-images/l2/run-l1.sh and
# re-emits L1's TAP numbered after its own (L1 is booted again when nested
# KVM wedged or crashed it, as in vm_l2.sh). Skipped, with the reason,
# when there is no mdev/ or QEMU, or nothing can be downloaded and
# nothing is cached.
#
# Knobs: BUILD, VM_BUILD, VM_LIBVIRT_TIMEOUT (seconds for one L1 boot,
# default 600), VM_L2_BOOTS (L1 boots at most, 3), L2_ACCEL (kvm|tcg|auto),
# L2_RETRIES (hung L2 runs are retried this often, 1).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/vm_host_lib.sh
. tests/vm_host_lib.sh
vm_host_init vgpu-vm-libvirt
export L2_ACCEL=${L2_ACCEL:-auto} L2_RETRIES=${L2_RETRIES:-1}

fetch()
{
	vm-images/build-initramfs.sh --fetch && vm-images/l2/build.sh --fetch &&
		vm-images/libvirt/build.sh --fetch
}
vm_host_fetch_or_skip "cannot download the Debian kernel or packages (libvirt: vm-images/libvirt/build.sh; no network?)" fetch

vm_host_make_nested
images()
{
	vm-images/build-initramfs.sh && vm-images/l2/build.sh &&
		vm-images/libvirt/build.sh
}
vm_host_build "the L1, L2 and libvirt images build" images images
sed 's/^/# /' "$LOG/images"

export VM_L1_EXTRA=$VM_BUILD/libvirt/libvirt.cpio.gz
export VM_L1_LOG=$VM_BUILD/libvirt/console.log
vm_host_l1 "${VM_LIBVIRT_TIMEOUT:-}" -- /vgpu/tests/run.sh l1_libvirt.sh
done_tap
