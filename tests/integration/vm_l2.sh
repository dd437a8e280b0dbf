#!/bin/bash
# shellcheck disable=SC2317 # fetch and images run through vm_host_fetch_or_skip, vm_host_build
# SPDX-License-Identifier: MIT
# The nested VM suite (issue 6: an unmodified CUDA program inside a QEMU
# guest runs on a vGPU slice). Builds vgpu_mdev.ko, vgpu_guest.ko, the
# test VM's initramfs and the L2 archives (vm-images/l2/build.sh), boots
# the test VM (L1, TCG) with vm-images/l2/run-l1.sh; inside it vgpud
# (simulator) composes a vGPU on an mdev instance and QEMU boots the L2
# guest with it as a vfio-pci device, where the guest driver and our CUDA
# libraries run the runtime test programs, the hostile processes, the
# round-trip benchmark and a hot-unplug (tests/vm-l2/). Re-emits L1's TAP
# numbered after its own (once L1 is done: L1 is booted again when nested
# KVM wedged or crashed it), and the benchmark's figures with their ratio.
# Skipped, with the reason, when there is no mdev/ or QEMU, or nothing
# can be downloaded and nothing is cached.
#
# Knobs: BUILD, VM_BUILD, VM_L2_TIMEOUT (seconds for one L1 boot and the
# whole suite in it, default 600), VM_L2_BOOTS (L1 boots at most, 3: see
# below), L2_ACCEL (kvm|tcg|auto: how L1 runs L2),
# L2_RETRIES (runs of L2 that hang are retried this often, default 1),
# L2_TESTS (L2 scripts, default all), L2_RTT_ITERS (1000).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/vm_host_lib.sh
. tests/vm_host_lib.sh
vm_host_init vgpu-vm-l2
export L2_ACCEL=${L2_ACCEL:-auto} L2_RETRIES=${L2_RETRIES:-1}

fetch()
{
	vm-images/build-initramfs.sh --fetch && vm-images/l2/build.sh --fetch
}
vm_host_fetch_or_skip "cannot download the Debian kernel or packages (no network?)" fetch

vm_host_make_nested
images()
{
	vm-images/build-initramfs.sh && vm-images/l2/build.sh
}
vm_host_build "the L1 and L2 images build" initramfs images
sed 's/^/# /' "$LOG/initramfs"

# Boot L1 and run the suite (booted again when nested KVM wedged or
# crashed L1: vm_host_l1).
vm_host_l1 "${VM_L2_TIMEOUT:-}"

# The round trips: L2 (pci transport) against L1 (local) in this run.
if [ -s "$LOG/results" ]; then
	echo "# round trips of an empty command (simulator backend, TCG host):"
	awk '
		{ split($1, a, "="); split($2, b, "="); v[a[2]] = b[2] }
		END {
			split("ctx_sync launch_sync idle_sync", ops, " ")
			for (i = 1; i <= 3; i++) {
				o = ops[i]
				l1 = v["l1_" o "_median"]; l2 = v["l2_" o "_median"]
				if (l1 == "" || l2 == "") continue
				printf "#   %-12s L1 local %8.1f us, L2 pci %8.1f us: %.1fx (medians; p90 %.1f / %.1f)\n",
					o, l1, l2, l2 / l1, v["l1_" o "_p90"], v["l2_" o "_p90"]
			}
			if (v["l2_raw_nop_median"] != "")
				printf "#   %-12s L2 raw channel %8.1f us (median; p90 %.1f)\n",
					"nop", v["l2_raw_nop_median"], v["l2_raw_nop_p90"]
		}' "$LOG/results"
fi
done_tap
