"""The real programs (redis, memcached, python, sqlite, perl, ruby, z3) with tiny request counts,
under glibc and under mtheap; servers must be gone afterwards."""

import json
import os
import subprocess
import sys

from conftest import BENCH, BUILD, DRIVER

PROGRAMS = ["redis", "memcached", "python", "sqlite", "perl", "ruby", "z3"]


def servers():
    out = subprocess.run(["ps", "-eo", "pid=,comm="], capture_output=True, text=True).stdout
    return {l.split()[0] for l in out.splitlines()
            if l.split()[-1] in ("redis-server", "memcached")}


def run_programs(tmp_path, alloc):
    before = servers()
    out = tmp_path / "res"
    p = subprocess.run([sys.executable, DRIVER, "run", "--smoke", "--build", BUILD,
                        "--allocators", alloc, "--workloads", ",".join(PROGRAMS),
                        "--out", str(out), "--timeout", "120"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((out / "results.json").read_text())
    bad = ["%s: %s" % (r["workload"], r["reason"]) for r in data["runs"] if r["status"] != "ok"]
    assert not bad, bad
    assert sorted(r["workload"] for r in data["runs"]) == sorted(PROGRAMS)
    for r in data["runs"]:
        assert r["value"] > 0 and r["maxrss_kb"] > 0
        if r["workload"] in ("redis", "memcached"):
            # Stopped politely (so its rusage was collected), not killed at the deadline.
            assert r["exit"] == 0 and r["signal"] is None, r
    assert servers() <= before, "a server outlived the run"


def test_programs_glibc(tmp_path):
    run_programs(tmp_path, "glibc")


def test_programs_mtheap(tmp_path, mtheap):
    run_programs(tmp_path, "mtheap=" + mtheap)


def test_sqlite_expected_answers():
    from mtheapbench.programs import Sqlite
    exp = Sqlite.expected(10)
    # 1..10: all in distinct groups; 2 rows deleted (5, 10); names 13 chars, +2 for 3, 6, 9.
    assert exp["A"] == (10, 10, sum((x * 7919) % 10007 for x in range(1, 11)), 40)
    assert exp["B"][0] == 8 and exp["B"][2] == 8 * 13 + 2 * 3


def test_z3_answer_is_checked():
    sys.path.insert(0, os.path.join(BENCH, "programs"))
    import z3_queens
    good = "sat\n((q0 1)\n (q1 3)\n (q2 0)\n (q3 2))\n"
    assert z3_queens.check(4, good) is None
    assert "share a column" in z3_queens.check(4, good.replace("(q3 2)", "(q3 1)"))
    assert "diagonal" in z3_queens.check(4, good.replace("(q1 3)", "(q1 2)").replace("(q3 2)", "(q3 3)"))
    assert "expected sat" in z3_queens.check(4, "unsat\n")
    assert "3 of 4" in z3_queens.check(4, "sat\n((q0 1) (q1 3) (q2 0))\n")
    assert "(assert (distinct q0 q1 q2 q3))" in z3_queens.problem(4)


def test_perl_script_catches_bad_usage():
    p = subprocess.run(["perl", os.path.join(BENCH, "programs", "alloc_heavy.pl"), "--scale", "x"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "usage" in p.stderr


def test_ruby_script_catches_bad_usage():
    p = subprocess.run(["ruby", os.path.join(BENCH, "programs", "alloc_heavy.rb"), "--scale", "0"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "usage" in p.stderr
