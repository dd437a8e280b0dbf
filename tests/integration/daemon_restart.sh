#!/bin/bash
# shellcheck disable=SC2317 # helpers called indirectly
# SPDX-License-Identifier: MIT
# vgpud killed with SIGKILL while two clients run long copies on two
# vGPUs (one shared, one exclusive), then started again on the same run
# directory: it adopts the running workers from its state file, both
# clients finish correctly, list shows the same worker pids, a new client
# works. Then corrupt state files (truncated, bad JSON, wrong version,
# overlapping groups, an unknown vGPU field): vgpud refuses to start,
# saying which line and what, and adopts or starts nothing. SIGTERM at
# the end stops the workers and removes the state file.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start "vgpud starts on the simulator" --orphan-timeout 60
STATE="$RUN_DIR/state.json"

# Another vgpud on the same run dir (what systemctl restart does).
vgpud_again()
{
	"$VGPUD" --run-dir "$RUN_DIR" --backend sim --worker-user vgpu \
		--orphan-timeout 60 "$@" >>"$VGPUD_LOG" 2>&1 &
	VGPUD_PID=$!
	wait_for 30 "the new vgpud to answer" vadmin list >/dev/null
}
trap 'kill_workers; cleanup' EXIT

tap_run "create a (shared)" vadmin create a --sms 16 --memory 256M
tap_run "create b (exclusive)" vadmin create b --sms 8 --memory 256M --isolation exclusive
pid_a=$(vgpu_field a PID)
pid_b=$(vgpu_field b PID)
WORKERS=("$pid_a" "$pid_b")
if [ -s "$STATE" ] && grep -q '"vgpud-state"' "$STATE"; then
	tap_ok "vgpud keeps its state in $STATE"
else
	tap_not_ok "vgpud keeps its state in $STATE"
fi

client_bg "$TEST_TMP/a.out" a "$(prog long_copy)" 8 16
ca=$BG_PID
client_bg "$TEST_TMP/b.out" b "$(prog long_copy)" 8 16
cb=$BG_PID
wait_for 30 "a's client to copy" grep -q copying "$TEST_TMP/a.out" || true
wait_for 30 "b's client to copy" grep -q copying "$TEST_TMP/b.out" || true

kill -KILL "$VGPUD_PID"
wait_pid "$VGPUD_PID" 10 || true
VGPUD_PID=
sleep 1
if kill -0 "$pid_a" && kill -0 "$pid_b" && kill -0 "$ca" && kill -0 "$cb"; then
	tap_ok "with vgpud killed (SIGKILL), both workers and both clients run on"
else
	tap_not_ok "with vgpud killed (SIGKILL), both workers and both clients run on"
fi

if vgpud_again; then
	tap_ok "vgpud starts again on the same run directory"
else
	tap_not_ok "vgpud starts again on the same run directory"
	tail -n 20 "$VGPUD_LOG" | tap_diag
	tap_done
fi
tap_expect "it adopted both workers" 0 'adopted 2 workers' cat "$VGPUD_LOG"
for v in a b; do
	want=$([ $v = a ] && echo "$pid_a" || echo "$pid_b")
	got=$(vgpu_field $v PID || true)
	st=$(vgpu_field $v STATE || true)
	if [ "$got" = "$want" ] && [ "$st" = running ]; then
		tap_ok "list shows $v running with the same worker pid ($got)"
	else
		tap_not_ok "list shows $v running with the same worker pid" "pid $got (want $want), state $st"
	fi
done
for pair in "a $ca" "b $cb"; do
	set -- $pair
	rc=0
	wait_pid "$2" 60 || rc=$?
	if [ "$rc" -eq 0 ] && grep -q OK "$TEST_TMP/$1.out"; then
		tap_ok "the client on $1 finished correctly across the restart"
	else
		tap_not_ok "the client on $1 finished correctly across the restart" "exit $rc"
	fi
	tail -n 1 "$TEST_TMP/$1.out" | tap_diag
done
tap_run "a new client works on a" client a "$(prog vector_add)" 65536
tap_run "a new client works on b" client b "$(prog vector_add)" 65536
tap_expect "RESTARTS of a stays 0" 0 '' test "$(vgpu_field a RESTARTS)" = 0

# ---- corrupt state files -------------------------------------------------
kill -KILL "$VGPUD_PID"
wait_pid "$VGPUD_PID" 10 || true
VGPUD_PID=
cp "$STATE" "$TEST_TMP/good.json"

corrupt()
{
	local title=$1 pattern=$2 rc=0
	timeout -k 5 30 "$VGPUD" --run-dir "$RUN_DIR" --backend sim \
		--worker-user vgpu >"$TEST_TMP/bad.log" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ] && grep -Eq "state.json: line [0-9]+: .*$pattern.*move it aside" "$TEST_TMP/bad.log" &&
		! grep -Eq 'adopted|worker pid [0-9]+ started' "$TEST_TMP/bad.log"; then
		tap_ok "$title: vgpud refuses to start, adopts nothing"
		grep -m 1 'line' "$TEST_TMP/bad.log" | tap_diag
	else
		tap_not_ok "$title: vgpud refuses to start, adopts nothing" "exit $rc"
		tail -n 5 "$TEST_TMP/bad.log" | tap_diag
	fi
}
py() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $1; json.dump(d, open(sys.argv[1],'w'), indent=2)" "$STATE"; }

head -c 200 "$TEST_TMP/good.json" >"$STATE"
corrupt "a truncated state file" ''
echo '{ "format": "vgpud-state", this is not json' >"$STATE"
corrupt "a state file that is not JSON" ''
cp "$TEST_TMP/good.json" "$STATE"; py 'd["version"] = 2'
corrupt "state version 2" 'version 2'
cp "$TEST_TMP/good.json" "$STATE"; py 'd["vgpus"][1]["groups"] = d["vgpus"][0]["groups"][:1]'
corrupt "overlapping SM groups" 'already holds'
cp "$TEST_TMP/good.json" "$STATE"; py 'd["vgpus"][0]["colour"] = "blue"'
corrupt "an unknown vGPU field" 'colour'
cp "$TEST_TMP/good.json" "$STATE"; py 'd["vgpus"][1]["memory"] = -5'
corrupt "a negative memory quota" 'out of range'
if kill -0 "$pid_a" && kill -0 "$pid_b"; then
	tap_ok "the workers ran on, untouched, through the refused starts"
else
	tap_not_ok "the workers ran on, untouched, through the refused starts"
fi

cp "$TEST_TMP/good.json" "$STATE"
if vgpud_again --keep-workers; then
	tap_ok "with the good state back, vgpud starts"
else
	tap_not_ok "with the good state back, vgpud starts"
fi
tap_expect "and adopts a again" 0 "^a .* $pid_a " vadmin list
tap_run "vector_add on a after all that" client a "$(prog vector_add)" 65536

# A resize is answered before the state file is written: a vgpud killed in
# between finds the worker on groups the file does not name, and adopts it
# there when they are free (here: the file is edited to say other groups).
groups_a=$(vgpu_field a GROUPS || true)
kill -KILL "$VGPUD_PID"
wait_pid "$VGPUD_PID" 10 || true
VGPUD_PID=
py 'a = [v for v in d["vgpus"] if v["name"] == "a"][0]
used = set(g for v in d["vgpus"] for g in v["groups"])
a["groups"] = [g for g in range(16) if g not in used][-len(a["groups"]):]'
if vgpud_again --keep-workers; then
	tap_ok "vgpud starts with a state file that names other groups for a"
else
	tap_not_ok "vgpud starts with a state file that names other groups for a"
fi
tap_expect "it adopts a on the groups its worker runs on" 0 \
	"vGPU a: its worker runs on groups .* adopted there" cat "$VGPUD_LOG"
tap_expect "list shows a with the same worker pid" 0 "^a .* $pid_a " vadmin list
tap_expect "and on its own groups ($groups_a)" 0 '' \
	test "$(vgpu_field a GROUPS)" = "$groups_a"
tap_run "vector_add on a after that" client a "$(prog vector_add)" 65536

# systemctl restart: SIGTERM to a vgpud started with --keep-workers (the
# unit file's setting) leaves the workers, their clients and the state.
client_bg "$TEST_TMP/k.out" a "$(prog long_copy)" 8 16
ck=$BG_PID
wait_for 30 "the client to copy" grep -q copying "$TEST_TMP/k.out" || true
rc=0
vgpu_stop || rc=$?
if [ "$rc" -eq 0 ] && kill -0 "$pid_a" && kill -0 "$pid_b" && kill -0 "$ck" &&
	[ -s "$STATE" ]; then
	tap_ok "SIGTERM with --keep-workers leaves workers, client and state"
else
	tap_not_ok "SIGTERM with --keep-workers leaves workers, client and state" "status $rc"
fi
vgpud_again && tap_ok "vgpud starts again after the kept-workers stop" ||
	tap_not_ok "vgpud starts again after the kept-workers stop"
tap_expect "it adopted both kept workers" 0 'adopted 2 workers' tail -n 20 "$VGPUD_LOG"
rc=0
wait_pid "$ck" 60 || rc=$?
if [ "$rc" -eq 0 ] && grep -q OK "$TEST_TMP/k.out"; then
	tap_ok "the client finished correctly across the kept-workers restart"
else
	tap_not_ok "the client finished correctly across the kept-workers restart" "exit $rc"
fi
rc=0
vgpu_stop || rc=$?
[ "$rc" -eq 0 ] && tap_ok "SIGTERM: vgpud exits 0" || tap_not_ok "SIGTERM: vgpud exits 0" "status $rc"
if wait_for 10 "the workers to exit" bash -c "! kill -0 $pid_a 2>/dev/null && ! kill -0 $pid_b 2>/dev/null"; then
	tap_ok "SIGTERM stops the adopted workers"
else
	tap_not_ok "SIGTERM stops the adopted workers"
fi
[ ! -e "$STATE" ] && tap_ok "SIGTERM removes the state file (nothing to adopt)" ||
	tap_not_ok "SIGTERM removes the state file (nothing to adopt)"
tap_done
