#!/bin/bash
# SPDX-License-Identifier: MIT
#
# scripts/lib-diagnose.sh PROGRAM [ARG...]: on the GPU machine, after
# `make all`, why a program that runs natively fails on a vGPU (issue 17):
#   native  the program through the tracing driver (tests/trace/) in front
#           of NVIDIA's driver, with every export-table entry call and the
#           64 bytes its pointer arguments show before and after it, and
#           cuBLASLt's errors;
#   vgpu    the program on our driver with VGPU_TRACE=1 and the CUDA
#           libraries' own logs (cuBLAS, cuBLASLt) turned up;
#   ours    the tracing driver in front of ours: the same entry calls, with
#           our answers, to set beside the native ones.
# Writes NAME.{native,vgpu,ours}.out, NAME.native.trace and NAME.ours.trace
# (the vgpu run's trace is on its stderr, in NAME.vgpu.out) to $OUT (or
# build/diagnose).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
[ $# -ge 1 ] || { echo "usage: $0 PROGRAM [ARG...]" >&2; exit 2; }
BUILD=${BUILD:-build}
BIN=$BUILD/bin
CU=${CUDA_HOME:-/usr/local/cuda}
D=${OUT:-$BUILD/diagnose}
LOG=$D
mkdir -p "$D"
n=$(basename "$1")
real=$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ { print $NF; exit }')
DRV=$(cd "$BUILD/lib/vgpu" && pwd)
TRACE=$(cd "$BUILD/tests/trace" && pwd)
. scripts/gpu-lib.sh # start_vgpud, stop_vgpud
trap 'stop_vgpud' EXIT
id vgpu >/dev/null 2>&1 ||
	useradd --system --no-create-home --shell /usr/sbin/nologin vgpu

VGPU_TRACE_REAL=$real VGPU_TRACE_FILE=$D/$n.native.trace CUBLASLT_LOG_LEVEL=2 \
	VGPU_TRACE_ENTRIES=1 VGPU_TRACE_DUMP=1 LD_LIBRARY_PATH=$TRACE:$CU/lib64 \
	timeout -k 5 120 "$@" >"$D/$n.native.out" 2>&1
echo "native: exit $? ($(tail -1 "$D/$n.native.out"))"

start_vgpud
"$BIN/vgpu-admin" --run-dir "$RUN" create diag --sms 32 --memory 8G \
	>/dev/null || { echo "cannot create the vGPU"; exit 1; }
export VGPU=diag VGPU_SOCKET=$RUN/client.sock
VGPU_TRACE=1 CUBLAS_LOGINFO_DBG=1 CUBLAS_LOGDEST_DBG=stderr \
	CUBLASLT_LOG_LEVEL=5 LD_LIBRARY_PATH=$DRV:$CU/lib64 \
	timeout -k 5 120 "$@" >"$D/$n.vgpu.out" 2>&1
echo "vgpu: exit $? ($(tail -1 "$D/$n.vgpu.out"))"
VGPU_TRACE_REAL=$DRV/libcuda.so.1 VGPU_TRACE_FILE=$D/$n.ours.trace \
	CUBLASLT_LOG_LEVEL=2 VGPU_TRACE_ENTRIES=1 VGPU_TRACE_DUMP=1 LD_LIBRARY_PATH=$TRACE:$CU/lib64 \
	timeout -k 5 120 "$@" >"$D/$n.ours.out" 2>&1
echo "ours: exit $? ($(tail -1 "$D/$n.ours.out"))"
