#!/bin/sh
# shellcheck disable=SC2317 # functions run through check
# SPDX-License-Identifier: MIT
# A hostile VFIO user and rough handling: bad accesses and commands
# (vfio_user hostile) while another instance stays unharmed, remove while
# a holder has the device open (bounded; the holder sees an error state),
# a reset (a guest reboot) frees the vGPU's memory, and 100 rapid
# create/remove cycles leave nothing behind.
# shellcheck shell=dash source=tests/vm/lib.sh
. ./lib.sh

T="vgpu-8sm-4g"
SMS=8
MEM=4294967296

# run_prog NAME COMMAND...: a vfio_user run whose TAP lines join ours; a
# crash (status > 1) is a failure of its own.
run_prog()
{
	name=$1
	shift
	rc=0
	"$@" || rc=$?
	[ "$rc" -le 1 ] || not_ok "$name exited with status $rc"
}

# Waits for a background vfio_user to exit (secs); its status, or 124.
wait_prog()
{
	wait_for "$2" "vfio_user to finish" sh -c "! kill -0 $1 2>/dev/null" ||
		{ kill -KILL "$1"; wait "$1"; return 124; }
	wait "$1"
}

module_load
if ! vgpud_has_mdev; then
	skip "hostile VFIO user" "vgpud has no --mdev yet"
	finish
fi
if ! check "vgpud starts with the mdev transport" vgpud_start; then
	finish
fi
wait_for 10 "vgpud to publish what it can create" \
	available_is "$T" -gt 0
a=$(new_uuid)
b=$(new_uuid)
create_ab()
{
	mdev_create "$T" "$a" && mdev_create "$T" "$b"
}
check "create instances A and B" create_ab
vgpu_a=$(regs "$a" vgpu)

# bad input on A; B must not notice
run_prog "vfio_user hostile" vfio_user hostile "$a"
check "instance B is unharmed (vfio_user basic passes)" \
	vfio_user basic "$b" "$SMS" "$MEM"

# remove while a holder has A open
dir=$TMP/hold
mkdir -p "$dir"
vfio_user hold "$a" "$dir" 60 error >"$TMP/hold.log" 2>&1 &
holder=$!
if wait_for 30 "the holder to open A" test -e "$dir/holding"; then
	touch "$dir/holding.go"
	start=$(date +%s)
	mdev_remove "$a" &
	remover=$!
	if wait_for 30 "the remove to finish" sh -c "! kill -0 $remover 2>/dev/null"; then
		ok "remove while open finishes in $(($(date +%s) - start)) s"
	else
		not_ok "remove while open finishes within 30 s"
	fi
	wait "$remover" 2>/dev/null
	if grep -q "event: request\|device state 2" "$TMP/hold.log"; then
		ok "the holder saw the device go: $(grep -m1 'event: request\|device state 2' "$TMP/hold.log")"
	else
		not_ok "the holder saw an error state or the request"
	fi
	sed 's/^/# holder: /' "$TMP/hold.log"
	check_fails "A is gone" mdev_exists "$a"
	check "A's vGPU $vgpu_a is destroyed" \
		wait_for 10 "$vgpu_a to go" vgpu_absent "$vgpu_a"
else
	not_ok "the holder opens A"
	diag_file "$TMP/hold.log"
fi
rc=0
wait_prog "$holder" 30 || rc=$?
check "the holder exits on its own (status $rc)" test "$rc" = 0
check "instance B is still unharmed" vfio_user basic "$b" "$SMS" "$MEM"

# a reset frees the vGPU's memory
c=$(new_uuid)
dir=$TMP/reset
mkdir -p "$dir"
if check "create instance C" mdev_create "$T" "$c"; then
	vgpu=$(regs "$c" vgpu)
	vfio_user reset "$c" "$dir" >"$TMP/reset.log" 2>&1 &
	prog=$!
	if wait_for 30 "C to allocate" test -e "$dir/allocated" &&
		wait_for 10 "the worker's stats" vgpu_json_is "$vgpu" memory_used -gt 0; then
		ok "vgpu-admin show $vgpu: $(vgpu_json "$vgpu" memory_used) bytes in use after MEM_ALLOC"
	else
		not_ok "vgpu-admin show $vgpu: memory in use after MEM_ALLOC" \
			"memory_used '$(vgpu_json "$vgpu" memory_used)'"
	fi
	touch "$dir/allocated.go"
	if wait_for 30 "C's reset" test -e "$dir/reset" &&
		wait_for 10 "the memory to be freed" vgpu_json_is "$vgpu" memory_used = 0; then
		ok "after VFIO_DEVICE_RESET the vGPU's memory in use is 0"
	else
		not_ok "after VFIO_DEVICE_RESET the vGPU's memory in use is 0" \
			"memory_used '$(vgpu_json "$vgpu" memory_used)'"
	fi
	touch "$dir/reset.go"
	rc=0
	wait_prog "$prog" 30 || rc=$?
	cat "$TMP/reset.log"
	[ "$rc" -le 1 ] || not_ok "vfio_user reset exited with status $rc"
	mdev_remove "$c"
	wait_for 10 "$vgpu to go" vgpu_absent "$vgpu"
fi

# 100 rapid create/remove cycles, starting from B alone (7 more fit)
n0=7
wait_for 10 "$T to offer $n0" available_is "$T" = "$n0"
names0=$(vgpu_names)
back_to_start()
{
	available_is "$T" = "$n0" && [ "$(vgpu_names)" = "$names0" ]
}
start=$(date +%s)
bad=0
i=0
while [ $i -lt 100 ]; do
	u=$(new_uuid)
	if ! mdev_create "$T" "$u" 2>"$TMP/cycle.err"; then
		bad=$((bad + 1))
	elif ! mdev_remove "$u" 2>>"$TMP/cycle.err"; then
		bad=$((bad + 1))
	fi
	i=$((i + 1))
done
if [ "$bad" = 0 ]; then
	ok "100 create/remove cycles in $(($(date +%s) - start)) s"
else
	not_ok "100 create/remove cycles" "$bad failed"
	diag_file "$TMP/cycle.err"
fi
if wait_for 10 "the start state" back_to_start; then
	ok "afterwards $T offers $n0 again and vgpu-admin lists the same vGPUs"
else
	not_ok "afterwards nothing is left behind" \
		"available $(available "$T"), was $n0" "$(vgpu_names | tr '\n' ' ')"
fi
check "instance B is still unharmed" vfio_user basic "$b" "$SMS" "$MEM"
mdev_remove "$b"
check "with no instances left the counters are zero" \
	wait_for 10 "the counters to drop" objects_zero
vgpud_stop
finish
