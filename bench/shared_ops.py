#!/usr/bin/env python3
"""Shared-memory operations per 1000 mallocs+frees, by workload and thread count (libmtheap only).

What limits an allocator on 64 or 256 hardware threads is the traffic on cache lines that
several threads write: atomic read-modify-writes, lock acquisitions, blocks handed from one
thread to another.  A 2-core machine cannot time that, but it can count it: libmtheap's
statistics count every such operation (MTHEAP_STATS=1 prints them; mtheap_stats_get returns
them), so this runs the multi-threaded workloads at 1..64 threads (oversubscribed far past the
cores, to catch anything that grows with the thread count) and prints the counts per 1000
operations.  A design that scales keeps each row flat as threads are added.

    python3 bench/shared_ops.py [--build build] [--threads 1,2,4,8,16,64] [--out FILE.md]
"""
import argparse
import os
import re
import subprocess
import sys

# Each workload with the same work per thread at every thread count, so that a count per 1000
# operations compares like with like (a fixed total split over more threads would amortize
# each thread's start-up over fewer operations).  {t} is the thread count, {per:N} is N times it
# (for options that give a total to split).
WORKLOADS = [
    ("threads-1k", "-t {t} -i 200000", "own blocks only: malloc(1024)/free pairs"),
    ("threadtest", "-t {t} -i 50 -n {per:5000}", "own blocks only: allocate all, free all"),
    ("larson", "-t {t} -n 1000 -o 50000 -g 4", "blocks inherited from exited threads"),
    ("shbench", "-t {t} -n 2000", "random sizes and lifetimes"),
    ("mstress", "-t {t} -r 10 -o 20000", "thread churn, shared long-lived pool"),
    ("xmalloc", "-t {t} -n 100000", "producer/consumer: every free is remote"),
    ("malloc_test", "-t {t} -n 5000 -m 4096 -r -c 0 -l 1000 -f 50",
     "producer/consumer batches of 5000 (reference 000)"),
    ("xfree", "-t {t} -n 1000", "every thread frees blocks of every other, in no order"),
]

FIELDS = [("shared", "atomic RMWs on shared lines"), ("remote", "remote frees"),
          ("overflow", "inbox overflows"), ("drains", "inbox drains"),
          ("span", "span ops"), ("segment", "segment ops (arena lock)"),
          ("locks", "internal lock acquisitions")]


def expand(spec, t):
    return re.sub(r"\{per:(\d+)\}", lambda m: str(int(m.group(1)) * t),
                  spec.replace("{t}", str(t))).split()


def parse_stats(text):
    """The counters of one MTHEAP_STATS=1 report (stderr of the run)."""
    def num(pattern):
        m = re.search(pattern, text)
        if not m:
            raise ValueError("statistics line not found: %s" % pattern)
        return int(m.group(1))
    return {
        "mallocs": num(r"mallocs\s+(\d+)\s+frees"),
        "frees": num(r"mallocs\s+\d+\s+frees\s+(\d+)"),
        "remote": num(r"remote frees (\d+)"),
        "overflow": num(r"inbox overflows (\d+)"),
        "drains": num(r"drains (\d+)"),
        "span": num(r"span ops (\d+)"),
        "segment": num(r"segment ops (\d+)"),
        "locks": num(r"locks\s+(\d+) acquisitions"),
        "shared": num(r"shared\s+(\d+) atomic RMWs"),
    }


def run(build, lib, name, spec, t):
    exe = os.path.join(build, "bench", name)
    env = dict(os.environ, LD_PRELOAD=lib, MTHEAP_STATS="1")
    p = subprocess.run([exe] + expand(spec, t), env=env, capture_output=True, text=True,
                       timeout=600)
    if p.returncode != 0:
        raise RuntimeError("%s -t %d: exit %d\n%s" % (name, t, p.returncode, p.stderr[-800:]))
    return parse_stats(p.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--threads", default="1,2,4,8,16,64")
    ap.add_argument("--workloads", help="comma-separated subset of: " +
                    ", ".join(w[0] for w in WORKLOADS))
    ap.add_argument("--out")
    a = ap.parse_args()
    try:
        threads = [int(x) for x in a.threads.split(",")]
        if not threads or min(threads) < 1:
            raise ValueError
    except ValueError:
        sys.exit("shared_ops: --threads needs comma-separated positive integers, got %r" % a.threads)
    chosen = WORKLOADS
    if a.workloads:
        names = a.workloads.split(",")
        unknown = [n for n in names if n not in {w[0] for w in WORKLOADS}]
        if unknown:
            sys.exit("shared_ops: unknown workload(s) %s" % ", ".join(unknown))
        chosen = [w for w in WORKLOADS if w[0] in names]
    lib = os.path.join(a.build, "src", "libmtheap.so")
    for f in [lib] + [os.path.join(a.build, "bench", w[0]) for w in chosen]:
        if not os.path.exists(f):
            sys.exit("shared_ops: %s not found (build first: cmake --build %s)" % (f, a.build))

    head = "| workload | threads | " + " | ".join(d for _, d in FIELDS) + " |"
    lines = ["Per 1000 mallocs+frees, libmtheap (`MTHEAP_STATS=1`):", "", head,
             "|---" * (len(FIELDS) + 2) + "|"]
    for name, spec, desc in chosen:
        for t in threads:
            s = run(a.build, lib, name, spec, t)
            ops = max(1, s["mallocs"] + s["frees"])
            cells = ["%.2f" % (1000.0 * s[k] / ops) for k, _ in FIELDS]
            lines.append("| %s | %d | %s |" % (name, t, " | ".join(cells)))
            print("  %s t=%d: %s" % (name, t, " ".join(cells)), file=sys.stderr, flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
