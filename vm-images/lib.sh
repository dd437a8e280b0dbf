# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# Helpers shared by the vm-images/ scripts (source it):
#   step MESSAGE        progress on stderr, one line, with elapsed seconds
#   die MESSAGE         an error on stderr, exit 1
#   VM_BUILD            the build directory (absolute), default build/vm
#   vm_kernel           sets KVER KDIR VMLINUZ KMODDIR (vm-images/kernel.sh)

VM_IMAGES=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_BUILD=${VM_BUILD:-build/vm}
mkdir -p "$VM_BUILD"
VM_BUILD=$(cd "$VM_BUILD" && pwd)
export VM_BUILD
VM_T0=${VM_T0:-$(date +%s.%N)}
export VM_T0

# step MESSAGE: "[  12.3s] script: MESSAGE" on stderr; the clock starts
# with the first script of a run (VM_T0 is passed on to the others).
step()
{
	local now
	now=$(date +%s.%N)
	printf '[%6.1fs] %s: %s\n' "$(echo "$now $VM_T0" |
		awk '{ print $1 - $2 }')" "$(basename "$0")" "$*" >&2
}

die()
{
	echo "$(basename "$0"): error: $*" >&2
	exit 1
}

# Resolves the Debian kernel (downloaded once, cached by kernel.sh).
vm_kernel()
{
	local out
	out=$("$VM_IMAGES/kernel.sh") || return 1
	eval "$out"
	export KVER KDIR VMLINUZ KMODDIR
}
