#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-images/l2/run-l1.sh [--timeout S] [--memory SIZE] [--cpus N] [--]
#                        [COMMAND...]
#
# Boots the test VM (L1) as vm-images/run-vm.sh does, with the nested
# test's archive (vm-images/l2/build.sh: QEMU, the L2 kernel and
# initramfs, the L1 tests) unpacked over its own two, runs COMMAND in L1
# (default: /vgpu/tests/run.sh l1_suite.sh, the whole L2 suite), streams
# the serial console on stdout (also kept in ${VM_BUILD}/l2/console.log,
# or VM_L1_LOG) and exits with the command's status: 124 when the
# timeout (default 900 s, or VM_TIMEOUT) ran out, 125 when L1 stopped
# without one, 126 when L1 printed "vgpu-l1: restart" (then QEMU is
# stopped at once: L2 is stuck in L1's KVM and L1 may not even power
# off; boot it again).
# L1 runs under KVM or TCG as vm-images/accel.sh decides; how L2 runs is
# the L1 tests' business (L2_ACCEL and the other L2_* variables are
# passed on). VM_L1_EXTRA: more archives (paths, space-separated) to
# unpack after l1.cpio.gz (vm-images/libvirt/build.sh's).
# The toolkit's libraries (${CUDA_HOME:-/usr/local/cuda}/lib64) are shared
# read-only with L1 over 9p (mount tag "cuda"), when there is a cuBLAS in
# them: L1 passes them on to L2 (tests/vm-l2/l2_libs.sh). VM_L1_SHARE=0
# turns it off.
#
#   vm-images/l2/run-l1.sh
#   vm-images/l2/run-l1.sh -- /vgpu/tests/l1_measure.sh 10
set -euo pipefail

# shellcheck source=vm-images/lib.sh
. "$(dirname "$0")/../lib.sh"
timeout_s=${VM_TIMEOUT:-900}
memory=2G
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
[ $# -gt 0 ] || set -- /vgpu/tests/run.sh l1_suite.sh

vm_kernel || die "cannot get the Debian kernel (vm-images/kernel.sh)"
img=$VM_BUILD/initramfs
l2=$VM_BUILD/l2
for f in "$img/base.cpio.gz" "$img/vgpu.cpio.gz" "$l2/l1.cpio.gz"; do
	[ -f "$f" ] || die "$f is missing: run vm-images/build-initramfs.sh" \
		"and vm-images/l2/build.sh"
done
run=$(mktemp -d "$VM_BUILD/run.XXXXXX")
trap 'rm -rf "$run"' EXIT

# The command, and the knobs the L1 tests read (every L2_* variable of
# this environment: L2_ACCEL, L2_RETRIES, L2_TESTS, ... see
# tests/vm-l2/l1_lib.sh), in a last archive.
mkdir -p "$run/root/vgpu"
{
	while IFS= read -r v; do
		printf 'export %s=%q\n' "$v" "${!v}"
	done < <(compgen -e | grep '^L2_[A-Z0-9_]*$' || true)
	printf '%s\n' "$*"
} >"$run/root/vgpu/cmd"
(cd "$run/root" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 \
	>"$run/cmd.cpio.gz"
(
	flock -s 9
	flock -s 8
	# shellcheck disable=SC2086 # VM_L1_EXTRA is a list
	cat "$img/base.cpio.gz" "$img/vgpu.cpio.gz" "$l2/l1.cpio.gz" \
		${VM_L1_EXTRA:-} "$run/cmd.cpio.gz"
) 9>"$img.lock" 8>"$l2.lock" >"$run/initrd"

accel=$("$VM_IMAGES/accel.sh" "$VMLINUZ" "$run/initrd")
share_args=()
cuda_lib=$(readlink -f "${CUDA_HOME:-/usr/local/cuda}/lib64" 2>/dev/null || true)
if [ "${VM_L1_SHARE:-1}" != 0 ] && [ -e "$cuda_lib/libcublas.so.13" ]; then
	share_args=(-virtfs
		"local,path=$cuda_lib,mount_tag=cuda,security_model=none,readonly=on")
fi
case $accel in
kvm) accel_args=(-accel kvm -cpu host) ;;
*) accel_args=(-accel tcg -cpu max) ;;
esac
step "booting L1 ($KVER) under $accel (${accel_args[*]}), $cpus CPUs," \
	"$memory, timeout $timeout_s s"

# watch_restart: passes the console on; at "vgpu-l1: restart" (L2 stuck
# in L1's KVM: L1 cannot power itself off cleanly) it stops QEMU. So it
# does when L1's kernel reports a soft lockup in a QEMU thread (a vCPU of
# L1 stuck in KVM_RUN): that can come before L1's own watch has started
# (seen in CI as L1 loaded KVM, 2026-11-28), and L1 would then sit out
# the whole timeout. The host then boots L1 again (vm_host_l1), unless
# our module is in the log.
watch_restart()
{
	local line
	while IFS= read -r line; do
		printf '%s\n' "$line"
		case $line in
		*"soft lockup"*"[qemu-system-x86"* | *"vgpu-l1: restart"*)
			touch "$run/restart"
			sleep 5 # the rest of L1's report
			kill "$(cat "$run/qemu.pid")" 2>/dev/null
			;;
		esac
	done
}

log=${VM_L1_LOG:-$l2/console.log}
rc=0
timeout -k 5 "$timeout_s" qemu-system-x86_64 "${accel_args[@]}" \
	-m "$memory" -smp "$cpus" -nodefaults -display none -serial stdio \
	-no-reboot -kernel "$VMLINUZ" -initrd "$run/initrd" \
	-pidfile "$run/qemu.pid" "${share_args[@]}" \
	-append "console=ttyS0 panic=-1 loglevel=4" </dev/null 2>&1 |
	sed -u 's/\r$//' | tee "$log" | watch_restart || rc=${PIPESTATUS[0]}

if [ -f "$run/restart" ]; then
	step "L1 asked for a restart (L2 stuck in L1's KVM)"
	exit 126
fi
if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
	step "timed out after $timeout_s s"
	exit 124
fi
status=$(sed -n 's/^vgpu-vm: exit \([0-9]*\)$/\1/p' "$log" | tail -n 1)
if [ -z "$status" ]; then
	step "L1 stopped without an exit status (QEMU exit $rc)"
	exit 125
fi
step "L1 exit status $status"
exit "$status"
