#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/lib-bench.sh [--reps R] [--sms "16 32"] [--quick]: on the GPU
# machine, after `make all` (issue 18). CUDA's libraries through a vGPU
# against native on the same SMs: bench/lib_bench (cuBLAS SGEMM and HGEMM
# 512 to 8192, cuFFT 2D C2C, a cuDNN convolution) run R times (default 5)
# each way on every size of vGPU (default 16 and 32 SMs), the two ways
# alternated (odd reps native first, even reps the vGPU first):
#   native  NVIDIA's driver and libraries on a raw green context of the
#           vGPU's own SM groups (`lib_bench --groups`), as the workers'
#           user, a client of the same MPS server: gpu-check's "slice
#           fidelity" baseline (bench/raw_slice.c) for the libraries
#   vgpu    the same program on the vGPU (our libcuda.so.1 first on the
#           library path), while no other work runs
# Natively it also runs sgemm_t and hgemm_t: the same GEMMs with cuBLAS
# told the slice's SM count (cublasSetSmCountTarget), because the device
# there reports all its SMs to cuBLAS's heuristics where a vGPU reports
# its own; their ratios are against the vGPU's plain sgemm / hgemm.
#
# The figure, per case and size: ratio = native ms / vGPU ms (the vGPU's
# speed against native: 1 = the same, < 1 the vGPU slower; as the slice
# fidelity figure, raw / vgpu), the median over the reps of each rep's
# pair; with the medians of each way's ms beside it:
#   RESULT name=lib_CASE_SMS ratio=R native_ms=.. vgpu_ms=.. ...
# and the goals (GEMMs >= 0.97, cuFFT and cuDNN >= 0.95) as
#   RESULT name=lib_goal_... goal=G met=M/N worst=...
# Whether the native runs were on their slice:
#   RESULT name=lib_slice_SMS ... ok=yes|NO  (green context's SMs, the
#   SMs a kernel on the benchmarks' stream saw before and after the
#   cases, the green context still current; and the same SM count seen
#   through the vGPU)
#   RESULT name=lib_native_scaling ...  (native ms at the smaller size
#   over the larger: about the inverse ratio of SMs when on the slice)
# It asserts nothing about speed: exit 0 when every run ran, 1 when a run
# failed (its log says why) or nothing could be measured.
#
#   --quick   one rep, 16 SMs, small cases (a check that it runs)
# Logs: $BUILD/lib-bench (and $OUT/lib-bench.tgz under the device tool).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BUILD=${BUILD:-build}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
BIN=$BUILD/bin
LOG=$BUILD/lib-bench
REPS=5
SIZES="16 32"
QUICK=0
while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2; shift 2 ;;
	--sms) SIZES=$2; shift 2 ;;
	--quick) QUICK=1; shift ;;
	*) echo "usage: $0 [--reps R] [--sms \"16 32\"] [--quick]" >&2
	   exit 2 ;;
	esac
done
case $REPS in '' | *[!0-9]* | 0) echo "lib-bench: --reps needs a count" >&2; exit 2 ;; esac

say() { printf '[%6.1fs] %s\n' "$SECONDS" "$*"; }
die() { echo "lib-bench: $*" >&2; exit 1; }

command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 ||
	die "no NVIDIA GPU here (nvidia-smi -L failed)"
command -v nvidia-cuda-mps-control >/dev/null ||
	die "nvidia-cuda-mps-control not found"
for f in "$BUILD/bench/lib_bench" "$BIN/vgpud" "$BIN/vgpu-admin" \
	"$BUILD/lib/vgpu/libcuda.so.1"; do
	[ -e "$f" ] || die "$f is missing (run make all)"
done
id vgpu >/dev/null 2>&1 ||
	useradd --system --no-create-home --shell /usr/sbin/nologin vgpu
rm -rf "$LOG"
mkdir -p "$LOG"
nvidia-smi -L | tee "$LOG/gpu.txt"
# absolute: the native runs are the vgpu user's
LB=$(cd "$BUILD/bench" && pwd)/lib_bench
DRV=$(cd "$BUILD/lib/vgpu" && pwd)

# The cases: both ways; native also the GEMMs with cuBLAS told the SMs
if [ $QUICK = 1 ]; then
	REPS=1
	SIZES=16
	GEMM_N="512 1024"
	FFT_N="512"
else
	GEMM_N="512 1024 2048 4096 8192"
	FFT_N="1024 4096"
fi
CASES=
TCASES=
for n in $GEMM_N; do CASES="$CASES sgemm:$n"; TCASES="$TCASES sgemm_t:$n"; done
for n in $GEMM_N; do CASES="$CASES hgemm:$n"; TCASES="$TCASES hgemm_t:$n"; done
# LIB_BENCH_SMTARGET=0: without the cuBLAS-told-the-SMs GEMMs (shorter)
[ "${LIB_BENCH_SMTARGET:-1}" = 0 ] && TCASES=
for n in $FFT_N; do CASES="$CASES fft2d:$n"; done
CASES="$CASES conv"

. scripts/gpu-lib.sh # start_vgpud, stop_vgpud (RUN, VGPUD_PID)
pack_logs() {
	[ -n "${OUT:-}" ] || return 0
	tar -czf "$OUT/lib-bench.tgz" -C "$BUILD" lib-bench 2>/dev/null
	return 0
}
trap 'stop_vgpud; pack_logs' EXIT
admin() { timeout 90 "$BIN/vgpu-admin" --run-dir "$RUN" "$@"; }
# vfield NAME KEY: one field of `vgpu-admin show NAME --json` (lists
# joined with spaces), as in gpu-check.sh
vfield() {
	admin show "$1" --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
v = v.get("vgpu", v)
x = v[sys.argv[1]]
print(" ".join(map(str, x)) if isinstance(x, list) else x)' "$2"
}
# native GROUPS: NVIDIA's driver, a green context of those SM groups, as
# the workers' user under their MPS server (gpu-check's raw())
native_run() {
	# shellcheck disable=SC2086 # the cases are words
	runuser -u vgpu -- env LD_LIBRARY_PATH="$CUDA_HOME/lib64" \
		CUDA_MPS_PIPE_DIRECTORY="$RUN/mps" \
		CUDA_MPS_LOG_DIRECTORY="$RUN/mps-log" \
		timeout -k 5 300 "$LB" --groups "$1" $CASES $TCASES
}
# vgpu NAME: our driver alone before NVIDIA's runtime libraries
vgpu_run() {
	# shellcheck disable=SC2086 # the cases are words
	VGPU=$1 VGPU_SOCKET=$RUN/client.sock \
		LD_LIBRARY_PATH=$DRV:$CUDA_HOME/lib64 \
		timeout -k 5 300 "$LB" $CASES
}

failed=0
start_vgpud
chmod -R a+rX "$BUILD" 2>/dev/null
: >"$LOG/results"
for k in $SIZES; do
	v=lb$k
	admin create "$v" --sms "$k" --memory 16G >"$LOG/create.$k.log" 2>&1 ||
		die "cannot create a vGPU of $k SMs: $(cat "$LOG/create.$k.log")"
	groups=$(vfield "$v" groups | tr ' ' ',')
	sms=$(vfield "$v" sms)
	[ -n "$groups" ] || die "no SM groups for $v: $(admin show "$v" 2>&1)"
	say "vGPU $v: $sms SMs, groups $groups; native: a green context of the same groups"
	[ "$sms" = "$k" ] || say "note: asked for $k SMs, the vGPU has $sms"
	for rep in $(seq "$REPS"); do
		[ $((rep % 2)) = 1 ] && order="native vgpu" || order="vgpu native"
		for mode in $order; do
			log=$LOG/$mode.$k.$rep.log
			t0=$SECONDS
			if [ "$mode" = native ]; then
				native_run "$groups" >"$log" 2>&1
			else
				vgpu_run "$v" >"$log" 2>&1
			fi
			rc=$?
			say "$mode $k SMs #$rep: rc $rc, $((SECONDS - t0)) s"
			if [ $rc != 0 ]; then
				say "FAIL $mode $k SMs #$rep: $(tail -3 "$log" | tr '\n' ' ')"
				failed=1
			fi
			sed -n "s/^RESULT /RESULT mode=$mode sms=$k rep=$rep /p" \
				"$log" >>"$LOG/results"
		done
	done
	admin destroy "$v" >/dev/null 2>&1
done
stop_vgpud

# The figures. Each RESULT line of the results file:
#   RESULT mode=M sms=K rep=R name=CASE value=V unit=U
say "== ratio = native ms / vGPU ms (1: the same; < 1: the vGPU slower),"
say "   the median over $REPS reps of each rep's pair"
awk -v reps="$REPS" '
	function kv(s, k,   i, a, n) {
		n = split(s, a, " ")
		for (i = 1; i <= n; i++)
			if (index(a[i], k "=") == 1)
				return substr(a[i], length(k) + 2)
		return ""
	}
	function median(n, v,   i, j, t) {
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && v[j - 1] > v[j]; j--) {
				t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
			}
		if (n == 0) return 0
		return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
	}
	# the distinct values of an info figure over the reps, "a,b"
	function distinct(m, k, x,   r, s, v, key, seen) {
		s = ""
		for (r = 1; r <= reps; r++) {
			key = m SUBSEP k SUBSEP x SUBSEP r
			if (!(key in info)) continue
			v = info[key]
			if (v in seen) continue
			seen[v] = 1
			s = s (s == "" ? "" : ",") v
		}
		return s == "" ? "-" : s
	}
	# how many reps gave the info figure the value want, "n/reps"
	function count(m, k, x, want,   r, n, key) {
		n = 0
		for (r = 1; r <= reps; r++) {
			key = m SUBSEP k SUBSEP x SUBSEP r
			if ((key in info) && info[key] == want) n++
		}
		return n
	}
	function reps_of(m, k, x,   r, n) {
		n = 0
		for (r = 1; r <= reps; r++)
			if ((m SUBSEP k SUBSEP x SUBSEP r) in info) n++
		return n
	}
	# one figure: native case xn against vGPU case xv at k SMs
	function figure(k, xn, xv, label, cat,
			r, nn, nv, np, a, b, c, kn, kg, na, vg, ratio, rom, goal,
			verdict) {
		nn = nv = np = 0
		for (r = 1; r <= reps; r++) {
			kn = "native" SUBSEP k SUBSEP xn SUBSEP r
			kg = "vgpu" SUBSEP k SUBSEP xv SUBSEP r
			if (kn in val) a[++nn] = val[kn]
			if (kg in val) b[++nv] = val[kg]
			if ((kn in val) && (kg in val) && val[kg] > 0)
				c[++np] = val[kn] / val[kg]
		}
		goal = xv ~ /^[sh]gemm/ ? 0.97 : 0.95
		if (np == 0) {
			printf "RESULT name=%s ratio=none native_reps=%d " \
			       "vgpu_reps=%d goal=%.2f verdict=NO_FIGURE\n",
			       label, nn, nv, goal
			total[cat]++
			return
		}
		na = median(nn, a); vg = median(nv, b)
		ratio = median(np, c)
		rom = vg > 0 ? na / vg : 0
		verdict = ratio >= goal ? "met" : "MISSED"
		total[cat]++
		if (ratio >= goal) met[cat]++
		if (!(cat in worst) || ratio < worst[cat]) {
			worst[cat] = ratio; worst_name[cat] = label
		}
		printf "RESULT name=%s ratio=%.4f native_ms=%.5g vgpu_ms=%.5g " \
		       "ratio_of_medians=%.4f pairs=%d goal=%.2f verdict=%s\n",
		       label, ratio, na, vg, rom, np, goal, verdict
	}
	/^RESULT / {
		m = kv($0, "mode"); k = kv($0, "sms"); r = kv($0, "rep")
		x = kv($0, "name"); u = kv($0, "unit"); v = kv($0, "value")
		if (!(k in ksize)) { ksize[k] = 1; ks[++nk] = k }
		key = m SUBSEP k SUBSEP x SUBSEP r
		if (u == "ms") {
			val[key] = v + 0
			if (m == "vgpu" && !((k, x) in xseen)) {
				xseen[k, x] = 1; xs[k, ++nx[k]] = x
			}
			if (m == "native" && !((k, x) in nseen)) {
				nseen[k, x] = 1; ns[k, ++nnx[k]] = x
			}
		} else
			info[key] = v
	}
	END {
		if (nk == 0) { print "lib-bench: no figures"; exit 1 }
		for (i = 1; i <= nk; i++) {
			k = ks[i]
			# the vGPU cases, or the native ones where the vGPU
			# gave none
			if (nx[k] == 0)
				for (j = 1; j <= nnx[k]; j++)
					if (ns[k, j] !~ /_t_/)
						xs[k, ++nx[k]] = ns[k, j]
			for (j = 1; j <= nx[k]; j++) {
				x = xs[k, j]
				cat = x ~ /^[sh]gemm/ ? "gemm" : "fft_conv"
				figure(k, x, x, "lib_" x "_" k, cat)
				xt = x
				if (sub(/^sgemm_/, "sgemm_t_", xt) ||
				    sub(/^hgemm_/, "hgemm_t_", xt))
					if ((k, xt) in nseen)
						figure(k, xt, x, "lib_" xt "_" k,
						       "gemm_smtarget")
			}
			# were the native runs on their slice?
			n = reps_of("native", k, "smid_sms")
			kept = count("native", k, "green_ctx_kept", 1)
			ok = n > 0 && count("native", k, "green_sms", k) == n &&
			     count("native", k, "smid_sms", k) == n &&
			     count("native", k, "smid_sms_end", k) == n &&
			     kept == n
			for (r = 1; r <= reps; r++)
				if (("native" SUBSEP k SUBSEP "green_ctx_lost_after" SUBSEP r) in info)
					ok = 0
			printf "RESULT name=lib_slice_%s native_green_sms=%s " \
			       "native_smid_sms=%s native_smid_sms_end=%s " \
			       "native_green_ctx_kept=%d/%d native_runtime_sms=%s " \
			       "vgpu_smid_sms=%s vgpu_smid_sms_end=%s " \
			       "vgpu_runtime_sms=%s ok=%s\n", k,
			       distinct("native", k, "green_sms"),
			       distinct("native", k, "smid_sms"),
			       distinct("native", k, "smid_sms_end"), kept, n,
			       distinct("native", k, "runtime_sms"),
			       distinct("vgpu", k, "smid_sms"),
			       distinct("vgpu", k, "smid_sms_end"),
			       distinct("vgpu", k, "runtime_sms"),
			       ok ? "yes" : "NO"
			if (("native" SUBSEP k SUBSEP "conv_algo" SUBSEP 1) in info ||
			    ("vgpu" SUBSEP k SUBSEP "conv_algo" SUBSEP 1) in info)
				printf "RESULT name=lib_conv_algo_%s native=%s " \
				       "vgpu=%s\n", k,
				       distinct("native", k, "conv_algo"),
				       distinct("vgpu", k, "conv_algo")
		}
		# natively, a slice twice the size: about half the time
		if (nk >= 2)
			for (j = 1; j <= nnx[ks[1]]; j++) {
				x = ns[ks[1], j]
				if (x !~ /^(sgemm|hgemm)_8192$/) continue
				for (q = 1; q <= 2; q++) {
					nn = 0
					for (r = 1; r <= reps; r++) {
						key = "native" SUBSEP ks[q] SUBSEP x SUBSEP r
						if (key in val) t[++nn] = val[key]
					}
					med[q] = median(nn, t)
				}
				if (med[1] > 0 && med[2] > 0)
					printf "RESULT name=lib_native_scaling " \
					       "case=%s ms_%s_over_%s=%.3f " \
					       "sms_%s_over_%s=%.3f\n", x,
					       ks[1], ks[2], med[1] / med[2],
					       ks[2], ks[1], ks[2] / ks[1]
			}
		split("gemm gemm_smtarget fft_conv", cats, " ")
		split("0.97 0.97 0.95", goals, " ")
		for (i = 1; i <= 3; i++) {
			c = cats[i]
			if (!(c in total)) continue
			printf "RESULT name=lib_goal_%s goal=%s met=%d/%d " \
			       "worst=%s:%.4f\n", c, goals[i], met[c] + 0,
			       total[c], (c in worst_name) ? worst_name[c] : "-",
			       (c in worst) ? worst[c] : 0
		}
	}' "$LOG/results" | tee "$LOG/ratios.txt"
[ "${PIPESTATUS[0]}" = 0 ] || failed=1
date -u '+# %Y-%m-%dT%H:%MZ' >>"$LOG/ratios.txt"
exit $failed
