#!/bin/bash
# SPDX-License-Identifier: MIT
# scripts/sched-bench.sh --sim: the benchmark script itself runs end to
# end on the simulator (its own vgpud, three vGPUs, every policy, the
# repeated windows and their medians, the flood over many streams), so a
# change that breaks it shows here rather than on the GPU machine. The
# figures are the simulator's and mean nothing; only that each
# configuration produced its numbers is checked.
set -uo pipefail
. "$(dirname "$0")/../lib.sh"
tap_init
need_root_and_build
[ -e "$BUILD/bench/mixed_workload" ] ||
	tap_skip_all "$BUILD/bench/mixed_workload is not built"

OUT_LOG=$TEST_TMP/sched-bench.out
PROGRAM_TIMEOUT=240 tap_run "sched-bench --sim runs (2 rounds of static, fair, priority)" \
	env BUILD="$BUILD" REPEATS=2 LC_GPU_TIME=4 LC_BLOCK_TIMES=8 scripts/sched-bench.sh --sim
cp "$TAP_LOG" "$OUT_LOG"

# row NAME: the RESULT line of one configuration
row() { grep "^RESULT sched_bench config=$1 " "$OUT_LOG"; }
for c in solo static fair priority 'static#1' 'fair#2' fair_fixed static_flood \
	fair_flood priority_flood curve_1; do
	r=$(row "$c")
	if [ -n "$r" ] && ! grep -q "lc_p99_us=- " <<<"$r"; then
		tap_ok "configuration $c has an lc p99"
	else
		tap_not_ok "configuration $c has an lc p99" "${r:-no RESULT line}"
	fi
done
for c in static fair priority fair_flood; do
	if row "$c" | grep -Eq "compute_jobs_per_s=[0-9.]+ memory_jobs_per_s=[0-9.]+"; then
		tap_ok "configuration $c counted both batch vGPUs' jobs"
	else
		tap_not_ok "configuration $c counted both batch vGPUs' jobs" \
			"$(row "$c")"
	fi
done
if grep -q "medians of the windows" "$OUT_LOG"; then
	tap_ok "the table says static, fair and priority are medians"
else
	tap_not_ok "the table says static, fair and priority are medians"
fi
if grep -q "^RESULT goal priority_reclaim [0-9]" "$OUT_LOG"; then
	tap_ok "priority's lent share is reported (vgpud's count)"
else
	tap_not_ok "priority's lent share is reported (vgpud's count)" \
		"$(grep 'RESULT goal' "$OUT_LOG")"
fi
# lc's bursts before each window (WARM_BURSTS, 5) are reported apart,
# with their own keys: the window's lc p99 is still the window's
for c in static fair; do
	if row "$c" | grep -Eq "warm_p99_us=[0-9.]+"; then
		tap_ok "configuration $c reports lc's warm-up bursts apart"
	else
		tap_not_ok "configuration $c reports lc's warm-up bursts apart" "$(row "$c")"
	fi
done
# lc's diagnostics (LC_GPU_TIME, LC_BLOCK_TIMES) came out in its log
LC_LOG=$BUILD/sched-bench/static.lc.log
if grep -Eq "^lc_gpu kernels [1-9][0-9]* .* kernel_p50_us -?[0-9.]+ gap_p50_us" "$LC_LOG" &&
	grep -Eq "^lc_blocks kernels [1-9][0-9]* start_spread_us [0-9.]+ makespan_us [0-9.]+ block_kcycles [0-9.]+ block_mhz [0-9]+ blocks_per_sm_max [0-9]+ step_p50_us [0-9.]+ step_mean_us [0-9.]+$" "$LC_LOG"; then
	tap_ok "lc's GPU time (one and two kernels) and block records are in its log"
else
	tap_not_ok "lc's GPU time (one and two kernels) and block records are in its log" \
		"$(grep -E '^lc_(gpu|blocks) ' "$LC_LOG" 2>&1)"
fi
if timeout 20 env BUILD="$BUILD" WARM_BURSTS=20 scripts/sched-bench.sh --sim >"$TEST_TMP/warm.out" 2>&1 ||
	! grep -q "WARM_BURSTS is a count" "$TEST_TMP/warm.out"; then
	tap_not_ok "more warm-up bursts than fit before a window are refused" \
		"$(tail -2 "$TEST_TMP/warm.out")"
else
	tap_ok "more warm-up bursts than fit before a window are refused"
fi
if grep -q "SIMULATOR RUN" "$OUT_LOG"; then
	tap_ok "the simulator run says it is one"
else
	tap_not_ok "the simulator run says it is one"
fi
tap_done
