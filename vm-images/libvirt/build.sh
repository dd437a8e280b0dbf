#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-images/libvirt/build.sh [--fetch]: the libvirt part of the test VM,
# ${VM_BUILD:-build/vm}/libvirt/libvirt.cpio.gz, unpacked in L1 after the
# normal parts and the nested test's (build-initramfs.sh, l2/build.sh),
# which stay as they are. It holds Debian 12's monolithic libvirtd (the
# QEMU connection driver only), virsh, their libraries (ldd), libvirt's
# cpu_map and schemas, a libvirtd.conf and qemu.conf for a busybox
# initramfs without systemd (root, no polkit, no cgroups, no namespaces,
# no security driver, no virtlogd: vm-images/libvirt/etc), the examples
# (vm-images/examples) and the libvirt test (tests/vm-libvirt: L1's
# scripts in /vgpu/tests, L2's in /vgpu/libvirt/l2, passed to L2 with
# its command).
#
# The .debs are downloaded once (apt-get download + dpkg -x); staged and
# packed like l2/build.sh (vm-images/l2/stage.sh). Run after
# build-initramfs.sh and l2/build.sh (their staged trees tell which
# libraries L1 has already). With --fetch it only downloads.
set -euo pipefail

# shellcheck source=vm-images/lib.sh
. "$(dirname "$0")/../lib.sh"
# shellcheck source=vm-images/l2/stage.sh
. "$VM_IMAGES/l2/stage.sh"
BUILD=${BUILD:-build}
OUT=$VM_BUILD/libvirt
STAGE=$OUT/stage
DEBS=$OUT/debs
LIBDIR=usr/lib/x86_64-linux-gnu
# libvirt itself, and the libraries it needs that a Debian host with
# only QEMU (scripts/install-deps.sh test) may lack; the rest ldd finds
# on the host, as for QEMU in l2/build.sh
DEB_PKGS=(libvirt0 libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients
	libyajl2 libssh-4 libssh2-1 libnl-3-200 libnuma1 libcap-ng0 libsasl2-2
	libtirpc3 libapparmor1 libaudit1 libacl1 libxml2 libreadline8
	libcurl3-gnutls)

# stage_tree PART SRCDIR DESTDIR: every file under SRCDIR.
stage_tree()
{
	local part=$1 src=$2 dest=$3 f
	while IFS= read -r -d '' f; do
		stage "$part" "$f" "$dest/${f#"$src"/}" 0644
	done < <(find "$src" -type f -print0)
}

stage_libvirt()
{
	local root=$DEBS/root f progs base
	progs=("$root/usr/sbin/libvirtd" "$root/usr/bin/virsh"
		"$root/$LIBDIR/libvirt/connection-driver/libvirt_driver_qemu.so")
	stage libvirt "${progs[0]}" usr/sbin/libvirtd 0755
	stage libvirt "${progs[1]}" usr/bin/virsh 0755
	stage libvirt "${progs[2]}" \
		"$LIBDIR/libvirt/connection-driver/libvirt_driver_qemu.so" 0644
	# every library resolved, the downloaded ones first
	if LD_LIBRARY_PATH=$root/$LIBDIR:$root/lib/x86_64-linux-gnu \
		ldd "${progs[@]}" | grep 'not found' >"$OUT/missing"; then
		die "libraries not found: $(sort -u "$OUT/missing" | awk '{ print $1 }' |
			tr '\n' ' ')(add their packages to DEB_PKGS)"
	fi
	LD_LIBRARY_PATH=$root/$LIBDIR:$root/lib/x86_64-linux-gnu \
		stage_libs libs "${progs[@]}"
	stage_new_libs
	stage_tree libvirt "$root/usr/share/libvirt/cpu_map" usr/share/libvirt/cpu_map
	stage_tree libvirt "$root/usr/share/libvirt/schemas" usr/share/libvirt/schemas
	# libvirtd resolves its built-in QEMU user and group (Debian's:
	# libvirt-qemu) before it reads qemu.conf (which says root): the
	# image's /etc/passwd and /etc/group with them added
	base=$VM_BUILD/initramfs/base/etc
	[ -f "$base/passwd" ] || die "no $base/passwd: run build-initramfs.sh first"
	stage_text libvirt etc/passwd 0644 < <(grep -v '^libvirt-qemu:' \
		"$base/passwd"; echo 'libvirt-qemu:x:64055:64055::/var/lib/libvirt:/bin/false')
	stage_text libvirt etc/group 0644 < <(grep -v '^libvirt-qemu:' \
		"$base/group"; echo 'libvirt-qemu:x:64055:')
	for f in libvirtd.conf qemu.conf libvirt.conf; do
		stage libvirt "$VM_IMAGES/libvirt/etc/$f" "etc/libvirt/$f" 0644
	done
	for f in "$VM_IMAGES"/examples/*.xml; do
		stage libvirt "$f" "vgpu/examples/$(basename "$f")" 0644
	done
	for f in tests/vm-libvirt/l1_*.sh; do
		stage libvirt "$f" "vgpu/tests/$(basename "$f")" 0755
	done
	for f in tests/vm-libvirt/l2_*.sh; do
		stage libvirt "$f" "vgpu/libvirt/l2/$(basename "$f")" 0755
	done
	mkdir -p "$STAGE"/libvirt/var/{lib,cache,log}/libvirt/qemu \
		"$STAGE/libvirt/var/lib/libvirt/boot"
	# (made once: a new link would change the tree and repack it)
	[ -L "$STAGE/libvirt/var/run" ] || ln -sfn /run "$STAGE/libvirt/var/run"
}

# stage_new_libs: the libraries staged in the scratch part "libs" that
# L1's other parts do not already have, byte for byte at the same path
# (libc, GLib, GnuTLS ... for QEMU), into the libvirt part.
stage_new_libs()
{
	local f rel other dup
	while IFS= read -r -d '' f; do
		rel=${f#"$STAGE/libs/"}
		dup=
		for other in "$VM_BUILD/initramfs/base" "$VM_BUILD/l2/stage/l1"; do
			if cmp -s "$f" "$other/$rel"; then
				dup=1
				break
			fi
		done
		[ -n "$dup" ] || stage libvirt "$f" "$rel"
	done < <(find "$STAGE/libs" -type f -print0)
}

step "start"
mkdir -p "$OUT"
exec 9>"$OUT.lock"
flock 9
debs_fetch "$DEBS" "${#DEB_PKGS[@]} packages: " "${DEB_PKGS[@]}"
[ "${1:-}" != --fetch ] || exit 0
mkdir -p "$STAGE/libvirt" "$STAGE/libs"
stage_libvirt
prune libs
prune libvirt
pack libvirt "$OUT/libvirt.cpio.gz"
step "libvirt part ready in $OUT"
