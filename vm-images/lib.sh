# shellcheck shell=bash
# SPDX-License-Identifier: MIT
#
# Helpers shared by the vm-images/ scripts (source it):
#   step MESSAGE        progress on stderr, one line, with elapsed seconds
#   die MESSAGE         an error on stderr, exit 1
#   VM_BUILD            the build directory (absolute), default build/vm
#   vm_kernel           sets KVER KDIR VMLINUZ KMODDIR (vm-images/kernel.sh)
#   rm_tree DIR         rm -rf that never crosses into a mount
#   debs_fetch DIR LABEL PKG...  Debian packages unpacked in DIR/root, once

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

# rm_tree DIR: removes a tree we made, never crossing into a mount (a
# chroot's /proc or /dev that an interrupted mmdebstrap left behind).
rm_tree()
{
	[ -e "$1" ] || return 0
	if grep -q " $1/" /proc/mounts; then
		die "something is still mounted under $1: unmount it first"
	fi
	rm -rf --one-file-system "$1"
}

# debs_fetch DIR LABEL PKG...: downloads the Debian packages (apt-get
# download) and unpacks them into DIR/root (dpkg -x, nothing installed),
# once: DIR/.complete names the packages there, and another list fetches
# again from scratch. LABEL comes before the list in the progress line
# ("downloading LABELpkg1 pkg2 ...").
debs_fetch()
{
	local dir=$1 label=$2 want d
	shift 2
	want="$*"
	if [ -f "$dir/.complete" ] && [ "$(cat "$dir/.complete")" = "$want" ]; then
		return 0
	fi
	step "downloading $label$want"
	rm_tree "$dir"
	mkdir -p "$dir/root"
	# as root, apt would fetch as _apt, who cannot write here
	(cd "$dir" && apt-get -o APT::Sandbox::User="$(id -un)" download \
		"$@" >&2) ||
		die "apt-get download $want failed (network? apt-get update?)"
	for d in "$dir"/*.deb; do
		dpkg -x "$d" "$dir/root"
	done
	rm -f "$dir"/*.deb
	echo "$want" >"$dir/.complete"
}
