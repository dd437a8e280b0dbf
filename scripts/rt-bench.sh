#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/rt-bench.sh [--sms N] [--memory SIZE] [--reps R] [--quick]: on
# the GPU machine, after `make all`. Runs the runtime-API benchmarks
# (bench/rt_*.cu, built with -cudart shared) three ways, R times each
# (default 3), interleaved so that drift hits all three alike:
#   native      NVIDIA's libcudart.so.13 from $CUDA_HOME/lib64, whole GPU
#   native_mps  the same, as a client of vgpud's MPS server limited to the
#               vGPU's share of SMs (CUDA_MPS_ACTIVE_THREAD_PERCENTAGE):
#               the like-for-like baseline for compute-bound figures
#   vgpu        NVIDIA's libcudart.so.13 over our libcuda.so.1 on a vGPU
#               of N SMs (default 120: every whole group of an H100) and
#               SIZE memory (default 16G) of a vgpud on the cuda backend
#               (MPS)
# Prints every figure, and a table of medians with vgpu's speed against
# both baselines and issue 4's goals; it asserts nothing about timing
# (exit 1 only when a benchmark fails to run).
#
#   --quick   small sizes and counts, one repetition (a check that it runs)
# Logs and the RESULT lines: $BUILD/rt-bench (and $OUT/rt-bench.tgz under
# the device tool).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
BIN=$BUILD/bin
B=$BUILD/bench
LOG=$BUILD/rt-bench
SMS=120
MEMORY=16G
QUICK=0
REPS=3
while [ $# -gt 0 ]; do
	case $1 in
	--sms) SMS=$2; shift 2 ;;
	--reps) REPS=$2; shift 2 ;;
	--memory) MEMORY=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	*) echo "usage: $0 [--sms N] [--memory SIZE] [--reps R] [--quick]" >&2
	   exit 2 ;;
	esac
done

say() { printf '[%6.1fs] %s\n' "$SECONDS" "$*"; }
die() { echo "rt-bench: $*" >&2; exit 1; }

command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
	die "no NVIDIA GPU here (nvidia-smi -L failed)"
for f in "$B/rt_launch" "$B/rt_copy" "$B/rt_matmul" "$BIN/vgpud" \
	"$BIN/vgpu-admin" "$BUILD/lib/libcuda.so.1" \
	"$CUDA_HOME/lib64/libcudart.so.13"; do
	[ -e "$f" ] || die "$f is missing (run make all; CUDA_HOME=$CUDA_HOME)"
done
id vgpu >/dev/null 2>&1 ||
	useradd --system --no-create-home --shell /usr/sbin/nologin vgpu
rm -rf "$LOG"
mkdir -p "$LOG"
nvidia-smi -L | tee "$LOG/gpu.txt"

# The benchmarks and their arguments, one per line: NAME ARGS...
if [ $QUICK = 1 ]; then
	REPS=1
	BENCHES="rt_launch 200 2000 3
rt_copy $((16 << 20)) 5
rt_matmul -r 3 256 512"
else
	BENCHES="rt_launch
rt_copy
rt_matmul"
fi

failed=0
# run_all MODE REP: every benchmark; RESULT lines, tagged with the mode,
# into $LOG/results
run_all() {
	local mode=$1 rep=$2 name args log
	while read -r name args; do
		log=$LOG/$mode.$rep.$name.log
		say "$mode #$rep: $name $args"
		# shellcheck disable=SC2086 # args are words
		if ${mode}_run "$B/$name" $args >"$log" 2>&1; then
			grep -v '^RESULT' "$log"
		else
			say "FAIL $mode $name: $(tail -3 "$log" | tr '\n' ' ')"
			failed=1
		fi
		sed -n "s/^RESULT /RESULT mode=$mode /p" "$log" >>"$LOG/results"
	done <<<"$BENCHES"
}
native_run() {
	LD_LIBRARY_PATH=$CUDA_HOME/lib64 timeout -k 5 600 "$@"
}
# As the workers' user: an MPS server serves one user only.
native_mps_run() {
	runuser -u vgpu -- env LD_LIBRARY_PATH="$CUDA_HOME/lib64" \
		CUDA_MPS_PIPE_DIRECTORY="$RUN/mps" \
		CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="$MPS_PCT" \
		timeout -k 5 600 "$@"
}

. scripts/gpu-lib.sh # start_vgpud, restart_vgpud, stop_vgpud
pack_logs() {
	[ -n "${OUT:-}" ] || return 0
	tar -czf "$OUT/rt-bench.tgz" -C "$BUILD" rt-bench 2>/dev/null
	cp "$LOG/ratios.txt" "$OUT/" 2>/dev/null
	return 0
}
trap 'stop_vgpud; pack_logs' EXIT
# only our driver library, beside NVIDIA's runtime (vgpu-run/vgpu-run.mk)
DRV=$(cd "$BUILD/lib/vgpu" && pwd)
vgpu_run() {
	VGPU=rtbench VGPU_SOCKET=$RUN/client.sock \
		LD_LIBRARY_PATH=$DRV:$CUDA_HOME/lib64 timeout -k 5 600 "$@"
}

start_vgpud
chmod -R a+rX "$BUILD" 2>/dev/null
timeout 90 "$BIN/vgpu-admin" --run-dir "$RUN" create rtbench --sms "$SMS" \
	--memory "$MEMORY" >"$LOG/create.log" 2>&1 ||
	die "cannot create the vGPU: $(cat "$LOG/create.log")"
cat "$LOG/create.log"
GPU_SMS=$("$BIN/vgpu-admin" --run-dir "$RUN" gpus --json 2>/dev/null |
	grep -o '"sms": *[0-9]*' | head -1 | grep -o '[0-9]*$')
GPU_SMS=${GPU_SMS:-132}
MPS_PCT=$(awk -v a="$SMS" -v b="$GPU_SMS" 'BEGIN { printf "%.2f", 100 * a / b }')
say "native_mps: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=$MPS_PCT ($SMS of $GPU_SMS SMs)"
: >"$LOG/results"
for rep in $(seq "$REPS"); do
	for mode in native native_mps vgpu; do
		run_all $mode "$rep"
	done
done
grep -h '^# ' "$LOG"/*.1.rt_launch.log 2>/dev/null | sort -u
stop_vgpud

# The table: the median of each figure per mode, and the vGPU's speed
# (its performance relative to a baseline, higher is better: base/vgpu
# for times, vgpu/base for rates) against native and native_mps, with
# issue 4's goal (judged against native).
say "== medians of $REPS runs; speed = vGPU performance / baseline"
awk '
	function kv(s, k,   i, a, n) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++)
			if (index(a[i], k "=") == 1)
				return substr(a[i], length(k) + 2)
		return ""
	}
	function median(key,   n, i, j, v, t) {
		n = cnt[key]
		for (i = 1; i <= n; i++) v[i] = val[key, i]
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
				t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
			}
		if (n == 0) return 0
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	function size_bytes(name,   s, v) {
		s = name
		sub(/.*_/, "", s)
		v = s + 0
		if (s ~ /GiB$/) return v * 1073741824
		if (s ~ /MiB$/) return v * 1048576
		if (s ~ /KiB$/) return v * 1024
		return 0
	}
	function speed(base, v, u) {
		if (base == 0 || v == 0) return 0
		return (u == "us" || u == "ms") ? base / v : v / base
	}
	/^RESULT/ {
		m = kv($0, "mode"); k = kv($0, "name")
		if (!((m, k) in cnt0)) {
			cnt0[m, k] = 1
			if (m == "native") order[++n] = k
		}
		val[m SUBSEP k, ++cnt[m SUBSEP k]] = kv($0, "value") + 0
		unit[k] = kv($0, "unit")
	}
	END {
		printf "%-22s %-6s %11s %11s %11s %7s %7s %7s %s\n",
		       "figure", "unit", "native", "native_mps", "vgpu",
		       "speed", "vs_mps", "goal", "verdict"
		for (i = 1; i <= n; i++) {
			k = order[i]; u = unit[k]
			nat = median("native" SUBSEP k)
			mps = median("native_mps" SUBSEP k)
			vg = median("vgpu" SUBSEP k)
			s1 = speed(nat, vg, u); s2 = speed(mps, vg, u)
			goal = ""
			if (k == "launch_sync_rtt") goal = 1 / 1.5
			else if (k == "launch_async_rate") goal = 0.8
			else if (k ~ /^(h2d|d2h)_/ && size_bytes(k) >= 1048576)
				goal = 0.9
			else if (k ~ /^matmul_e2e_/) goal = 0.95
			verdict = ""
			if (goal != "" && s1 >= goal) verdict = "met"
			else if (goal != "" && s2 >= goal)
				verdict = "met vs native_mps"
			else if (goal != "") verdict = "MISSED"
			printf "%-22s %-6s %11.4g %11.4g %11.4g %7.3f %7.3f %7s %s\n",
			       k, u, nat, mps, vg, s1, s2,
			       goal == "" ? "-" : sprintf(">=%.3f", goal), verdict
			printf "RATIO name=%s native=%s native_mps=%s vgpu=%s " \
			       "speed=%.4f speed_vs_mps=%.4f\n", k, nat, mps, \
			       vg, s1, s2 > "/dev/stderr"
		}
	}' "$LOG/results" 2>"$LOG/ratios.machine" | tee "$LOG/ratios.txt"
cat "$LOG/ratios.machine"
date -u '+# %Y-%m-%dT%H:%MZ' >>"$LOG/ratios.txt"
exit $failed
