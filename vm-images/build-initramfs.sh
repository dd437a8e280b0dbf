#!/bin/bash
# SPDX-License-Identifier: MIT
#
# vm-images/build-initramfs.sh: the test VM's initramfs, in two parts that
# the kernel unpacks one after the other (concatenated cpio archives):
#
#   base.cpio.gz  Debian: busybox-static, mdevctl, the shared libraries our
#                 programs and mdevctl need (from ldd), the Debian kernel's
#                 vfio, vfio_iommu_type1 and mdev modules (with their
#                 dependencies), /etc
#   vgpu.cpio.gz  ours: /init, vgpu_mdev.ko, vgpud, vgpu-worker,
#                 vgpu-admin, the in-VM tests (tests/vm) and blueprints
#
# Modules live where modprobe looks: Debian's under
# /lib/modules/KVER/kernel/ (as in the package), ours under
# /lib/modules/KVER/extra/ (as `make modules_install` puts it), with the
# modules.dep of both from depmod (the image's own busybox, run here at
# build time), so `modprobe vgpu_mdev` works in the VM. /init and the
# tests load by the short names /lib/modules/NAME.ko (links).
#
# Each part is staged under ${VM_BUILD:-build/vm}/initramfs/PART/ (a file
# is copied only when its content changed) and packed again only when the
# staged tree changed. Debian packages are downloaded once (apt-get
# download + dpkg -x, nothing installed). Run from the repository root
# after `make all modules`; BUILD (default build) names the build output.
# With --fetch it only downloads (the kernel too) and exits.
set -euo pipefail

# shellcheck source=vm-images/lib.sh
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
MODULE=${VGPU_MODULE:-mdev/vgpu_mdev.ko}
OUT=$VM_BUILD/initramfs
DEBS=$VM_BUILD/debs
DEB_PKGS=(busybox-static mdevctl)
# Debian modules the guest loads at boot (their dependencies are added)
BOOT_MODULES=(vfio vfio_iommu_type1 mdev)

declare -A WANT # staged paths of this run, "PART/path"

# stage PART SRC DEST [MODE]: SRC (symlinks followed) as DEST in PART.
stage()
{
	local part=$1 src=$2 dest=$3 mode=${4:-}
	local to="$OUT/$part/$dest"

	[ -e "$src" ] || die "$src is missing"
	WANT["$part/$dest"]=1
	cmp -s "$src" "$to" && return 0
	mkdir -p "$(dirname "$to")"
	cp -L "$src" "$to.tmp"
	[ -z "$mode" ] || chmod "$mode" "$to.tmp"
	mv "$to.tmp" "$to"
}

# stage_text PART DEST MODE: stdin as the file DEST.
stage_text()
{
	local tmp
	tmp=$(mktemp "$OUT/text.XXXXXX")
	cat >"$tmp"
	chmod "$3" "$tmp"
	stage "$1" "$tmp" "$2" "$3"
	rm -f "$tmp"
}

# Prints the libraries a dynamic program needs (resolved paths and the
# loader), one per line.
libs_of()
{
	ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 }
		$1 ~ /^\// { print $1 }'
}

# ko_path NAME: the Debian module file of a module name.
ko_path()
{
	find "$KMODDIR" \( -name "$1.ko" -o -name "${1//_/-}.ko" \) -print -quit
}

# ko_deps FILE: the modules FILE depends on (its modinfo "depends=").
ko_deps()
{
	strings -a "$1" | sed -n 's/^depends=//p' | tr ',' ' '
}

# stage_link PART TARGET DEST: a symbolic link DEST -> TARGET in PART.
stage_link()
{
	local to="$OUT/$1/$3"

	WANT["$1/$3"]=1
	[ "$(readlink "$to" 2>/dev/null)" != "$2" ] || return 0
	mkdir -p "$(dirname "$to")"
	rm -rf "$to"
	ln -s "$2" "$to"
}

# Adds NAME's dependencies, then NAME, to ORDER (each once).
declare -a ORDER=()
declare -A SEEN=()
add_module()
{
	local name=$1 file dep
	[ -z "${SEEN[$name]:-}" ] || return 0
	SEEN[$name]=1
	file=$(ko_path "$name")
	[ -n "$file" ] || die "module $name is not in $KMODDIR"
	for dep in $(ko_deps "$file"); do
		add_module "$dep"
	done
	ORDER+=("$name")
	stage base "$file" "lib/modules/$KVER/kernel/${file#"$KMODDIR"/}" 0644
	stage_link base "$KVER/kernel/${file#"$KMODDIR"/}" "lib/modules/$name.ko"
}

stage_base()
{
	local m bin lib
	stage base "$DEBS/root/bin/busybox" bin/busybox 0755
	stage base "$DEBS/root/usr/bin/mdevctl" usr/bin/mdevctl 0755
	for m in "${BOOT_MODULES[@]}"; do
		add_module "$m"
	done
	if [ -f "$MODULE" ]; then
		# what our module needs from Debian's, loaded with the rest
		for m in $(ko_deps "$MODULE"); do
			add_module "$m"
		done
	fi
	stage_text base lib/modules/load-order 0644 < <(printf '%s\n' "${ORDER[@]}")
	for bin in "$DEBS/root/usr/bin/mdevctl" "$BUILD"/bin/vgpud \
		"$BUILD"/bin/vgpu-worker "$BUILD"/bin/vgpu-admin; do
		for lib in $(libs_of "$bin"); do
			stage base "$lib" "${lib#/}"
		done
	done
	stage_text base etc/passwd 0644 <<-'EOF'
		root:x:0:0:root:/root:/bin/sh
		vgpu:x:999:999:vgpu workers:/nonexistent:/bin/false
	EOF
	stage_text base etc/group 0644 <<-'EOF'
		root:x:0:
		vgpu:x:999:
	EOF
	mkdir -p "$OUT/base/etc/mdevctl.d/scripts.d/callouts" \
		"$OUT/base/etc/mdevctl.d/scripts.d/notifiers" \
		"$OUT"/base/{dev,proc,sys,tmp,run,root,usr/sbin,sbin}
}

stage_vgpu()
{
	local f
	stage vgpu "$VM_IMAGES/init" init 0755
	for f in vgpud vgpu-worker vgpu-admin; do
		stage vgpu "$BUILD/bin/$f" "usr/bin/$f" 0755
	done
	if [ -f "$MODULE" ]; then
		stage vgpu "$MODULE" "lib/modules/$KVER/extra/vgpu_mdev.ko" 0644
		stage_link vgpu "$KVER/extra/vgpu_mdev.ko" lib/modules/vgpu_mdev.ko
		stage_depmod
	else
		step "warning: no $MODULE (make modules): the image has no vgpu_mdev.ko"
	fi
	for f in tests/vm/*.sh; do
		[ -e "$f" ] || continue
		stage vgpu "$f" "vgpu/tests/$(basename "$f")" 0755
	done
	for f in "$BUILD"/tests/vm/*; do
		[ -x "$f" ] && stage vgpu "$f" "vgpu/bin/$(basename "$f")" 0755
	done
	for f in blueprints/*.yaml; do
		[ -e "$f" ] || continue
		stage vgpu "$f" "vgpu/blueprints/$(basename "$f")" 0644
	done
}

# modules.dep (and .alias, .symbols) for the image's /lib/modules/KVER:
# depmod of the image's busybox over a scratch tree holding both parts'
# modules (hard links), its output staged in the vgpu part.
stage_depmod()
{
	local tree=$OUT/depmod f
	rm -rf "$tree"
	mkdir -p "$tree/lib/modules"
	(cd "$OUT/base" && find "lib/modules/$KVER" -name '*.ko' -print0) |
		(cd "$OUT/base" && cpio -0 -pdl --quiet "$tree")
	(cd "$OUT/vgpu" && find "lib/modules/$KVER" -name '*.ko' -print0) |
		(cd "$OUT/vgpu" && cpio -0 -pdl --quiet "$tree")
	"$DEBS/root/bin/busybox" depmod -b "$tree" "$KVER" ||
		die "depmod failed"
	grep -q '^extra/vgpu_mdev.ko:' "$tree/lib/modules/$KVER/modules.dep" ||
		die "depmod did not list extra/vgpu_mdev.ko"
	for f in modules.dep modules.alias modules.symbols; do
		stage vgpu "$tree/lib/modules/$KVER/$f" "lib/modules/$KVER/$f" 0644
	done
	rm -rf "$tree"
}

# Removes staged files and links this run did not stage (from an earlier
# run).
prune()
{
	local part=$1 f
	while IFS= read -r -d '' f; do
		[ -n "${WANT[$part/${f#"$OUT/$part/"}]:-}" ] || rm -f "$f"
	done < <(find "$OUT/$part" \( -type f -o -type l \) -print0)
}

# Packs PART into PART.cpio.gz unless its staged tree is unchanged.
pack()
{
	local part=$1 sum
	sum=$(cd "$OUT/$part" && find . -printf '%p %m %s %T@\n' | sort | md5sum)
	if [ -f "$OUT/$part.cpio.gz" ] && [ "$(cat "$OUT/$part.sum" 2>/dev/null)" = "$sum" ]; then
		step "$part.cpio.gz unchanged"
		return 0
	fi
	(cd "$OUT/$part" && find . | LC_ALL=C sort |
		cpio -o -H newc -R 0:0 --quiet) | gzip -1 >"$OUT/$part.cpio.gz.tmp"
	mv "$OUT/$part.cpio.gz.tmp" "$OUT/$part.cpio.gz"
	echo "$sum" >"$OUT/$part.sum"
	step "$part.cpio.gz packed ($(du -h "$OUT/$part.cpio.gz" | cut -f1))"
}

step "start"
mkdir -p "$OUT"
# one build at a time in this directory (run-vm.sh reads under a shared lock)
exec 9>"$OUT.lock"
flock 9
vm_kernel || die "cannot get the Debian kernel (vm-images/kernel.sh)"
step "kernel $KVER"
debs_fetch "$DEBS" "" "${DEB_PKGS[@]}"
step "Debian packages ready (${DEB_PKGS[*]})"
[ "${1:-}" != --fetch ] || exit 0
for f in vgpud vgpu-worker vgpu-admin; do
	[ -x "$BUILD/bin/$f" ] || die "$BUILD/bin/$f is not built (make all)"
done
mkdir -p "$OUT/base" "$OUT/vgpu"
stage_base
prune base
pack base
stage_vgpu
prune vgpu
pack vgpu
step "initramfs ready in $OUT"
