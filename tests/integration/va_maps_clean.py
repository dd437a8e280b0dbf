#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""va_maps_clean.py LIST_JSON FIRST END: every vGPU of `vgpu-admin list
--json` has its VA window inside [FIRST, END), its worker has it mapped,
and nothing else of that worker lies in the range but reservations
(inaccessible anonymous mappings). Prints what is wrong; exit 1 if any.
Used by tests/integration/va_windows.sh and scripts/gpu-check.sh."""
import json, sys

first, end = int(sys.argv[2], 16), int(sys.argv[3], 16)
bad = 0
vgpus = json.load(open(sys.argv[1]))["vgpus"]
for v in vgpus:
    base, size = v["va_base"], v["va_size"]
    if not (first <= base and base + size <= end):
        print(f"{v['name']}: window 0x{base:x} is outside the range")
        bad += 1
    own = False
    for line in open(f"/proc/{v['pid']}/maps"):
        f = line.split()
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        if hi <= first or lo >= end:
            continue
        if base <= lo and hi <= base + size:
            own = True
            continue
        if f[1] != "---p" or f[4] != "0" or len(f) > 5:
            print(f"{v['name']} (pid {v['pid']}, window 0x{base:x}): {line.strip()}")
            bad += 1
    if not own:
        print(f"{v['name']}: its window 0x{base:x} is not in its maps")
        bad += 1
print(f"{len(vgpus)} workers checked")
sys.exit(1 if bad else 0)
