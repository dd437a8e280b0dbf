#!/bin/bash
# SPDX-License-Identifier: MIT
# The VM suite: builds vgpu_mdev.ko (make modules) and the test VM's
# initramfs, boots the Debian kernel in QEMU (vm-images/run-vm.sh) and
# re-emits the guest's TAP lines (tests/vm/run.sh) numbered after its own;
# the rest of the console comes as "#" lines. Skipped, with the reason,
# when there is no mdev/ or no QEMU, or the Debian packages cannot be
# downloaded (no network and nothing cached).
#
# Knobs: BUILD (build), VM_BUILD ($BUILD/vm), VM_TIMEOUT (seconds for the
# boot and the whole in-VM suite, default 540: inside the 600 s tests/run.sh
# gives this script, builds included), VM_TESTS (in-VM scripts to
# run, default all), VM_ACCEL (kvm|tcg: skip the KVM probe).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/vm_host_lib.sh
. tests/vm_host_lib.sh
vm_host_init vgpu-vm

vm_host_fetch_or_skip "cannot download the Debian kernel, busybox or mdevctl packages (no network?)" \
	vm-images/build-initramfs.sh --fetch
vm_host_build --failed "vgpu_mdev.ko and vfio_user build" \
	"vgpu_mdev.ko builds against Debian's kernel headers" make \
	make --no-print-directory modules "$BUILD/tests/vm/vfio_user"
vm_host_build "the test VM's initramfs builds" initramfs \
	vm-images/build-initramfs.sh
sed 's/^/# /' "$LOG/initramfs"

# Boot; renumber the guest's TAP after ours, pass the rest on as comments.
start=$SECONDS
rc=0
# shellcheck disable=SC2086 # VM_TESTS is a list of script names
vm-images/run-vm.sh --timeout "${VM_TIMEOUT:-540}" -- \
	/vgpu/tests/run.sh ${VM_TESTS:-} 2>&1 | vm_host_retap guest ||
	rc=${PIPESTATUS[0]}
vm_host_counts
secs=$((SECONDS - start))
if [ "$rc" -eq 124 ]; then
	not_ok "the VM finished the suite in time (timed out after $secs s)"
elif [ "$plan" -eq 0 ] || [ "$got" -ne "$plan" ]; then
	not_ok "the guest reported every test ($got of plan $plan; exit $rc)"
else
	ok "the VM ran $got tests and powered off in $secs s (guest exit $rc)"
fi
done_tap
