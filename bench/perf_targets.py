#!/usr/bin/env python3
"""The allocator's performance targets (docs/PERFORMANCE.md), measured side by side.

Runs the workloads the targets name -- 1 KiB malloc/free at 1, 2, 4, 8 threads, libmtmalloc's
`general`, producer/consumer with sizes up to 4, 16 and 64 KiB -- under each allocator,
interleaved (A B C A B C ...) so a drifting machine hurts all alike, and prints a Markdown table
of medians with each peer's time relative to mtheap's from the same run.

    python3 bench/perf_targets.py [--build build] [--repeat 5] [--out docs/perf-table.md]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mtheapbench.allocators import KNOWN, mtheap_path  # noqa: E402  (the driver's table)

# (title, workload, args); threads-1k runs the same iterations per thread at every count, so
# on 2 cores 2 threads should take the time 1 thread takes (the scaling target).
CASES = [
    ("1 KiB malloc/free, 1 thread", "threads-1k", ["-t", "1", "-i", "10000000"]),
    ("1 KiB malloc/free, 2 threads", "threads-1k", ["-t", "2", "-i", "10000000"]),
    ("1 KiB malloc/free, 4 threads", "threads-1k", ["-t", "4", "-i", "5000000"]),
    ("1 KiB malloc/free, 8 threads", "threads-1k", ["-t", "8", "-i", "2500000"]),
    ("general (2 threads x 1M blocks < 64 B, 3 rounds)", "general",
     ["-t", "2", "-n", "1000000", "-r", "3"]),
    ("producer/consumer, sizes <= 4 KiB", "xmalloc", ["-t", "1", "-n", "2000000", "-m", "4096"]),
    ("producer/consumer, sizes <= 16 KiB", "xmalloc", ["-t", "1", "-n", "1000000", "-m", "16384"]),
    ("producer/consumer, sizes <= 64 KiB", "xmalloc", ["-t", "1", "-n", "500000", "-m", "65536"]),
]
PEERS = ["mtheap", "glibc", "jemalloc", "tcmalloc", "mimalloc"]
RESULT = re.compile(r"^RESULT .*\bvalue=([0-9.eE+-]+)", re.M)


def run_once(exe, args, lib):
    env = dict(os.environ)
    if lib:
        env["LD_PRELOAD"] = lib
    p = subprocess.run([exe] + args, env=env, capture_output=True, text=True, timeout=600)
    m = RESULT.search(p.stdout)
    if p.returncode != 0 or not m:
        raise RuntimeError(f"{os.path.basename(exe)} {' '.join(args)} under {lib or 'glibc'}: "
                           f"exit {p.returncode}: {p.stderr.strip()[-300:]}")
    return float(m.group(1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default="build")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    libs = {}
    for name in PEERS:
        path = mtheap_path(a.build) if name == "mtheap" else KNOWN[name]
        if path and not os.path.exists(path):
            print(f"skipping {name}: {path} not found", file=sys.stderr)
            continue
        libs[name] = path
    rows = []
    for title, wl, args in CASES:
        exe = os.path.join(a.build, "bench", wl)
        times = {n: [] for n in libs}
        for r in range(a.repeat):
            for name, lib in libs.items():
                times[name].append(run_once(exe, args, lib))
            print(f"  {title}: round {r + 1}/{a.repeat}", file=sys.stderr)
        rows.append((title, {n: statistics.median(v) for n, v in times.items()}))
    names = list(libs)
    lines = ["| workload | " + " | ".join(f"{n} (s)" for n in names) + " | " +
             " | ".join(f"{n}/mtheap" for n in names if n != "mtheap") + " |",
             "|---" * (len(names) * 2) + "|"]
    for title, med in rows:
        base = med["mtheap"]
        lines.append(f"| {title} | " + " | ".join(f"{med[n]:.3f}" for n in names) + " | " +
                     " | ".join(f"{med[n] / base:.2f}" for n in names if n != "mtheap") + " |")
    # Same work per thread: throughput(2 threads) / throughput(1 thread) = 2 * t1 / t2.
    lines.append("")
    lines.append("2-thread throughput on 1 KiB relative to 1 thread (2 x t1 / t2, medians of %d): "
                 % a.repeat + ", ".join("%s %.2fx" % (n, 2 * rows[0][1][n] / rows[1][1][n])
                                        for n in names) + ".")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
