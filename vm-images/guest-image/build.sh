#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-images/guest-image/build.sh: a small Debian 12 guest disk image for
# trying vgpu in an ordinary VM, in ${VM_BUILD:-build/vm}/guest/:
#
#   vgpu-guest.qcow2    the disk (GUEST_IMAGE_SIZE, default 4G, virtual):
#                       an MBR with syslinux's boot code; partition 1, FAT,
#                       the guest's /boot (kernel, initrd, syslinux for
#                       BIOS, syslinux.efi as EFI/BOOT/BOOTX64.EFI for
#                       UEFI); partition 2, ext4, the root file system
#   vmlinuz initrd.img  the same kernel and initrd, for a direct kernel
#   cmdline             boot (qemu -kernel, libvirt <kernel>) with the
#                       kernel command line in cmdline
#
# The guest: Debian 12 (minbase, systemd, udev, networkd with DHCP,
# pciutils, iproute2), Debian's kernel (the one vgpu_guest.ko is built
# against: vm-images/kernel.sh), vgpu_guest.ko in
# /lib/modules/KVER/updates/vgpu, loaded at boot (modules-load.d), our
# libcuda.so.1 and NVIDIA's libcudart.so.13 (from the toolkit) in
# /usr/lib/vgpu (ld.so.conf.d, so programs built with `nvcc -cudart
# shared` use them unmodified), a few
# runtime test programs as examples in /usr/lib/vgpu/examples (sources in
# /usr/share/doc/vgpu/examples), vgpu-status, a login prompt on ttyS0 and
# tty1 (root, no password), a motd and /usr/share/doc/vgpu/README.
# vm-images/guest-image/README.md says how to boot it.
#
# Built without loop devices or mounts of the image: mmdebstrap (root
# mode: a chroot) makes the base system, mkfs.ext4 -d and mtools fill the
# partitions, syslinux (the mtools installer) makes the FAT bootable,
# sfdisk and dd assemble the disk, qemu-img converts it. These host tools
# come from Debian's archive, unpacked once under guest/tools (apt-get
# download + dpkg -x, nothing installed).
#
# Cached: the tools, the .deb files (guest/debs) and the base system
# (guest/base, rebuilt only when its package list, kernel or hook
# changes); the image is assembled again only when something in it
# changed (guest/image.key), so a second run takes a second or two.
#
# Run as root from the repository root after `make all guest-modules`
# (or `make guest-image`). Knobs: BUILD, VM_BUILD, GUEST_IMAGE_SIZE (4G),
# GUEST_IMAGE_COMPRESS (1: a compressed qcow2; 0: faster to build, larger),
# GUEST_MIRROR (http://deb.debian.org/debian), GUEST_SECURITY_MIRROR
# (http://deb.debian.org/debian-security), VGPU_GUEST_MODULE.
set -euo pipefail
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64

# shellcheck source=vm-images/lib.sh
. "$(dirname "$0")/../lib.sh"
BUILD=${BUILD:-build}
GUEST_MODULE=${VGPU_GUEST_MODULE:-guest-driver/kmod/vgpu_guest.ko}
HERE=$VM_IMAGES/guest-image
OUT=$VM_BUILD/guest
TOOLS=$OUT/tools
DEBS=$OUT/debs
BASE=$OUT/base
WORK=$OUT/work
SIZE=${GUEST_IMAGE_SIZE:-4G}
COMPRESS=${GUEST_IMAGE_COMPRESS:-1}
MIRROR=${GUEST_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${GUEST_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
SUITE=bookworm
# the host tools, from Debian's archive
TOOL_PKGS=(mmdebstrap syslinux syslinux-common syslinux-efi mtools
	dosfstools fdisk qemu-utils)
# the guest's packages on top of minbase (the kernel is added: KVER)
GUEST_PKGS=(systemd-sysv udev kmod initramfs-tools systemd-resolved
	iproute2 pciutils less)
# the example programs (tests/runtime/, built by make): examples
mapfile -t EXAMPLES < <(sed 's/#.*//; /^[[:space:]]*$/d' "$HERE/examples")
# fixed identities, so the boot configuration can name them
ROOT_UUID=56475055-0000-4000-8000-6775657374aa
BOOT_VOLID=56470001
DISK_ID=0x56470001
BOOT_MIB=256

# run_logged LOG CMD...: runs CMD with its output in LOG; on failure shows
# the end of LOG and exits.
run_logged()
{
	local log=$1
	shift
	if ! "$@" >"$log" 2>&1; then
		tail -n 25 "$log" >&2
		die "$1 failed (the whole output: $log)"
	fi
}

# ko_info FIELD KO: a field of a module's .modinfo (no kmod on the host).
ko_info()
{
	strings -a "$2" | sed -n "s/^$1=//p" | head -n 1
}

# sum_files FILE...: one checksum over the files' names and contents.
sum_files()
{
	sha256sum "$@" | sha256sum | cut -c1-32
}

# The base system (mmdebstrap), unless the one in $BASE has the same key.
# The kernel's /boot files are moved to $BASE/boot (they go on the FAT
# partition, which the guest mounts at /boot).
build_base()
{
	local key log=$OUT/mmdebstrap.log tmp=$OUT/base.tmp
	key="$SUITE ${GUEST_PKGS[*]} linux-image-$KVER $MIRROR $SECURITY_MIRROR"
	key="$key $(sum_files "$HERE/base-hook.sh" "$HERE/dpkg-excludes.cfg")"
	# and this recipe itself
	key="$key $(declare -f build_base | sha256sum | cut -c1-16)"
	if [ -f "$BASE/.key" ] && [ "$(cat "$BASE/.key")" = "$key" ]; then
		step "base system unchanged (Debian $SUITE, kernel $KVER)"
		return 0
	fi
	step "making the base system (mmdebstrap: Debian $SUITE, kernel $KVER;" \
		"1 to 3 minutes, log in $log)"
	rm_tree "$tmp"
	mkdir -p "$tmp" "$DEBS"
	# The .deb files are kept in $DEBS between builds (mmdebstrap's
	# documented cache recipe: sync-in before, sync-out after).
	# shellcheck disable=SC2016 # $1 is the hook's, expanded by mmdebstrap
	run_logged "$log" mmdebstrap --mode=root --variant=minbase \
		--include="$(IFS=,; echo "${GUEST_PKGS[*]},linux-image-$KVER")" \
		--dpkgopt="$HERE/dpkg-excludes.cfg" --dpkgopt=force-unsafe-io \
		--skip=download/empty --skip=essential/unlink \
		--setup-hook='mkdir -p "$1"/var/cache/apt/archives' \
		--setup-hook="sync-in $DEBS /var/cache/apt/archives" \
		--customize-hook="$HERE/base-hook.sh" \
		--customize-hook="sync-out /var/cache/apt/archives $DEBS" \
		"$SUITE" "$tmp/root" \
		"deb $MIRROR $SUITE main" "deb $MIRROR $SUITE-updates main" \
		"deb $SECURITY_MIRROR $SUITE-security main"
	rm -f "$DEBS/lock"
	rm -rf "$DEBS/partial"
	[ -f "$tmp/root/boot/vmlinuz-$KVER" ] ||
		die "no /boot/vmlinuz-$KVER in the base system (is linux-image-$KVER" \
			"still in Debian's archive? if not: rm -r $VM_BUILD/kernel;" \
			"make guest-modules)"
	mkdir -p "$tmp/boot"
	mv "$tmp"/root/boot/* "$tmp/boot/"
	echo "$key" >"$tmp/.key"
	rm_tree "$BASE"
	mv "$tmp" "$BASE"
	step "base system ready ($(du -sh "$BASE/root" | cut -f1) in the root," \
		"$(du -sh "$DEBS" | cut -f1) of .deb files cached)"
}

# put SRC DEST MODE: SRC as WORK/DEST. Through a new file, never writing
# into a file of the base system (WORK shares their inodes: cp -al).
put()
{
	local to="$WORK/$2"
	[ -e "$1" ] || die "$1 is missing"
	mkdir -p "$(dirname "$to")"
	cp -L "$1" "$to.tmp"
	chmod "$3" "$to.tmp"
	mv "$to.tmp" "$to"
}

# put_text DEST MODE: stdin as WORK/DEST.
put_text()
{
	local to="$WORK/$1"
	mkdir -p "$(dirname "$to")"
	cat >"$to.tmp"
	chmod "$2" "$to.tmp"
	mv "$to.tmp" "$to"
}

# The root file system: the base system (hard links, no copy) with our
# files laid over it: rootfs/ as it is, the module, the libraries, the
# examples and what names the partitions.
make_tree()
{
	local f p
	rm_tree "$WORK"
	cp -al "$BASE/root" "$WORK"
	while IFS= read -r -d '' f; do
		p=${f#"$HERE/rootfs/"}
		put "$f" "$p" "$(stat -c %a "$f")"
	done < <(find "$HERE/rootfs" -type f -print0)
	put "$GUEST_MODULE" "usr/lib/modules/$KVER/updates/vgpu/vgpu_guest.ko" 0644
	put "$BUILD/lib/libcuda.so.1" usr/lib/vgpu/libcuda.so.1 0755
	put "$CUDA_LIB/libcudart.so.13" usr/lib/vgpu/libcudart.so.13 0755
	for p in "${EXAMPLES[@]}"; do
		put "$BUILD/tests/runtime/$p" "usr/lib/vgpu/examples/$p" 0755
		put "tests/runtime/$p.cu" "usr/share/doc/vgpu/examples/$p.cu" 0644
	done
	put_text etc/fstab 0644 <<-EOF
		# vgpu guest image (vm-images/guest-image/build.sh)
		UUID=$ROOT_UUID / ext4 errors=remount-ro 0 1
		UUID=${BOOT_VOLID:0:4}-${BOOT_VOLID:4:4} /boot vfat umask=0077,nofail 0 2
	EOF
	put_text etc/vgpu-guest-image 0644 <<-EOF
		vgpu guest image, built $(date -u +%Y-%m-%dT%H:%MZ)
		vgpu $(git describe --always --dirty 2>/dev/null || echo unknown)
		Debian $(cat "$WORK/etc/debian_version"), kernel $KVER
		vgpu_guest.ko $(ko_info srcversion "$GUEST_MODULE")
	EOF
	# the guest's own depmod and ldconfig (they write new files)
	chroot "$WORK" depmod "$KVER" ||
		die "depmod $KVER in the guest's root failed"
	chroot "$WORK" ldconfig || die "ldconfig in the guest's root failed"
	for f in libcuda.so.1 libcudart.so.13; do
		chroot "$WORK" ldconfig -p |
			grep -q "^[[:space:]]*$f .* => /usr/lib/vgpu/$f\$" ||
			die "ldconfig in the guest does not resolve $f to /usr/lib/vgpu"
	done
}

# The FAT partition (the guest's /boot): the kernel and initrd, syslinux
# for BIOS (ldlinux.sys, installed by the mtools installer) and for UEFI
# (the removable-media path EFI/BOOT/BOOTX64.EFI), one configuration.
make_boot()
{
	local fat=$1 lib=$TOOLS/root/usr/lib f
	local cfg=$OUT/syslinux.cfg
	cat >"$cfg" <<-EOF
		# vgpu guest image: syslinux (BIOS: /syslinux/, UEFI: /EFI/BOOT/)
		SERIAL 0 115200
		PROMPT 1
		TIMEOUT 10
		DEFAULT vgpu
		LABEL vgpu
		  LINUX /vmlinuz-$KVER
		  INITRD /initrd.img-$KVER
		  APPEND $(cat "$OUT/cmdline.tmp")
	EOF
	rm -f "$fat"
	truncate -s "${BOOT_MIB}M" "$fat"
	# -h: the sectors before the partition, which syslinux's boot
	# sector adds to find ldlinux.sys on the disk
	mkfs.fat -F 32 -n VGPU-BOOT -i "$BOOT_VOLID" -h 2048 "$fat" >/dev/null
	export MTOOLS_SKIP_CHECK=1
	for f in "$BASE"/boot/*; do
		mcopy -i "$fat" "$f" "::$(basename "$f")"
	done
	mmd -i "$fat" ::syslinux ::EFI ::EFI/BOOT
	mcopy -i "$fat" "$cfg" ::syslinux/syslinux.cfg
	mcopy -i "$fat" "$lib/syslinux/modules/bios/ldlinux.c32" \
		::syslinux/ldlinux.c32
	mcopy -i "$fat" "$lib/SYSLINUX.EFI/efi64/syslinux.efi" \
		::EFI/BOOT/BOOTX64.EFI
	mcopy -i "$fat" "$lib/syslinux/modules/efi64/ldlinux.e64" \
		::EFI/BOOT/ldlinux.e64
	mcopy -i "$fat" "$cfg" ::EFI/BOOT/syslinux.cfg
	syslinux --install --directory /syslinux "$fat" ||
		die "syslinux --install failed"
}

# make_disk RAW: the MBR disk: syslinux's MBR code, the FAT partition
# (active) and the root file system, written sparse.
make_disk()
{
	local raw=$1 total root_start root_sectors
	local boot_sectors=$((BOOT_MIB * 2048))
	rm -f "$raw"
	truncate -s "$SIZE" "$raw"
	total=$(($(stat -c %s "$raw") / 512))
	root_start=$((2048 + boot_sectors))
	root_sectors=$((total - root_start))
	[ "$root_sectors" -gt $((1024 * 2048)) ] ||
		die "GUEST_IMAGE_SIZE=$SIZE leaves less than 1 GiB for the root"
	sfdisk -q "$raw" <<-EOF || die "sfdisk failed"
		label: dos
		label-id: $DISK_ID
		unit: sectors
		start=2048, size=$boot_sectors, type=ef, bootable
		start=$root_start, size=$root_sectors, type=83
	EOF
	dd if="$TOOLS/root/usr/lib/syslinux/mbr/mbr.bin" of="$raw" bs=440 \
		count=1 conv=notrunc status=none
	make_boot "$OUT/boot.fat"
	dd if="$OUT/boot.fat" of="$raw" bs=1M seek=1 conv=notrunc,sparse \
		status=none
	rm -f "$OUT/root.ext4"
	truncate -s $((root_sectors * 512)) "$OUT/root.ext4"
	step "making the root file system (mkfs.ext4 -d," \
		"$(du -sh "$WORK" | cut -f1))"
	run_logged "$OUT/mkfs.log" mkfs.ext4 -F -L vgpu-root -U "$ROOT_UUID" \
		-d "$WORK" "$OUT/root.ext4"
	dd if="$OUT/root.ext4" of="$raw" bs=1M seek=$((1 + BOOT_MIB)) \
		conv=notrunc,sparse status=none
	rm -f "$OUT/root.ext4" "$OUT/boot.fat"
}

# The image's key: everything that goes into it.
image_key()
{
	local f files=()
	while IFS= read -r -d '' f; do
		files+=("$f")
	done < <(find "$HERE/rootfs" -type f -print0 | sort -z)
	files+=("$0" "$HERE/examples" "$GUEST_MODULE" "$BUILD/lib/libcuda.so.1"
		"$CUDA_LIB/libcudart.so.13")
	for f in "${EXAMPLES[@]}"; do
		files+=("$BUILD/tests/runtime/$f" "tests/runtime/$f.cu")
	done
	echo "$(cat "$BASE/.key") $SIZE $COMPRESS $(sum_files "${files[@]}")"
}

step "start"
[ "$(id -u)" -eq 0 ] || die "run as root (mmdebstrap's root mode, a chroot)"
mkdir -p "$OUT"
exec 9>"$OUT.lock"
flock 9
vm_kernel || die "cannot get the Debian kernel (vm-images/kernel.sh)"
for f in "$GUEST_MODULE" "$BUILD/lib/libcuda.so.1"; do
	[ -f "$f" ] || die "$f is not built (make all guest-modules)"
done
[ -f "$CUDA_LIB/libcudart.so.13" ] ||
	die "no NVIDIA libcudart.so.13 in $CUDA_LIB (the CUDA toolkit)"
for f in "${EXAMPLES[@]}"; do
	[ -x "$BUILD/tests/runtime/$f" ] ||
		die "$BUILD/tests/runtime/$f is not built (make all)"
done
vermagic=$(ko_info vermagic "$GUEST_MODULE")
[ "${vermagic%% *}" = "$KVER" ] ||
	die "$GUEST_MODULE is built for ${vermagic%% *}, not $KVER (make guest-modules)"
debs_fetch "$TOOLS" "the host tools: " "${TOOL_PKGS[@]}"
export PATH="$TOOLS/root/usr/bin:$TOOLS/root/usr/sbin:$TOOLS/root/sbin:$PATH"
build_base

key=$(image_key)
if [ -f "$OUT/vgpu-guest.qcow2" ] && [ "$(cat "$OUT/image.key" 2>/dev/null)" = "$key" ]; then
	step "vgpu-guest.qcow2 unchanged ($(du -h "$OUT/vgpu-guest.qcow2" | cut -f1))"
	exit 0
fi
step "laying the vgpu files over the base system"
echo "root=UUID=$ROOT_UUID ro console=tty0 console=ttyS0,115200n8" \
	>"$OUT/cmdline.tmp"
make_tree
make_disk "$OUT/disk.raw"
step "converting to qcow2$([ "$COMPRESS" = 0 ] || echo ", compressed")"
compress=(-c)
[ "$COMPRESS" != 0 ] || compress=()
qemu-img convert -f raw -O qcow2 "${compress[@]}" \
	"$OUT/disk.raw" "$OUT/vgpu-guest.qcow2.tmp" ||
	die "qemu-img convert failed"
rm -f "$OUT/disk.raw"
cp "$BASE/boot/vmlinuz-$KVER" "$OUT/vmlinuz"
cp "$BASE/boot/initrd.img-$KVER" "$OUT/initrd.img"
mv "$OUT/cmdline.tmp" "$OUT/cmdline"
mv "$OUT/vgpu-guest.qcow2.tmp" "$OUT/vgpu-guest.qcow2"
echo "$key" >"$OUT/image.key"
rm_tree "$WORK"
step "$OUT/vgpu-guest.qcow2 ready ($(du -h "$OUT/vgpu-guest.qcow2" | cut -f1)," \
	"virtual $SIZE); also vmlinuz, initrd.img, cmdline for a direct boot"
