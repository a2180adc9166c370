#!/usr/bin/env python3
"""Measure the debug mode's cost: wall time and peak RSS of workloads under glibc, libmtheap,
and libmtheap-debug with several MTHEAP_DEBUG settings; runs interleaved, medians reported.

    measure.py --build BUILD_DIR [--reps 5] [--before OLD_DEBUG_SO] [--only "MODE;MODE..."]
               [--workloads NAME-PREFIX,...] [--mode MTHEAP_DEBUG_VALUE ...]
--before adds `before: debug full`, the full mode of another build's libmtheap-debug.so (to show
that a change did not slow the default mode down); --only keeps the named modes (libmtheap is
always kept: the ratios are to it); --workloads keeps workloads whose names start with one of
the prefixes (malloc_loop, python3, sort, perl, gcc, git); --mode adds `debug VALUE` for any
other MTHEAP_DEBUG value (repeatable; kept by --only too).
No assertions: the numbers go into docs/DEBUG.md."""
import argparse, os, re, shutil, statistics, subprocess, sys, tempfile, time

def one(cmd, env):
    # ru_maxrss survives exec, so a child forked from this (large) Python would report our RSS:
    # /usr/bin/time, a small process, does the fork and reports the program's own peak.
    t0 = time.perf_counter()
    p = subprocess.run(["/usr/bin/time", "-f", "MAXRSS %M"] + cmd, env=env, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    t = time.perf_counter() - t0
    err = p.stderr
    m = re.search(r"MAXRSS (\d+)", err)
    # leak reports are allowed (git, gcc and perl leak at exit by design); any other is a failure
    errors = [l for l in err.splitlines() if "mtheap-debug:" in l and "memory-leak" not in l and "SUMMARY" not in l]
    if p.returncode != 0 or errors or not m:
        sys.exit("run failed (%s): %s\n%s" % (p.returncode, " ".join(cmd), err[-2000:]))
    return t, int(m.group(1)) / 1024.0

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", required=True)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--before", help="an older libmtheap-debug.so: its full mode is measured too")
    ap.add_argument("--only", help="mode names to keep, separated by ';' (names hold commas)")
    ap.add_argument("--mode", action="append", default=[], help="an extra MTHEAP_DEBUG value to measure")
    ap.add_argument("--workloads", help="comma-separated workload name prefixes to keep")
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
    # real programs (the guard-page mode's cost on them), inputs in a scratch directory
    tmp = tempfile.mkdtemp(prefix="mthd-measure-")
    lines = os.path.join(tmp, "lines.txt")
    with open(lines, "w") as f:
        x = 12345
        for i in range(200000):
            x = (x * 1103515245 + 12345) % (1 << 31)
            f.write("%d line %d\n" % (x, i))
    hello = os.path.join(tmp, "hello.c")
    with open(hello, "w") as f:
        f.write('#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n')
    workloads += [
        ("sort 200k lines", ["sort", "-o", os.path.join(tmp, "sorted.txt"), lines]),
        ("perl hash 200k", ["perl", "-e", "my %h; $h{$_} = $_ * 2 for 1..200000; my $s = 0; "
                            "$s += $_ for values %h; exit($s ? 0 : 1)"]),
        ("gcc -O2 hello.c", ["gcc", "-O2", "-o", os.path.join(tmp, "hello"), hello]),
        ("git init+commit", ["sh", "-c", "cd %s && rm -rf r && git init -q r && cd r && echo a > f && "
                             "git add f && git -c user.name=t -c user.email=t@t commit -qm one" % tmp]),
    ]
    if a.workloads:
        keep = a.workloads.split(",")
        workloads = [w for w in workloads if any(w[0].startswith(k) for k in keep)]
    plain = os.path.join(b, "src/libmtheap.so")
    debug = os.path.join(b, "src/debug/libmtheap-debug.so")
    modes = [("glibc", None, None), ("libmtheap", plain, None),
             ("debug sample=10000", debug, "sample=10000"), ("debug sample=1000", debug, "sample=1000"),
             ("debug sample=100", debug, "sample=100"),
             ("debug full", debug, "full"), ("debug full,unwind=libgcc", debug, "full,unwind=libgcc"),
             ("debug full,unwind=fp", debug, "full,unwind=fp"),
             ("debug guards,patterns", debug, "guards,patterns"), ("debug guardpage", debug, "guardpage")]
    for v in a.mode:
        if "debug " + v not in [m[0] for m in modes]:
            modes.append(("debug " + v, debug, v))
    if a.before:
        modes.append(("before: debug full", os.path.abspath(a.before), "full"))
    if a.only:
        keep = set(m.strip() for m in a.only.split(";")) | {"libmtheap"}
        unknown = keep - {m[0] for m in modes}
        if unknown:
            sys.exit("unknown mode(s) in --only: %s (known: %s)" % (", ".join(sorted(unknown)), "; ".join(m[0] for m in modes)))
        modes = [m for m in modes if m[0] in keep]
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
    shutil.rmtree(tmp, ignore_errors=True)

if __name__ == "__main__":
    main()
