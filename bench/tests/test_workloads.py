"""Every C workload: --help, input validation, the self-check against a deliberately broken
allocator, and a smoke run with tiny parameters under glibc and under mtheap."""

import os
import re
import subprocess

import pytest

from conftest import BIN
from mtheapbench import stats
from mtheapbench.workloads import SMOKE, c_workloads

WORKLOADS = {w.name: w for w in c_workloads()}
NAMES = sorted(WORKLOADS)

# Parameters that make enough allocations for the broken allocator (every 7th block) to hit a
# block while the workload still owns it.
SELFCHECK_ARGS = {
    "large": ["-t", "1", "-i", "40", "--max-size", "1m"],
    "mmap-lock": ["-t", "0", "-i", "20", "--file-mb", "8"],
    "rwlock-fairness": ["-t", "2", "-d", "300", "-k", "nonrecursive"],
}


def binary(name):
    p = os.path.join(BIN, name)
    if not os.path.isfile(p):
        pytest.fail("%s not built (cmake --build the bench targets)" % p)
    return p


def run(name, args, preload=None, env_extra=None, timeout=120):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    env.update(env_extra or {})
    return subprocess.run([binary(name)] + [str(a) for a in args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def smoke_args(name):
    w = WORKLOADS[name]
    return w.args(SMOKE, 2, w.variants[-1])


@pytest.mark.parametrize("name", NAMES)
def test_help(name):
    p = run(name, ["--help"])
    assert p.returncode == 0
    assert "usage:" in p.stdout and "RESULT" in p.stdout


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("bad", [["--no-such-flag"], ["--threads=-5"], ["-t", "abc"],
                                 ["-t"], ["stray-argument"]])
def test_bad_input_exits_2(name, bad):
    p = run(name, bad)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "error" in p.stderr
    assert "RESULT" not in p.stdout


def test_malloc_test_limits():
    assert run("malloc_test", ["-n", "5001"]).returncode == 2   # the article's maximum
    assert run("malloc_test", ["-c", "0", "-f", "0"]).returncode == 2  # would never end
    p = run("malloc_test", ["-t", "1", "-n", "50", "-c", "2", "-l", "50", "-r", "-s", "1"])
    assert p.returncode == 0, p.stderr
    assert p.stdout.count("sample ") == 2
    assert stats.parse_output(p.stdout)[0][0]["metric"] == "loops_per_s"


def test_rwlock_all_kinds():
    p = run("rwlock-fairness", ["-t", "2", "-d", "200", "--timeout-ms", "50"])
    assert p.returncode == 0, p.stderr
    kinds = [r["kind"] for r in stats.parse_output(p.stdout)[0]]
    assert kinds == ["default", "prefer-writer", "nonrecursive"]
    assert run("rwlock-fairness", ["-k", "nonsense"]).returncode == 2


@pytest.mark.parametrize("name", NAMES)
def test_selfcheck_catches_corruption(name):
    args = SELFCHECK_ARGS.get(name, smoke_args(name))
    p = run(name, args, preload=os.path.join(BIN, "libbenchcorrupt.so"),
            env_extra={"BENCH_CORRUPT_EVERY": "7"})
    assert p.returncode == 3, "exit %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr)
    assert "FAIL workload=%s reason=selfcheck" % name in p.stdout
    assert "RESULT" not in p.stdout


@pytest.mark.parametrize("name", ["threads-1k", "general", "realloc", "shbench", "xfree"])
def test_selfcheck_catches_overlapping_blocks(name):
    p = run(name, smoke_args(name), preload=os.path.join(BIN, "libbenchcorrupt.so"),
            env_extra={"BENCH_CORRUPT_EVERY": "7", "BENCH_CORRUPT_MODE": "overlap"})
    assert p.returncode == 3, "exit %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr)
    assert "reason=selfcheck" in p.stdout


def check_smoke(name, preload):
    shims = [os.path.join(BIN, "lib%s.so" % s) for s in WORKLOADS[name].preload_shims]
    pre = ":".join(shims + ([preload] if preload else []))
    p = run(name, smoke_args(name), preload=pre or None)
    assert p.returncode == 0, "exit %d\n%s\n%s" % (p.returncode, p.stdout, p.stderr)
    assert "cannot be preloaded" not in p.stderr
    results, fails = stats.parse_output(p.stdout)
    assert not fails
    assert len(results) == 1
    r = results[0]
    assert r["workload"] == name and r["value"] >= 0
    return r


@pytest.mark.parametrize("name", NAMES)
def test_smoke_glibc(name):
    check_smoke(name, None)


@pytest.mark.parametrize("name", NAMES)
def test_smoke_mtheap(name, mtheap):
    check_smoke(name, mtheap)


def test_mmap_lock_counts_through_shim():
    r = check_smoke("mmap-lock", os.path.join("/usr/lib/x86_64-linux-gnu", "libmimalloc.so.2")
                    if os.path.exists("/usr/lib/x86_64-linux-gnu/libmimalloc.so.2") else None)
    assert r["count_source"] == "shim"
    for k in ("mmap_calls", "munmap_calls", "madvise_calls", "p999_us", "max_us", "mean_us"):
        assert k in r


@pytest.mark.parametrize("threads,rounds,k,rate", [(2, 20, 10, 2), (5, 21, 7, 3)])
def test_xfree_frees_across_threads(mtheap, threads, rounds, k, rate):
    """Every handed-over batch is freed by another thread: its K blocks and the batch itself,
    so mtheap's statistics count exactly T * (rounds // R) * (K + 1) frees from another
    thread, and nothing hangs when threads wait on each other's full mailboxes."""
    p = run("xfree", ["-t", threads, "-n", rounds, "-k", k, "-w", 50, "-x", rate],
            preload=mtheap, env_extra={"MTHEAP_STATS": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    m = re.search(r"from another thread (\d+)", p.stderr)
    assert m, p.stderr
    assert int(m.group(1)) == threads * (rounds // rate) * (k + 1)


def test_xfree_waiting_senders_do_not_hang():
    """64 threads on two cores handing over a batch every round fill mailboxes all the time:
    senders wait for room while freeing their own mail, and threads that are done keep
    freeing theirs until every thread is, so the run ends (a deadlock would hit the timeout)."""
    p = run("xfree", ["-t", 64, "-n", 300, "-k", 50, "-w", 100, "-x", 1], timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "RESULT workload=xfree threads=64" in p.stdout


def test_lock_pairs():
    assert run("lock-pairs", ["--help"]).returncode == 0
    for bad in (["-n", "0"], ["-r", "x"], ["--single-thread=3"], ["extra"]):
        p = run("lock-pairs", bad)
        assert p.returncode == 2 and "error" in p.stderr, bad
    for args in (["-n", "100000", "-r", "2"], ["-n", "100000", "--single-thread"]):
        p = run("lock-pairs", args)
        assert p.returncode == 0, p.stderr
        r = stats.parse_output(p.stdout)[0][0]
        assert r["metric"] == "ns_per_pair" and 0 < r["value"] < 10000
    assert r["threads"] == 1   # --single-thread: no idle thread


def test_rss_return_tells_returners_from_keepers(mtheap):
    """The metric discriminates: mtheap with no purge delay gives a freed peak back at once;
    tcmalloc (which keeps freed spans mapped and resident) keeps nearly all of it."""
    args = ["-s", "64", "-w", "300", "-k", "100"]
    p = run("rss-return", args, preload=mtheap, env_extra={"MTHEAP_PURGE_DELAY_MS": "0"})
    assert p.returncode == 0, p.stderr
    r = stats.parse_output(p.stdout)[0][0]
    assert r["metric"] == "rss_left_pct" and float(r["peak_mb"]) >= 60
    assert r["value"] < 25, r
    tc = "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"
    assert os.path.exists(tc), "scripts/deps.sh installs libtcmalloc-minimal4"
    p = run("rss-return", args, preload=tc)
    assert p.returncode == 0, p.stderr
    assert stats.parse_output(p.stdout)[0][0]["value"] > 50


def test_mmap_lock_anon_peak_excludes_the_file():
    """mmap-lock's peak RSS is its anonymous memory: two 16 MiB blocks live at once are in it,
    the pages of the mapped file (64 MiB, never dropped here) are not, and the driver compares
    allocators on it instead of the process's peak."""
    from mtheapbench.runner import ProcResult
    from mtheapbench.workloads import finish_record
    p = run("mmap-lock", ["-t", "1", "-i", "20", "--file-mb", "64", "--drop-ms", "0"])
    assert p.returncode == 0, p.stderr
    r = stats.parse_output(p.stdout)[0][0]
    anon = float(r["anon_peak_kb"])
    assert 32 * 1024 <= anon < 48 * 1024, r
    res = ProcResult()
    res.stdout, res.maxrss_kb, res.rc = p.stdout, 200 * 1024, 0
    rec = finish_record({"maxrss_kb": res.maxrss_kb}, res)
    assert rec["status"] == "ok" and rec["maxrss_kb"] == int(anon)
    assert rec["extra"]["process_maxrss_kb"] == 200 * 1024


def test_glibc_thread_sizes_are_inverse_square_mtheap(mtheap):
    """glibc-thread's sizes follow glibc's inverse-square law over [4, 32768]: counted by
    mtheap's per-class statistics, about 90% of the mallocs are of 48 bytes or less (the law
    gives 0.917 up to 48), fewer than 1% are above 1 KiB (0.0039), and some are (a uniform or
    a clipped draw fails one of the three)."""
    p = run("glibc-thread", ["-t", "1", "-n", "200000"], preload=mtheap,
            env_extra={"MTHEAP_STATS": "1"})
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [tuple(int(x) for x in m.groups())
            for m in re.finditer(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+\d+\s+\d+\s*$", p.stderr, re.M)]
    total = sum(n for _, n, _ in rows)
    assert total >= 200000, p.stderr
    small = sum(n for size, n, _ in rows if size <= 48) / total
    big = sum(n for size, n, _ in rows if size > 1024) / total
    assert 0.88 < small < 0.95, (small, rows)
    assert 0 < big < 0.01, (big, rows)


def test_glibc_thread_rejects_min_above_max():
    p = run("glibc-thread", ["-l", "100", "-m", "50"])
    assert p.returncode == 2 and "error" in p.stderr and "RESULT" not in p.stdout


def _peak_rss_kib(args, tmp_path, monkeypatch):
    # through the driver's launcher: a child forked from Python itself would report at least
    # the interpreter's peak (tools/benchrun.c)
    from mtheapbench import runner
    monkeypatch.setattr(runner, "HELPER", binary("benchrun"))
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    res = runner.run([binary("window")] + args, env, 120, str(tmp_path / ("w%d" % len(args))))
    assert res.ok and "RESULT" in res.stdout, res.describe() + res.stderr
    return res.maxrss_kb


def test_window_head_writes_only_the_head(tmp_path, monkeypatch):
    """window --head writes 64 bytes of each block, not all of it: with 1000 live blocks of
    8..65536 bytes (32 MiB), the filled run is resident, the head-only run a fraction of it
    (glibc's untouched chunk interiors stay unfaulted: 37 against 23 MiB)."""
    args = ["-t", "1", "-w", "1000", "-n", "20000", "-m", "65536"]
    full = _peak_rss_kib(args, tmp_path, monkeypatch)
    head = _peak_rss_kib(args + ["--head"], tmp_path, monkeypatch)
    assert full > 30 * 1024, full
    assert head < full * 0.75, (head, full)
