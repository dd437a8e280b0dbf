#!/bin/bash
# SPDX-License-Identifier: MIT
#
# guest-driver/kmod/vm-smoke.sh [COMMAND...]: boots the test VM of
# vm-images/ with vgpu_guest.ko (/lib/modules/vgpu_guest.ko) and
# guest-driver/kmod/tests/*.sh (/vgpu/tests/) added, and runs COMMAND
# there (default: the guest module smoke test, tests/guest_module.sh).
# Exits with the guest command's status (run-vm.sh's conventions).
#
# The VM image itself does not carry the guest module yet, so the two
# files travel as one more cpio archive after vgpu.cpio.gz, in a private
# VM_BUILD that links the real one's kernel and base image. Needs
# `make all modules vm-image` done once (vm-images/README.md).
set -euo pipefail

cd "$(dirname "$0")/../.."
VM_BUILD=${VM_BUILD:-build/vm}
real=$(cd "$VM_BUILD" && pwd)
img=$real/initramfs
for p in base vgpu; do
	[ -f "$img/$p.cpio.gz" ] || {
		echo "vm-smoke.sh: $img/$p.cpio.gz is missing: run make vm-image" >&2
		exit 1
	}
done
make --no-print-directory guest-modules >&2

priv=$(mktemp -d "$real/guest-smoke.XXXXXX")
trap 'rm -rf "$priv"' EXIT
mkdir -p "$priv/initramfs" "$priv/extra/lib/modules" "$priv/extra/vgpu/tests"
ln -s "$real/kernel" "$priv/kernel"
[ ! -f "$real/accel" ] || cp "$real/accel" "$priv/accel"
ln -s "$img/base.cpio.gz" "$priv/initramfs/base.cpio.gz"
cp guest-driver/kmod/vgpu_guest.ko "$priv/extra/lib/modules/"
cp guest-driver/kmod/tests/*.sh "$priv/extra/vgpu/tests/"
chmod 0755 "$priv"/extra/vgpu/tests/*.sh
(cd "$priv/extra" && find . | cpio -o -H newc -R 0:0 --quiet) | gzip -1 \
	>"$priv/extra.cpio.gz"
cat "$img/vgpu.cpio.gz" "$priv/extra.cpio.gz" >"$priv/initramfs/vgpu.cpio.gz"

[ $# -gt 0 ] || set -- 'cd /vgpu/tests && sh ./guest_module.sh'
VM_BUILD=$priv vm-images/run-vm.sh --timeout "${VM_TIMEOUT:-300}" -- "$@"
