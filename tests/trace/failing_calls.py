# SPDX-License-Identifier: MIT
"""Which driver call of ours a program stops on: a gdb script.

Loads under gdb, runs the program until our libcuda.so.1 is loaded (by
the program or by NVIDIA's runtime, with dlopen), then puts a breakpoint
on every cu* function and prints each call and the result of every call
that fails ("FAILCALL cuX -> N"). For calls that fail without naming
themselves on stderr (a real implementation's error, not a stub's).

    VGPU=a VGPU_SOCKET=... LD_LIBRARY_PATH=<driver dir>:... \\
        gdb -q -batch -ex 'py ARGS = ["cublas"]' \\
        -x tests/trace/failing_calls.py PROGRAM

(ARGS: the program's arguments.) Found with it on the simulator: cuBLAS
handle creation stops at cuLibraryGetKernel (CUDA_ERROR_NOT_FOUND): the
simulator has no C twins of cuBLAS's kernels.
"""
import gdb

ARGS = globals().get("ARGS", [])


class Finish(gdb.FinishBreakpoint):
    def __init__(self, frame, name):
        super().__init__(frame, internal=True)
        self.silent = True
        self.name = name

    def stop(self):
        try:
            rc = int(self.return_value) if self.return_value is not None else 0
        except (gdb.error, TypeError, ValueError):
            rc = 0
        print("FAILCALL %s -> %d" % (self.name, rc) if rc else
              "call %s" % self.name)
        return False

    def out_of_scope(self):
        pass


class Entry(gdb.Breakpoint):
    def stop(self):
        frame = gdb.newest_frame()
        Finish(frame, frame.name())
        return False


gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute("catch load libcuda")
gdb.execute("run " + " ".join(ARGS))
names = set()
for line in gdb.execute("info functions ^cu[A-Z][A-Za-z0-9_]*$",
                        to_string=True).splitlines():
    line = line.strip()
    if "(" in line and line.endswith(";"):
        names.add(line.split("(")[0].split()[-1].lstrip("*"))
for name in sorted(names):
    try:
        Entry(name, internal=True)
    except gdb.error:
        pass
gdb.execute("delete 1")
gdb.execute("continue")
