#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# Liveness (issue 16): a worker wedged on purpose (SIGSTOP: it serves
# nothing and sends no stats) is replaced within 5 s, with a log line
# saying why; only it restarts, not its fault domain; its client gets a
# CUDA error; its memory comes back from its last save point; a bystander
# vGPU of the same domain runs throughout and keeps its worker. Then a
# worker whose thread is wedged in the backend under a client that was
# killed, its main loop still reporting: replaced within 5 s too; without
# save points its memory is lost.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
# the simulator's hook: setting the printf FIFO to exactly this wedges the
# worker thread in the backend for good, as a driver call that never
# returns (backend_sim.c); nothing else here sets it
WEDGE_FIFO=3145728
export VGPU_SIM_WEDGE_PRINTF_FIFO=$WEDGE_FIFO
vgpu_test_start

# has_new_worker NAME OLD_PID: NAME runs on a worker other than OLD_PID
has_new_worker()
{
	local p
	p=$(vgpu_worker_pid "$1")
	[ -n "$p" ] && [ "$p" != "$2" ] &&
		[ "$(vgpu_field "$1" STATE)" = running ]
}

# replaced_within_5s NAME OLD_PID T0_NS TITLE: NAME gets a new worker, at
# most 5 s after T0_NS
replaced_within_5s()
{
	local ms
	if wait_for 30 "$1 to have a new worker" has_new_worker "$1" "$2"; then
		ms=$((($(date +%s%N) - $3) / 1000000))
		if [ "$ms" -le 5000 ]; then
			tap_ok "$4 within 5 s ($ms ms)"
		else
			tap_not_ok "$4 within 5 s" "it took $ms ms"
		fi
	else
		tap_not_ok "$4"
		tail -n 20 "$VGPUD_LOG" | tap_diag
	fi
}

tap_run "create w (save points every 1 s)" \
	vadmin create w --sms 8 --memory 128M --save-interval 1
tap_run "create by (bystander, same domain)" \
	vadmin create by --sms 8 --memory 64M


# A client killed with 6 s of legal kernels still queued: its thread
# drains them for seconds after it left. That is not a wedged worker: the
# worker and a bystander client of the same vGPU carry on.
tap_run "create q" vadmin create q --sms 8 --memory 64M
q_pid=$(vgpu_worker_pid q)
client_bg "$TEST_TMP/qby.out" q "$(prog busy_loop)" 10 4096
qby=$BG_PID
client_bg "$TEST_TMP/qlw.out" q "$(prog long_work)" chain 10 600
qlw=$BG_PID
sleep 1.5
kill -KILL "$qlw"
wait "$qlw" 2>/dev/null || true
if wait_for 15 "the stuck report" grep -q "vGPU q: .*still in a call" \
	"$VGPUD_LOG"; then
	tap_ok "a departed client's thread draining queued kernels is reported"
else
	tap_not_ok "a departed client's thread draining queued kernels is reported"
fi
tap_wait_pid "... and the bystander client of q finishes correctly" "$qby" 60 \
	"$TEST_TMP/qby.out"
if [ "$(vgpu_worker_pid q)" = "$q_pid" ] &&
	! grep -q "vGPU q: .*replacing it" "$VGPUD_LOG"; then
	tap_ok "... and q's worker was not replaced (pid $q_pid)"
else
	tap_not_ok "... and q's worker was not replaced" \
		"was $q_pid, now $(vgpu_worker_pid q)"
	grep "vGPU q" "$VGPUD_LOG" | tail -n 5 | tap_diag
fi

mkdir -p "$TEST_TMP/dw"
client_bg "$TEST_TMP/w.out" w "$(prog state_pattern)" hold "$TEST_TMP/dw" 8
hold=$BG_PID
wait_for 60 "w's state_pattern to be ready" test -e "$TEST_TMP/dw/ready" ||
	true
# a save point after the patterns were written (one a second)
saves() { vadmin show w --json | sed -n 's/.*"save_points": \([0-9]*\).*/\1/p'; }
s0=$(saves)
wait_for 30 "a save point after the patterns" \
	test "$(saves)" -gt "$((${s0:-0} + 1))" || true
old=$(vgpu_worker_pid w)
by_old=$(vgpu_worker_pid by)
if [ -n "$old" ] && [ -n "$by_old" ]; then
	tap_ok "w's worker is pid $old, by's is $by_old"
else
	tap_not_ok "the workers' pids are shown" "w '$old', by '$by_old'"
	tap_done
fi

kill -STOP "$old"
t0=$(date +%s%N)
tap_run "while w's worker is wedged: the bystander runs" \
	client by "$(prog vector_add)" 65536
replaced_within_5s w "$old" "$t0" "the wedged worker is replaced"
kill -CONT "$old" 2>/dev/null || true
grep "vGPU w" "$VGPUD_LOG" | tail -n 6 | tap_diag
tap_expect "vgpud's log says why" 0 \
	"vGPU w: worker pid $old sent no statistics for [0-9]+ ms: it stopped serving; replacing it" \
	cat "$VGPUD_LOG"
if [ "$(vgpu_worker_pid by)" = "$by_old" ]; then
	tap_ok "only w restarted: by keeps its worker (pid $by_old)"
else
	tap_not_ok "only w restarted: by keeps its worker" \
		"by's worker is now '$(vgpu_worker_pid by)'"
fi

rc=0
touch "$TEST_TMP/dw/go"
wait_pid "$hold" 60 || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
	tap_ok "w's client got an error for its work (status $rc)"
else
	tap_not_ok "w's client got an error for its work" "status $rc"
fi
tail -n 1 "$TEST_TMP/w.out" | tap_diag
read -r a_w _ _ n_w <"$TEST_TMP/dw/ptrs"
tap_expect "w's memory is back from its save point: read through the old pointer" \
	0 "bytes at $a_w intact" client w "$(prog state_pattern)" read \
	"$a_w" "$n_w"
tap_run "a new client runs on w" client w "$(prog vector_add)" 65536
tap_run "by still runs" client by "$(prog vector_add)" 65536

# A client thread wedged in the backend (the hook above), then its client
# killed: the worker's own clean-up (its gates opened) cannot free the
# thread, nothing of z runs on the GPU, so the worker counts it wedged and
# vgpud replaces the worker within 5 s, saying why. z has no save points:
# its memory is lost, and its other client gets an error.
tap_run "create z (no save points)" vadmin create z --sms 8 --memory 64M
mkdir -p "$TEST_TMP/dz"
client_bg "$TEST_TMP/z.out" z "$(prog state_pattern)" hold "$TEST_TMP/dz" 1
zhold=$BG_PID
wait_for 60 "z's state_pattern to be ready" test -e "$TEST_TMP/dz/ready" ||
	true
zold=$(vgpu_worker_pid z)
by_old=$(vgpu_worker_pid by)
cat >"$TEST_TMP/wedge.py" <<EOF
import ctypes, sys
cuda = ctypes.CDLL("libcuda.so.1")
dev, ctx = ctypes.c_int(), ctypes.c_void_p()
assert cuda.cuInit(0) == 0
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
print("wedging", flush=True)
# CU_LIMIT_PRINTF_FIFO_SIZE
print("returned:", cuda.cuCtxSetLimit(1, ctypes.c_size_t($WEDGE_FIFO)))
EOF
client_bg "$TEST_TMP/wedge.out" z python3 "$TEST_TMP/wedge.py"
wpid=$BG_PID
wait_for 30 "the client to wedge its thread" grep -q wedging \
	"$TEST_TMP/wedge.out" || true
sleep 1
if kill -0 "$wpid" 2>/dev/null; then
	tap_ok "a client's call wedged in the backend does not return"
else
	tap_not_ok "a client's call wedged in the backend does not return" \
		"$(tail -n 2 "$TEST_TMP/wedge.out")"
fi
kill -KILL "$wpid"
wait "$wpid" 2>/dev/null || true
t0=$(date +%s%N)
replaced_within_5s z "$zold" "$t0" \
	"the worker with a wedged thread is replaced (from the client's kill)"
grep "vGPU z\|vgpu-worker z" "$VGPUD_LOG" | tail -n 6 | tap_diag
tap_expect "the worker says which thread is wedged" 0 \
	"vgpu-worker z: client .* has been in one call \\(opcode 35\\) for [0-9.]+ s after the client left, with nothing on the GPU: wedged" \
	cat "$VGPUD_LOG"
tap_expect "vgpud's log says why it replaced the worker, and that the memory is lost" 0 \
	"vGPU z: worker pid $zold has 1 thread of departed clients stuck in a call with nothing on the GPU: it stopped serving; replacing it .*is lost: no save points" \
	cat "$VGPUD_LOG"
rc=0
touch "$TEST_TMP/dz/go"
wait_pid "$zhold" 60 || rc=$?
if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
	tap_ok "z's other client got an error for its work (status $rc)"
else
	tap_not_ok "z's other client got an error for its work" "status $rc"
fi
read -r a_z _ _ n_z <"$TEST_TMP/dz/ptrs"
tap_expect "z's memory is lost (no save points): the old pointer is refused" \
	3 "refused" client z "$(prog state_pattern)" read "$a_z" "$n_z"
tap_run "a new client runs on z" client z "$(prog vector_add)" 65536
if [ "$(vgpu_worker_pid by)" = "$by_old" ]; then
	tap_ok "only z restarted: by keeps its worker (pid $by_old)"
else
	tap_not_ok "only z restarted: by keeps its worker" \
		"by's worker is now '$(vgpu_worker_pid by)'"
fi
tap_vgpud_alive
tap_vgpud_stops
tap_done
