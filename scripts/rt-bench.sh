#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/rt-bench.sh [--sms N] [--memory SIZE] [--quick]: on the GPU
# machine, after `make all`. Runs the runtime-API benchmarks (bench/rt_*.cu,
# built with -cudart shared) natively (NVIDIA's libcudart.so.13 from
# $CUDA_HOME/lib64, the whole GPU) and then on a vGPU of N SMs (default
# 120: every whole group of an H100) and SIZE memory (default 16G) of a
# vgpud on the cuda backend (MPS, as in production), with our
# libcudart.so.13 and libcuda.so.1 (LD_LIBRARY_PATH=build/lib). Prints
# every figure and a ratio table with issue 4's goals; it asserts nothing
# about timing (exit 1 only when a benchmark fails to run). Native runs go
# first, before vgpud starts its MPS daemon.
#
#   --quick   small sizes and counts (a check that everything runs)
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
while [ $# -gt 0 ]; do
	case $1 in
	--sms) SMS=$2; shift 2 ;;
	--memory) MEMORY=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	*) echo "usage: $0 [--sms N] [--memory SIZE] [--quick]" >&2; exit 2 ;;
	esac
done

say() { printf '[%6.1fs] %s\n' "$SECONDS" "$*"; }
die() { echo "rt-bench: $*" >&2; exit 1; }

command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
	die "no NVIDIA GPU here (nvidia-smi -L failed)"
for f in "$B/rt_launch" "$B/rt_copy" "$B/rt_matmul" "$BIN/vgpud" \
	"$BIN/vgpu-admin" "$BUILD/lib/libcudart.so.13" "$BUILD/lib/libcuda.so.1" \
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
	BENCHES="rt_launch 200 2000 3
rt_copy $((16 << 20)) 5
rt_matmul -r 3 256 512"
else
	BENCHES="rt_launch
rt_copy
rt_matmul"
fi

failed=0
# run_all MODE: every benchmark, RESULT lines into $LOG/MODE.results
run_all() {
	local mode=$1 name args
	: >"$LOG/$mode.results"
	while read -r name args; do
		say "$mode: $name $args"
		# shellcheck disable=SC2086 # args are words
		if ${mode}_run "$B/$name" $args >"$LOG/$mode.$name.log" 2>&1; then
			grep -v '^RESULT' "$LOG/$mode.$name.log"
		else
			say "FAIL $mode $name: $(tail -3 "$LOG/$mode.$name.log" | tr '\n' ' ')"
			failed=1
		fi
		grep '^RESULT' "$LOG/$mode.$name.log" >>"$LOG/$mode.results"
	done <<<"$BENCHES"
}
native_run() {
	LD_LIBRARY_PATH=$CUDA_HOME/lib64 timeout -k 5 600 "$@"
}

. scripts/gpu-lib.sh # start_vgpud, restart_vgpud, stop_vgpud
pack_logs() {
	[ -n "${OUT:-}" ] || return 0
	tar -czf "$OUT/rt-bench.tgz" -C "$BUILD" rt-bench 2>/dev/null
	cp "$LOG/ratios.txt" "$OUT/" 2>/dev/null
	return 0
}
trap 'stop_vgpud; pack_logs' EXIT
vgpu_run() {
	VGPU=rtbench VGPU_SOCKET=$RUN/client.sock LD_LIBRARY_PATH=$BUILD/lib \
		timeout -k 5 600 "$@"
}

say "== native (NVIDIA libcudart, whole GPU)"
run_all native
say "== vGPU: $SMS SMs, $MEMORY (our libcudart over our libcuda, cuda backend)"
start_vgpud
chmod -R a+rX "$BUILD" 2>/dev/null
timeout 90 "$BIN/vgpu-admin" --run-dir "$RUN" create rtbench --sms "$SMS" \
	--memory "$MEMORY" >"$LOG/create.log" 2>&1 ||
	die "cannot create the vGPU: $(cat "$LOG/create.log")"
run_all vgpu
stop_vgpud

# The ratio table: vgpu/native of each figure, and "speed", the vGPU's
# performance relative to native (higher is better: native/vgpu for times,
# vgpu/native for rates), against issue 4's goal for that figure.
say "== ratios (speed = vGPU performance / native; goals from issue 4)"
awk '
	function kv(s, k,   i, a, n) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++)
			if (index(a[i], k "=") == 1)
				return substr(a[i], length(k) + 2)
		return ""
	}
	FNR == 1 { mode++ }
	/^RESULT/ {
		name = kv($0, "name")
		if (mode == 1) {
			nat[name] = kv($0, "value")
			unit[name] = kv($0, "unit")
			order[++n] = name
		} else {
			vg[name] = kv($0, "value")
		}
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
	END {
		printf "%-22s %-10s %12s %12s %8s %7s %8s %s\n", "figure",
		       "unit", "native", "vgpu", "vgpu/nat", "speed", "goal",
		       "verdict"
		for (i = 1; i <= n; i++) {
			k = order[i]
			if (!(k in vg) || nat[k] == 0 || vg[k] == 0) {
				printf "%-22s %-10s %12s %12s   (no vGPU figure)\n",
				       k, unit[k], nat[k], "-"
				continue
			}
			r = vg[k] / nat[k]
			u = unit[k]
			speed = (u == "us" || u == "ms") ? 1 / r : r
			goal = ""
			if (k == "launch_sync_rtt") goal = 1 / 1.5
			else if (k == "launch_async_rate") goal = 0.8
			else if (k ~ /^(h2d|d2h)_/ && size_bytes(k) >= 1048576)
				goal = 0.9
			else if (k ~ /^matmul_e2e_/) goal = 0.95
			verdict = goal == "" ? "" : (speed >= goal ? "met" : "MISSED")
			printf "%-22s %-10s %12.4g %12.4g %8.3f %7.3f %8s %s\n",
			       k, u, nat[k], vg[k], r, speed,
			       goal == "" ? "-" : sprintf(">=%.3f", goal), verdict
			printf "RATIO name=%s native=%s vgpu=%s speed=%.4f\n",
			       k, nat[k], vg[k], speed > "/dev/stderr"
		}
	}' "$LOG/native.results" "$LOG/vgpu.results" 2>"$LOG/ratios.machine" |
	tee "$LOG/ratios.txt"
cat "$LOG/ratios.machine"
date -u '+# %Y-%m-%dT%H:%MZ' >>"$LOG/ratios.txt"
exit $failed
