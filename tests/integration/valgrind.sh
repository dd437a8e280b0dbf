#!/bin/bash
# shellcheck disable=SC2119,SC2317,SC2034 # optional title; indirect calls; knobs read by lib.sh
# SPDX-License-Identifier: MIT
# One representative flow with vgpud and every worker under valgrind
# (memcheck, --leak-check=full): create two vGPUs, run vector_add and
# streams_events, kill a client mid-copy, destroy a vGPU, stop vgpud.
# Then no process may have reported an error or a leak. Last, the guest
# library's cmocka tests run under valgrind too.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
command -v valgrind >/dev/null || tap_skip_all "valgrind is not installed"

export VGPU_TEST_VALGRIND=1
PROGRAM_TIMEOUT=240
ADMIN_TIMEOUT=180
VGPUD_START_TIMEOUT=120
VGPUD_STOP_TIMEOUT=120
vgpu_test_start "vgpud starts under valgrind"
tap_run "create vGPU a under valgrind" vadmin create a --sms 8 --memory 128M
tap_run "create vGPU b under valgrind" vadmin create b --sms 8 --memory 128M
tap_run "vector_add is correct on a" client a "$(prog vector_add)" 65536
tap_run "streams_events is correct on b" client b "$(prog streams_events)"

victim_out="$TEST_TMP/victim.out"
client_bg "$victim_out" a "$(prog long_copy)" 120 8
victim=$BG_PID
if wait_for 120 "the victim to copy" grep -q copying "$victim_out"; then
	sleep 0.5
	kill -KILL "$victim"
	wait "$victim" 2>/dev/null || true
	tap_ok "a client is killed mid-copy"
else
	tap_not_ok "a client is killed mid-copy" "it never started copying"
	tail -n 20 "$victim_out" | tap_diag
fi
tap_run "after the kill, vector_add is correct on a" \
	client a "$(prog vector_add)" 4096
tap_run "destroy b" vadmin destroy b
rc=0
vgpu_stop || rc=$?
if [ "$rc" -eq 0 ]; then
	tap_ok "vgpud exits 0 under valgrind (no errors of its own)"
else
	tap_not_ok "vgpud exits 0 under valgrind (no errors of its own)" "status $rc"
	tail -n 20 "$VGPUD_LOG" | tap_diag
fi

# every log with a summary: no errors, nothing definitely/indirectly lost
summaries=0 workers=0
for log in "$VALGRIND_DIR"/*.log; do
	[ -e "$log" ] || continue
	grep -q 'ERROR SUMMARY' "$log" || continue # a fork that exec'd
	summaries=$((summaries + 1))
	case "$(basename "$log")" in
	worker.*) workers=$((workers + 1)) ;;
	esac
	name=$(basename "$log" .log)
	cmd=$(sed -n 's/^==[0-9]*== Command: //p' "$log" | head -n 1)
	errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -n 1)
	if [ "$errors" = 0 ] &&
		! grep -Eq '(definitely|indirectly) lost: [1-9]' "$log"; then
		tap_ok "valgrind: no errors or leaks in $name ($cmd)"
	else
		tap_not_ok "valgrind: no errors or leaks in $name ($cmd)" \
			"$errors errors; see the log below"
		grep -E '^==[0-9]+== ' "$log" | head -n 60 | tap_diag
	fi
done
if [ "$workers" -ge 2 ]; then
	tap_ok "valgrind watched vgpud and $workers worker processes"
else
	tap_not_ok "valgrind watched vgpud and its worker processes" \
		"$summaries logs with a summary, $workers of workers"
fi

# The guest library's own unit tests (client_*, cuda_*), under valgrind
# with the suppressions for its process-lifetime threads; and the
# simulator's reader of the images clients send (hostile bytes among
# them).
for t in "$BUILD"/tests/unit/test_client_* "$BUILD"/tests/unit/test_sim_image; do
	log="$TEST_TMP/$(basename "$t").valgrind"
	if valgrind -q --leak-check=full --error-exitcode=1 \
		--suppressions="$VGPU_SRC/tests/unit/valgrind-client.supp" \
		--child-silent-after-fork=yes "$t" >"$log" 2>&1; then
		tap_ok "valgrind: $(basename "$t") passes with no errors or leaks"
	else
		tap_not_ok "valgrind: $(basename "$t") passes with no errors or leaks"
		{ grep -E '^==[0-9]+== |FAILED|ERROR' "$log" || true; } | head -n 40 | tap_diag
	fi
done
tap_done
