#!/usr/bin/env python3
"""Measure the debug mode's cost: wall time and peak RSS of workloads under glibc, libmtheap,
and libmtheap-debug with several MTHEAP_DEBUG settings; runs interleaved, medians reported.

    measure.py --build BUILD_DIR [--reps 5]
No assertions: the numbers go into docs/DEBUG.md."""
import argparse, os, re, statistics, subprocess, sys, time

def one(cmd, env):
    # ru_maxrss survives exec, so a child forked from this (large) Python would report our RSS:
    # /usr/bin/time, a small process, does the fork and reports the program's own peak.
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M"] + cmd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    t = time.perf_counter() - t0
    err = p.stderr
    m = re.search(r"MAXRSS (\d+)", err)
    if p.returncode != 0 or "mtheap-debug:" in err or not m:
        sys.exit("run failed (%s): %s\n%s" % (p.returncode, " ".join(cmd), err[-2000:]))
    return t, int(m.group(1)) / 1024.0

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    here = os.path.dirname(os.path.abspath(__file__))
    loop = os.path.join(b, "src/debug/debug-tests/perf/malloc_loop")
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    workloads = [
        ("malloc_loop 1 thread", [loop, "2000000", "1"]),
        ("malloc_loop 2 threads", [loop, "1000000", "2"]),
        ("python3 pybench.py", [py, os.path.join(here, "pybench.py")]),
    ]
    plain = os.path.join(b, "src/libmtheap.so")
    debug = os.path.join(b, "src/debug/libmtheap-debug.so")
    modes = [("glibc", None, None), ("libmtheap", plain, None),
             ("debug sample=10000", debug, "sample=10000"), ("debug sample=1000", debug, "sample=1000"),
             ("debug sample=100", debug, "sample=100"),
             ("debug full", debug, "full"), ("debug full,unwind=fp", debug, "full,unwind=fp"),
             ("debug guards,patterns", debug, "guards,patterns")]
    print("| workload | allocator | time s (median of %d) | vs libmtheap | peak RSS MiB |" % a.reps)
    print("|---|---|---|---|---|")
    for wname, cmd in workloads:
        res = {m[0]: [] for m in modes}
        for _ in range(a.reps):
            for name, lib, opt in modes:  # interleaved: drift hits every mode alike
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                env.pop("MTHEAP_DEBUG", None)
                if lib:
                    env["LD_PRELOAD"] = lib
                if opt:
                    env["MTHEAP_DEBUG"] = opt
                res[name].append(one(cmd, env))
        base = statistics.median(t for t, _ in res["libmtheap"])
        for name, _, _ in modes:
            t = statistics.median(x for x, _ in res[name])
            m = statistics.median(r for _, r in res[name])
            print("| %s | %s | %.3f | %.2fx | %.1f |" % (wname, name, t, t / base, m))
        sys.stdout.flush()

if __name__ == "__main__":
    main()
