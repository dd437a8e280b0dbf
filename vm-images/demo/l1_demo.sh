#!/bin/sh
# shellcheck disable=SC2317 # cleanup_demo runs through the EXIT trap
# SPDX-License-Identifier: MIT
#
# vm-images/demo/l1_demo.sh: the VM part of `make demo`, run by busybox sh
# in the test VM (L1). scripts/demo-vm.sh hands it to
# vm-images/l2/run-l1.sh as L1's command, after a few DEMO_* settings.
#
# Loads vgpu_mdev.ko, starts vgpud on the simulator (an H100-sized GPU:
# 132 SMs) with the mdev transport, composes two vGPUs from blueprints
# with `vgpu-admin create -f BP --mdev` (each gets an mdev instance), and
# boots one L2 guest per vGPU at the same time (QEMU, nested KVM, the
# instance as a vfio-pci device). In each guest vgpu_guest.ko binds the
# device and unmodified CUDA runtime programs (nvcc -cudart shared) run on
# it through /dev/vgpu0. Once both guests are ready, L1 tells both to go
# (a second serial port), streams their output labelled [vm-a]/[vm-b] and
# prints `vgpu-admin list` while their programs run. Then the guests power
# off, the instances are removed (which destroys the vGPUs), vgpud stops.
#
# Output: "vgpu-demo: step TEXT" lines are progress (the host shows them
# with the elapsed time), the rest is shown as it is. Exit status 0 when
# every program in both guests succeeded. A guest that hangs is killed
# and booted again once (l1_lib.sh's watchdogs); an L2 stuck in L1's KVM
# ends this L1 with "vgpu-l1: restart" (the host may boot L1 again).
#
# Settings (the host sets them): DEMO_BLUEPRINTS (two blueprint files in
# /vgpu/blueprints, without .yaml), DEMO_PROGS_A, DEMO_PROGS_B (each a
# ';'-separated list of program command lines for the guest), DEMO_GO_WAIT
# (seconds the first ready guest waits for the other, 240).
# shellcheck shell=dash source=tests/vm/lib.sh
cd /vgpu/tests || exit 1
. ./lib.sh
# shellcheck source=tests/vm-l2/l1_lib.sh
. ./l1_lib.sh

DEMO_BLUEPRINTS=${DEMO_BLUEPRINTS:-inference-small training-large}
DEMO_PROGS_A=${DEMO_PROGS_A:-vector_add_rt 4194304}
DEMO_PROGS_B=${DEMO_PROGS_B:-matmul_shared_rt 448}
DEMO_GO_WAIT=${DEMO_GO_WAIT:-240}
GUESTS="a b"

step()
{
	echo "vgpu-demo: step $*"
}

# The names and mdev UUIDs of the vGPUs this script created.
NAME_a='' NAME_b='' UUID_a='' UUID_b=''

# Stops both guests' QEMUs (their pids are in $TMP/G.qemu), removes the
# instances (which destroys their vGPUs), stops vgpud.
cleanup_demo()
{
	local g pid u
	for g in $GUESTS; do
		pid=$(cat "$TMP/$g.qemu" 2>/dev/null)
		if l2_alive "$pid"; then
			kill -TERM "$pid" 2>/dev/null
			wait_for 10 "QEMU to exit" l2_dead "$pid" >/dev/null ||
				kill -KILL "$pid" 2>/dev/null
		fi
	done
	for u in $UUID_a $UUID_b; do
		! mdev_exists "$u" || mdev_remove "$u" 2>/dev/null
	done
	cleanup
}
trap cleanup_demo EXIT

# compose G BLUEPRINT: creates the vGPU of /vgpu/blueprints/BLUEPRINT.yaml
# on a new mdev instance; sets NAME_G and UUID_G.
compose()
{
	local g=$1 bp=/vgpu/blueprints/$2.yaml name uuid
	name=$(sed -n 's/^name: *//p' "$bp" | head -n 1)
	echo "\$ vgpu-admin create -f blueprints/$2.yaml --mdev"
	if ! vadmin create -f "$bp" --mdev >"$TMP/create" 2>&1; then
		cat "$TMP/create"
		return 1
	fi
	cat "$TMP/create"
	uuid=$(sed -n 's/^mdev \([0-9a-f-]*\)$/\1/p' "$TMP/create" | head -n 1)
	if [ -z "$uuid" ] || ! mdev_exists "$uuid"; then
		echo "no mdev instance for vGPU $name (uuid '$uuid')"
		return 1
	fi
	eval "NAME_$g=\$name UUID_$g=\$uuid"
}

# guest_cmd SMS MEMORY PROGRAMS: the command line of an L2 guest: load the
# guest driver, say "ready", wait for L1's go on the second serial port
# (ttyS1), run device_props_rt (checking it sees SMS SMs and MEMORY bytes)
# and the ';'-separated PROGRAMS; the exit status is the failures' count.
guest_cmd()
{
	cat <<EOF
cd /vgpu/tests && . ./lib.sh && . ./l2_lib.sh
say() { echo "vgpu-demo: \$*"; }
fails=0
run() {
	echo "\\\$ \$*"
	cuda "\$@" 2>&1
	rc=\$?
	[ "\$rc" -eq 0 ] || { echo "(exit status \$rc)"; fails=\$((fails + 1)); }
}
if ! guest_load >"\$TMP/load" 2>&1; then
	say "insmod vgpu_guest.ko failed: \$(cat "\$TMP/load")"
	exit 1
fi
wait_for 10 /dev/vgpu0 test -c /dev/vgpu0 >/dev/null || { say "no /dev/vgpu0"; exit 1; }
stty -F /dev/ttyS1 raw -echo
say "ready: vgpu_guest.ko bound the vGPU as /dev/vgpu0 (\$(guest_attr vgpu_name), \$(guest_attr sms) SMs)"
read -t $((DEMO_GO_WAIT + 60)) -r go </dev/ttyS1 || say "no go from L1: running anyway"
run device_props_rt --vgpu --sms $1 --memory $2
progs='$3'
IFS=';'
for p in \$progs; do
	IFS=' '
	run \$p
	IFS=';'
done
exit \$fails
EOF
}

# guest_run G: boots guest G with its vGPU's instance and follows it
# (l1_lib.sh's watchdogs), booting it again once when it hangs. Runs in
# the background; leaves G.qemu (QEMU's pid), G.attempt, and at the end
# G.status (the guest's exit status), G.why (a failure) or G.stuck.
guest_run()
{
	local g=$1 dir=$TMP/vm-$1 attempt=0 rc name uuid progs sms mem
	getv name "NAME_$g"
	getv uuid "UUID_$g"
	getv progs "DEMO_PROGS_$(echo "$g" | tr '[:lower:]' '[:upper:]')"
	sms=$(vgpu_json "$name" sms)
	mem=$(vgpu_json "$name" memory_quota)
	# shellcheck disable=SC2034 # read by l2_start: L1's go line (ttyS1)
	L2_QEMU_ARGS="-serial pipe:$TMP/go-$g"
	while :; do
		attempt=$((attempt + 1))
		l2_start "$dir" "$ACCEL" "$(guest_cmd "$sms" "$mem" "$progs")" \
			"$uuid"
		echo "$L2_QEMU_PID" >"$TMP/$g.qemu"
		# (after l2_start: the console of this attempt exists now)
		echo "$attempt" >"$TMP/$g.attempt"
		rc=0
		l2_follow "$dir" || rc=$?
		if [ "$rc" -eq 0 ]; then
			echo "$L2_STATUS" >"$TMP/$g.status"
			return 0
		fi
		if [ "$rc" -eq 4 ]; then
			cat "$dir/why" >"$TMP/$g.stuck"
			return 4
		fi
		if [ "$attempt" -gt "${L2_RETRIES:-1}" ]; then
			cat "$dir/why" >"$TMP/$g.why"
			return "$rc"
		fi
		step "vm-$g: run $attempt failed ($(cat "$dir/why")); booting it again"
		sed 's/^/  [vm-'"$g"' qemu] /' "$dir/qemu.log"
		grep -v '=' "$dir/qemu-debug.log" | tail -n 5 |
			sed 's/^/  [vm-'"$g"' qemu -d] /'
		tr -d '\r' <"$dir/console" | tail -n 5 | sed 's/^/  [vm-'"$g"' console] /'
	done
}

# getv DEST NAME: DEST=$NAME (NAME_a, UUID_b, ...) without the subshell
# of $(...): forks are slow in L1 under TCG with two guests running.
getv()
{
	eval "$1=\${$2:-}"
}

# attempt_of G: sets ATT to guest G's current boot attempt (0: none yet).
attempt_of()
{
	ATT=0
	[ ! -f "$TMP/$1.attempt" ] || read -r ATT <"$TMP/$1.attempt"
}

# show_new G: prints the lines of guest G's console not printed yet,
# labelled [vm-G] (its boot and exit markers become progress lines);
# READY_G becomes the attempt that said "ready".
show_new()
{
	local g=$1 con=$TMP/vm-$1/console n last shown_att l
	attempt_of "$g"
	getv shown_att "SHOWN_ATT_$g"
	if [ "$ATT" != "$shown_att" ]; then
		eval "SHOWN_ATT_$g=\$ATT SHOWN_$g=0"
	fi
	[ -f "$con" ] || return 0
	# (2>/dev/null first: a retry may remove the console meanwhile)
	n=$(tr -d '\r' 2>/dev/null <"$con" | wc -l)
	getv last "SHOWN_$g"
	[ "$n" -gt "$last" ] || return 0
	tr -d '\r' 2>/dev/null <"$con" | sed -n "$((last + 1)),${n}p" >"$TMP/$g.new"
	while IFS= read -r l; do
		case $l in
		# (L1's clock lags under TCG on a busy host: the host's
		# progress lines carry the real elapsed time, not this)
		"vgpu-l2: up after "*)
			step "vm-$g: L2 booted (kernel ${l##* kernel }); loading vgpu_guest.ko" ;;
		"vgpu-l2: exit "* | *"reboot: Power down") ;;
		"vgpu-demo: ready: "*)
			step "vm-$g: ${l#vgpu-demo: ready: }"
			eval "READY_$g=\$ATT" ;;
		*) echo "  [vm-$g] $l" ;;
		esac
	done <"$TMP/$g.new"
	eval "SHOWN_$g=\$n"
}

# send_go G: tells guest G to run its programs (a line on its ttyS1; the
# pipe is QEMU's, so the write cannot block unless QEMU is gone).
send_go()
{
	timeout 5 sh -c "echo go >'$TMP/go-$1.in'" 2>/dev/null
	attempt_of "$1"
	eval "GO_ATT_$1=\$ATT"
}

# busy_count LIST: how many vGPUs a guest uses now, from the output of
# `vgpu-admin list` in the file LIST: a client (the CLIENTS column, found
# by its header) and the instance open (QEMU runs).
busy_count()
{
	awk 'NR == 1 { c = index($0, "CLIENTS"); next }
		c && /\(open\)$/ {
			split(substr($0, c), f, " "); if (f[1] + 0 > 0) n++ }
		END { print n + 0 }' "$1"
}

# no_clients: true when no vGPU has a client now.
no_clients()
{
	vadmin list >"$TMP/list.end" 2>&1 &&
		awk 'NR == 1 { c = index($0, "CLIENTS"); next }
		c { split(substr($0, c), f, " "); if (f[1] + 0 > 0) bad = 1 }
		END { exit bad }' "$TMP/list.end"
}

# sample_lists WANT: after the go, `vgpu-admin list` over and over (in the
# background: the main loop is too slow under TCG to catch short
# programs) until a sample shows WANT vGPUs in use, or $TMP/sample.stop
# appears. The best sample so far is $TMP/list.best, "COUNT SECONDS" of
# it $TMP/list.n.
sample_lists()
{
	local want=$1 best=-1 n
	while [ ! -f "$TMP/sample.stop" ]; do
		if ! vadmin list >"$TMP/list.s" 2>&1; then
			sleep 0.2
			continue
		fi
		n=$(busy_count "$TMP/list.s")
		if [ "$n" -gt "$best" ]; then
			best=$n
			mv "$TMP/list.s" "$TMP/list.best"
			echo "$n $(l2_uptime)" >"$TMP/list.n"
		fi
		[ "$n" -lt "$want" ] || break
	done
}

# show_list: prints the best sample, labelled, once.
show_list()
{
	local n when="while both guests' programs run"
	[ -z "$LIST_SHOWN" ] && [ -f "$TMP/list.n" ] || return 0
	LIST_SHOWN=1
	read -r n _ <"$TMP/list.n"
	[ "$n" -ge 2 ] ||
		when="while the guests ran (no sample caught both programs at work)"
	echo "  [L1] vgpu-admin list, $when (CLIENTS: their processes; MDEV (open): QEMU has the instance):"
	sed 's/^/  [L1] /' "$TMP/list.best"
}

step "L1: loading vgpu_mdev.ko, starting vgpud (simulator: 132 SMs, 80 GiB) with the mdev transport"
module_load || exit 1
# shellcheck disable=SC2119 # no extra vgpud options
VGPU_SIM_SMS=132 VGPU_SIM_MEMORY=80G vgpud_start || exit 1
step "L1: composing two vGPUs from blueprints, each on an mdev instance"
# shellcheck disable=SC2086 # two names
set -- $DEMO_BLUEPRINTS
compose a "$1" || exit 1
compose b "$2" || exit 1
echo "\$ vgpu-admin list"
vadmin list

ACCEL=$(l2_accel)
step "L1: booting two L2 guests at once under $ACCEL ($L2_CPUS CPU, $L2_MEMORY each), vm-a with vGPU $NAME_a, vm-b with vGPU $NAME_b (-device vfio-pci,sysfsdev=/sys/bus/mdev/devices/UUID)"
for g in $GUESTS; do
	# QEMU opens both ends itself (O_RDWR): a write never blocks
	mkfifo "$TMP/go-$g.in" "$TMP/go-$g.out"
	guest_run "$g" &
	eval "PID_$g=\$!"
done

# Follow both: stream their consoles; once both are ready (or the first
# has waited DEMO_GO_WAIT s) send both the go and sample vgpu-admin list
# (sample_lists) until a sample shows a client on every going guest's vGPU.
first_ready='' LIST_SHOWN='' SAMPLER='' pid='' r='' go=''
while :; do
	alive=0 nready=0 nwant=0 ngo=0
	for g in $GUESTS; do
		show_new "$g"
		getv pid "PID_$g"
		l2_alive "$pid" || continue
		alive=$((alive + 1))
		attempt_of "$g"
		[ "$ATT" -gt 0 ] || continue
		nwant=$((nwant + 1))
		getv r "READY_$g"
		[ "$r" != "$ATT" ] || nready=$((nready + 1))
		getv r "GO_ATT_$g"
		[ "$r" != "$ATT" ] || ngo=$((ngo + 1))
	done
	for g in $GUESTS; do
		if [ -f "$TMP/$g.stuck" ]; then
			step "vm-$g: $(cat "$TMP/$g.stuck")"
			echo "vgpu-l1: restart: L2 is stuck in L1's KVM"
			exit 1
		fi
	done
	[ "$alive" -gt 0 ] || break
	if [ "$nready" -gt 0 ] && [ -z "$first_ready" ]; then
		first_ready=$(l2_uptime)
	fi
	if [ "$nready" -gt "$ngo" ] && { [ "$nready" -eq "$nwant" ] ||
		awk -v n="$(l2_uptime)" -v t="$first_ready" -v l="$DEMO_GO_WAIT" \
			'BEGIN { exit !(n - t > l) }'; }; then
		step "L1: go: the guests run their programs now"
		for g in $GUESTS; do
			attempt_of "$g"
			getv r "READY_$g"
			getv go "GO_ATT_$g"
			if [ "$r" = "$ATT" ] && [ "$go" != "$ATT" ]; then
				send_go "$g"
			fi
		done
		if [ -z "$SAMPLER" ]; then
			sample_lists "$nready" &
			SAMPLER=$!
			# ahead of the guests and workers on L1's two busy CPUs
			renice -n -10 -p "$SAMPLER" >/dev/null 2>&1
		fi
	fi
	if [ -n "$SAMPLER" ] && l2_dead "$SAMPLER"; then
		show_list
	fi
	sleep 0.3
done
if [ -n "$SAMPLER" ]; then
	touch "$TMP/sample.stop"
	wait "$SAMPLER"
	show_list
fi

fails=0
for g in $GUESTS; do
	getv pid "PID_$g"
	getv name "NAME_$g"
	wait "$pid"
	if [ -f "$TMP/$g.status" ]; then
		st=$(cat "$TMP/$g.status")
		if [ "$st" -eq 0 ]; then
			step "vm-$g: every program succeeded on vGPU $name; the guest powered off"
		else
			step "vm-$g: $st program(s) failed on vGPU $name"
			fails=$((fails + 1))
		fi
	else
		step "vm-$g: the guest did not finish: $(cat "$TMP/$g.why" 2>/dev/null)"
		sed 's/^/  [vm-'"$g"' qemu] /' "$TMP/vm-$g/qemu.log" 2>/dev/null
		fails=$((fails + 1))
	fi
done

# (the worker notices a guest's channels closing a moment after QEMU ends)
wait_for 15 "the guests' clients to go" no_clients >/dev/null
echo "\$ vgpu-admin list   (the guests are gone: no MDEV is open)"
vadmin list
step "L1: removing the mdev instances (this destroys their vGPUs), stopping vgpud"
for g in $GUESTS; do
	getv u "UUID_$g"
	getv name "NAME_$g"
	mdev_remove "$u" || fails=$((fails + 1))
	wait_for 30 "vGPU $name to go" vgpu_absent "$name" ||
		fails=$((fails + 1))
done
UUID_a='' UUID_b=''
vgpud_stop
if dmesg | grep -E 'BUG|Oops|WARNING|general protection|soft lockup' >"$TMP/bad"; then
	step "L1: its kernel log has errors:"
	cat "$TMP/bad"
	fails=$((fails + 1))
fi
exit "$fails"
