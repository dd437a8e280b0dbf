#!/bin/sh
# SPDX-License-Identifier: MIT
# A vGPU's composition changes while a VFIO user holds its instance:
# vgpu-admin resize, move and migrate (two simulated GPUs); after each the
# user got the device interrupt and BAR0 shows the new SM_COUNT, SLICE_ID
# and GPU_INDEX with a higher CHANGE_COUNT (vfio_user follow), a new user
# sees the same, and a restarted vgpud never takes CHANGE_COUNT back.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

T=vgpu-16sm-8g
export VGPU_SIM_GPUS=2

module_load
if ! vgpud_has_mdev; then
	skip "BAR0 follows a resize" "vgpud has no --mdev yet"
	finish
fi
check "vgpud starts with the mdev transport (2 simulated GPUs)" \
	vgpud_start || finish
wait_for 10 "vgpud to publish what it can create" available_is "$T" -gt 0
u=$(new_uuid)
name=mdev-$(echo "$u" | cut -c1-8)
check "create a $T instance (vGPU $name)" mdev_create "$T" "$u" || finish

# reg_is UUID FIELD OP VALUE: test(1) of a BAR0 value (vfio_user regs)
reg_is()
{
	test "$(regs "$1" "$2")" "$3" "$4"
}

# step NAME WHAT COMMAND...: waits for the holder to reach NAME, runs the
# command (a check), then lets the holder look
step()
{
	local n=$1 what=$2
	shift 2
	if ! wait_for 30 "the holder to reach $n" test -e "$dir/$n"; then
		not_ok "$what: the holder is there"
		return 1
	fi
	check "$what" "$@"
	touch "$dir/$n.go"
}

dir=$TMP/follow
mkdir -p "$dir"
vfio_user follow "$u" "$dir" resize:24:3:0 move:24:3.5:0 migrate:24:3:1 \
	>"$TMP/follow.log" 2>&1 &
holder=$!
step resize "vgpu-admin resize $name --sms 24 (a VFIO user holds it)" \
	vadmin resize "$name" --sms 24
step move "vgpu-admin move $name --slice 5,6,7" \
	vadmin move "$name" --slice 5,6,7
step migrate "vgpu-admin migrate $name --gpu 1" \
	vadmin migrate "$name" --gpu 1
wait_for 30 "the holder to finish" sh -c "! kill -0 $holder 2>/dev/null"
rc=0
wait "$holder" 2>/dev/null || rc=$?
cat "$TMP/follow.log"
[ "$rc" -le 1 ] || not_ok "vfio_user follow exited with status $rc"

check "a new VFIO user sees 24 SMs" reg_is "$u" sms = 24
check "... on GPU 1" reg_is "$u" gpu_index = 1
before=$(regs "$u" change)
vgpud_kill
check "vgpud starts again" vgpud_start
wait_for 30 "the instance to be READY again" reg_is "$u" state = 1
after=$(regs "$u" change)
check "after a vgpud restart CHANGE_COUNT did not go back ($before -> $after)" \
	test "$after" -ge "$before"
check "vgpu-admin resize $name --sms 16 after the restart" \
	vadmin resize "$name" --sms 16
check "BAR0 shows 16 SMs" reg_is "$u" sms = 16
check "... and a higher CHANGE_COUNT ($after -> $(regs "$u" change))" \
	reg_is "$u" change -gt "$after"
check "remove it" mdev_remove "$u"
check "the counters are zero" wait_for 10 "the counters to drop" objects_zero
vgpud_stop
finish
