#!/bin/bash
# SPDX-License-Identifier: MIT
# Installs the Debian packages the build and the tests need, once. On a
# machine without apt (the GPU machine) it checks instead of installing.
set -euo pipefail
pkgs=(gcc make libc6-dev libcmocka-dev valgrind procps)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
	echo "error: missing packages ${missing[*]} and no apt-get to install them" >&2
	exit 1
fi
echo "installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
