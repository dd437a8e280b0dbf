#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Fetch Debian 12's current amd64 kernel (linux-image-amd64), its headers,
# the common headers and linux-kbuild-6.1 into ${VM_BUILD:-build/vm}/kernel,
# without installing anything system-wide (apt-get download + dpkg -x).
# Cached: when the extracted tree is complete a second run only prints
# (remove ${VM_BUILD}/kernel to move to a newer Debian kernel).
#
# Usage: eval "$(vm-images/kernel.sh)"
# Prints: KVER= KDIR= (headers build dir) VMLINUZ= KMODDIR= (lib/modules/KVER/kernel)
# Progress goes to stderr.
set -euo pipefail

VM_BUILD=${VM_BUILD:-build/vm}
mkdir -p "$VM_BUILD"
VM_BUILD=$(cd "$VM_BUILD" && pwd)
KROOT=$VM_BUILD/kernel
STAMP=$KROOT/.complete

log() { echo "kernel.sh: $*" >&2; }

# Serialise concurrent runs (two builds may start at once).
exec 9>"$VM_BUILD/kernel.lock"
flock 9

if [ -f "$STAMP" ]; then
	# shellcheck disable=SC1090
	. "$STAMP"
else
	# The Debian ABI name of the current kernel, e.g. 6.1.0-28-amd64.
	KVER=$(apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-[0-9]/ { sub("linux-image-", "", $2); print $2; exit }')
	if [ -z "$KVER" ]; then
		log "cannot resolve linux-image-amd64 (run apt-get update?)"
		exit 1
	fi
	log "fetching Debian kernel $KVER into $KROOT"
	rm -rf "$KROOT"
	mkdir -p "$KROOT/debs" "$KROOT/root"
	(cd "$KROOT/debs" &&
		apt-get download "linux-image-$KVER" "linux-headers-$KVER" \
			"linux-headers-${KVER%-amd64}-common" linux-kbuild-6.1 >&2)
	for d in "$KROOT"/debs/*.deb; do
		log "extracting $(basename "$d")"
		dpkg -x "$d" "$KROOT/root"
	done
	KDIR=$KROOT/root/usr/src/linux-headers-$KVER
	# The headers Makefile includes the -common tree by absolute path.
	sed -i "s#^include /usr/src/#include $KROOT/root/usr/src/#" "$KDIR/Makefile"
	# linux-kbuild ships the host tools under /usr/lib/linux-kbuild-6.1;
	# the headers tree links scripts/ and tools/ there by absolute path.
	for l in scripts tools; do
		t=$(readlink "$KDIR/$l" 2>/dev/null || true)
		case "$t" in
		/*) ln -sfn "$KROOT/root$t" "$KDIR/$l" ;;
		esac
	done
	for f in "$KDIR/Makefile" "$KROOT/root/boot/vmlinuz-$KVER" \
		"$KROOT/root/lib/modules/$KVER/kernel/drivers/vfio/mdev/mdev.ko"; do
		[ -e "$f" ] || { log "missing $f after extraction"; exit 1; }
	done
	rm -rf "$KROOT/debs"
	echo "KVER=$KVER" >"$STAMP.tmp"
	mv "$STAMP.tmp" "$STAMP"
	log "kernel $KVER ready"
fi

echo "KVER=$KVER"
echo "KDIR=$KROOT/root/usr/src/linux-headers-$KVER"
echo "VMLINUZ=$KROOT/root/boot/vmlinuz-$KVER"
echo "KMODDIR=$KROOT/root/lib/modules/$KVER/kernel"
