"""The driver: argument handling and errors, RESULT parsing, statistics, the schedule, report
generation, and the server lifecycle (a server that does not start is a FAIL, not a hang)."""

import json
import math
import os
import subprocess
import sys
import time

import pytest

from conftest import BUILD, DRIVER
from mtheapbench import allocators, cli, programs, report, runner, stats
from mtheapbench.workloads import QUICK, FULL, Context, registry


def drive(*args, timeout=300):
    return subprocess.run([sys.executable, DRIVER] + list(args), capture_output=True, text=True,
                          timeout=timeout)


# ---------------------------------------------------------------- statistics

def test_median():
    assert stats.median([3]) == 3
    assert stats.median([5, 1, 3]) == 3
    assert stats.median([4, 1, 3, 2]) == 2.5
    with pytest.raises(ValueError):
        stats.median([])


def test_geomean():
    assert stats.geomean([2, 8]) == pytest.approx(4.0)
    assert stats.geomean([1, 10, 100]) == pytest.approx(10.0)
    assert stats.geomean([0.5, 2]) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        stats.geomean([])
    with pytest.raises(ValueError):
        stats.geomean([1, 0])


def test_ratio_orientation():
    # Always "how many times worse than the reference".
    assert stats.ratio(2.0, 1.0, "lower") == 2.0
    assert stats.ratio(50.0, 100.0, "higher") == 2.0
    assert stats.ratio(None, 1.0, "lower") is None
    assert stats.ratio(0.0, 0.0, "lower") == 1.0      # zero calls vs zero calls
    assert math.isinf(stats.ratio(5.0, 0.0, "lower"))  # anything vs a best of zero
    assert stats.ratio(0.0, 15.0, "lower") == 0.0


# ---------------------------------------------------------------- parsing

def test_parse_result_line():
    r = stats.parse_result_line("RESULT workload=threads-1k threads=4 metric=time value=1.5 "
                                "unit=s better=lower ops_per_s=2.6e+06 kind=default")
    assert r["workload"] == "threads-1k" and r["threads"] == 4
    assert r["value"] == 1.5 and r["ops_per_s"] == pytest.approx(2.6e6)
    assert r["kind"] == "default"


def test_parse_defaults_and_errors():
    r = stats.parse_result_line("RESULT workload=x threads=1 metric=m value=3 unit=s")
    assert r["better"] == "lower" and isinstance(r["value"], float)
    for bad in ("RESULT workload=x threads=1 metric=m unit=s",           # no value
                "RESULT workload=x threads=1 metric=m value=abc unit=s",  # not a number
                "RESULT workload=x threads=1 metric=m value=1 unit=s better=up",
                "RESULT workload=x junk",
                "result workload=x"):
        with pytest.raises(stats.ParseError):
            stats.parse_result_line(bad)


def test_parse_output_collects_fail_lines():
    out = "noise\nsample 1: 3 loops/s\nFAIL workload=w reason=selfcheck block 0x1 bad\n"
    results, fails = stats.parse_output(out)
    assert results == [] and fails == ["workload=w reason=selfcheck block 0x1 bad"]


# ---------------------------------------------------------------- arguments and errors

def test_no_command_is_usage_error():
    assert drive().returncode == 2


def test_list():
    p = drive("list", "--build", BUILD)
    assert p.returncode == 0
    for w in ("malloc_test", "threads-1k", "general", "mmap-lock", "rwlock-fairness", "larson",
              "xmalloc", "cache-thrash", "cache-scratch", "shbench", "mstress", "realloc",
              "large", "threadtest", "redis", "memcached", "python", "sqlite", "window", "xfree",
              "glibc-thread"):
        assert w in p.stdout
    assert "jemalloc" in p.stdout and "mtheap" in p.stdout


@pytest.mark.parametrize("args,msg", [
    (["run", "--allocators", "nosuchmalloc"], "unknown allocator"),
    (["run", "--allocators", "x=/etc/passwd"], "not a loadable library"),
    (["run", "--allocators", "x=/nonexistent/lib.so"], "not a loadable library"),
    (["run", "--allocators", "glibc,glibc"], "given twice"),
    (["run", "--allocators", ""], "no allocators"),
    (["run", "--workloads", "nosuchworkload"], "unknown workload"),
    (["run", "--threads", "0"], "--threads"),
    (["run", "--threads", "two"], "--threads"),
    (["run", "--repeat", "0"], "--repeat"),
    (["run", "--settle", "9"], "--settle"),
    (["run", "--settle", "-1"], "--settle"),
    (["run", "--quick", "--full"], "not allowed"),
    (["run", "--bogus"], "unrecognized"),
    (["report", "/nonexistent-dir"], "cannot read"),
])
def test_run_errors_before_anything_runs(args, msg, tmp_path):
    out = tmp_path / "out"
    p = drive(*(args + (["--out", str(out), "--build", BUILD] if args[0] == "run" else [])))
    assert p.returncode == 2, p.stdout + p.stderr
    assert msg in p.stderr
    assert not out.exists()  # nothing ran, nothing written


def test_missing_binaries_is_error(tmp_path):
    p = drive("run", "--build", str(tmp_path / "nobuild"), "--allocators", "glibc",
              "--workloads", "threads-1k", "--out", str(tmp_path / "o"))
    assert p.returncode == 2 and "not built" in p.stderr


def test_missing_known_allocator_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setitem(allocators.KNOWN, "jemalloc", str(tmp_path / "libnothere.so"))
    allocs, skipped = allocators.resolve("glibc,jemalloc", BUILD)
    assert [a.name for a in allocs] == ["glibc"]
    assert skipped and skipped[0][0] == "jemalloc" and "missing" in skipped[0][1]


def test_mtheap_missing_is_skipped(tmp_path):
    allocs, skipped = allocators.resolve("glibc,mtheap", str(tmp_path))
    assert [a.name for a in allocs] == ["glibc"]
    assert skipped[0][0] == "mtheap" and "not built" in skipped[0][1]


def test_custom_allocator_by_path():
    lib = os.path.join(BUILD, "bench", "libbenchglibc.so")
    allocs, _ = allocators.resolve("fwd=" + lib, BUILD)
    assert allocs[0].name == "fwd" and allocs[0].path == lib
    assert allocs[0].preload(["/a.so"]) == "/a.so:" + lib


# ---------------------------------------------------------------- schedule

class _A:
    def __init__(self, name):
        self.name = name


def test_schedule_interleaves_allocators():
    reg = registry()
    ctx = Context(BUILD, "/tmp")
    allocs = [_A("glibc"), _A("b"), _A("c")]
    sched = cli.plan([reg["threads-1k"], reg["rwlock-fairness"], reg["mmap-syscalls"]],
                     allocs, ctx, QUICK, [1, 2], 2)
    t1 = [(rep, a.name) for rep, w, t, v, a in sched if w.name == "threads-1k" and t == 1]
    assert t1 == [(0, "glibc"), (0, "b"), (0, "c"), (1, "glibc"), (1, "b"), (1, "c")]
    rw = [(v, a.name) for rep, w, t, v, a in sched if w.name == "rwlock-fairness"]
    assert {a for _, a in rw} == {"glibc"}  # not an allocator test
    assert {v for v, _ in rw} == {"default", "prefer-writer", "nonrecursive"}
    once = [rep for rep, w, t, v, a in sched if w.name == "mmap-syscalls"]
    assert once == [0, 0, 0]


def test_full_mode_scales_every_c_workload():
    reg = registry()
    ctx = Context(BUILD, "/tmp")
    assert cli.threads_for(reg["shbench"], ctx, FULL, [1, 2, 4, 8]) == [1, 2, 4, 8]
    assert cli.threads_for(reg["shbench"], ctx, QUICK, [1, 2, 4, 8]) == [ctx.ncpus]
    assert cli.threads_for(reg["redis"], ctx, FULL, [1, 2, 4, 8]) == [1]


# ---------------------------------------------------------------- report

def fake_runs():
    runs = []
    for rep in (1, 2, 3):
        for a, t, rss, flt in (("glibc", 2.0, 1000, 1000), ("fast", 1.0, 3000, 4000),
                               ("lean", 4.0, 500, 250)):
            for th in (1, 2):
                runs.append(dict(workload="w1", variant="", threads=th, allocator=a, rep=rep,
                                 status="ok", reason="", metric="time", value=t * rep / 2,
                                 unit="s", better="lower", wall_s=t * rep / 2, user_s=t,
                                 sys_s=0.1, maxrss_kb=rss, minflt=flt + rep, exit=0,
                                 signal=None, cmd="w1",
                                 extra={"ops_per_s": 1e6 / t * th}))
        runs.append(dict(workload="w2", variant="", threads=1, allocator="glibc", rep=rep,
                         status="ok", reason="", metric="rps", value=100.0, unit="req/s",
                         better="higher", wall_s=2.0, user_s=1, sys_s=0, maxrss_kb=2000,
                         minflt=500, exit=0, signal=None, cmd="w2", extra={}))
        runs.append(dict(workload="w2", variant="", threads=1, allocator="fast", rep=rep,
                         status="ok", reason="", metric="rps", value=200.0, unit="req/s",
                         better="higher", wall_s=1.0, user_s=1, sys_s=0, maxrss_kb=2000,
                         minflt=500, exit=0, signal=None, cmd="w2", extra={}))
        runs.append(dict(workload="w2", variant="", threads=1, allocator="lean", rep=rep,
                         status="FAIL", reason="killed by SIGSEGV", wall_s=0.1, user_s=0,
                         sys_s=0, maxrss_kb=100, exit=None, signal=11, cmd="w2"))
    return runs


def test_summarize_medians_and_ratios():
    cases = report.summarize(fake_runs())
    c = cases[("w1", "", 1)]
    assert c["allocs"]["glibc"]["median"] == pytest.approx(2.0)   # values 1, 2, 3
    assert (c["allocs"]["glibc"]["min"], c["allocs"]["glibc"]["max"]) == (1.0, 3.0)
    assert c["best"] == "fast"
    assert c["allocs"]["lean"]["vs_glibc"] == pytest.approx(2.0)
    w2 = cases[("w2", "", 1)]
    assert w2["allocs"]["fast"]["vs_glibc"] == pytest.approx(0.5)  # twice the rate
    assert w2["allocs"]["lean"]["median"] is None
    assert w2["allocs"]["lean"]["fails"] == ["killed by SIGSEGV"] * 3


def test_allocator_summary_geomeans():
    cases = report.summarize(fake_runs())
    ref, s = report.allocator_summary(cases, ["glibc", "fast", "lean"])
    assert ref == "glibc"
    # fast: wall 0.5 (w1, both thread counts) and 0.5 (w2): geomean 0.5; RSS 3x, 3x, 1x.
    assert s["fast"]["time_geomean"] == pytest.approx(0.5)
    assert s["fast"]["rss_geomean"] == pytest.approx(3 ** (2 / 3))
    # lean failed w2: excluded from the geomean, counted as failures.
    assert s["lean"]["cases"] == 2 and s["lean"]["failed_runs"] == 3
    assert s["lean"]["time_geomean"] == pytest.approx(2.0)
    # minor faults: medians (the middle rep's, +2) against glibc's; fast 4x, 4x and 1x (w2)
    assert s["fast"]["faults_geomean"] == pytest.approx((4002 / 1002) ** (2 / 3))
    assert s["lean"]["faults_geomean"] == pytest.approx(252 / 1002)
    text = report.text_tables(cases, ["glibc", "fast", "lean"])
    assert "page faults" in text.split("Summary")[1]
    w1 = text.split("w1 t=1:")[1].split("\n\n")[0]
    assert "faults" in w1.splitlines()[1] and " 4002 " in w1 and " 252 " in w1
    assert "minor page faults" in report.summary_markdown(cases, ["glibc", "fast", "lean"])


def test_results_without_faults_still_report():
    """results.json written before the runs recorded page faults: "-", never 0x or a crash."""
    runs = [{k: v for k, v in r.items() if k != "minflt"} for r in fake_runs()]
    cases = report.summarize(runs)
    assert cases[("w1", "", 1)]["allocs"]["fast"]["minflt"] is None
    ref, s = report.allocator_summary(cases, ["glibc", "fast", "lean"])
    assert s["fast"]["faults_geomean"] is None and s["fast"]["rss_geomean"] is not None
    text = report.text_tables(cases, ["glibc", "fast", "lean"])
    assert "0.00x" not in text


def test_report_files(tmp_path):
    data = {"meta": {"date": "2026-01-01 00:00 UTC", "command": "mtheap-bench run --quick",
                     "machine": {"cores": 2}, "mode": "quick", "repeat": 3, "threads": "1,2",
                     "allocators": {"glibc": None, "fast": "/x.so", "lean": "/y.so"},
                     "skipped": [["mtheap", "not built"]]},
            "runs": fake_runs()}
    with open(tmp_path / "results.json", "w") as f:
        json.dump(data, f)
    p = drive("report", str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert "w1 t=1" in p.stdout and "Summary" in p.stdout and "FAIL" in p.stdout
    md = (tmp_path / "report.md").read_text()
    assert "killed by SIGSEGV" in md and "skipped mtheap" in md and "| glibc |" in md
    rows = (tmp_path / "results.csv").read_text().splitlines()
    assert rows[0].startswith("workload,variant,threads,allocator")
    assert len(rows) == 1 + len(data["runs"])
    pytest.importorskip("matplotlib")
    for png in ("scaling.png", "relative_time.png", "relative_rss.png"):
        f = tmp_path / "plots" / png
        assert f.exists() and f.read_bytes()[:4] == b"\x89PNG"


# ---------------------------------------------------------------- runner and servers

def test_runner_timeout_kills_process_group(tmp_path):
    t0 = time.monotonic()
    r = runner.run(["sh", "-c", "sleep 30 & sleep 30"], dict(os.environ), 0.5,
                   str(tmp_path / "t"))
    assert r.timed_out and time.monotonic() - t0 < 10
    assert "timeout" in r.describe()


def test_runner_reports_signal(tmp_path):
    r = runner.run(["sh", "-c", "kill -SEGV $$"], dict(os.environ), 10, str(tmp_path / "s"))
    assert not r.ok and "SIGSEGV" in r.describe()


def test_server_that_exits_is_fail(tmp_path):
    s = programs.Server(["sh", "-c", "echo cannot bind >&2; exit 1"], dict(os.environ),
                        str(tmp_path / "srv"), programs.free_port(), lambda port: False)
    with pytest.raises(programs.ServerError, match="exited at startup"):
        s.start()
    s.stop()


def test_server_that_never_listens_is_fail_not_hang(tmp_path, monkeypatch):
    monkeypatch.setattr(programs, "START_TIMEOUT", 1.0)
    s = programs.Server(["sleep", "60"], dict(os.environ), str(tmp_path / "srv"),
                        programs.free_port(), lambda port: programs._send(port, b"x", b"\n"))
    t0 = time.monotonic()
    with pytest.raises(programs.ServerError, match="did not answer"):
        s.start()
    res = s.stop()
    assert time.monotonic() - t0 < 15
    with pytest.raises(ProcessLookupError):
        os.kill(s.proc.pid, 0)  # gone, and reaped
    assert res is not None


def test_end_to_end_small_run(tmp_path):
    out = tmp_path / "res"
    p = drive("run", "--smoke", "--build", BUILD, "--allocators", "glibc",
              "--workloads", "threads-1k,general,rwlock-fairness", "--repeat", "2",
              "--out", str(out), "--strict")
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((out / "results.json").read_text())
    assert len(data["runs"]) == 2 * (2 + 1 + 3)
    assert all(r["status"] == "ok" for r in data["runs"])
    assert all(r["maxrss_kb"] > 0 and r["wall_s"] > 0 for r in data["runs"])
    # the page faults are the workload's own too: a run touches at least its binary and libc
    assert all(r["minflt"] > 10 for r in data["runs"])
    # Peak RSS is the workload's own, not the Python driver's (see tools/benchrun.c).
    assert max(r["maxrss_kb"] for r in data["runs"] if r["workload"] == "threads-1k") < 12000
    assert (out / "report.md").exists() and (out / "results.csv").exists()
    assert "about" in p.stderr and "left" in p.stderr  # the progress line


def test_failed_run_is_reported_not_dropped(tmp_path):
    out = tmp_path / "res"
    lib = os.path.join(BUILD, "bench", "libbenchcorrupt.so")
    p = subprocess.run([sys.executable, DRIVER, "run", "--smoke", "--build", BUILD,
                        "--allocators", "glibc,broken=" + lib, "--workloads", "threads-1k",
                        "--out", str(out), "--strict"], capture_output=True, text=True,
                       timeout=300, env=dict(os.environ, BENCH_CORRUPT_EVERY="5"))
    assert p.returncode == 1  # --strict
    data = json.loads((out / "results.json").read_text())
    bad = [r for r in data["runs"] if r["allocator"] == "broken"]
    assert bad and all(r["status"] == "FAIL" and "selfcheck" in r["reason"] for r in bad)
    assert "FAIL" in (out / "report.md").read_text()


def test_debug_allocators_carry_their_mode(monkeypatch):
    from mtheapbench.workloads import base_env
    monkeypatch.setenv("MTHEAP_PURGE_DELAY_MS", "5")   # a caller's tuning must not leak in
    allocs, skipped = allocators.resolve("mtheap,mtheap-debug,mtheap-guard", BUILD)
    assert not skipped, skipped
    plain, full, guard = allocs
    assert plain.path.endswith("/src/libmtheap.so") and plain.env == {}
    assert full.path.endswith("/libmtheap-debug.so") and guard.path == full.path
    env = base_env(full.preload(), full.env)
    assert env["MTHEAP_DEBUG"] == "full,-leaks" and env["LD_PRELOAD"] == full.path
    assert "MTHEAP_PURGE_DELAY_MS" not in env
    assert base_env(guard.preload(), guard.env)["MTHEAP_DEBUG"].startswith("sample=")
    assert "MTHEAP_DEBUG" not in base_env(plain.preload(), plain.env)
    assert "mtheap-debug" not in allocators.DEFAULT   # opt-in: make bench compares allocators


def test_debug_allocators_run(tmp_path):
    out = tmp_path / "res"
    p = drive("run", "--smoke", "--build", BUILD, "--allocators", "mtheap-debug,mtheap-guard",
              "--workloads", "threads-1k,realloc,larson", "--out", str(out), "--strict")
    assert p.returncode == 0, p.stdout + p.stderr
    data = json.loads((out / "results.json").read_text())
    assert {r["allocator"] for r in data["runs"]} == {"mtheap-debug", "mtheap-guard"}
    assert all(r["status"] == "ok" for r in data["runs"])


def test_plockstat_cost_runs_under_plockstat(tmp_path):
    out = tmp_path / "res"
    p = drive("run", "--smoke", "--build", BUILD, "--workloads", "plockstat-cost",
              "--out", str(out), "--strict")
    assert p.returncode == 0, p.stdout + p.stderr
    runs = json.loads((out / "results.json").read_text())["runs"]
    assert [r["allocator"] for r in runs] == ["glibc"]   # a lock test: one run, not per allocator
    r = runs[0]
    assert r["status"] == "ok" and r["metric"] == "C_added_ns_per_pair"
    assert r["extra"]["bare_ns"] > 0 and r["extra"]["C_ns"] > 0 and r["extra"]["H_ns"] > 0
    # The -C and -H runs really ran under plockstat: each left its report.
    reports = list((out / "logs").glob("*.plockstat"))
    assert len(reports) == 2 and all(f.stat().st_size > 0 for f in reports), reports


# ---------------------------------------------------------------- noisy cases measured again

def _set(workload, values, status="ok"):
    """One set of a case: values[allocator] = its three repetitions' times."""
    out = []
    for a, vs in values.items():
        for rep, v in enumerate(vs, 1):
            r = dict(workload=workload, variant="", threads=2, allocator=a, rep=rep,
                     status=status if (a, rep) == ("mtheap", 2) else "ok", reason="",
                     metric="time", value=v, unit="s", better="lower", wall_s=v, user_s=v,
                     sys_s=0.0, maxrss_kb=1000, minflt=100)
            out.append(r)
    return out


STEADY = {"glibc": [1.0, 1.02, 0.98], "mtheap": [0.5, 0.51, 0.49]}
JUMPY = {"glibc": [1.0, 2.0, 0.98], "mtheap": [0.5, 0.51, 0.49]}   # glibc 2.04x apart
META = {"allocator_order": ["glibc", "mtheap"], "untimed": ["rss-return"],
        "allocator_independent": []}


def test_settle_replaces_a_noisy_set_with_a_steady_one():
    runs = _set("window", JUMPY) + _set("larson", STEADY)
    asked = []

    def measure(key, set_no):
        asked.append((key, set_no))
        return _set("window", {"glibc": [0.9, 0.92, 0.91], "mtheap": [0.45, 0.46, 0.44]})
    cli.settle(runs, META, 2, measure)
    assert asked == [(("window", "", 2), 2)]   # only the noisy case, once: the new set is steady
    cases = report.summarize(runs, META)
    w = cases[("window", "", 2)]
    assert not report.is_noisy(w)
    assert w["allocs"]["glibc"]["median"] == 0.91   # the new set's, not the first's
    assert sum(1 for r in runs if r.get("superseded")) == 6   # the first set, kept on record
    assert all(r["set"] == 2 for r in runs if r["workload"] == "window" and not r.get("superseded"))
    note = report.remeasured_note(runs)
    assert "window t=2 (set 2 kept)" in note and "larson" not in note


def test_settle_keeps_the_first_set_when_the_new_one_is_noisy_too():
    runs = _set("window", JUMPY)
    calls = []

    def measure(key, set_no):
        calls.append(set_no)
        return _set("window", {"glibc": [1.0, 1.0, 3.0], "mtheap": [0.5, 0.5, 0.5]})
    cli.settle(runs, META, 2, measure)
    assert calls == [2, 3]   # tried as often as allowed
    kept = [r for r in runs if not r.get("superseded")]
    assert len(kept) == 6 and all(r.get("set", 1) == 1 for r in kept)
    assert report.is_noisy(report.summarize(runs, META)[("window", "", 2)])   # still said
    assert "window t=2 (still noisy: the first set kept)" in report.remeasured_note(runs)


def test_settle_never_hides_a_failure():
    runs = _set("window", JUMPY)
    cli.settle(runs, META, 1, lambda key, n: _set("window", STEADY, status="fail"))
    assert not any(r.get("superseded") for r in runs)   # both sets count, the FAIL shows
    cell = report.summarize(runs, META)[("window", "", 2)]["allocs"]["mtheap"]
    assert cell["fails"] and cell["n"] == 6


def test_settle_leaves_steady_untimed_and_zero_passes_alone():
    runs = _set("larson", STEADY) + _set("rss-return", JUMPY)

    def measure(key, set_no):
        raise AssertionError("measured %s again" % (key,))
    cli.settle(runs, META, 3, measure)
    jumpy = _set("window", JUMPY)
    cli.settle(jumpy, META, 0, measure)
    assert not any(r.get("superseded") for r in runs + jumpy)
    assert report.remeasured_note(runs + jumpy) == ""


def test_settle_runs_a_fresh_set_end_to_end(tmp_path, monkeypatch, capsys):
    """The driver's own measuring of a fresh set: every repetition of every allocator of the
    case again, its logs apart, the first set superseded once the new one is steady.  The noise
    is simulated (a case is "noisy" until it has a second set), the runs are real."""
    def noisy_until_set_2(c):
        return not any(r.get("set", 1) > 1 for cell in c["allocs"].values() for r in cell["runs"])
    monkeypatch.setattr(report, "is_noisy", noisy_until_set_2)
    out = tmp_path / "res"
    import signal
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        rc = cli.main(["run", "--smoke", "--build", BUILD, "--allocators", "glibc",
                       "--workloads", "threads-1k", "--threads", "1", "--repeat", "2",
                       "--settle", "1", "--out", str(out)])
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)   # main() installs its own
    assert rc == 0
    data = json.loads((out / "results.json").read_text())
    first = [r for r in data["runs"] if r.get("set", 1) == 1]
    again = [r for r in data["runs"] if r.get("set") == 2]
    assert len(first) == 2 and len(again) == 2
    assert all(r.get("superseded") for r in first) and not any(r.get("superseded") for r in again)
    assert all(r["status"] == "ok" and r["wall_s"] > 0 for r in again)
    assert sorted(r["rep"] for r in again) == [1, 2]
    assert any(f.endswith("-s2.out") for f in os.listdir(out / "logs"))
    assert "threads-1k t=1 (set 2 kept)" in (out / "report.md").read_text()
    assert "measuring it again (set 2)" in capsys.readouterr().err
