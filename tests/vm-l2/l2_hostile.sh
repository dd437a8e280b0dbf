#!/bin/sh
# SPDX-License-Identifier: MIT
# Hostile guest processes harm nobody but themselves: one writes garbage
# into its ring (the worker breaks that client only), one unmaps its ring
# with a command in flight, one is killed in the middle of a copy. A
# client of the same vGPU keeps running correctly throughout (a loop of
# vector_add_rt), a new program runs correctly afterwards, and every
# channel is free again.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh
# shellcheck source=tests/vm-l2/l2_lib.sh
. ./l2_lib.sh

need_guest_driver "hostile guest processes"
channels=$(guest_attr channels)

# the bystander: runs vector_add_rt (copies, a kernel, a check against
# the CPU) over and over until told to stop; every run must pass
(
	runs=0 bad=0
	while [ ! -e "$TMP/stop" ]; do
		if cuda vector_add_rt >"$TMP/bystander.last" 2>&1; then
			runs=$((runs + 1))
		else
			bad=$((bad + 1))
			cat "$TMP/bystander.last" >>"$TMP/bystander.bad"
		fi
		echo "$runs $bad" >"$TMP/bystander"
	done
) &
bystander=$!
if ! wait_for "$L2_PROG_TIMEOUT" "the bystander's first run" \
	test -s "$TMP/bystander"; then
	not_ok "a bystander client (vector_add_rt, again and again) runs" \
		"$(cat "$TMP/bystander.last" 2>&1)"
	touch "$TMP/stop"
	finish
fi
ok "a bystander client (vector_add_rt, again and again) is running"

check "garbage descriptors get errors; a garbage sq_tail breaks that ring" \
	timeout 60 l2_ring garbage
diag_file "$TMP/out"
check "a process unmaps its ring with a 64 MiB memset in flight and exits" \
	timeout 60 l2_ring unmap
diag_file "$TMP/out"

cuda_bg "$TMP/victim" long_copy 120 8
victim=$BG_PID
if wait_for 60 "the victim to start copying" \
	grep -q 'long_copy: copying' "$TMP/victim"; then
	sleep 1
	kill -KILL "$victim"
	rc=0
	wait_pid "$victim" 10 || rc=$?
	check "a process killed mid-copy (SIGKILL) is gone" test "$rc" -eq 137
else
	not_ok "a victim client starts copying" "$(cat "$TMP/victim")"
	kill -KILL "$victim" 2>/dev/null
fi

touch "$TMP/stop"
rc=0
wait_pid "$bystander" "$L2_PROG_TIMEOUT" || rc=$?
read -r runs bad <"$TMP/bystander"
if [ "$rc" -eq 0 ] && [ "$bad" -eq 0 ] && [ "$runs" -ge 2 ]; then
	ok "the bystander ran correctly throughout ($runs runs, none failed)"
else
	not_ok "the bystander ran correctly throughout" \
		"$runs runs passed, $bad failed, loop exit $rc"
	diag_file "$TMP/bystander.bad"
fi
check "a new program runs correctly afterwards (vector_add_rt)" \
	cuda vector_add_rt
check "the device is still ready" test "$(guest_attr state)" = ready
# the channels of the broken, unmapped and killed clients are free again
if wait_for 20 "every channel to be free" sh -c \
	"l2_ring channels | grep -q '^channels: $channels open, then EBUSY'"; then
	ok "all $channels channels can be opened again (none leaked)"
else
	not_ok "all $channels channels can be opened again (none leaked)" \
		"$(l2_ring channels 2>&1)"
fi
finish
