#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# A hostile client on vgpud's client socket and on its ring: garbage,
# truncated and oversized hellos, wrong magic and versions, unknown vGPU
# names, the wrong user, silence, and after a good handshake bad
# descriptors (offsets, overflows, handles, opcodes, flags, launch
# geometry, memory outside its allocations, a bogus sq_tail). Every attack
# gets a clear refusal or error; after each, vgpud is alive and programs
# still run correctly on the attacked vGPU and on another one.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
for p in hostile_hello hostile_ring; do
	[ -x "$HOSTILE/$p" ] || tap_skip_all "$HOSTILE/$p is not built"
done
vgpu_test_start
tap_run "create vGPU a (attacked)" vadmin create a --sms 8 --memory 256M
tap_run "create vGPU b (bystander)" vadmin create b --sms 8 --memory 256M
tap_run "create vGPU n for the user nobody" \
	vadmin create n --sms 8 --memory 64M --user nobody
SOCK="$RUN_DIR/client.sock"

# as_nobody COMMAND...: runs it as the user nobody, bounded.
as_nobody()
{
	timeout -k 5 "$PROGRAM_TIMEOUT" setpriv --reuid=nobody \
		--regid="$(id -g nobody)" --clear-groups --inh-caps=-all "$@"
}

# After an attack: vgpud alive, and a real program correct on b and a.
after()
{
	if vgpud_alive; then
		tap_ok "vgpud is still alive after $1"
	else
		tap_not_ok "vgpud is still alive after $1"
		tail -n 20 "$VGPUD_LOG" | tap_diag
		tap_done
	fi
	tap_run "after $1: vector_add is correct on another vGPU" \
		client b "$(prog vector_add)" 65536
	tap_run "after $1: vector_add is correct on the attacked vGPU" \
		client a "$(prog vector_add)" 65536
}

hello()
{
	tap_run "hello: $2" "$HOSTILE/hostile_hello" "$SOCK" a "$1"
	after "a $1 hello"
}

tap_run "hello: a valid raw hello gets OK and three descriptors" \
	"$HOSTILE/hostile_hello" "$SOCK" a ok
hello garbage "80 bytes of garbage are refused (BAD_MESSAGE) or dropped"
hello truncated "half a hello then EOF is refused or dropped"
hello oversized "a hello with 4 KiB appended is refused or dropped"
hello empty "connect and close without a word is dropped"
hello wrong-magic "a wrong magic gets VGPU_HELLO_BAD_MESSAGE"
hello wrong-major "major version + 1 gets VGPU_HELLO_BAD_VERSION and a message"
hello older-major "major version 0 gets VGPU_HELLO_BAD_VERSION and a message"
hello nonzero-flags "nonzero hello flags get VGPU_HELLO_BAD_MESSAGE"
hello unterminated "a name without a NUL is refused"
tap_run "hello: an unknown vGPU name gets VGPU_HELLO_NO_SUCH_VGPU" \
	"$HOSTILE/hostile_hello" "$SOCK" no-such-vgpu unknown-name
after "an unknown-name hello"

# the wrong user
tap_run "hello: user nobody on root's vGPU gets VGPU_HELLO_PERMISSION" \
	as_nobody "$HOSTILE/hostile_hello" "$SOCK" a permission
after "a hello from the wrong user"
tap_expect "a CUDA program of the wrong user fails cleanly" 1 '' \
	as_nobody env VGPU=a VGPU_SOCKET="$SOCK" LD_LIBRARY_PATH="$VGPU_LIB" \
	timeout 60 "$(prog vector_add)" 1024
tap_run "the vGPU's own user (nobody) runs vector_add on it" \
	as_nobody env VGPU=n VGPU_SOCKET="$SOCK" LD_LIBRARY_PATH="$VGPU_LIB" \
	VGPU_KERNEL_DIR="$VGPU_KERNEL_DIR" timeout 60 "$(prog vector_add)" 65536

# silence: connections that never say hello do not stop vgpud serving
silent_pids=()
for i in $(seq 1 20); do
	bg "$TEST_TMP/silent.$i.out" "$HOSTILE/hostile_hello" "$SOCK" a silent 15
	silent_pids+=("$BG_PID")
done
if wait_for 10 "the silent clients to connect" \
	grep -q connected "$TEST_TMP/silent.20.out"; then
	tap_ok "20 clients connect and stay silent"
else
	tap_not_ok "20 clients connect and stay silent"
fi
tap_run "while 20 clients stay silent: vector_add runs on a" \
	client a "$(prog vector_add)" 65536
tap_run "while 20 clients stay silent: vector_add runs on b" \
	client b "$(prog vector_add)" 65536
tap_run "while 20 clients stay silent: vgpu-admin list answers" vadmin list
tap_run "while 20 clients stay silent: a valid hello is answered" \
	"$HOSTILE/hostile_hello" "$SOCK" a ok
for pid in "${silent_pids[@]}"; do
	kill "$pid" 2>/dev/null || true
done
after "20 silent connections"

# after the handshake: bad descriptors
tap_run "ring: a correct raw session (alloc, copy, load, launch) works" \
	"$HOSTILE/hostile_ring" "$SOCK" a valid
ring()
{
	tap_run "ring: $2" "$HOSTILE/hostile_ring" "$SOCK" a "$1"
	if [ "$TAP_RC" -ne 0 ]; then
		grep -E 'FAIL' "$TAP_LOG" | head -n 20 | tap_diag
	fi
	after "the $1 attack"
}
ring data-offsets "data offsets and lengths outside the data area get errors"
ring overflow "offset + length that wraps 2^64 (e.g. 2^64-8 + 16) gets errors"
ring bad-handles "unknown, destroyed and double-freed handles get INVALID_HANDLE"
ring unknown-opcode "unknown opcodes get an error completion"
ring nonzero-flags "descriptors with nonzero flags get an error completion"
ring bad-launch "bad launch geometry, parameter buffers and images get errors"
ring outside-memory "device pointers outside the client's allocations get errors"
ring foreign-memory "another client's allocation and stream are out of reach"
ring bogus-sq-tail "a bogus sq_tail marks the ring VGPU_RING_BROKEN and drops the client"
clients_is() { [ "$(vgpu_field a CLIENTS)" = "$1" ]; }
if wait_for 10 "a's client count to drop to 0" clients_is 0; then
	tap_ok "the dropped client no longer counts as a client of a"
else
	tap_not_ok "the dropped client no longer counts as a client of a" \
		"CLIENTS is $(vgpu_field a CLIENTS || true)"
fi

tap_run "after all attacks: streams_events is correct on a" \
	client a "$(prog streams_events)"
rc=0
vgpu_stop || rc=$?
if [ "$rc" -eq 0 ]; then
	tap_ok "vgpud exits 0 on SIGTERM after the attacks"
else
	tap_not_ok "vgpud exits 0 on SIGTERM after the attacks" "status $rc"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi
tap_done
