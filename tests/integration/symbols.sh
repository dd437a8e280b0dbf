#!/bin/bash
# SPDX-License-Identifier: MIT
# Our libcuda.so.1 can stand in for NVIDIA's for every test program: it
# defines every cu* symbol a program needs (nm -D --undefined-only of the
# program against nm -D --defined-only of the library), has the soname
# programs link against, and carries the vgpu_client_library marker.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
tap_init
LIB="$VGPU_LIB/libcuda.so.1"
[ -e "$LIB" ] || tap_skip_all "$LIB is not built"
command -v nm >/dev/null || tap_skip_all "nm (binutils) is not installed"

# Symbol names without their @version suffix.
defined=$(nm -D --defined-only "$LIB" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" = libcuda.so.1 ]; then
	tap_ok "the library's soname is libcuda.so.1"
else
	tap_not_ok "the library's soname is libcuda.so.1" "soname '$soname'"
fi
if grep -qx vgpu_client_library <<<"$defined"; then
	tap_ok "the library exports the vgpu_client_library marker"
else
	tap_not_ok "the library exports the vgpu_client_library marker"
fi

found=0
for p in "$PROGRAMS"/*; do
	if [ ! -f "$p" ] || [ ! -x "$p" ]; then
		continue
	fi
	found=1
	needed=$(nm -D --undefined-only "$p" | awk '{print $NF}' |
		sed 's/@.*//' | grep '^cu' | sort -u || true)
	missing=$(comm -23 <(echo "$needed") <(echo "$defined") | sed '/^$/d')
	if [ -z "$missing" ]; then
		tap_ok "$(basename "$p"): all $(echo "$needed" | wc -w) cu* symbols are defined"
	else
		tap_not_ok "$(basename "$p"): all cu* symbols are defined" \
			"missing: $(echo "$missing" | tr '\n' ' ')"
	fi
done
[ "$found" = 1 ] || tap_not_ok "test programs are built in $PROGRAMS"
tap_done
