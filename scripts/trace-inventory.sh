#!/bin/bash
# SPDX-License-Identifier: MIT
#
# On the GPU machine, after `make all`: what NVIDIA's CUDA 13 runtime
# (static, nvcc's default, and shared), cuBLAS, cuFFT, cuRAND and PyTorch
# ask NVIDIA's driver for beyond its public entry points (issue 17): each
# program runs with the tracing libcuda.so.1 (tests/trace/) in front of
# the real driver. Writes, per program, the export-table UUIDs and the
# cuGetProcAddress requests (name, version, flags), and a summary, to
# $OUT (or build/trace).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
T=$BUILD/trace
rm -rf "$T"
mkdir -p "$T"
real=$(ldconfig -p | awk '/libcuda\.so\.1 .*x86-64/ { print $NF; exit }')
[ -n "$real" ] || { echo "trace-inventory: no libcuda.so.1 in ldconfig" >&2; exit 1; }
echo "real driver: $real ($(readlink -f "$real"))"
CU=${CUDA_HOME:-/usr/local/cuda}
"$CU/bin/nvcc" -O2 -o "$T/vector_add_static" tests/runtime/vector_add_rt.cu || exit 1
"$CU/bin/nvcc" -O2 -cudart shared -o "$T/vector_add_shared" \
	tests/runtime/vector_add_rt.cu || exit 1
"$CU/bin/nvcc" -O2 -o "$T/libs_hello" tests/trace/libs_hello.cu \
	-lcublas -lcufft -lcurand || exit 1

# traced NAME CMD...: run it through the tracing driver
traced() {
	local name=$1
	shift
	VGPU_TRACE_REAL=$real VGPU_TRACE_FILE=$T/$name.trace \
		LD_LIBRARY_PATH=$BUILD/tests/trace:$CU/lib64 \
		timeout 300 "$@" >"$T/$name.out" 2>&1
	echo "$name: exit $? ($(tail -1 "$T/$name.out"))"
}
traced static "$T/vector_add_static"
traced shared "$T/vector_add_shared"
traced libs "$T/libs_hello"
traced torch python3 -c '
import torch
x = torch.zeros(1, device="cuda")
a = torch.randn(256, 256, device="cuda")
print("torch", torch.__version__, float((x + 1).item()), float((a @ a).sum().abs() > 0))'

# what the driver answers cuGetProcAddress with, name by name, version by
# version (tests/trace/proc_map.c)
nm -D --defined-only "$CU/lib64/stubs/libcuda.so" |
	awk '$2 == "T" { print $3 }' >"$T/stub-exports.txt"
gcc -I"$CU/include" -o "$T/proc_map" tests/trace/proc_map.c \
	-L"$CU/lib64/stubs" -lcuda -ldl &&
	"$T/proc_map" "$T/stub-exports.txt" >"$T/procmap.txt"
echo "proc map: $(wc -l <"$T/procmap.txt") lines, exit $?"

{
	for f in "$T"/*.trace; do
		n=$(basename "$f" .trace)
		echo "== $n: $(grep -c '^export' "$f") export-table requests, $(grep -c '^proc' "$f") cuGetProcAddress requests"
		echo "export tables:"
		grep '^export' "$f" | sort | uniq -c
		echo "cuGetProcAddress (unique name version flags -> result):"
		grep '^proc' "$f" | sort -u | awk '{ print "  " $0 }'
	done
} >"$T/summary.txt"
grep '^==' "$T/summary.txt"
echo "all export tables asked for:"
cat "$T"/*.trace | grep '^export' | awk '{ print $2, $4 }' | sort | uniq -c
if [ -n "${OUT:-}" ]; then
	tar -czf "$OUT/trace-inventory.tgz" -C "$BUILD" trace
	cp "$T/summary.txt" "$OUT/trace-summary.txt"
	cp "$T/procmap.txt" "$OUT/procmap.txt"
fi
