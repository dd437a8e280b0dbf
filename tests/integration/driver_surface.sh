#!/bin/bash
# SPDX-License-Identifier: MIT
# Our libcuda.so.1 defines every function NVIDIA's CUDA toolkit stub
# libcuda.so exports (what programs and libraries link against), and
# every symbol NVIDIA's driver hands out through cuGetProcAddress
# (guest-driver/lib/procmap-cuda13.txt), so nothing fails to load and
# no cuGetProcAddress answer is missing (issue 17). Which ones work
# and which return CUDA_ERROR_NOT_SUPPORTED: tests/unit/test_cuda_proc.c.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
tap_init
LIB="$VGPU_LIB/libcuda.so.1"
STUB="${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so"
MAP="$VGPU_SRC/guest-driver/lib/procmap-cuda13.txt"
[ -e "$LIB" ] || tap_skip_all "$LIB is not built"
[ -e "$STUB" ] || tap_skip_all "no CUDA toolkit stub at $STUB"
command -v nm >/dev/null || tap_skip_all "nm (binutils) is not installed"

# Defined function names without their @version suffix.
functions() {
	nm -D --defined-only "$1" | awk '$2 == "T" { print $3 }' |
		sed 's/@.*//' | sort -u
}
ours=$(functions "$LIB")

# check WHAT NAMES: every one of NAMES is among ours.
check() {
	local what=$1 names=$2 missing
	missing=$(comm -23 <(echo "$names") <(echo "$ours") | sed '/^$/d')
	if [ -z "$missing" ]; then
		tap_ok "all $(echo "$names" | wc -w) $what are defined"
	else
		tap_not_ok "all $what are defined" \
			"missing $(echo "$missing" | wc -w): $(echo "$missing" | head -20 | tr '\n' ' ')"
	fi
}

stub=$(functions "$STUB")
if [ "$(echo "$stub" | wc -w)" -ge 600 ]; then
	tap_ok "the toolkit stub exports $(echo "$stub" | wc -w) functions"
else
	tap_not_ok "the toolkit stub exports 600 functions or more" \
		"$(echo "$stub" | wc -w) in $STUB"
fi
check "functions of NVIDIA's stub libcuda.so" "$stub"
mapped=$(grep -v '^#' "$MAP" | awk '{ for (i = 4; i <= NF; i += 2) if ($i != "-") print $i }' |
	sort -u)
check "symbols cuGetProcAddress hands out" "$mapped"
for v in _v2 _v3 _ptsz _ptds; do
	check "$v variants of the stub" "$(grep -- "$v" <<<"$stub")"
done
tap_done
