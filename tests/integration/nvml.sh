#!/bin/bash
# shellcheck disable=SC2119 # vgpu_test_start takes an optional title
# SPDX-License-Identifier: MIT
# NVML in the guest (issue 18): vgpu's libnvidia-ml.so.1
# (guest-driver/nvml, $BUILD/lib/nvml) answers from a vGPU of the
# simulator through vgpu's libcuda.so.1. tests/programs/nvml_query checks
# each answer against the CUDA driver's (name, UUID, PCI bus id, memory
# = the quota, compute capability), and the errors (bad handles, NULL
# pointers, NOT_SUPPORTED, before nvmlInit and after nvmlShutdown);
# without a vGPU nvmlInit is NVML_ERROR_DRIVER_NOT_LOADED. pynvml, where
# it is installed, reads the same vGPU.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
P=$(prog nvml_query)
NVML_DIR="$VGPU_LIB/nvml"
[ -x "$P" ] || tap_skip_all "$P is not built"
[ -e "$NVML_DIR/libnvidia-ml.so.1" ] ||
	tap_skip_all "$NVML_DIR/libnvidia-ml.so.1 is not built"
vgpu_test_start
# a client of vGPU $1 with vgpu's NVML first on its library path
nv() {
	local vgpu=$1
	shift
	LD_LIBRARY_PATH="$NVML_DIR" client "$vgpu" "$@"
}

tap_run "create vGPU a (16 SMs, 1 GiB)" vadmin create a --sms 16 --memory 1G
tap_run "nvml_query on a: NVML's answers are CUDA's, memory is the quota" \
	nv a "$P" --memory 1073741824 --lib "$NVML_DIR"
tap_expect "without a vGPU nvmlInit is NVML_ERROR_DRIVER_NOT_LOADED" 0 \
	'nvml_query: OK' nv nosuch "$P" --no-vgpu --lib "$NVML_DIR"
# NVIDIA's driver first on the path (the toolkit's stub stands in): not
# vgpu's, refused with a line saying so
STUB="${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so"
if [ -e "$STUB" ]; then
	mkdir -p "$TEST_TMP/nvidia"
	ln -sf "$STUB" "$TEST_TMP/nvidia/libcuda.so.1"
	tap_expect "NVIDIA's libcuda.so.1 found first: refused, DRIVER_NOT_LOADED" \
		0 "libcuda.so.1 that is not vgpu's" env \
		LD_LIBRARY_PATH="$NVML_DIR:$TEST_TMP/nvidia" "$P" --no-driver
else
	tap_skip "NVIDIA's libcuda.so.1 found first: refused" "no $STUB"
fi
tap_run "create vGPU b (8 SMs, 256 MiB)" vadmin create b --sms 8 --memory 256M
tap_run "nvml_query on b: its own quota" \
	nv b "$P" --memory 268435456 --lib "$NVML_DIR"

# what PyTorch does to count devices and read their UUIDs through NVML
# (torch.cuda's _raw_device_uuid_nvml: ctypes, the plain nvmlInit, then
# the _v2 calls)
tap_expect "PyTorch's NVML path (ctypes, nvmlInit) sees one vGPU and its UUID" \
	0 '^1 GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$' nv a python3 -c '
from ctypes import CDLL, byref, c_int, c_void_p, create_string_buffer
nvml = CDLL("libnvidia-ml.so.1")
assert nvml.nvmlInit() == 0
n = c_int(-1)
assert nvml.nvmlDeviceGetCount_v2(byref(n)) == 0
for i in range(n.value):
    h = c_void_p()
    assert nvml.nvmlDeviceGetHandleByIndex_v2(i, byref(h)) == 0
    buf = create_string_buffer(96)
    assert nvml.nvmlDeviceGetUUID(h, buf, 96) == 0
    print(n.value, buf.raw.decode("ascii").strip("\0"))
nvml.nvmlShutdown()'

# pynvml (nvidia-ml-py) as monitoring tools use it, where installed
if python3 -c 'import pynvml' 2>/dev/null; then
	tap_expect "pynvml reads vGPU a: one device, total memory 1 GiB" 0 \
		'^1 vGPU a: .* 1073741824$' nv a python3 -c '
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
name = pynvml.nvmlDeviceGetName(h)
print(pynvml.nvmlDeviceGetCount(), name.decode() if isinstance(name, bytes) else name,
      pynvml.nvmlDeviceGetMemoryInfo(h).total)
pynvml.nvmlShutdown()'
else
	tap_skip "pynvml reads vGPU a" "pynvml is not installed"
fi

tap_run "the vGPU serves a CUDA program after NVML" \
	client a "$(prog vector_add)"
tap_vgpud_alive
tap_vgpud_stops
tap_done
