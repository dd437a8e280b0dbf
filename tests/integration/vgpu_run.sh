#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# vgpu-run NAME COMMAND (issue 17): an unmodified program, built with
# nvcc's default (static runtime) or -cudart shared (NVIDIA's
# libcudart.so.13 from the toolkit), runs on a vGPU of this host through
# the wrapper alone: vgpu's driver from its own directory, nothing else of
# vgpu's; bad use is a clear error.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
RUNW="$BUILD/bin/vgpu-run"
ST="$BUILD/tests/runtime-static"
SH="$BUILD/tests/runtime"
[ -x "$RUNW" ] || tap_skip_all "$RUNW is not built"
[ -x "$ST/vector_add_rt" ] || tap_skip_all "$ST is not built"
vgpu_test_start
vrun() { timeout -k 5 "$PROGRAM_TIMEOUT" "$RUNW" --socket "$RUN_DIR/client.sock" "$@"; }

tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
tap_run "vgpu-run a: nvcc's default build (static runtime)" \
	vrun a "$ST/vector_add_rt"
tap_run "vgpu-run a: a -cudart shared build" vrun a "$SH/vector_add_rt"
# what the shared build loads under the wrapper: vgpu's driver from its
# own directory, and NVIDIA's runtime (not vgpu's)
# (libcudart loads libcuda.so.1 with dlopen: the loader's log says which)
vrun a env LD_DEBUG=libs "$SH/vector_add_rt" >"$TEST_TMP/ld.log" 2>&1 || true
drv=$(sed -n 's/.*calling init: \(.*libcuda\.so\.1\)$/\1/p' "$TEST_TMP/ld.log" | head -1)
rt=$(sed -n 's/.*calling init: \(.*libcudart\.so\.13\)$/\1/p' "$TEST_TMP/ld.log" | head -1)
if [ "$(dirname "$drv")" = "$(cd "$VGPU_LIB/vgpu" && pwd)" ] &&
	[ "$(readlink -f "$drv")" = "$(readlink -f "$VGPU_LIB/libcuda.so.1")" ]; then
	tap_ok "the program loads vgpu's libcuda.so.1 from its own directory"
else
	tap_not_ok "the program loads vgpu's libcuda.so.1 from its own directory" \
		"it loads $drv"
fi
if [ -n "$rt" ] && [ "$(dirname "$(readlink -f "$rt")")" != "$(readlink -f "$VGPU_LIB")" ]; then
	tap_ok "... and NVIDIA's libcudart.so.13 ($rt), not vgpu's"
else
	tap_not_ok "... and NVIDIA's libcudart.so.13, not vgpu's" "it loads '$rt'"
fi
ls "$VGPU_LIB/vgpu" >"$TEST_TMP/driver-dir"
if [ "$(cat "$TEST_TMP/driver-dir")" = libcuda.so.1 ]; then
	tap_ok "the driver directory holds libcuda.so.1 and nothing else"
else
	tap_not_ok "the driver directory holds libcuda.so.1 and nothing else" \
		"$(tr '\n' ' ' <"$TEST_TMP/driver-dir")"
fi

# bad use: a usage line and status 2; no socket or no such vGPU: an error
# naming what is wrong, the program not run or failing cleanly
rc=0
"$RUNW" a >"$TEST_TMP/usage.err" 2>&1 || rc=$?
if [ $rc = 2 ] && grep -q '^usage: vgpu-run' "$TEST_TMP/usage.err"; then
	tap_ok "vgpu-run without a command: usage, status 2"
else
	tap_not_ok "vgpu-run without a command: usage, status 2" "status $rc"
fi
rc=0
"$RUNW" --socket "$TEST_TMP/none.sock" a true >"$TEST_TMP/nosock.err" 2>&1 || rc=$?
if [ $rc = 1 ] && grep -q "no vgpud socket at $TEST_TMP/none.sock" "$TEST_TMP/nosock.err"; then
	tap_ok "no vgpud socket: said, status 1"
else
	tap_not_ok "no vgpud socket: said, status 1" \
		"status $rc: $(cat "$TEST_TMP/nosock.err")"
fi
rc=0
vrun nosuch "$ST/vector_add_rt" >"$TEST_TMP/nosuch.out" 2>&1 || rc=$?
if [ $rc != 0 ] && grep -q "nosuch" "$TEST_TMP/nosuch.out"; then
	tap_ok "an unknown vGPU: the program fails, naming it"
else
	tap_not_ok "an unknown vGPU: the program fails, naming it" \
		"status $rc: $(tail -2 "$TEST_TMP/nosuch.out")"
fi
tap_vgpud_alive
tap_done
