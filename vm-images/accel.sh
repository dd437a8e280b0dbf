#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-images/accel.sh VMLINUZ INITRD: prints the QEMU accelerator to use,
# "kvm" or "tcg", and says why on stderr.
#
# KVM only when a timed test boot under KVM (the VM's /init in probe mode)
# reaches user space: on some machines /dev/kvm exists but cannot boot a
# stock kernel (a paravirtual KVM: MSR assertions, emulation failures, or
# a crawl). Otherwise TCG (-accel tcg -cpu max). The answer is cached in
# ${VM_BUILD:-build/vm}/accel for this host kernel and guest kernel.
# VM_ACCEL=kvm|tcg skips the probe; VM_KVM_PROBE_TIMEOUT (default 10 s:
# KVM that needs longer is slower than TCG, which boots in about 5) bounds
# it.
set -euo pipefail

# shellcheck source=vm-images/lib.sh
. "$(dirname "$0")/lib.sh"
[ $# -eq 2 ] || die "usage: accel.sh VMLINUZ INITRD"
vmlinuz=$1
initrd=$2
cache=$VM_BUILD/accel
key="host $(uname -r), guest $(basename "$vmlinuz")"

case "${VM_ACCEL:-}" in
kvm | tcg)
	step "accelerator ${VM_ACCEL} (VM_ACCEL)"
	echo "$VM_ACCEL"
	exit 0
	;;
"") ;;
*) die "VM_ACCEL must be kvm or tcg, not '$VM_ACCEL'" ;;
esac

if [ -f "$cache" ] && [ "$(sed -n 2p "$cache")" = "$key" ]; then
	step "accelerator $(sed -n 1p "$cache") (cached: $(sed -n 3p "$cache"))"
	sed -n 1p "$cache"
	exit 0
fi

# probe: sets ACCEL and WHY
probe()
{
	local log=$VM_BUILD/accel-probe.log t0 rc=0 secs
	ACCEL=tcg
	if [ ! -e /dev/kvm ]; then
		WHY="no /dev/kvm"
		return
	fi
	if ! [ -r /dev/kvm ] || ! [ -w /dev/kvm ]; then
		WHY="/dev/kvm is not usable by $(id -un)"
		return
	fi
	step "probing KVM: a test boot, at most ${VM_KVM_PROBE_TIMEOUT:-10} s"
	t0=$SECONDS
	timeout -k 5 "${VM_KVM_PROBE_TIMEOUT:-10}" qemu-system-x86_64 \
		-accel kvm -cpu host -m 512M -smp 1 -kernel "$vmlinuz" \
		-initrd "$initrd" -display none -monitor none -serial stdio \
		-no-reboot -append "console=ttyS0 panic=-1 loglevel=4 vgpu.probe" \
		</dev/null >"$log" 2>&1 || rc=$?
	secs=$((SECONDS - t0))
	if grep -aq 'vgpu-vm: probe booted' "$log"; then
		ACCEL=kvm
		WHY="a KVM test boot reached user space in $secs s"
	elif [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
		WHY="a KVM test boot did not reach user space in $secs s"
	else
		WHY="a KVM test boot failed (exit $rc: $(grep -a -m1 -iE 'error|fail|assert' "$log" | cut -c1-120))"
	fi
}

probe
printf '%s\n%s\n%s\n' "$ACCEL" "$key" "$WHY" >"$cache"
step "accelerator $ACCEL ($WHY)"
echo "$ACCEL"
