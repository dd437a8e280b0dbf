#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What the kernel watchdog costs the launch path (issue 16: at most 2% of
# the async launch rate), on the GPU machine after `make all`:
#
#   scripts/wd-bench.sh [REPS]
#
# rt_launch on two vGPUs of one vgpud, wd10 (a 10 s kernel time limit:
# a marker after every launch) and wd0 (limit 0: no watchdog), REPS runs
# each (default 5), alternated; the median of each vGPU's runs (each run's
# own figure a median of 5). Then bench/marker_cost: what a marker costs
# natively, next to a plain launch. Prints RESULT lines and, last,
#   RESULT name=watchdog_cost ratio=R ... (R: the median over the reps of
#   wd10's rate over wd0's in that rep; ratio_of_medians: the old figure)
# Logs under $BUILD/wd-bench (packed into $OUT when the device tool runs
# it). Called by scripts/gpu-check.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
BIN=$BUILD/bin
REPS=${1:-5}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
LOG=$BUILD/wd-bench
rm -rf "$LOG"
mkdir -p "$LOG"
case $REPS in '' | *[!0-9]* | 0) echo "usage: $0 [REPS]" >&2; exit 2 ;; esac
id vgpu >/dev/null 2>&1 ||
	useradd --system --no-create-home --shell /usr/sbin/nologin vgpu

. scripts/gpu-lib.sh # start_vgpud, stop_vgpud
pack_logs() {
	[ -n "${OUT:-}" ] || return 0
	tar -czf "$OUT/wd-bench.tgz" -C "$BUILD" wd-bench 2>/dev/null
	return 0
}
trap 'stop_vgpud; pack_logs' EXIT
admin() { timeout 90 "$BIN/vgpu-admin" --run-dir "$RUN" "$@"; }
# WD_PIN=1: vgpud (and so its workers) on the first half of the CPUs, the
# clients on the second, to see how much of the spread is placement
CLIENT_WRAP=
if [ "${WD_PIN:-0}" = 1 ]; then
	half=$(($(nproc) / 2))
	export VGPUD_WRAP="taskset -c 0-$((half - 1))"
	CLIENT_WRAP="taskset -c $half-$(($(nproc) - 1))"
	echo "wd-bench: vgpud on CPUs 0-$((half - 1)), clients on $half-$(($(nproc) - 1))"
fi
on() {
	VGPU=$1 VGPU_SOCKET=$RUN/client.sock \
		LD_LIBRARY_PATH=$BUILD/lib/vgpu:$CUDA_HOME/lib64 \
		timeout -k 5 120 $CLIENT_WRAP "${@:2}"
}

status=0
start_vgpud
chmod -R a+rX "$BUILD" 2>/dev/null
admin create wd10 --sms 32 --memory 2G --time-limit 10 >/dev/null &&
	admin create wd0 --sms 32 --memory 2G --time-limit 0 >/dev/null ||
	{ echo "wd-bench: cannot create the vGPUs" >&2; exit 1; }
: >"$LOG/results"
for rep in $(seq "$REPS"); do
	[ $((rep % 2)) = 1 ] && order="wd0 wd10" || order="wd10 wd0"
	for v in $order; do
		if ! on $v "$BUILD/bench/rt_launch" 2000 100000 5 \
			>"$LOG/$v.$rep.log" 2>&1; then
			echo "wd-bench: rt_launch on $v: $(tail -2 "$LOG/$v.$rep.log" | tr '\n' ' ')" >&2
			status=1
		fi
		sed -n "s/^RESULT /RESULT vgpu=$v /p" "$LOG/$v.$rep.log" \
			>>"$LOG/results"
	done
done
# the worker's line when a stream ran more than 1024 markers behind
grouped=$(grep -c 'markers behind' "$LOG/vgpud.log")
stop_vgpud

median() { # VGPU NAME: the median of the runs' figures
	sed -n "s/^RESULT vgpu=$1 name=$2 value=\([^ ]*\) .*/\1/p" \
		"$LOG/results" | sort -g |
		awk '{v[NR] = $1} END {if (NR) print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'
}
runs() { # VGPU: every run's async rate, in order of size
	sed -n "s/^RESULT vgpu=$1 name=launch_async_rate value=\([^ ]*\) .*/\1/p" \
		"$LOG/results" | sort -g | tr '\n' ' '
}
# each rep's own ratio (its wd10 run beside its wd0 run, one right after
# the other): drift between reps (the runs of one vGPU spread by 20 % and
# more) cancels within a pair; the median of the pairs is the figure
pairs() {
	for rep in $(seq "$REPS"); do
		a=$(sed -n "s/^RESULT name=launch_async_rate value=\([^ ]*\) .*/\1/p" "$LOG/wd10.$rep.log")
		b=$(sed -n "s/^RESULT name=launch_async_rate value=\([^ ]*\) .*/\1/p" "$LOG/wd0.$rep.log")
		[ -n "$a" ] && [ -n "$b" ] && awk -v a="$a" -v b="$b" 'BEGIN{if (b > 0) printf "%.4f\n", a / b}'
	done | sort -g
}
pr=$(pairs | tr '\n' ' ')
pratio=$(pairs | awk '{v[NR] = $1} END {if (NR) printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}')
r10=$(median wd10 launch_async_rate)
r0=$(median wd0 launch_async_rate)
t10=$(median wd10 launch_sync_rtt)
t0=$(median wd0 launch_sync_rtt)
ratio=$(awk -v a="$r10" -v b="$r0" 'BEGIN{if (a && b) printf "%.3f", a / b}')
tratio=$(awk -v a="$t10" -v b="$t0" 'BEGIN{if (a && b) printf "%.3f", a / b}')

# natively: a marker's own cost beside a plain launch
LD_LIBRARY_PATH=$CUDA_HOME/lib64 timeout -k 5 300 \
	"$BUILD/bench/marker_cost" 20000 9 >"$LOG/marker_cost.log" 2>&1 ||
	{ echo "wd-bench: marker_cost: $(tail -2 "$LOG/marker_cost.log")" >&2; status=1; }
grep '^RESULT' "$LOG/marker_cost.log"

echo "RESULT name=watchdog_runs wd0=[$(runs wd0)] wd10=[$(runs wd10)] pairs=[$pr] grouped_log_lines=$grouped"
echo "RESULT name=watchdog_cost ratio=${pratio:-?} ratio_of_medians=${ratio:-?} rate_wd10=$r10 rate_wd0=$r0 sync_rtt_wd10=$t10 sync_rtt_wd0=$t0 sync_time_ratio=${tratio:-?} reps=$REPS"
exit $status
