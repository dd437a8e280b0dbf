#!/bin/bash
# SPDX-License-Identifier: MIT
#
# For a machine without Debian's archive (the GPU machine): fetch the
# libraries the build links (libyaml, jansson, libzstd, liblz4) here with `apt-get download`
# and unpack them into .debs/root (ignored by git). Send .debs with the tree
# (the device tool's `carry`); the Makefile then compiles and links against
# .debs/root and sets an rpath to it. Nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."
rm -rf .debs
mkdir -p .debs/root
(cd .debs && apt-get download -q libyaml-0-2 libyaml-dev libjansson4 \
	libjansson-dev libzstd1 libzstd-dev liblz4-1 liblz4-dev >/dev/null)
for d in .debs/*.deb; do dpkg -x "$d" .debs/root; done
rm -f .debs/*.deb
echo "unpacked into .debs/root: $(ls .debs/root/usr/lib/x86_64-linux-gnu | tr '\n' ' ')"
