#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-images/run-vm.sh [--timeout S] [--memory SIZE] [--cpus N] [--]
#                     [COMMAND...]
#
# Boots the test VM (the Debian kernel of kernel.sh, the initramfs of
# build-initramfs.sh) in QEMU, runs COMMAND in the guest (a shell command
# line, run by busybox sh as root; default: the in-VM test suite,
# /vgpu/tests/run.sh), streams the serial console on stdout (also kept in
# ${VM_BUILD:-build/vm}/console.log) and exits with the guest command's
# exit status: 124 when the timeout (default 600 s, or VM_TIMEOUT) ran
# out, 125 when the guest stopped without reporting one (panic, crash).
# KVM or TCG as accel.sh decides (and says which).
#
# Examples:
#   vm-images/run-vm.sh
#   vm-images/run-vm.sh -- /vgpu/tests/run.sh module.sh vfio.sh
#   vm-images/run-vm.sh -- 'insmod /lib/modules/vgpu_mdev.ko; mdevctl types'
set -euo pipefail

# shellcheck source=vm-images/lib.sh
. "$(dirname "$0")/lib.sh"
timeout_s=${VM_TIMEOUT:-600}
memory=1G
cpus=2
while [ $# -gt 0 ]; do
	case $1 in
	--timeout) timeout_s=$2; shift 2 ;;
	--memory) memory=$2; shift 2 ;;
	--cpus) cpus=$2; shift 2 ;;
	--) shift; break ;;
	-*) die "unknown option $1 (see the comment at the top)" ;;
	*) break ;;
	esac
done

vm_kernel || die "cannot get the Debian kernel (vm-images/kernel.sh)"
img=$VM_BUILD/initramfs
for p in base vgpu; do
	[ -f "$img/$p.cpio.gz" ] ||
		die "$img/$p.cpio.gz is missing: run vm-images/build-initramfs.sh"
done
run=$(mktemp -d "$VM_BUILD/run.XXXXXX")
trap 'rm -rf "$run"' EXIT

# The command goes into a third archive, unpacked over the other two.
mkdir -p "$run/root/vgpu"
if [ $# -gt 0 ]; then
	printf '%s\n' "$*" >"$run/root/vgpu/cmd"
fi
(cd "$run/root" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 \
	>"$run/cmd.cpio.gz"
(
	flock -s 9
	cat "$img/base.cpio.gz" "$img/vgpu.cpio.gz" "$run/cmd.cpio.gz"
) 9>"$img.lock" >"$run/initrd"

accel=$("$VM_IMAGES/accel.sh" "$VMLINUZ" "$run/initrd")
case $accel in
kvm) accel_args=(-accel kvm -cpu host) ;;
*) accel_args=(-accel tcg -cpu max) ;;
esac
step "booting $KVER under $accel (${accel_args[*]}), $cpus CPUs, $memory," \
	"timeout $timeout_s s"

log=$VM_BUILD/console.log
rc=0
timeout -k 5 "$timeout_s" qemu-system-x86_64 "${accel_args[@]}" \
	-m "$memory" -smp "$cpus" -nodefaults -display none -serial stdio \
	-no-reboot -kernel "$VMLINUZ" -initrd "$run/initrd" \
	-append "console=ttyS0 panic=-1 loglevel=4" </dev/null 2>&1 |
	tr -d '\r' | tee "$log" || rc=${PIPESTATUS[0]}

if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	step "timed out after $timeout_s s"
	exit 124
fi
status=$(sed -n 's/^vgpu-vm: exit \([0-9]*\)$/\1/p' "$log" | tail -n 1)
if [ -z "$status" ]; then
	step "the guest stopped without an exit status (QEMU exit $rc)"
	exit 125
fi
step "guest exit status $status"
exit "$status"
