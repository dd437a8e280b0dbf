#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; helpers called indirectly
# SPDX-License-Identifier: MIT
# A hostile peer on vgpud's admin socket: garbage, truncated, oversized
# and empty packets, wrong magic and version, unterminated strings,
# unknown ops and flags, out-of-range fields, a silent connection, and a
# user other than root. Each gets a clear refusal (or a closed
# connection for packets that are not requests at all); after each,
# vgpud is alive, vgpu-admin works, and a program runs correctly.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
[ -x "$HOSTILE/hostile_admin" ] || tap_skip_all "$HOSTILE/hostile_admin is not built"
vgpu_test_start
tap_run "create vGPU a" vadmin create a --sms 8 --memory 128M
ASOCK="$RUN_DIR/admin.sock"

as_nobody()
{
	timeout -k 5 "$PROGRAM_TIMEOUT" setpriv --reuid=nobody \
		--regid="$(id -g nobody)" --clear-groups --inh-caps=-all "$@"
}

after()
{
	if vgpud_alive; then
		tap_ok "vgpud is still alive after $1"
	else
		tap_not_ok "vgpud is still alive after $1"
		tail -n 20 "$VGPUD_LOG" | tap_diag
		tap_done
	fi
	tap_expect "after $1: vgpu-admin list still shows a" 0 '^a ' vadmin list
	tap_run "after $1: vector_add is correct on a" \
		client a "$(prog vector_add)" 65536
}

attack()
{
	tap_run "admin: $2" "$HOSTILE/hostile_admin" "$ASOCK" "$1"
	after "the admin $1 attack"
}

attack garbage "a packet of garbage is refused (BAD_REQUEST) or dropped"
attack truncated "half a request is refused or dropped"
attack oversized "a request with 4 KiB appended is refused or dropped"
attack empty "an empty packet is refused or dropped"
attack wrong-magic "a wrong magic gets VGPU_ADMIN_BAD_REQUEST"
attack wrong-major "major version + 1 gets VGPU_ADMIN_BAD_VERSION"
attack nonzero-flags "nonzero request flags get VGPU_ADMIN_BAD_REQUEST"
attack unterminated-name "a name without a NUL gets VGPU_ADMIN_BAD_REQUEST"
attack unknown-op "an unknown op gets VGPU_ADMIN_BAD_REQUEST"
attack zero-sms "CREATE with 0 SMs gets VGPU_ADMIN_BAD_REQUEST"
attack huge-sms "CREATE with 2^32-16 SMs gets VGPU_ADMIN_NO_ROOM"
attack zero-memory "CREATE with 0 bytes gets VGPU_ADMIN_BAD_REQUEST"
attack destroy-unknown "DESTROY of an unknown name gets VGPU_ADMIN_NO_SUCH_VGPU"
attack list-past-end "LIST from entry 2^32-1 answers OK with no entries"
attack bad-isolation "CREATE with isolation 7 gets VGPU_ADMIN_BAD_REQUEST"
attack bad-consumer-kind "CREATE with consumer kind 2^31 gets VGPU_ADMIN_BAD_REQUEST"
attack group-without-gid "CREATE for group gid -1 gets VGPU_ADMIN_BAD_REQUEST"
attack user-with-gid "CREATE for a user with a gid gets VGPU_ADMIN_BAD_REQUEST"
attack huge-time-limit "CREATE with a 49-day time limit gets VGPU_ADMIN_BAD_REQUEST"
attack show-unterminated "SHOW with a name without a NUL gets VGPU_ADMIN_BAD_REQUEST"
attack show-unknown "SHOW of an unknown name gets VGPU_ADMIN_NO_SUCH_VGPU"
attack plan-check-bad-isolation "PLAN_CHECK with isolation 2 gets VGPU_ADMIN_BAD_REQUEST"
attack plan-check-huge-sms "PLAN_CHECK with 2^32-1 SMs gets VGPU_ADMIN_NO_ROOM"
attack plan-check-ok "PLAN_CHECK that fits answers OK"
attack gpus-with-garbage "GPUS ignores the name and reserved bytes and answers OK"
tap_run "admin: a user other than root is refused (connect or PERMISSION)" \
	as_nobody "$HOSTILE/hostile_admin" "$ASOCK" permission
after "an admin request from nobody"

bg "$TEST_TMP/silent.out" "$HOSTILE/hostile_admin" "$ASOCK" silent 8
silent=$BG_PID
wait_for 10 "the silent admin client to connect" \
	grep -q connected "$TEST_TMP/silent.out" || true
tap_run "while an admin connection stays silent: vgpu-admin create works" \
	vadmin create b --sms 8 --memory 64M
tap_run "while an admin connection stays silent: vector_add runs on b" \
	client b "$(prog vector_add)" 65536
kill "$silent" 2>/dev/null || true
after "a silent admin connection"

if vadmin list | grep -q '^hostile '; then
	tap_not_ok "no attack created a vGPU"
else
	tap_ok "no attack created a vGPU"
fi
rc=0
vgpu_stop || rc=$?
if [ "$rc" -eq 0 ]; then
	tap_ok "vgpud exits 0 on SIGTERM after the attacks"
else
	tap_not_ok "vgpud exits 0 on SIGTERM after the attacks" "status $rc"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi
tap_done
