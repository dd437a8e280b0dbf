#!/bin/bash
# shellcheck disable=SC2119,SC2317 # optional title; functions called by tap_run
# SPDX-License-Identifier: MIT
# The vGPU VA windows (include/vgpu/va.h; issue 16, where a create failed
# at random because a window met the worker's own executable or heap):
#   - every window can be had: 63 vGPUs at once on 4 simulated GPUs, and
#     a 64th is refused for want of a window, not of SMs;
#   - a worker maps nothing in the windows but its own;
#   - 1,000 creates and destroys, none refused;
#   - a client's own host memory never lands in a window, and the windows
#     show in its maps as reserved;
#   - a client whose window something else took before the library was
#     loaded hears which one and what is there, and still runs; a device
#     allocation in its own such window claims the window's gaps, and one
#     that would overlap the process's own memory is refused.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
export VGPU_SIM_GPUS=4 VGPU_SIM_SMS=132 VGPU_SIM_MEMORY=16G
vgpu_test_start

va_const()
{
	sed -n "s/^#define $1[[:space:]]*\(0x[0-9a-f]*\)ull.*/\1/p" \
		"$VGPU_SRC/include/vgpu/va.h"
}
FIRST=$(va_const VGPU_VA_FIRST)
END=$(va_const VGPU_VA_END)
NWIN=$(((END - FIRST) >> 40))
tap_check "va.h gives the window range ($FIRST-$END, $NWIN windows)" \
	test -n "$FIRST" -a -n "$END" -a "$NWIN" -gt 48

# create_all PREFIX: creates vGPUs PREFIX0.. until every window is taken;
# failures are appended to $TEST_TMP/failures.
create_all()
{
	local i
	for ((i = 0; i < NWIN; i++)); do
		vadmin create "$1$i" --sms 8 --memory 64M \
			>"$TEST_TMP/create.out" 2>&1 ||
			{
				echo "create $1$i: $(tail -n 1 "$TEST_TMP/create.out")"
			} >>"$TEST_TMP/failures"
	done
}

destroy_all()
{
	local i
	for ((i = 0; i < NWIN; i++)); do
		vadmin destroy "$1$i" >/dev/null 2>&1 || true
	done
}

: >"$TEST_TMP/failures"
create_all w
if [ ! -s "$TEST_TMP/failures" ]; then
	tap_ok "all $NWIN windows can be had at once"
else
	tap_not_ok "all $NWIN windows can be had at once" \
		"$(wc -l <"$TEST_TMP/failures") creates failed"
	head -n 5 "$TEST_TMP/failures" | tap_diag
fi
tap_expect "one more vGPU is refused for want of a VA window" 1 \
	"all $NWIN VA windows are in use" \
	vadmin create extra --sms 8 --memory 64M

# workers_maps_clean: every vGPU's window lies in the range, its worker
# has it mapped, and has nothing else in the range but reservations
# (inaccessible anonymous mappings); prints what is wrong.
workers_maps_clean()
{
	vadmin list --json >"$TEST_TMP/list.json"
	python3 "$VGPU_SRC/tests/integration/va_maps_clean.py" \
		"$TEST_TMP/list.json" "$FIRST" "$END"
}
tap_run "no worker maps anything in another vGPU's window" workers_maps_clean
destroy_all w
tap_expect "after destroying them, list is empty" 0 '' \
	test "$(vadmin list | wc -l)" -eq 1

# 1,000 creates: rounds that fill every window and empty them again
: >"$TEST_TMP/failures"
creates=0 start=$SECONDS
while [ "$creates" -lt 1000 ]; do
	create_all r
	destroy_all r
	creates=$((creates + NWIN))
done
if [ ! -s "$TEST_TMP/failures" ]; then
	tap_ok "$creates creates and destroys, none refused ($((SECONDS - start)) s)"
else
	tap_not_ok "$creates creates and destroys, none refused" \
		"$(wc -l <"$TEST_TMP/failures") failed"
	head -n 5 "$TEST_TMP/failures" | tap_diag
fi
if grep -Eq "reserve the VA window|asked for the VA window" "$VGPUD_LOG"; then
	tap_not_ok "vgpud's log has no VA window failure"
	grep -Em 3 "reserve the VA window|asked for the VA window" "$VGPUD_LOG" | tap_diag
else
	tap_ok "vgpud's log has no VA window failure"
fi

tap_run "create c for the clients" vadmin create c --sms 8 --memory 64M
tap_run "a client's host memory stays out of the windows, which are reserved" \
	client c "$(prog va_host_maps)" "$FIRST" "$END"

# A page placed in window 5 before the library is loaded (dlopen): that
# window cannot be reserved; cuInit says which and what holds it, and
# works (c is in window 0).
taken=$(printf '0x%x' $((FIRST + (5 << 40) + (1 << 16))))
window=$(printf '0x%x' $((FIRST + (5 << 40))))
late_client()
{
	client c python3 - "$taken" <<'EOF'
import ctypes, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
addr = int(sys.argv[1], 16)
# PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS|MAP_FIXED_NOREPLACE
p = libc.mmap(addr, 4096, 3, 0x02 | 0x20 | 0x100000, -1, 0)
assert p == addr, f"mmap at 0x{addr:x}: {p}"
cuda = ctypes.CDLL("libcuda.so.1")
sys.stderr.flush()
print("cuInit:", cuda.cuInit(0), flush=True)
EOF
}
tap_expect "a window taken before the library loads is named, with its holder" \
	0 "the first, at $window: the range is already in use; this process has there: $taken-0x[0-9a-f]+ rw-p" \
	late_client
tap_expect "that client's cuInit still works" 0 '^cuInit: 0$' cat "$TAP_LOG"

# A page of this process placed in its own vGPU's window before the library
# loads (as `ulimit -s unlimited` does with libraries): that window cannot
# be reserved at load. A device allocation there claims the window's gaps
# (no host memory can land on device pointers later); one that would
# overlap the page is refused, saying what is there.
c_base=$(vadmin list --json | python3 -c '
import json, sys
print("0x%x" % [v for v in json.load(sys.stdin)["vgpus"] if v["name"] == "c"][0]["va_base"])')
cat >"$TEST_TMP/own_window.py" <<'EOF'
import ctypes, sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                      ctypes.c_int, ctypes.c_int, ctypes.c_long]
FIXED_NOREPLACE = 0x02 | 0x20 | 0x100000  # PRIVATE|ANONYMOUS|FIXED_NOREPLACE
addr = int(sys.argv[1], 16)
p = libc.mmap(addr, 4096, 3, FIXED_NOREPLACE, -1, 0)
assert p == addr, f"mmap at 0x{addr:x}: {p}"
cuda = ctypes.CDLL("libcuda.so.1")
dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
assert cuda.cuInit(0) == 0
assert cuda.cuDeviceGet(ctypes.byref(dev), 0) == 0
assert cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev) == 0
assert cuda.cuCtxSetCurrent(ctx) == 0
rc = cuda.cuMemAlloc_v2(ctypes.byref(ptr), 1 << 20)
print(f"cuMemAlloc: {rc} at 0x{ptr.value:x}", flush=True)
if rc == 0:
    # host memory can no longer land on the device allocation
    q = libc.mmap(ptr.value, 4096, 3, FIXED_NOREPLACE, -1, 0)
    print("host mmap on the device pointer:",
          "refused" if q in (None, 2**64 - 1) or q != ptr.value else "GRANTED",
          flush=True)
EOF
tap_expect "an allocation that would overlap the process's own memory in its window is refused, saying what is there" \
	0 "cuMemAlloc refused: device memory at $c_base-0x[0-9a-f]+ would share its addresses with this process's own memory there \\(${c_base#0x}-" \
	client c python3 "$TEST_TMP/own_window.py" "$c_base"
tap_expect "... with CUDA_ERROR_OPERATING_SYSTEM" 0 '^cuMemAlloc: 304 ' \
	cat "$TAP_LOG"
# Under an address-space limit nothing can be reserved (it would count
# against the limit): each allocation is checked against the process's
# memory instead, and the same overlap is refused, saying why.
tap_expect "under ulimit -v, an allocation that would overlap the process's own memory is refused, saying why" \
	0 "cuMemAlloc refused: device memory at $c_base-0x[0-9a-f]+ would share its addresses with this process's own memory there \\(${c_base#0x}-.*\\(ulimit -v\\)" \
	client c bash -c 'ulimit -v 16000000 && exec python3 "$@"' _ \
	"$TEST_TMP/own_window.py" "$c_base"
tap_expect "... with CUDA_ERROR_OPERATING_SYSTEM" 0 '^cuMemAlloc: 304 ' \
	cat "$TAP_LOG"
far=$(printf '0x%x' $((c_base + (512 << 30))))
tap_expect "an allocation beside it is made, and the window's gaps are then reserved: no host memory lands on it" \
	0 "^host mmap on the device pointer: refused" \
	client c python3 "$TEST_TMP/own_window.py" "$far"

tap_vgpud_alive
tap_vgpud_stops
tap_done
