#!/bin/bash
# SPDX-License-Identifier: MIT
# The verdicts tests/vm_host_lib.sh gives on an L1 console before it
# boots L1 again: the failures TCG's nested SVM causes are retried, and
# anything that names our module, or a crash outside QEMU, or a stop
# before KVM was loaded, is not. Each console below is cut down from a
# real run's.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/vm_host_lib.sh
. tests/vm_host_lib.sh
vm_host_init vm_host_verdicts

# verdict WANT WHAT FUNC: FUNC on $LOG/c must succeed (WANT yes) or not
verdict()
{
	local got=no
	"$3" "$LOG/c" && got=yes
	if [ "$got" = "$1" ]; then
		ok "$2"
	else
		not_ok "$2 (got $got)" "$LOG/c"
	fi
}

start='vgpu-vm: up after 5.08 s, kernel 6.1.0-56-amd64
ok 5 - l1_suite: vm_rtt in L1 through the local transport'
stopped='[  41.2s] run-l1.sh: L1 stopped without an exit status (QEMU exit 0)'

printf '%s\n# L1: loading KVM (kvm_amd nested=1)\n%s\n' "$start" "$stopped" >"$LOG/c"
verdict yes "L1 reset while loading KVM, no panic: booted again" l1_broke_in_kvm

printf '%s\n%s\n' "$start" "$stopped" >"$LOG/c"
verdict no "L1 stopped before it loaded KVM: a failure" l1_broke_in_kvm

printf '%s\n# L1: loading KVM (kvm_amd nested=1)\n[ 9.1] general protection fault: 0000 [#1]\n%s\n' \
	"$start" "$stopped" >"$LOG/c"
verdict no "L1 reset after a general protection fault: a failure" l1_broke_in_kvm

printf '%s\n[ 15.3] kvm [169]: vcpu0, guest rIP: 0xffff Unhandled WRMSR(0xc0010007)\n%s\n' \
	"$start" "$stopped" >"$LOG/c"
verdict yes "L1 reset while its KVM ran L2: booted again" l1_broke_in_kvm

printf '%s\n[ 80.1] Kernel panic - not syncing: softlockup: hung tasks\n[ 80.1] CPU: 1 PID: 900 Comm: qemu-system-x86 Not tainted\n%s\n' \
	"$start" "$stopped" >"$LOG/c"
verdict yes "L1 panicked in a QEMU thread: booted again" l1_broke_in_kvm

printf '%s\n# L1: loading KVM (kvm_amd nested=1)\n[ 20.0] vgpu_mdev_write+0x41/0x90 [vgpu_mdev]\n%s\n' \
	"$start" "$stopped" >"$LOG/c"
verdict no "a trace through vgpu_mdev is never retried" l1_broke_in_kvm

printf '%s\n# L1: vgpu-admin resize l2gpu --sms 24 at 300.90 s (status 0)\n' \
	"$start" >"$LOG/c"
verdict yes "L1 silent while L2 booted: booted again" l1_froze_in_kvm

printf '%s\n# L1: vgpu-admin resize l2gpu --sms 24 at 300.90 s (status 0)\n# l2: vgpu-l2: up after 12.07 s\n' \
	"$start" >"$LOG/c"
verdict no "L1 silent after L2 was up: a failure" l1_froze_in_kvm
done_tap
