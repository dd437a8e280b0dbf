#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/sched-bench.sh [--quick] [--sim]: issue 7's mixed co-located
# workload, on the GPU machine after `make all` (about 4 minutes on an
# H100; also called by `scripts/gpu-check.sh --bench-only`). Three
# processes of bench/mixed_workload at once, the same work in every
# configuration:
#   lc       latency-critical: bursts of 64-block computeBound kernels,
#            each launched and waited for, ON_MS on, OFF_MS off
#   compute  batch: computeBound kernels of BATCH_BLOCKS blocks, about
#            1 ms each on its static slice, back to back (2 in flight)
#   memory   batch: saxpy (12 bytes per element), about 1 ms each on its
#            static slice, back to back
# (The reclaim bound stays at its default, 20 ms: with long compute
# kernels the scheduler stops lending lc's SMs to it; the lent% column
# shows that.)
# Configurations:
#   timeslice  three native processes, no MPS: the driver time-slices
#   mps        three native MPS clients, no slices
#   static     three vGPUs (vgpud, MPS): lc LC_SMS, compute COMPUTE_SMS,
#              memory MEMORY_SMS SMs, policy static
#   fair       the same vGPUs under fair (lc lends down to LC_MIN SMs
#              while idle, to compute and memory by weight: saxpy is not
#              bandwidth-bound on 40 SMs, 1.27 TB/s; alone on all 132 it
#              ran about 3x as fast; the 12 SMs the split leaves over,
#              in no vGPU's share, are lent to the busy compute vGPU)
#   priority   the same under priority, lc high
#   fair_fixed fair with nothing lendable (every vGPU's min and max its
#              size): what the dynamic machinery itself costs lc
# POLICIES (static, fair and priority) are taken in turn REPEATS times
# and each figure is the median; lc's p99 is also given for the kernels launched
# in a burst's first 5 ms (head) and the others (rest), and the GPU's SM
# clock per window.
# plus lc alone on its slice (the "solo" baseline), and under priority
# the lc p99 against the compute kernel's length (0.1 to 10 ms).
# Kernel sizes are calibrated once, on the static slices, and then fixed.
# Energy: nvidia-smi's total energy counter around each window, or its
# power draw sampled every 100 ms (the whole GPU; per job = divided by the
# batch jobs). Prints a table and RESULT
# lines; asserts nothing (exit 1 only when something fails to run).
#
#   --quick  short windows, two curve points (a check that it runs)
#   --sim    on the simulator, for the script's own test: no GPU figure
#            comes from it (and no native configurations)
# Each policy, and plain MPS, runs a second time with the compute batch
# flooding the GPU ("_flood"): FLOOD_INFLIGHT (48, at most 64) kernels
# ahead instead of 2, round-robin over FLOOD_STREAMS (as many) streams,
# so that many grids are pending at once. Under plain MPS lc's kernel
# then waits behind them all: its p99 was 0.76 ms with one stream (one
# grid pending at a time, however many are queued behind it), 5.7 ms
# with 16 streams (2026-11-23), about 0.35 ms per pending grid; 48 is
# the depth at which that reaches ARCHITECTURE.md's 17 ms under MPS.
# Their "vs stat" is against static_flood, "mps/p99" against mps_flood.
# Knobs (environment): SECONDS_PER_RUN (12), CURVE_SECONDS (6),
# REPEATS (4: POLICIES in turn, every other round reversed; medians), POLICIES ("static fair
# priority"; fair_fixed, fair_memory, fair_compute, fair_leftover and
# fair_groups may be added), TURNS_ONLY (0; 1: only the solo
# window and the POLICIES in turn: a quick comparison),
# LC_SMS (32), LC_MIN (8), COMPUTE_SMS (48), MEMORY_SMS (40), DWELL_MS
# (20), ON_MS (100), OFF_MS (100), LC_TARGET_MS (0.05), BATCH_BLOCKS (2112),
# LC_GPU_TIME (0; N: every Nth lc kernel is timed on the GPU by events
# instead, its lc_gpu line in the lc logs: host or GPU, where time goes),
# LC_BLOCK_TIMES (0; N: every Nth lc kernel records its blocks' start,
# end, cycles and SM instead: the lc_blocks line in the lc logs),
# WARM_BURSTS (5: lc's bursts before each window, in its rhythm; a
# dynamic policy needs three to learn it, and a service runs for hours,
# so the window measures the steady state; these bursts' p99 is the
# table's "warm p99": what a policy costs while it learns).
# Logs: $BUILD/sched-bench (and $OUT/sched-bench.tgz under the device
# tool).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
BIN=$BUILD/bin
KDIR=$BUILD/kernels
MW=$BUILD/bench/mixed_workload
LOG=$BUILD/sched-bench
QUICK=0
SIM=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1; shift ;;
	--sim) SIM=1; shift ;;
	*) echo "usage: $0 [--quick] [--sim]" >&2; exit 2 ;;
	esac
done
SECS=${SECONDS_PER_RUN:-12}
REPEATS=${REPEATS:-}
CURVE_SECS=${CURVE_SECONDS:-6}
CURVE="0.1 0.3 1 3 10"
FLOOD=${FLOOD_INFLIGHT:-48}
FLOOD_STREAMS=${FLOOD_STREAMS:-$FLOOD}
LC_SMS=${LC_SMS:-32}
LC_MIN=${LC_MIN:-8}
COMPUTE_SMS=${COMPUTE_SMS:-48}
MEMORY_SMS=${MEMORY_SMS:-40}
DWELL_MS=${DWELL_MS:-20}
ON_MS=${ON_MS:-100}
OFF_MS=${OFF_MS:-100}
LC_BLOCKS=64
LC_TARGET_MS=${LC_TARGET_MS:-0.05}
BATCH_BLOCKS=${BATCH_BLOCKS:-2112}
LC_GPU_TIME=${LC_GPU_TIME:-0}
LC_BLOCK_TIMES=${LC_BLOCK_TIMES:-0}
WARM_BURSTS=${WARM_BURSTS:-5}
MEM_MAX_ELEMENTS=$((1 << 28)) # 1 GiB per array at most
STARTUP_MS=4000 # for the three processes to be ready before the window
GUESS_ITERS=20000 # first guesses of the calibration
GUESS_LC_ITERS=2000
if [ $QUICK = 1 ]; then
	REPEATS=${REPEATS:-1}
	SECS=3
	CURVE_SECS=2
	CURVE="0.1 3"
fi
if [ $SIM = 1 ]; then
	REPEATS=${REPEATS:-1}
	SECS=2
	CURVE_SECS=1
	CURVE="1"
	BATCH_BLOCKS=64
	MEM_MAX_ELEMENTS=$((1 << 18))
	LC_BLOCKS=8
	STARTUP_MS=3000
	GUESS_ITERS=50
	GUESS_LC_ITERS=5
	export VGPU_SIM_SMS=132 VGPU_SIM_MEMORY=16G VGPU_KERNEL_DIR=$KDIR
fi
REPEATS=${REPEATS:-4}
POLICIES=${POLICIES:-static fair priority}
TURNS_ONLY=${TURNS_ONLY:-0}

say() { printf '[%6.1fs] %s\n' "$SECONDS" "$*"; }
die() { echo "sched-bench: $*" >&2; exit 1; }
# what POLICIES may name (set_policy knows each; the summary takes the list)
KNOWN_POLICIES="static fair priority fair_fixed fair_memory fair_compute fair_leftover fair_groups"
for pol in $POLICIES; do
	[[ " $KNOWN_POLICIES " == *" $pol "* ]] ||
		die "POLICIES: unknown policy '$pol' (${KNOWN_POLICIES// /, })"
done
# lc's warm bursts must fit in the time before a window
[[ "$WARM_BURSTS" =~ ^(0|[1-9][0-9]*)$ ]] &&
	[ $((WARM_BURSTS * (ON_MS + OFF_MS))) -le $((STARTUP_MS - 1500)) ] ||
	die "WARM_BURSTS is a count of lc's bursts that fits in $((STARTUP_MS - 1500)) ms, not '$WARM_BURSTS'"
[[ "$LC_BLOCK_TIMES" =~ ^(0|[1-9][0-9]*)$ ]] ||
	die "LC_BLOCK_TIMES is 0 or a kernel count N (every Nth lc kernel), not '$LC_BLOCK_TIMES'"
case $TURNS_ONLY in
0 | 1) ;;
*) die "TURNS_ONLY is 0 or 1, not '$TURNS_ONLY'" ;;
esac
pack_logs() {
	[ -n "${OUT:-}" ] || return 0
	tar -czf "$OUT/sched-bench.tgz" -C "$BUILD" sched-bench 2>/dev/null
	cp "$LOG/summary.txt" "$OUT/sched-bench-summary.txt" 2>/dev/null
	return 0
}

if [ $SIM = 0 ]; then
	command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
		die "no NVIDIA GPU here (nvidia-smi -L failed); --sim runs it on the simulator"
	command -v nvidia-cuda-mps-control >/dev/null ||
		die "nvidia-cuda-mps-control not found"
fi
for f in "$MW" "$BIN/vgpud" "$BIN/vgpu-admin" "$BUILD/lib/libcuda.so.1" \
	"$KDIR/compute_bound.cubin" "$KDIR/saxpy.cubin" \
	$([ "$LC_BLOCK_TIMES" = 0 ] || echo "$KDIR/compute_bound_timed.cubin"); do
	[ -e "$f" ] || die "$f is missing (run make all)"
done
id vgpu >/dev/null 2>&1 ||
	useradd --system --no-create-home --shell /usr/sbin/nologin vgpu
rm -rf "$LOG"
mkdir -p "$LOG"
[ $SIM = 0 ] && nvidia-smi -L | tee "$LOG/gpu.txt"

. scripts/gpu-lib.sh # start_vgpud, stop_vgpud (RUN, VGPUD_PID)
if [ $SIM = 1 ]; then
	# the same private vgpud, on the simulator
	# shellcheck disable=SC2120 # options, as gpu-lib.sh's
	start_vgpud() {
		RUN=$(mktemp -d /tmp/vgpu-sim.XXXXXX)
		chmod 755 "$RUN"
		"$BIN/vgpud" --run-dir "$RUN" --backend sim --worker-user vgpu \
			"$@" >>"$LOG/vgpud.log" 2>&1 &
		VGPUD_PID=$!
		for _ in $(seq 300); do
			"$BIN/vgpu-admin" --run-dir "$RUN" list >/dev/null 2>&1 &&
				return 0
			sleep 0.1
		done
		die "vgpud did not start (see $LOG/vgpud.log)"
	}
fi
MPSDIR=
cleanup() {
	stop_vgpud
	if [ -n "$MPSDIR" ]; then
		echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPSDIR \
			nvidia-cuda-mps-control >/dev/null 2>&1
		rm -rf "$MPSDIR"
	fi
	pack_logs
}
trap cleanup EXIT
admin() { timeout 90 "$BIN/vgpu-admin" --run-dir "$RUN" "$@"; }

# How a role runs: HOW VGPU COMMAND... (native ones ignore VGPU)
on_vgpu() {
	local v=$1
	shift
	VGPU=$v VGPU_SOCKET=$RUN/client.sock LD_LIBRARY_PATH=$BUILD/lib "$@"
}
native() { shift; "$@"; }
mps_client() {
	shift
	CUDA_MPS_PIPE_DIRECTORY=$MPSDIR CUDA_MPS_LOG_DIRECTORY=$MPSDIR/log "$@"
}
energy_mj() { # the GPU's energy counter (mJ), or empty
	[ $SIM = 1 ] && return 0
	nvidia-smi -i 0 --query-gpu=total_energy_consumption \
		--format=csv,noheader,nounits 2>/dev/null | head -n 1 | tr -d ' '
}
# energy_start TAG / energy_stop SECONDS: the GPU's energy over a window
# (mJ): its counter when nvidia-smi has one, else power.draw sampled every
# 100 ms and integrated
energy_start() {
	EN_PID=
	EN0=$(energy_mj)
	[[ "$EN0" =~ ^[0-9]+$ ]] && return 0
	EN0=
	[ $SIM = 1 ] && return 0
	nvidia-smi -i 0 --query-gpu=power.draw --format=csv,noheader,nounits \
		-lms 100 >"$LOG/power.$1.csv" 2>/dev/null &
	EN_PID=$!
	EN_FILE=$LOG/power.$1.csv
}
energy_stop() {
	local e1
	if [ -n "$EN0" ]; then
		e1=$(energy_mj)
		[[ "$e1" =~ ^[0-9]+$ ]] && echo $((e1 - EN0))
		return 0
	fi
	[ -n "$EN_PID" ] || return 0
	kill "$EN_PID" 2>/dev/null
	wait "$EN_PID" 2>/dev/null
	awk -v s="$1" '$1 + 0 > 0 {sum += $1; n++}
		END {if (n) printf "%d\n", sum / n * s * 1000}' "$EN_FILE"
}
# clocks_start TAG / clocks_stop: the SM clock (MHz) over a window,
# sampled every 100 ms (read only): a GPU at its power limit clocks down,
# which slows lc's compute-bound kernel whatever the slices do. A sample
# can miss a short dip, so the driver's clock-event reasons are logged
# too, and a window in which any sample shows a slowdown (power cap,
# hardware or thermal slowdown, power brake: mask 0xe8 | 0x4) says so.
clocks_start() {
	CK_PID=
	[ $SIM = 1 ] && return 0
	CK_FILE=$LOG/clocks.$1.csv
	# the reasons' field is clocks_throttle_reasons before driver 535
	local q=clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active
	nvidia-smi -i 0 --query-gpu=$q --format=csv,noheader >/dev/null 2>&1 ||
		q=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active
	nvidia-smi -i 0 --query-gpu=$q --format=csv,noheader,nounits \
		-lms 100 >"$CK_FILE" 2>/dev/null &
	CK_PID=$!
}
clocks_stop() {
	local slow
	[ -n "$CK_PID" ] || return 0
	kill "$CK_PID" 2>/dev/null
	wait "$CK_PID" 2>/dev/null
	slow=$(python3 -c '
import sys
n = s = 0
m = {}
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    if len(f) < 4 or not f[0].isdigit():
        continue
    n += 1
    try:
        r = int(f[3], 16)
    except ValueError:
        continue
    if r & 0xEC:
        s += 1
        m[f[3]] = m.get(f[3], 0) + 1
if s:
    print("%d of %d samples:" % (s, n), " ".join("%s x%d" % kv for kv in m.items()))
' "$CK_FILE")
	[ -n "$slow" ] && say "clock slowdown reasons in $slow" >&2
	awk -F, '$1 + 0 > 0 {sum += $1; n++} END {if (n) printf "%d\n", sum / n}' \
		"$CK_FILE"
}
# perf_counters TAG WHEN: the driver's performance report (its clock-event
# reason counters: time spent in each slowdown since the driver loaded)
# at a window's start (0) and end (1); read only
perf_counters() {
	[ $SIM = 1 ] && return 0
	nvidia-smi -q -d PERFORMANCE -i 0 >"$LOG/perf.$1.$2.txt" 2>&1
}
now_ms() { date +%s%3N; }
sleep_until() { # EPOCH_MS
	local left=$(($1 - $(now_ms)))
	[ $left -gt 0 ] && sleep "$(awk -v l=$left 'BEGIN{print l/1000}')"
	return 0
}
field() { # FILE KEY: the number after KEY on the line
	awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) {print $(i+1); exit}}' "$1"
}
lent_sm_s() { # VGPU: SM-seconds it has lent so far (vgpud's count)
	admin policy --json 2>/dev/null | python3 -c '
import json, sys
for v in json.load(sys.stdin)["vgpus"]:
	if v["name"] == sys.argv[1]:
		print(v["lent_sm_s"])' "$1"
}

# window TAG HOW [ROLES] [COMPUTE_ITERS]: lc, compute and memory (or
# only ROLES) at once for SECS; one row into $LOG/rows
window() {
	local tag=$1 how=$2 roles=${3:-"lc compute memory"} citers=${4:-$ITERS_B}
	local secs=${WINDOW_SECS:-$SECS} start en mhz r pids=() ok=1
	start=$(($(now_ms) + STARTUP_MS))
	for r in $roles; do
		case $r in
		lc) $how lc "$MW" lc "$KDIR" --blocks $LC_BLOCKS --iters \
			"$ITERS_LC" --on-ms $ON_MS --off-ms $OFF_MS --seconds \
			"$secs" --start $start --gpu-time "$LC_GPU_TIME" \
			--warm-bursts "$WARM_BURSTS" --block-times "$LC_BLOCK_TIMES" ;;
		compute) $how compute "$MW" compute "$KDIR" --blocks \
			$BATCH_BLOCKS --iters "$citers" --seconds "$secs" \
			--inflight "${INFLIGHT:-2}" --streams "${STREAMS:-1}" \
			--start $start ;;
		memory) $how memory "$MW" memory "$KDIR" --elements \
			"$ELEMENTS" --seconds "$secs" --start $start ;;
		esac >"$LOG/$tag.$r.log" 2>&1 &
		pids+=($!)
	done
	perf_counters "$tag" 0 # slow (a whole nvidia-smi -q): before the window
	sleep_until $start
	energy_start "$tag"
	clocks_start "$tag"
	LENT0=$( [ -n "${VGPUD_PID:-}" ] && lent_sm_s lc)
	sleep "$secs"
	en=$(energy_stop "$secs")
	mhz=$(clocks_stop)
	LENT1=$( [ -n "${VGPUD_PID:-}" ] && lent_sm_s lc)
	perf_counters "$tag" 1
	for r in "${pids[@]}"; do
		timeout 120 tail --pid="$r" -f /dev/null
		wait "$r" || ok=0
	done
	if [ $ok = 0 ]; then
		say "FAIL $tag: a role failed (logs: $LOG/$tag.*.log)"
		tail -n 3 "$LOG/$tag".*.log
		FAILED=1
	fi
	local cj mj lp50 lp99 lk off hp99 rp99 wp99
	cj=$(field "$LOG/$tag.compute.log" jobs_per_s 2>/dev/null)
	mj=$(field "$LOG/$tag.memory.log" jobs_per_s 2>/dev/null)
	lp50=$(field "$LOG/$tag.lc.log" p50_us 2>/dev/null)
	lp99=$(field "$LOG/$tag.lc.log" p99_us 2>/dev/null)
	lk=$(field "$LOG/$tag.lc.log" kernels 2>/dev/null)
	off=$(field "$LOG/$tag.lc.log" off_ms 2>/dev/null)
	hp99=$(field "$LOG/$tag.lc.log" head_p99_us 2>/dev/null)
	rp99=$(field "$LOG/$tag.lc.log" rest_p99_us 2>/dev/null)
	wp99=$(field "$LOG/$tag.lc.log" warm_p99_us 2>/dev/null)
	echo "$tag ${cj:--} ${mj:--} ${lp50:--} ${lp99:--} ${lk:--} ${en:--} $secs ${off:--} ${LENT0:--} ${LENT1:--} ${mhz:--} ${hp99:--} ${rp99:--} ${wp99:--}" \
		>>"$LOG/rows"
}

FAILED=0
: >"$LOG/rows"

# ---- vGPUs, calibration, solo -------------------------------------------
say "== vgpud ($([ $SIM = 1 ] && echo simulator || echo cuda, MPS)), three vGPUs, policy static"
start_vgpud
admin create lc --sms "$LC_SMS" --memory 2G >"$LOG/create.log" 2>&1 &&
	admin create compute --sms "$COMPUTE_SMS" --memory 2G >>"$LOG/create.log" 2>&1 &&
	admin create memory --sms "$MEMORY_SMS" --memory 4G >>"$LOG/create.log" 2>&1 ||
	{ cat "$LOG/create.log"; die "could not create the vGPUs"; }
cat "$LOG/create.log"
say "calibrating: compute ~1 ms, memory ~1 ms, lc ~$LC_TARGET_MS ms on their slices"
on_vgpu compute "$MW" calibrate-compute "$KDIR" --blocks $BATCH_BLOCKS \
	--iters $GUESS_ITERS --target-ms 1 | tee "$LOG/cal.compute.log"
on_vgpu memory "$MW" calibrate-memory "$KDIR" --elements $MEM_MAX_ELEMENTS \
	--target-ms 1 | tee "$LOG/cal.memory.log"
on_vgpu lc "$MW" calibrate-compute "$KDIR" --blocks $LC_BLOCKS --iters $GUESS_LC_ITERS \
	--target-ms "$LC_TARGET_MS" | tee "$LOG/cal.lc.log"
ITERS_B=$(field "$LOG/cal.compute.log" iters)
ELEMENTS=$(field "$LOG/cal.memory.log" elements)
ITERS_LC=$(field "$LOG/cal.lc.log" iters)
[ -n "$ITERS_B" ] && [ -n "$ELEMENTS" ] && [ -n "$ITERS_LC" ] ||
	die "calibration failed (logs: $LOG/cal.*.log)"
echo "iters_batch $ITERS_B elements $ELEMENTS iters_lc $ITERS_LC" >"$LOG/sizes"

say "== lc alone on its $LC_SMS-SM slice (solo)"
window solo on_vgpu lc
# set_limits LC_MIN LC_MAX COMPUTE_MIN COMPUTE_MAX MEMORY_MIN MEMORY_MAX
set_limits() {
	admin policy lc --min-sms "$1" --max-sms "$2" >/dev/null &&
		admin policy compute --min-sms "$3" --max-sms "$4" >/dev/null &&
		admin policy memory --min-sms "$5" --max-sms "$6" >/dev/null ||
		{ FAILED=1; say "FAIL setting the vGPUs' limits"; }
}
# lc lends down to LC_MIN SMs while idle; the batch vGPUs may take every
# SM the three hold together
ALL_SMS=$((COMPUTE_SMS + MEMORY_SMS + LC_SMS))
normal_limits() { set_limits "$LC_MIN" "$LC_SMS" 8 $ALL_SMS 8 $ALL_SMS; }
# set_policy static|fair|priority|fair_fixed: GPU 0's mode (lc high only
# under priority; static ignores the limits). fair_fixed: fair with
# nothing lendable (every vGPU's min and max its size): the dynamic
# machinery's own cost to lc (edges, the watchdog, the scheduler's runs)
# against static, with no resize at all. fair_memory: fair with the
# compute vGPU fixed at its size (only the memory vGPU borrows, the
# leftover included): whether what lending costs lc comes from the
# compute vGPU's grids on lent SMs; fair_compute: the other way round.
# fair_leftover: lc and memory fixed, compute may take the leftover
# slice and nothing else (the leftover's cost alone); fair_groups: lc
# lends, each batch vGPU may borrow one group (8 SMs) but never the
# leftover (12 SMs: over its max): lending without the leftover
set_policy() {
	case $1 in
	fair_fixed) set_limits "$LC_SMS" "$LC_SMS" "$COMPUTE_SMS" \
		"$COMPUTE_SMS" "$MEMORY_SMS" "$MEMORY_SMS" ;;
	fair_memory) set_limits "$LC_MIN" "$LC_SMS" "$COMPUTE_SMS" \
		"$COMPUTE_SMS" 8 $ALL_SMS ;;
	fair_compute) set_limits "$LC_MIN" "$LC_SMS" 8 $ALL_SMS \
		"$MEMORY_SMS" "$MEMORY_SMS" ;;
	fair_leftover) set_limits "$LC_SMS" "$LC_SMS" "$COMPUTE_SMS" \
		$ALL_SMS "$MEMORY_SMS" "$MEMORY_SMS" ;;
	fair_groups) set_limits "$LC_MIN" "$LC_SMS" 8 $((COMPUTE_SMS + 8)) \
		8 $((MEMORY_SMS + 8)) ;;
	*) normal_limits ;;
	esac
	case $1 in
	static) admin policy --gpu 0 --mode static ;;
	fair | fair_*) admin policy lc --priority normal >/dev/null &&
		admin policy --gpu 0 --mode fair --dwell "$DWELL_MS" ;;
	priority) admin policy lc --priority high >/dev/null &&
		admin policy --gpu 0 --mode priority --dwell "$DWELL_MS" ;;
	*) false ;;
	esac | tee -a "$LOG/policy.log"
	[ "${PIPESTATUS[0]}" = 0 ] || { FAILED=1; say "FAIL setting $1"; }
}
# POLICIES in turn, REPEATS times: their p99s differ by a few percent,
# about as much as one window from the next, so each figure is the
# median of REPEATS windows taken in turn (tags NAME, NAME.2, ...).
# Every other round takes them in reverse: lc's latency wanders during a
# run (on the H200 static's p99 went from 62.6 to 67.7 us over three
# rounds in one run, from 74.2 down to 63.4 in another, at a steady 1980
# MHz), and a fixed order charged a drift to whichever policy came later
# in a round.
for r in $(seq "$REPEATS"); do
	order=$POLICIES
	[ $((r % 2)) = 0 ] && order=$(echo "$POLICIES" | tr ' ' '\n' | tac | tr '\n' ' ')
	for pol in $order; do
		tag=$pol
		[ "$r" = 1 ] || tag=$pol.$r
		say "== $pol ($r of $REPEATS)"
		set_policy $pol
		window "$tag" on_vgpu
		admin policy >"$LOG/$tag.policy.txt" 2>&1
	done
done
if [[ " $POLICIES " != *" fair_fixed "* ]] && [ $TURNS_ONLY = 0 ]; then
	say "== fair, nothing lendable (min = max = size)"
	set_policy fair_fixed
	window fair_fixed on_vgpu
	admin policy >"$LOG/fair_fixed.policy.txt" 2>&1
fi
FLOOD_POLICIES="static fair priority"
if [ $TURNS_ONLY = 1 ]; then
	CURVE=''
	FLOOD_POLICIES=''
fi
for pol in $FLOOD_POLICIES; do
	say "== $pol, the compute batch flooding ($FLOOD grids pending)"
	set_policy $pol
	INFLIGHT=$FLOOD STREAMS=$FLOOD_STREAMS window "${pol}_flood" on_vgpu
done
for len in $CURVE; do
	it=$(awk -v i="$ITERS_B" -v l="$len" 'BEGIN{printf "%d", i * l}')
	say "== priority, compute kernels of $len ms ($it iters)"
	WINDOW_SECS=$CURVE_SECS window "curve_$len" on_vgpu \
		"lc compute memory" "$it"
done
cp "$RUN/state.json" "$LOG/" 2>/dev/null
stop_vgpud

# ---- without vgpud ------------------------------------------------------------
if [ $SIM = 0 ] && [ $TURNS_ONLY = 0 ]; then
	say "== timeslice: three native processes, no MPS"
	window timeslice native
	say "== mps: three native MPS clients, no slices"
	MPSDIR=$(mktemp -d /tmp/vgpu-mps.XXXXXX)
	mkdir -p "$MPSDIR/log"
	CUDA_MPS_PIPE_DIRECTORY=$MPSDIR CUDA_MPS_LOG_DIRECTORY=$MPSDIR/log \
		nvidia-cuda-mps-control -d || die "MPS did not start"
	window mps mps_client
	INFLIGHT=$FLOOD STREAMS=$FLOOD_STREAMS window mps_flood mps_client
	echo quit | CUDA_MPS_PIPE_DIRECTORY=$MPSDIR nvidia-cuda-mps-control
	rm -rf "$MPSDIR"
	MPSDIR=
fi

# ---- the table and the goals -----------------------------------------------------
python3 - "$LOG/rows" "$LC_SMS" "$SIM" "$FLOOD on $FLOOD_STREAMS streams" \
	"$WARM_BURSTS" "$KNOWN_POLICIES" >"$LOG/summary.txt" <<'EOF'
import sys
rows, lc_sms, sim = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1"
flood = sys.argv[4]
R = {}
for line in open(rows):
    f = line.split()
    num = lambda x: None if x == "-" else float(x)
    R[f[0]] = dict(c=num(f[1]), m=num(f[2]), p50=num(f[3]), p99=num(f[4]),
                   k=num(f[5]), e=num(f[6]), secs=num(f[7]), off=num(f[8]),
                   lent0=num(f[9]), lent1=num(f[10]),
                   mhz=num(f[11]) if len(f) > 11 else None,
                   hp99=num(f[12]) if len(f) > 12 else None,
                   rp99=num(f[13]) if len(f) > 13 else None,
                   wp99=num(f[14]) if len(f) > 14 else None)
# repeated windows (NAME, NAME.2, ...): NAME becomes their median, field
# by field (lent: its SM-seconds, so lent% is the median's too); each
# window stays in the table as NAME#i
def median(xs):
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
RAW = dict(R)  # each window, before NAME becomes the median
# what POLICIES may name (the script's KNOWN_POLICIES), static first
POLS = sys.argv[6].split()
REP = {}
for name in POLS:
    reps = [R[k] for k in [name] + sorted(k for k in R if k.startswith(name + "."))
            if k in R]
    if len(reps) < 2:
        continue
    for i, r in enumerate(reps):
        REP["%s#%d" % (name, i + 1)] = r
    med = {f: median([r[f] for r in reps]) for f in reps[0] if f not in ("lent0", "lent1")}
    ls = [r["lent1"] - r["lent0"] for r in reps
          if r["lent0"] is not None and r["lent1"] is not None]
    med["lent0"], med["lent1"] = (0.0, median(ls)) if ls else (None, None)
    R[name] = med
R.update(REP)
def tput(r):
    return (r["c"] or 0) + (r["m"] or 0)
def jobs(r):
    return tput(r) * r["secs"]
def fmt(x, f="%.1f"):
    return "-" if x is None else f % x
out = []
if sim:
    out.append("SIMULATOR RUN: a check of the script; no figure here is a GPU figure")
st = R.get("static")
solo = R.get("solo")
mps = R.get("mps")
out.append("%-12s %10s %10s %10s %8s %9s %9s %8s %8s %10s %8s %6s %6s %8s %8s %8s" % (
    "config", "compute/s", "memory/s", "jobs/s", "vs stat", "lc p50us",
    "lc p99us", "p99/solo", "mps/p99", "energy J", "J/job", "lent%", "SM MHz",
    "head p99", "rest p99", "warm p99"))
out.append("(head: lc's kernels launched in a burst's first 5 ms; rest: the others;"
           " warm: the %s bursts before each window, while a dynamic policy"
           " learns their rhythm)" % sys.argv[5])
if REP:
    out.append("(%s: medians of the windows #1.. taken in turn, every other round "
               "reversed)" % ", ".join(sorted({k.split("#")[0] for k in REP})))
def lent(r):
    # of the SM time lc left idle (its SMs x its off time), the part the
    # scheduler lent out (vgpud's count over the same window)
    if r["lent0"] is None or r["lent1"] is None or not r["off"]:
        return None
    idle = lc_sms * r["off"] / 1000.0
    return 100.0 * (r["lent1"] - r["lent0"]) / idle if idle else None
for name in ["solo", "timeslice", "mps"] + POLS + \
        sorted(REP) + \
        ["mps_flood", "static_flood", "fair_flood", "priority_flood"] + \
        sorted([k for k in R if k.startswith("curve_")],
               key=lambda k: float(k[6:])):
    r = R.get(name)
    if not r:
        continue
    t = tput(r)
    ref = R.get("static_flood") if name.endswith("_flood") else st
    vs = t / tput(ref) if ref and tput(ref) and name != "solo" else None
    ps = r["p99"] / solo["p99"] if solo and r["p99"] and solo["p99"] else None
    base = R.get("mps_flood") if name.endswith("_flood") else mps
    vm = base["p99"] / r["p99"] if base and r["p99"] and base["p99"] else None
    ej = r["e"] / 1000.0 if r["e"] is not None else None
    jj = ej / jobs(r) if ej is not None and jobs(r) else None
    out.append("%-12s %10s %10s %10s %8s %9s %9s %8s %8s %10s %8s %6s %6s %8s %8s %8s" % (
        name, fmt(r["c"]), fmt(r["m"]), fmt(t if name != "solo" else None),
        fmt(vs, "%.3fx"), fmt(r["p50"]), fmt(r["p99"]), fmt(ps, "%.2fx"),
        fmt(vm, "%.0fx"), fmt(ej), fmt(jj, "%.4f"),
        fmt(lent(r) if name != "solo" and not name.startswith("static") else None,
            "%.0f"), fmt(r.get("mhz"), "%.0f"), fmt(r.get("hp99")),
        fmt(r.get("rp99")), fmt(r.get("wp99"))))
    out.append("RESULT sched_bench config=%s compute_jobs_per_s=%s memory_jobs_per_s=%s "
               "jobs_per_s=%s lc_p50_us=%s lc_p99_us=%s lc_kernels=%s energy_j=%s "
               "j_per_job=%s" % (name, fmt(r["c"]), fmt(r["m"]), fmt(t), fmt(r["p50"]),
                                 fmt(r["p99"]), fmt(r["k"], "%.0f"), fmt(ej),
                                 fmt(jj, "%.5f")) +
               " sm_mhz=%s warm_p99_us=%s" % (fmt(r.get("mhz"), "%.0f"),
                                               fmt(r.get("wp99"))))
def goal(name, value, want, ok):
    out.append("RESULT goal %s %s (goal %s): %s" % (
        name, value, want, "n/a" if ok is None else ("met" if ok else "MISSED")))
fair, pri = R.get("fair"), R.get("priority")
if fair and st and tput(st):
    ratio = tput(fair) / tput(st)
    goal("fair_throughput", "%.3fx static" % ratio, ">= 1.15x", ratio >= 1.15)
    if fair["p99"] and st["p99"]:
        goal("fair_lc_p99", "%.1f us vs static %.1f us" % (fair["p99"], st["p99"]),
             "<= static", fair["p99"] <= st["p99"])
# one window's p99 moves by several us from the next under the same
# policy: the differences within each round (windows taken side by side)
# say more than the two medians do
def by_round(a, b, f):
    ds, r = [], 1
    while True:
        ka, kb = (a, b) if r == 1 else ("%s.%d" % (a, r), "%s.%d" % (b, r))
        if ka not in RAW or kb not in RAW:
            return ds
        if RAW[ka][f] is not None and RAW[kb][f] is not None:
            ds.append(RAW[kb][f] - RAW[ka][f])
        r += 1
for other in POLS[1:]:
    d99, d50 = by_round("static", other, "p99"), by_round("static", other, "p50")
    if len(d99) >= 2:
        out.append("RESULT by_round %s-static lc p99 median %+.1f us (higher in %d of %d "
                   "rounds, %+.1f..%+.1f), p50 median %+.1f us (higher in %d of %d)" % (
                       other, median(d99), sum(x > 0 for x in d99), len(d99),
                       min(d99), max(d99), median(d50), sum(x > 0 for x in d50),
                       len(d50)))
if pri and solo and pri["p99"] and solo["p99"]:
    r = pri["p99"] / solo["p99"]
    goal("priority_lc_p99", "%.2fx solo (%.1f / %.1f us)" % (r, pri["p99"], solo["p99"]),
         "<= 1.2x", r <= 1.2)
if pri and lent(pri) is not None:
    goal("priority_reclaim", "%.0f%% of lc's idle SM time lent" % lent(pri),
         ">= 50%", lent(pri) >= 50)
for name in ["static", "fair", "priority"]:
    r = R.get(name)
    if r and mps and r["p99"] and mps["p99"]:
        x = mps["p99"] / r["p99"]
        goal("%s_vs_mps" % name, "lc p99 %.0fx better than plain MPS" % x,
             ">= 100x", x >= 100)
mpsf = R.get("mps_flood")
for name in ["static_flood", "fair_flood", "priority_flood"]:
    r = R.get(name)
    if r and mpsf and r["p99"] and mpsf["p99"]:
        x = mpsf["p99"] / r["p99"]
        goal("%s_vs_mps_flood" % name[:-6],
             "lc p99 %.0fx better than plain MPS (compute batch %s in flight: "
             "%.0f vs %.0f us)" % (x, flood, mpsf["p99"], r["p99"]),
             ">= 100x", x >= 100)
curve = sorted([(float(k[6:]), R[k]["p99"]) for k in R if k.startswith("curve_")])
if curve:
    out.append("RESULT curve priority lc_p99_us by compute kernel ms: " +
               " ".join("%g:%s" % (l, fmt(p)) for l, p in curve))
    out.append("RESULT curve priority lent% by compute kernel ms: " +
               " ".join("%g:%s" % (float(k[6:]), fmt(lent(R[k]), "%.0f"))
                        for k in sorted([k for k in R if k.startswith("curve_")],
                                        key=lambda k: float(k[6:]))))
print("\n".join(out))
EOF
echo
echo "== sched-bench ($([ $SIM = 1 ] && echo simulator ||
	nvidia-smi --query-gpu=name,driver_version --format=csv,noheader))"
echo "sizes: $(cat "$LOG/sizes"); lc $LC_SMS SMs (min $LC_MIN), compute $COMPUTE_SMS, memory $MEMORY_SMS; bursts $ON_MS/$OFF_MS ms; ${SECS} s windows"
cat "$LOG/summary.txt"
[ $FAILED = 0 ]
