#!/bin/sh
# SPDX-License-Identifier: MIT
# vgpud killed: every instance's device state turns ERROR (a holder sees
# it, with its channel failed); vgpud started again: READY again, the
# channel opens and serves a NOP, and the other instance is back too.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

T="vgpu-8sm-4g"

module_load
if ! vgpud_has_mdev; then
	skip "vgpud killed and restarted" "vgpud has no --mdev yet"
	finish
fi
if ! check "vgpud starts with the mdev transport" vgpud_start; then
	finish
fi
wait_for 10 "vgpud to publish what it can create" \
	available_is "$T" -gt 0
a=$(new_uuid)
b=$(new_uuid)
mdev_create "$T" "$a"
check "create instances A and B" mdev_create "$T" "$b"
dir=$TMP/hold
mkdir -p "$dir"
vfio_user hold "$a" "$dir" 120 recover >"$TMP/hold.log" 2>&1 &
holder=$!
if ! wait_for 30 "the holder to open A" test -e "$dir/holding"; then
	not_ok "a holder opens A with channel 0"
	diag_file "$TMP/hold.log"
	finish
fi
touch "$dir/holding.go"
vgpud_kill
if wait_for 10 "the holder to see ERROR" grep -q "device state 2" "$TMP/hold.log"; then
	ok "vgpud killed: A's device state is ERROR ($(grep -m1 'device state 2' "$TMP/hold.log" | cut -d: -f2))"
else
	not_ok "vgpud killed: A's device state is ERROR"
fi
check "vgpud killed: B's device state is ERROR" test "$(regs "$b" state)" = 2
check "vgpud starts again" vgpud_start
if wait_for 60 "A to recover" grep -q "event: recovered" "$TMP/hold.log"; then
	ok "A is READY again and its channel serves a NOP"
else
	not_ok "A is READY again and its channel serves a NOP"
fi
sed 's/^/# holder: /' "$TMP/hold.log"
wait_for 10 "the holder to exit" sh -c "! kill -0 $holder 2>/dev/null"
wait "$holder" 2>/dev/null
check "B is READY again" test "$(regs "$b" state)" = 1
check "B still works (vfio_user basic)" \
	vfio_user basic "$b" "$(type_sms $T)" "$(type_memory $T)"
mdev_remove "$a"
mdev_remove "$b"
check "with the instances removed the counters are zero" \
	wait_for 10 "the counters to drop" objects_zero
vgpud_stop
finish
