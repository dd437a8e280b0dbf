#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# NVIDIA's CUDA 12 runtime on our driver (issue 17: versions): Debian's
# libcudart12 (trixie, non-free: NVIDIA's libcudart.so.12, fetched once
# into $BUILD/cache and checked against the archive's SHA256, never
# committed) runs tests/runtime12/rt12 on a simulator vGPU through
# vgpu-run: it asks for the same export tables and passes the integrity
# check (as a CUDA 12 runtime), then allocates, copies and fills. Skipped
# when the archive cannot be reached.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
P="$BUILD/tests/runtime12/rt12"
CACHE="$BUILD/cache/libcudart12"
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
[ -x "$P" ] || tap_skip_all "$P is not built"
command -v curl >/dev/null || tap_skip_all "curl is not installed"

# fetch_cudart12: the newest libcudart12 of trixie non-free, unpacked into
# $CACHE/root, once
fetch_cudart12() {
	local idx deb sum file
	[ -e "$CACHE/.complete" ] && return 0
	rm -rf "$CACHE"
	mkdir -p "$CACHE"
	idx=$(curl -fsS --max-time 60 \
		"$MIRROR/dists/trixie/non-free/binary-amd64/Packages.xz" | xz -dc |
		awk '/^Package: libcudart12$/,/^$/') || return 1
	file=$(sed -n 's/^Filename: //p' <<<"$idx")
	sum=$(sed -n 's/^SHA256: //p' <<<"$idx")
	[ -n "$file" ] && [ -n "$sum" ] || return 1
	deb="$CACHE/$(basename "$file")"
	curl -fsS --max-time 120 -o "$deb" "$MIRROR/$file" || return 1
	echo "$sum  $deb" | sha256sum -c --quiet - || return 1
	dpkg-deb -x "$deb" "$CACHE/root" && rm -f "$deb" &&
		basename "$file" >"$CACHE/.complete"
}
fetch_cudart12 || tap_skip_all "cannot fetch Debian's libcudart12 from $MIRROR"
LIB12=$(dirname "$(find "$CACHE/root" -name 'libcudart.so.12' | head -1)")
[ -e "$LIB12/libcudart.so.12" ] || tap_skip_all "no libcudart.so.12 in $CACHE"

vgpu_test_start
tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
out="$TEST_TMP/rt12.out"
rc=0
VGPU_TRACE=1 LD_LIBRARY_PATH="$LIB12" timeout -k 5 "$PROGRAM_TIMEOUT" \
	"$BUILD/bin/vgpu-run" --socket "$RUN_DIR/client.sock" a "$P" \
	>"$out" 2>&1 || rc=$?
grep '^rt12:' "$out" | tap_diag
if [ $rc = 0 ] && grep -q '^rt12: OK$' "$out"; then
	tap_ok "CUDA 12 runtime ($(cat "$CACHE/.complete")): memory calls on a vGPU, results right"
else
	tap_not_ok "CUDA 12 runtime: memory calls on a vGPU" "status $rc"
	grep -v '^vgpu-trace: proc' "$out" | tail -5 | tap_diag
fi
if grep -q '^vgpu-trace: integrity check version 12' "$out"; then
	tap_ok "... its integrity check (a CUDA 12 version) was answered"
else
	tap_not_ok "... its integrity check (a CUDA 12 version) was answered"
fi
tap_vgpud_alive
tap_done
