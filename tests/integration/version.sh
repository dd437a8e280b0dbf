#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Protocol versions: a client of another major version is refused with
# VGPU_HELLO_BAD_VERSION and a sentence that says so, both on the client
# and the admin socket; a newer minor version of the same major is
# accepted.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
for p in hostile_hello hostile_admin; do
	[ -x "$HOSTILE/$p" ] || tap_skip_all "$HOSTILE/$p is not built"
done
vgpu_test_start
tap_run "create vGPU a" vadmin create a --sms 8 --memory 64M
SOCK="$RUN_DIR/client.sock"

tap_expect "a client of major version + 1 is refused, and told about versions" \
	0 'BAD_VERSION.*(version|protocol [0-9])' "$HOSTILE/hostile_hello" "$SOCK" a wrong-major
tap_expect "a client of major version 0 is refused, and told about versions" \
	0 'BAD_VERSION.*(version|protocol [0-9])' "$HOSTILE/hostile_hello" "$SOCK" a older-major
tap_run "a client of a newer minor version is accepted" \
	"$HOSTILE/hostile_hello" "$SOCK" a newer-minor
tap_expect "an admin client of another major version gets BAD_VERSION" \
	0 'status 2: .*(version|protocol [0-9])' "$HOSTILE/hostile_admin" "$RUN_DIR/admin.sock" wrong-major
tap_run "a client of the right version still runs vector_add" \
	client a "$(prog vector_add)" 65536
tap_vgpud_stops
tap_done
