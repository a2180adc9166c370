"""bench/shared_ops.py: the shared-memory counters of libmtheap's statistics, read per workload
and thread count.  The workloads have known shapes, so the counts have known values."""

import os
import subprocess
import sys

from conftest import BENCH, BUILD

SCRIPT = os.path.join(BENCH, "shared_ops.py")


def table(*args):
    p = subprocess.run([sys.executable, SCRIPT, "--build", BUILD] + list(args),
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rows = {}
    for line in p.stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 9 and cells[1].isdigit():
            rows[(cells[0], int(cells[1]))] = [float(c) for c in cells[2:]]
    return rows


def test_counts_follow_the_workloads(mtheap):
    rows = table("--threads", "1,4", "--workloads", "threads-1k,xmalloc")
    assert set(rows) == {("threads-1k", 1), ("threads-1k", 4), ("xmalloc", 1), ("xmalloc", 4)}
    for t in (1, 4):
        shared, remote, overflow, drains, span, segment, locks = rows[("xmalloc", t)]
        # every xmalloc free is remote: half of all mallocs+frees
        assert 495 <= remote <= 500.5, rows[("xmalloc", t)]
        assert drains > 0 and shared >= remote + overflow
        # a thread that frees only its own blocks touches nothing shared on its way
        assert rows[("threads-1k", t)][0] < 1.0, rows[("threads-1k", t)]
        assert rows[("threads-1k", t)][1] == 0.0


def test_bad_arguments():
    for bad in (["--threads", "0"], ["--threads", "x"], ["--workloads", "nope"]):
        p = subprocess.run([sys.executable, SCRIPT, "--build", BUILD] + bad, capture_output=True,
                           text=True, timeout=60)
        assert p.returncode != 0 and "shared_ops:" in p.stderr, (bad, p.stderr)
