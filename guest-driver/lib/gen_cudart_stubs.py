#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Generate cudart_stubs.c: a NotSupported stub for every function NVIDIA's
libcudart.so.13 exports that our runtime does not define, so that no
program dies at load time with "symbol lookup error" because it links a
call we lack. Each stub returns cudaErrorNotSupported through
cudart_unsupported() (cudart_error.c), which says so once on stderr,
naming the call.

    gen_cudart_stubs.py CUDA_HOME OBJECT... > cudart_stubs.c

NVIDIA's list comes from nm -D --defined-only of
CUDA_HOME/lib64/libcudart.so.13 at build time (it is never committed); ours
from nm of the hand-written objects. Only names that the runtime headers
declare as returning cudaError_t are stubbed (a per-thread-stream variant,
NAME_ptsz or NAME_ptds, takes NAME's declaration): a generic stub for
anything else would hand the caller a wrong value. Those, and a variant
whose base call we implement (its stub would silently turn a working
call into a failing one), are reported on stderr and left out; the
runtime_symbols test then names them.

The stubs keep the header's parameter list, so the compiler checks each
against cuda_runtime_api.h. The interop headers (GL, EGL, VDPAU) need
window-system headers the build does not require: their calls are
defined with (void) and the header's prototype in a comment; a stub that
never reads its arguments is called correctly either way (the C calling
convention leaves the arguments to the caller).
"""
import os
import re
import subprocess
import sys

# Headers whose declarations the generated file can compile against.
INCLUDED = ["cuda_runtime_api.h", "cuda_profiler_api.h"]
# Runtime headers that need other libraries' headers first.
INTEROP = ["cuda_gl_interop.h", "cuda_egl_interop.h", "cuda_vdpau_interop.h"]
QUALIFIERS = {"extern", "__host__", "__device__", "__cudart_builtin__",
              "__CUDA_DEPRECATED", "CUDARTAPI"}
VARIANT = re.compile(r"^(\w+?)_(ptsz|ptds)$")


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


def declarations(path):
    """{name: (return type, parameter text)} of the extern calls in path."""
    src = open(path).read()
    src = re.sub(r"/\*.*?\*/", " ", src, flags=re.S)
    src = re.sub(r"//[^\n]*", " ", src)
    decls = {}
    for m in re.finditer(r"\bextern\s+([^;{}()]*?)\b((?:__)?cuda\w+)\s*\(",
                         src):
        depth, i = 1, m.end()
        while depth and i < len(src):
            depth += {"(": 1, ")": -1}.get(src[i], 0)
            i += 1
        if src[i:].lstrip()[:1] != ";":
            continue  # a definition or a macro, not a declaration
        ret = " ".join(t for t in m.group(1).split() if t not in QUALIFIERS)
        params = src[m.end():i - 1]
        # C++ default arguments are not part of a definition
        params = re.sub(r"__dv\([^()]*\)", "", params)
        params = re.sub(r"\s*=\s*[^,]+", "", params)
        params = re.sub(r"\s+,", ",", " ".join(params.split()))
        decls.setdefault(m.group(2), (ret, params))
    return decls


def main():
    cuda, objects = sys.argv[1], sys.argv[2:]
    inc = os.path.join(cuda, "include")
    theirs = nm_names(["-D", "--defined-only",
                       os.path.join(cuda, "lib64", "libcudart.so.13")])
    ours = nm_names(["--defined-only"] + objects)
    decls, interop = {}, {}
    for h in INCLUDED:
        for n, d in declarations(os.path.join(inc, h)).items():
            decls.setdefault(n, d)
    for h in INTEROP:
        if os.path.exists(os.path.join(inc, h)):
            for n, d in declarations(os.path.join(inc, h)).items():
                interop.setdefault(n, (d, h))

    stubs, left = [], []
    for name in sorted(theirs - ours):
        if not name.startswith(("cuda", "__cuda")):
            continue
        m = VARIANT.match(name)
        base = m.group(1) if m else name
        if m and base in ours:
            left.append((name, "%s is implemented: write %s by hand" %
                         (base, name)))
        elif base in decls and decls[base][0] == "cudaError_t":
            stubs.append((name, decls[base][1], None))
        elif base in interop and interop[base][0][0] == "cudaError_t":
            stubs.append((name, interop[base][0][1], interop[base][1]))
        elif base in decls or base in interop:
            left.append((name, "returns %s, not cudaError_t: write it by "
                         "hand" % (decls.get(base) or interop[base][0])[0]))
        else:
            left.append((name, "no declaration in the runtime headers"))
    for name, why in left:
        sys.stderr.write("gen_cudart_stubs: %s not stubbed: %s\n" %
                         (name, why))

    out = sys.stdout
    out.write("/* SPDX-License-Identifier: MIT */\n"
              "/*\n * Generated by gen_cudart_stubs.py at build time: a "
              "stub for each of the\n * %d functions NVIDIA's libcudart.so.13"
              " exports that ours does not\n * implement. Each fails with "
              "cudaErrorNotSupported and one line on\n * stderr naming the "
              "call. Do not edit; not committed.\n */\n" % len(stubs))
    out.write("#include <cuda_profiler_api.h>\n\n#include \"cudart.h\"\n")
    for name, params, header in stubs:
        if header:
            out.write("\n/* %s(%s) in %s */\n" % (name, params, header))
            params = "void"
        out.write("\nCUDART_API cudaError_t CUDARTAPI %s(%s)\n{\n"
                  "\treturn cudart_unsupported(\"%s\");\n}\n" %
                  (name, params or "void", name))


if __name__ == "__main__":
    main()
