#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# vgpu-admin against a vgpud on the simulator: create, list, destroy, the
# errors a user can make, and the exit codes (0 ok, 1 refused, 2 usage,
# 3 cannot reach vgpud).
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
vgpu_test_start

tap_expect "list with no vGPUs prints only the header" 0 \
	'^NAME +GPU +BACKEND +SMS +GROUPS +MEMORY +USED +CLIENTS +USER +STATE +RESTARTS +PID +ISOLATION$' \
	vadmin list
if [ "$(vadmin list | wc -l)" -eq 1 ]; then
	tap_ok "list with no vGPUs has no rows"
else
	tap_not_ok "list with no vGPUs has no rows"
fi

tap_expect "create a vGPU of 16 SMs and 1 GiB" 0 'created vGPU a: 16 SMs' \
	vadmin create a --sms 16 --memory 1G
tap_expect "create says the GPU is simulated" 0 'simulated' \
	cat "$TAP_LOG"
tap_expect "list shows the new vGPU" 0 '^a ' vadmin list
check_cell()
{
	local vgpu=$1 col=$2 want=$3 got
	got=$(vgpu_field "$vgpu" "$col" || true)
	if [ "$got" = "$want" ]; then
		tap_ok "list: $vgpu's $col is '$want'"
	else
		tap_not_ok "list: $vgpu's $col is '$want'" "got '$got'"
		vadmin list 2>&1 | tap_diag
	fi
}
check_cell a BACKEND "sim (simulated)"
check_cell a SMS 16
check_cell a MEMORY "1.0 GiB"
check_cell a STATE running
check_cell a RESTARTS 0
check_cell a USER root
check_cell a CLIENTS 0
pid=$(vgpu_field a PID || true)
if [[ "$pid" =~ ^[0-9]+$ ]] && [ "$(ps -o user= -p "$pid" 2>/dev/null)" = vgpu ]; then
	tap_ok "a's worker runs as the vgpu user, not root"
else
	tap_not_ok "a's worker runs as the vgpu user, not root" \
		"PID '$pid', user '$(ps -o user= -p "$pid" 2>/dev/null || true)'"
fi

tap_expect "create rounds 12 SMs up to whole groups of 8 and says so" 0 \
	'16 SMs.*rounded up' vadmin create b --sms 12 --memory 64M
check_cell b SMS 16
tap_expect "create --user nobody --time-limit 1 --gpu 0" 0 'created vGPU u' \
	vadmin create u --sms 8 --memory 32M --user nobody --time-limit 1 --gpu 0
check_cell u USER nobody
groups_a=$(vgpu_field a GROUPS || true)
groups_b=$(vgpu_field b GROUPS || true)
if [ -n "$groups_a" ] && [ "$groups_a" != "$groups_b" ]; then
	tap_ok "a and b get different SM groups ($groups_a / $groups_b)"
else
	tap_not_ok "a and b get different SM groups" "a: '$groups_a' b: '$groups_b'"
fi

# refusals by vgpud: exit 1 and a reason
tap_expect "a duplicate name is refused (exit 1)" 1 'exist|taken|already' \
	vadmin create a --sms 8 --memory 64M
tap_expect "more SMs than the GPU has are refused, saying what is free" 1 \
	'free|only' vadmin create big --sms 1000 --memory 64M
tap_expect "more SMs than are free are refused, saying what is free" 1 \
	'free' vadmin create big --sms 120 --memory 64M
tap_expect "more memory than the GPU has is refused, saying what is free" 1 \
	'free' vadmin create big --sms 8 --memory 100T
tap_expect "a GPU that does not exist is refused" 1 'gpu' \
	vadmin create nogpu --sms 8 --memory 64M --gpu 7
tap_expect "destroying an unknown vGPU is refused (exit 1)" 1 'no-such|no vgpu|not found|unknown|no such' \
	vadmin destroy no-such
if vadmin list | grep -q '^big '; then
	tap_not_ok "refused creates leave nothing behind"
else
	tap_ok "refused creates leave nothing behind"
fi

# usage errors: exit 2, vgpud never asked
tap_expect "no command is a usage error (exit 2)" 2 'command' vadmin
tap_expect "an unknown command is a usage error" 2 'frobnicate' vadmin frobnicate
tap_expect "create without --memory is a usage error" 2 'memory' \
	vadmin create c --sms 8
tap_expect "create without --sms is a usage error" 2 'sms' \
	vadmin create c --memory 1G
tap_expect "create without a name is a usage error" 2 'name' \
	vadmin create --sms 8 --memory 1G
for size in 0 abc 10Q -1 1.5G 99999999999999999999 16GX ""; do
	tap_expect "--memory '$size' is a usage error" 2 'memory' \
		vadmin create c --sms 8 --memory "$size"
done
for sms in 0 -8 abc 8x 4294967296 ""; do
	tap_expect "--sms '$sms' is a usage error" 2 'sms' \
		vadmin create c --sms "$sms" --memory 64M
done
for name in "" "has space" "a/b" "../x" "$(printf 'n%.0s' {1..64})" \
	"tab	x" "ünï"; do
	tap_expect "the name '$name' is a usage error" 2 'name|character|long|empty' \
		vadmin create "$name" --sms 8 --memory 64M
done
tap_expect "a 63-character name is accepted" 0 'created' \
	vadmin create "$(printf 'x%.0s' {1..63})" --sms 8 --memory 16M
tap_expect "--user with an unknown user is a usage error" 2 'user' \
	vadmin create c --sms 8 --memory 64M --user no-such-user-xyz
tap_expect "--time-limit -1 is a usage error" 2 'time' \
	vadmin create c --sms 8 --memory 64M --time-limit -1
tap_expect "an unknown option is a usage error" 2 'unknown option' \
	vadmin create c --sms 8 --memory 64M --colour blue
tap_expect "destroy without a name is a usage error" 2 'name' vadmin destroy
tap_expect "list with an argument is a usage error" 2 "argument|'x'" vadmin list x
tap_expect "--help prints the usage and exits 0" 0 'usage' vadmin --help

tap_expect "destroy a" 0 '' vadmin destroy a
if vadmin list | grep -q '^a '; then
	tap_not_ok "list no longer shows a destroyed vGPU"
else
	tap_ok "list no longer shows a destroyed vGPU"
fi
if [[ "$pid" =~ ^[0-9]+$ ]] && wait_for 10 "a's worker to exit" \
	bash -c "! kill -0 $pid"; then
	tap_ok "destroy stops the vGPU's worker"
else
	tap_not_ok "destroy stops the vGPU's worker" "pid '$pid' still there"
fi
tap_expect "destroying it again is refused (exit 1)" 1 '' vadmin destroy a
tap_expect "its SMs are free again: a 96-SM vGPU fits" 0 \
	'created' vadmin create a2 --sms 96 --memory 1G

# cannot reach vgpud: exit 3
tap_expect "a run dir with no vgpud gives exit 3" 3 'reach|vgpud' \
	timeout 30 "$VGPU_ADMIN" --run-dir "$TEST_TMP/nowhere" list
rc=0
vgpu_stop || rc=$?
if [ "$rc" -eq 0 ]; then
	tap_ok "vgpud exits 0 on SIGTERM with vGPUs still running"
else
	tap_not_ok "vgpud exits 0 on SIGTERM with vGPUs still running" "status $rc"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi
tap_expect "a stopped vgpud gives exit 3" 3 '' vadmin list
tap_done
