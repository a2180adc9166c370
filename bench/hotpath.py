#!/usr/bin/env python3
"""Instructions per malloc+free on one thread, for every allocator, counted by callgrind.

Instruction counts do not depend on what else the machine is doing, so unlike timings they
compare allocators exactly on a noisy VM.  Each case runs bench/tools/hotpath at two loop counts;
(Ir(long) - Ir(short)) / (long - short) is the cost of one iteration with start-up and exit
cancelled out.  Besides malloc and free, an iteration has a few instructions of loop (the same
for every allocator).

    python3 bench/hotpath.py [--build build] [--sizes 16,64,1024] [--out FILE.md]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mtheapbench.allocators import KNOWN, mtheap_path  # noqa: E402

PEERS = ["mtheap", "mimalloc", "jemalloc", "tcmalloc", "tbbmalloc", "glibc"]
MODES = [("pair", "malloc+free, another block of the class live"),
         ("lone", "malloc+free, the only block of its page"),
         ("batch", "100 mallocs then 100 frees, per block")]
SHORT, LONG = 20000, 220000


def instructions(exe, args, lib):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        env = dict(os.environ)
        env.pop("LD_PRELOAD", None)
        if lib:
            # valgrind adds its own preloads to this one for the program it runs.
            env["LD_PRELOAD"] = lib
        cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, exe] + args
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        if p.returncode != 0:
            raise RuntimeError("%s under %s: exit %d\n%s" % (" ".join(args), lib or "glibc",
                                                             p.returncode, p.stderr[-500:]))
        text = open(out).read()
    m = re.search(r"^summary:\s+(\d+)", text, re.M) or re.search(r"^totals:\s+(\d+)", text, re.M)
    if not m:
        raise RuntimeError("no instruction total in callgrind output")
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--sizes", default="16,64,1024")
    ap.add_argument("--out")
    a = ap.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("hotpath: valgrind is not installed (apt-get install valgrind)")
    exe = os.path.join(a.build, "bench", "hotpath")
    if not os.access(exe, os.X_OK):
        sys.exit("hotpath: %s not built (cmake --build %s --target bench_hotpath)" % (exe, a.build))
    try:
        sizes = [int(x) for x in a.sizes.split(",")]
    except ValueError:
        sys.exit("hotpath: --sizes needs comma-separated integers, got %r" % a.sizes)
    libs = {}
    for name in PEERS:
        path = mtheap_path(a.build) if name == "mtheap" else KNOWN[name]
        if path and not os.path.exists(path):
            print("hotpath: skipping %s: %s not found" % (name, path), file=sys.stderr)
            continue
        libs[name] = path
    lines = ["| case | " + " | ".join(libs) + " |", "|---" * (len(libs) + 1) + "|"]
    for size in sizes:
        for mode, desc in MODES:
            cells = []
            for name, lib in libs.items():
                lo = instructions(exe, [str(size), str(SHORT), mode], lib)
                hi = instructions(exe, [str(size), str(LONG), mode], lib)
                cells.append("%.1f" % ((hi - lo) / (LONG - SHORT)))
                print("  %s %d %s: %s" % (name, size, mode, cells[-1]), file=sys.stderr)
            lines.append("| %d B: %s | %s |" % (size, desc, " | ".join(cells)))
    text = "Instructions per iteration (callgrind):\n\n" + "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
