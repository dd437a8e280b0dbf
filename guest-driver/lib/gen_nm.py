# SPDX-License-Identifier: MIT
"""The nm reading of the stub generator (gen_cuda_stubs.py)."""
import os
import subprocess


def nm_names(args):
    """Defined global text symbols of nm ARGS, without @version."""
    nm = os.environ.get("NM", "nm")
    out = subprocess.run([nm] + args, check=True, capture_output=True,
                         text=True).stdout
    names = set()
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[1] in ("T", "W"):
            names.add(f[2].split("@")[0])
    return names
