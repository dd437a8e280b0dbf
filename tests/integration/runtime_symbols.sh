#!/bin/bash
# SPDX-License-Identifier: MIT
# Our libcudart.so.13 can stand in for NVIDIA's for every runtime-API
# program we build (tests/runtime/, bench/rt_*): it has the soname they
# link against, and it defines every cuda*/__cuda* symbol each of them
# needs AT THE VERSION NODE the program asks for (objdump -T of the program:
# its "(libcudart.so.13)" undefined entries; of the library: defined
# entries of version libcudart.so.13), or the program would not load.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
LIB="$VGPU_LIB/libcudart.so.13"
NODE=libcudart.so.13
[ -e "$LIB" ] || tap_skip_all "$LIB is not built yet"
command -v objdump >/dev/null || tap_skip_all "objdump (binutils) is not installed"
tap_init

# "VERSION NAME" of every defined dynamic symbol of the library (hidden
# versions are shown in parentheses; they satisfy a versioned reference
# too, so the parentheses are dropped).
defined=$(objdump -T "$LIB" | awk '$0 !~ /\*UND\*/ && NF >= 7 {
		v = $(NF - 1); gsub(/[()]/, "", v); print v, $NF }' | sort -u)
soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
if [ "$soname" = "$NODE" ]; then
	tap_ok "the library's soname is $NODE"
else
	tap_not_ok "the library's soname is $NODE" "soname '$soname'"
fi
if grep -q "^$NODE " <<<"$defined"; then
	tap_ok "the library defines symbols at version node $NODE"
else
	tap_not_ok "the library defines symbols at version node $NODE"
fi

# Every function NVIDIA's libcudart.so.13 defines is defined by ours at
# that node (implemented, or a generated stub that fails with
# cudaErrorNotSupported), so no program dies with "symbol lookup error"
# at load time. Deliberate exceptions would be listed here (with their
# reasons in a comment) and are reported; there are none.
EXCEPTIONS=()
NVIDIA_LIB="${CUDA_HOME:-/usr/local/cuda}/lib64/libcudart.so.13"
if [ -e "$NVIDIA_LIB" ]; then
	theirs=$(objdump -T "$NVIDIA_LIB" | awk '$0 !~ /\*UND\*/ && NF >= 7 &&
			$(NF - 2) ~ /^[0-9a-f]+$/ && /DF/ { print $NF }' | sort -u)
	ours=$(awk -v node="$NODE" '$1 == node { print $2 }' <<<"$defined" |
		sort -u)
	lacking=$(comm -23 <(echo "$theirs") <(echo "$ours") |
		grep -vxF -f <(printf '%s\n' "${EXCEPTIONS[@]}" "") |
		sed '/^$/d' || true)
	if [ -z "$lacking" ]; then
		tap_ok "all $(echo "$theirs" | wc -l) functions of NVIDIA's libcudart.so.13 are defined at $NODE"
	else
		tap_not_ok "all functions of NVIDIA's libcudart.so.13 are defined at $NODE" \
			"missing: $(echo "$lacking" | tr '\n' ' ')"
	fi
	echo "deliberate exceptions: ${EXCEPTIONS[*]:-none}" | tap_diag
else
	tap_skip "all functions of NVIDIA's libcudart.so.13 are defined at $NODE" \
		"$NVIDIA_LIB is not installed"
fi

found=0
for p in "$BUILD"/tests/runtime/* "$BUILD"/bench/rt_*; do
	if [ ! -f "$p" ] || [ ! -x "$p" ]; then
		continue
	fi
	found=1
	# every symbol the program wants from libcudart.so.13, and any
	# cuda*/__cuda* symbol it wants from anywhere (unversioned too)
	needed=$(objdump -T "$p" | awk '/\*UND\*/ {
			v = $(NF - 1); n = $NF
			if (v == "(" node ")" || n ~ /^(__)?cuda/) print n }' \
		node="$NODE" | sort -u)
	unversioned=$(objdump -T "$p" | awk '/\*UND\*/ && $NF ~ /^(__)?cuda/ &&
			$(NF - 1) != "(" node ")" { print $NF }' node="$NODE" |
		sort -u)
	missing=$(comm -23 <(echo "$needed") \
		<(awk -v node="$NODE" '$1 == node { print $2 }' <<<"$defined" |
			sort -u) | sed '/^$/d')
	name=${p#"$BUILD"/}
	if [ -z "$needed" ]; then
		tap_not_ok "$name: needs libcudart.so.13 symbols" \
			"no (libcudart.so.13) references: built without -cudart shared?"
	elif [ -z "$missing" ] && [ -z "$unversioned" ]; then
		tap_ok "$name: all $(echo "$needed" | wc -l) cuda* symbols are defined at $NODE"
	else
		diag=()
		[ -z "$missing" ] ||
			diag+=("missing at $NODE: $(echo "$missing" | tr '\n' ' ')")
		[ -z "$unversioned" ] ||
			diag+=("referenced without a version: $(echo "$unversioned" | tr '\n' ' ')")
		tap_not_ok "$name: all cuda* symbols are defined at $NODE" \
			"${diag[@]}"
	fi
done
[ "$found" = 1 ] || tap_not_ok "runtime test programs are built in $BUILD/tests/runtime"
tap_done
