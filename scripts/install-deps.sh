#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Installs the Debian packages a target needs, once:
#   install-deps.sh build   compiler and make (make demo, make all)
#   install-deps.sh test    + cmocka, valgrind, binutils, procps, util-linux,
#                           qemu-system-x86, cpio, bc, libelf1 (VM tests)
#   install-deps.sh demo-vm + qemu-system-x86, cpio, bc, libelf1 only (the
#                           demo's VM part, scripts/demo-vm.sh)
# What is already there is not installed again, so a machine without a
# network (the GPU machine) that has the tools passes without apt-get.
set -euo pipefail
what=${1:-test}
# command -> Debian package that provides it
declare -A need=([gcc]=gcc [make]=make [nm]=binutils)
pkgs=(libc6-dev libyaml-dev libjansson-dev libzstd-dev liblz4-dev)
if [ "$what" = test ]; then
	need+=([valgrind]=valgrind [pgrep]=procps [setpriv]=util-linux
		[useradd]=passwd)
	pkgs+=(libcmocka-dev)
fi
if [ "$what" = test ] || [ "$what" = demo-vm ]; then
	# the VM tests (vm-images/): QEMU, cpio for the initramfs, bc and
	# libelf1 for Kbuild (make modules); the kernel, busybox and mdevctl
	# come as .debs (apt-get download)
	need+=([qemu-system-x86_64]=qemu-system-x86 [cpio]=cpio [bc]=bc)
	ldconfig -p 2>/dev/null | grep -q 'libelf\.so\.1 ' ||
		need+=([libelf.so.1]=libelf1)
fi
missing=()
for cmd in "${!need[@]}"; do
	command -v "$cmd" >/dev/null || missing+=("${need[$cmd]}")
done
for p in "${pkgs[@]}"; do
	# headers count as present when the compiler finds them
	case $p in
	libc6-dev) echo '#include <stdio.h>' ;;
	libyaml-dev) echo '#include <yaml.h>' ;;
	libjansson-dev) echo '#include <jansson.h>' ;;
	libzstd-dev) echo '#include <zstd.h>' ;;
	liblz4-dev) echo '#include <lz4.h>' ;;
	libcmocka-dev) printf '#include <stdarg.h>\n#include <stddef.h>\n#include <stdint.h>\n#include <setjmp.h>\n#include <cmocka.h>\n' ;;
	esac | ${CC:-gcc} -E -x c - >/dev/null 2>&1 || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
	echo "error: missing ${missing[*]} and no apt-get to install them" >&2
	exit 1
fi
echo "installing Debian packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
