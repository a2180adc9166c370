"""lang-threads in its smoke size: Python, Ruby, Perl and Java at 1 and 2 threads under glibc
and mtheap, every answer checked; the closed form the checks use against the task itself; a
wrong answer is caught; the table and the plot are written."""

import json
import os
import subprocess
import sys

from conftest import BENCH, BUILD, DRIVER

sys.path.insert(0, os.path.join(BENCH, "programs", "lang"))


def test_closed_form_matches_the_task():
    import threads as task  # bench/programs/lang/threads.py: the Python version of the task
    from mtheapbench.langs import expected, digits_sum
    assert digits_sum(0, 10) == 10 and digits_sum(5, 105) == 5 + 90 * 2 + 5 * 3
    for units in (1, 37, 500):
        assert expected("cpu", units) == sum(task.unit_cpu(i) for i in range(units)) % (1 << 31)
        assert expected("alloc", units) == sum(task.unit_alloc(i) for i in range(units)) % (1 << 31)


def run(tmp_path, allocs):
    out = tmp_path / "res"
    p = subprocess.run([sys.executable, DRIVER, "run", "--smoke", "--build", BUILD,
                        "--allocators", allocs, "--workloads", "lang-threads",
                        "--out", str(out), "--timeout", "120"],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return p, json.loads((out / "results.json").read_text()), out


def test_four_languages_answers_checked(tmp_path, mtheap):
    p, data, out = run(tmp_path, "glibc,mtheap=" + mtheap)
    bad = ["%s t=%d %s: %s" % (r["variant"], r["threads"], r["allocator"], r["reason"])
           for r in data["runs"] if r["status"] != "ok"]
    assert not bad, bad
    seen = {(r["variant"], r["threads"], r["allocator"]) for r in data["runs"]}
    for lang in ("python", "ruby", "perl", "java"):
        for task in ("cpu", "alloc"):
            for t in (1, 2):
                for a in ("glibc", "mtheap"):
                    assert ("%s/%s" % (lang, task), t, a) in seen
    for r in data["runs"]:
        assert r["value"] > 0 and r["extra"]["units"] == 400
    assert "lang-threads (glibc): units/s at 1 thread" in p.stdout
    assert (out / "plots" / "lang_threads.png").stat().st_size > 10000
    assert "## lang-threads" in (out / "report.md").read_text()


def test_wrong_answer_is_a_failure(tmp_path, monkeypatch):
    from mtheapbench import langs
    from mtheapbench.workloads import Context
    w = langs.LangThreads()
    w._answers[("cpu", langs.SMOKE_UNITS)] = 12345     # not what the program prints
    ctx = Context(BUILD, str(tmp_path))

    class Glibc:
        name, env = "glibc", {}

        @staticmethod
        def preload():
            return None
    rec = w.run(ctx, Glibc(), 1, "perl/cpu", langs.SMOKE, str(tmp_path / "x"))
    assert rec["status"] == "FAIL" and "self-check" in rec["reason"], rec
