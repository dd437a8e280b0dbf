# shellcheck shell=dash
# SPDX-License-Identifier: MIT
#
# Helpers for the L2 tests (tests/vm-l2/l2_*.sh, run by busybox sh in the
# nested guest; source after tests/vm/lib.sh, which gives ok, not_ok,
# check, wait_for, finish).
#
#   guest_load          insmod vgpu_guest.ko (once); false when it is not
#                       in the image or does not load
#   guest_dev           /dev/vgpu0 (VGPU_DEVICE when set)
#   guest_attr NAME     /sys/class/vgpu/vgpu0/NAME
#   cuda PROGRAM ARGS   a CUDA program with our library, bounded by
#                       L2_PROG_TIMEOUT (90 s); the library finds the
#                       device itself (pci transport: /dev/vgpu0 exists,
#                       VGPU_SOCKET unset)
#   cuda_bg OUT PROGRAM ARGS   the same in the background, output in OUT,
#                       its pid in BG_PID
#   wait_pid PID SECONDS       waits for a background program; its exit
#                       status, or 124 after SECONDS (then it is killed)
# L1 passes what the vGPU should look like: L2_EXPECT_SMS, L2_EXPECT_MEMORY
# (bytes), L2_EXPECT_NAME.

GUEST_MODULE=/lib/modules/vgpu_guest.ko
L2_PROG_TIMEOUT=${L2_PROG_TIMEOUT:-90}
BG_PID=

guest_load()
{
	[ -d /sys/module/vgpu_guest ] && return 0
	[ -f "$GUEST_MODULE" ] || return 1
	insmod "$GUEST_MODULE"
}

guest_dev()
{
	echo "${VGPU_DEVICE:-/dev/vgpu0}"
}

guest_attr()
{
	cat "/sys/class/vgpu/vgpu0/$1"
}

cuda()
{
	LD_LIBRARY_PATH=/vgpu/lib timeout "$L2_PROG_TIMEOUT" "$@"
}

cuda_bg()
{
	local out=$1
	shift
	LD_LIBRARY_PATH=/vgpu/lib "$@" >"$out" 2>&1 &
	# shellcheck disable=SC2034 # the caller's result
	BG_PID=$!
}

wait_pid()
{
	local pid=$1 secs=$2 rc=0
	if ! wait_for "$secs" "pid $pid to exit" \
		sh -c "! kill -0 $pid 2>/dev/null"; then
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
		return 124
	fi
	wait "$pid" 2>/dev/null || rc=$?
	return "$rc"
}

# Skips the rest of a script when the guest driver is not there.
need_guest_driver()
{
	if ! guest_load >"$TMP/load" 2>&1; then
		skip "$1" "no vgpu_guest.ko in L2, or it does not load: $(cat "$TMP/load")"
		finish
	fi
	if ! wait_for 10 "$(guest_dev)" test -c "$(guest_dev)"; then
		not_ok "$(guest_dev) appears after insmod vgpu_guest.ko"
		dmesg | tail -n 10 | sed 's/^/# /'
		finish
	fi
}
