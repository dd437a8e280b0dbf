#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# One local user floods vgpud's client socket (issue 16, bug 4): 200
# connections that never say hello, each opened again as soon as vgpud
# closes it. While the flood is on, another user's (root's) programs
# still run on their vGPU, the flooding user is told plainly why it is
# refused, and vgpud's log stays small: repeated lines are rate-limited
# with a count of those left out. Once the flood ends, the flooding
# user's own programs run again. Then as many users flood at once as it
# takes to fill the bound of all users together, and root is still
# served.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
[ -x "$HOSTILE/hostile_flood" ] || tap_skip_all "$HOSTILE/hostile_flood is not built"
id nobody >/dev/null 2>&1 || tap_skip_all "needs the user nobody"
vgpu_test_start
tap_run "create vGPU a for root" vadmin create a --sms 8 --memory 256M
tap_run "create vGPU n for the user nobody" \
	vadmin create n --sms 8 --memory 64M --user nobody
SOCK="$RUN_DIR/client.sock"
NOBODY=$(id -u nobody)
FLOOD_CONNS=200
FLOOD_S=${FLOOD_S:-20}
LOG_GROWTH_MAX=$((200 * 1024)) # bytes; the bug wrote 20 MB in 25 s

# as the user nobody (an array, so that bg's exec runs it)
AS_NOBODY=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups
	--inh-caps=-all)

log_size() { stat -c %s "$VGPUD_LOG"; }

log_before=$(log_size)
bg "$TEST_TMP/flood.out" "${AS_NOBODY[@]}" "$HOSTILE/hostile_flood" "$SOCK" \
	"$FLOOD_CONNS" "$FLOOD_S"
FLOOD_PID=$BG_PID
# the flood is on once vgpud has refused the flooding user at least once
if wait_for 15 "vgpud to refuse the flooding user" \
	grep -q "(uid $NOBODY) refused" "$VGPUD_LOG"; then
	tap_ok "nobody floods the client socket with $FLOOD_CONNS silent connections"
else
	tap_not_ok "nobody floods the client socket with $FLOOD_CONNS silent connections"
	tail -n 5 "$TEST_TMP/flood.out" | tap_diag
fi
sleep 1 # let the flood reach full strength before root connects

tap_run "during the flood: root's vector_add runs on a" \
	client a "$(prog vector_add)" 65536
tap_run "during the flood: root's vector_add runs on a again" \
	client a "$(prog vector_add)" 65536
tap_run "during the flood: root's raw hello on a gets OK" \
	"$HOSTILE/hostile_hello" "$SOCK" a ok
tap_run "during the flood: root's hello 500 ms after connecting gets OK" \
	"$HOSTILE/hostile_hello" "$SOCK" a late 500
tap_run "during the flood: vgpu-admin list answers" vadmin list
# the checks above prove something only while the flood was still on
if kill -0 "$FLOOD_PID" 2>/dev/null; then
	tap_ok "the flood was still on during root's programs"
else
	tap_not_ok "the flood was still on during root's programs" \
		"it ended early; raise FLOOD_S (now $FLOOD_S)"
fi

tap_wait_pid "the flood ends after $FLOOD_S s" "$FLOOD_PID" \
	$((FLOOD_S + 30)) "$TEST_TMP/flood.out"
tap_diag <"$TEST_TMP/flood.out"
log_after=$(log_size)
grown=$((log_after - log_before))
if [ "$grown" -lt "$LOG_GROWTH_MAX" ]; then
	tap_ok "vgpud's log grew by less than $LOG_GROWTH_MAX bytes ($grown)"
else
	tap_not_ok "vgpud's log grew by less than $LOG_GROWTH_MAX bytes" \
		"it grew by $grown bytes in $FLOOD_S s"
	grep -c "refused" "$VGPUD_LOG" | sed 's/^/refusal lines: /' | tap_diag
fi
tap_expect "the log counts the refusals it left out" 0 \
	"client pid [0-9]+ \(uid $NOBODY\) refused: .*\(and [0-9]+ more like it in the last [0-9.]+ s\)" \
	cat "$VGPUD_LOG"
tap_expect "the flooding user is told its uid holds too many connections" 0 \
	"status 6 x[0-9]+: \"uid $NOBODY has more than [0-9]+ connections that have not said hello" \
	cat "$TEST_TMP/flood.out"

# the flood is over: nobody is served again
tap_run "after the flood: nobody's vector_add runs on n" \
	"${AS_NOBODY[@]}" env VGPU=n VGPU_SOCKET="$SOCK" LD_LIBRARY_PATH="$VGPU_LIB" \
	VGPU_KERNEL_DIR="$VGPU_KERNEL_DIR" "$(prog vector_add)" 65536
tap_run "after the flood: root's vector_add runs on a" \
	client a "$(prog vector_add)" 65536

# Many users at once, each at its limit, fill the bound of all users
# together: vgpud makes room by closing the oldest connection of the user
# with the most, so a client of yet another user that says its hello
# only after a while (it waits, and so counts) is still served.
define() { sed -n "s/^#define $1[[:space:]]*\([0-9]*\).*/\1/p" \
	"$VGPU_SRC/host-daemon/daemon.h"; }
PER_USER=$(define DAEMON_MAX_HELLO_PER_USER)
PER_USER=${PER_USER:-16}
ALL_USERS=$(define DAEMON_MAX_HELLO_CONNS)
ALL_USERS=${ALL_USERS:-256}
MANY=$((ALL_USERS / PER_USER + 1))
MANY_S=${MANY_S:-15}
log_before=$(log_size)
many_pids=()
for i in $(seq 1 "$MANY"); do
	u=$((60000 + i)) # uids of no one: SO_PEERCRED is all vgpud goes by
	bg "$TEST_TMP/many.$u.out" setpriv --reuid=$u --regid=$u \
		--clear-groups --inh-caps=-all "$HOSTILE/hostile_flood" "$SOCK" \
		$((PER_USER + 1)) "$MANY_S"
	many_pids+=("$BG_PID")
done
if wait_for 15 "vgpud to make room among $MANY users' connections" \
	grep -q "has the most of them" "$VGPUD_LOG"; then
	tap_ok "$MANY users with $PER_USER connections each fill the bound of $ALL_USERS"
else
	tap_not_ok "$MANY users with $PER_USER connections each fill the bound of $ALL_USERS"
	tail -n 5 "$VGPUD_LOG" | tap_diag
fi
tap_run "during the $MANY users' flood: root's hello 500 ms after connecting gets OK" \
	"$HOSTILE/hostile_hello" "$SOCK" a late 500
tap_run "during the $MANY users' flood: root's vector_add runs on a" \
	client a "$(prog vector_add)" 65536
still=0
for p in "${many_pids[@]}"; do
	kill -0 "$p" 2>/dev/null && still=$((still + 1))
done
if [ "$still" -eq "$MANY" ]; then
	tap_ok "the $MANY users' flood was still on during root's programs"
else
	tap_not_ok "the $MANY users' flood was still on during root's programs" \
		"only $still of $MANY were; raise MANY_S (now $MANY_S)"
fi
ended=0
for p in "${many_pids[@]}"; do
	wait_pid "$p" $((MANY_S + 30)) && ended=$((ended + 1))
done
if [ "$ended" -eq "$MANY" ]; then
	tap_ok "the $MANY users' flood ends"
else
	tap_not_ok "the $MANY users' flood ends" "$ended of $MANY exited 0"
fi
grown=$(($(log_size) - log_before))
if [ "$grown" -lt "$LOG_GROWTH_MAX" ]; then
	tap_ok "vgpud's log grew by less than $LOG_GROWTH_MAX bytes ($grown) for $MANY users"
else
	tap_not_ok "vgpud's log grew by less than $LOG_GROWTH_MAX bytes for $MANY users" \
		"it grew by $grown bytes in $MANY_S s"
fi
tap_expect "a flooding user is told its oldest connection made room" 0 \
	"status 6 x[0-9]+: \"vgpud has [0-9]+ connections waiting for a hello and uid 600[0-9]+ has the most" \
	cat "$TEST_TMP"/many.*.out
tap_run "after the $MANY users' flood: nobody's vector_add runs on n" \
	"${AS_NOBODY[@]}" env VGPU=n VGPU_SOCKET="$SOCK" LD_LIBRARY_PATH="$VGPU_LIB" \
	VGPU_KERNEL_DIR="$VGPU_KERNEL_DIR" "$(prog vector_add)" 65536
tap_vgpud_alive
tap_vgpud_stops
tap_done
