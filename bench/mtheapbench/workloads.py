"""The workload registry: what each workload runs in --quick and --full, and how one run of it
becomes a result record."""

import os

from . import runner, stats

QUICK, FULL, SMOKE = "quick", "full", "smoke"


class Context:
    """Where things are: the build's bench binaries and shims, a directory for logs."""

    def __init__(self, build_dir, log_dir, ncpus=None):
        self.build_dir = os.path.abspath(build_dir)
        self.bin_dir = os.path.join(self.build_dir, "bench")
        self.log_dir = log_dir
        self.ncpus = ncpus or os.cpu_count() or 1
        self.src_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        helper = os.path.join(self.bin_dir, "benchrun")
        runner.HELPER = helper if os.access(helper, os.X_OK) else None

    def binary(self, name):
        return os.path.join(self.bin_dir, name)

    def shim(self, name):
        return os.path.join(self.bin_dir, "lib%s.so" % name)


def base_env(preload, alloc_env=None):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
    # A preloaded allocator's own tuning variables would make runs incomparable.
    for k in list(env):
        if k.startswith(("MALLOC_", "GLIBC_TUNABLES", "MIMALLOC_", "JE_MALLOC", "TCMALLOC_",
                         "MTHEAP_")):
            env.pop(k)
    env.update(alloc_env or {})
    return env


def fail_reason(res, fails):
    """The reason a run failed, from its exit and its FAIL lines; None if it did not."""
    if "cannot be preloaded" in res.stderr:
        return "allocator not loaded: " + [l for l in res.stderr.splitlines()
                                           if "cannot be preloaded" in l][0].strip()
    if res.timed_out:
        return res.describe()
    if fails:
        return fails[0][:300]
    if res.rc == 3:
        return "self-check failed (exit 3)"
    if res.rc == 4:
        return "out of memory (exit 4)"
    if res.rc != 0:
        tail = res.stderr.strip().splitlines()[-1:] if res.stderr.strip() else []
        return res.describe() + (": " + tail[0][:200] if tail else "")
    return None


def record_from_process(res, results):
    rec = {
        "wall_s": round(res.wall, 6), "user_s": round(res.user, 6), "sys_s": round(res.sys, 6),
        "maxrss_kb": res.maxrss_kb, "minflt": res.minflt, "exit": res.rc, "signal": res.signal,
    }
    return rec


def finish_record(rec, res):
    """Completes rec from a finished run's output: its first RESULT line, or FAIL with why."""
    try:
        results, fails = stats.parse_output(res.stdout)
    except stats.ParseError as e:
        results, fails = [], ["unparsable output: %s" % e]
    reason = fail_reason(res, fails)
    if reason is None and not results:
        reason = "no RESULT line in the output"
    if reason:
        rec.update(status="FAIL", reason=reason)
        return rec
    r = results[0]
    rec.update(status="ok", reason="", metric=r["metric"], value=r["value"], unit=r["unit"],
               better=r["better"],
               extra={k: v for k, v in r.items()
                      if k not in ("workload", "threads", "metric", "value", "unit", "better")})
    if "anon_peak_kb" in rec["extra"] and float(rec["extra"]["anon_peak_kb"]) > 0:
        # The workload measured its own peak of anonymous memory (mmap-lock: the process's
        # peak RSS is mostly a mapped file's page cache, whatever the allocator): that is the
        # peak RSS the allocators are compared on; the process's stays in extra.
        rec["extra"]["process_maxrss_kb"] = rec["maxrss_kb"]
        rec["maxrss_kb"] = int(float(rec["extra"]["anon_peak_kb"]))
    return rec


class Workload:
    kind = "c"
    scaling = False              # runs at every --threads value (else at one fixed count)
    allocator_independent = False
    in_summary = True            # its wall time counts in the time geomean
    variants = ("",)
    description = ""

    def est_seconds(self, mode):
        return {QUICK: 1.0, FULL: 3.0, SMOKE: 0.5}[mode]

    def timeout(self, mode):
        return {QUICK: 90, FULL: 600, SMOKE: 60}[mode]

    def fixed_threads(self, ctx, mode):
        return ctx.ncpus

    def prepare(self, ctx, mode):
        """Untimed set-up before the first run; returns an error string or None."""
        return None


class CWorkload(Workload):
    def __init__(self, name, description, args, scaling=False, est=(1.0, 3.0), preload_shims=(),
                 variants=("",), allocator_independent=False, threads=None, timed=True):
        self.name = name
        self.binary = name
        self.description = description
        self._args = args
        self.scaling = scaling
        self._est = est
        self.preload_shims = preload_shims
        self.variants = variants
        self.allocator_independent = allocator_independent
        # timed=False: the run lasts a fixed time, so its wall time says nothing about speed
        self.in_summary = timed and not allocator_independent
        self._threads = threads

    def fixed_threads(self, ctx, mode):
        return self._threads or ctx.ncpus

    def est_seconds(self, mode):
        return {QUICK: self._est[0], FULL: self._est[1], SMOKE: 0.3}[mode]

    def prepare(self, ctx, mode):
        if self.name != "mmap-lock":
            return None
        # Writes the data file (kept between runs) so that no timed run pays for it.
        args = self.args(mode, 0)
        mb = args[args.index("--file-mb") + 1]
        res = runner.run([ctx.binary(self.binary), "-t", "0", "-i", "1", "--drop-ms", "0",
                          "--file-mb", mb], base_env(None), 600,
                         os.path.join(ctx.log_dir, "mmap-lock-prepare"))
        return None if res.ok else "mmap-lock data file: " + res.describe() + " " + \
            res.stderr.strip()[-200:]

    def args(self, mode, threads, variant=""):
        return [str(a) for a in self._args(mode, threads, variant)]

    def run(self, ctx, alloc, threads, variant, mode, log_base, timeout=None):
        cmd = [ctx.binary(self.binary)] + self.args(mode, threads, variant)
        shims = [ctx.shim(s) for s in self.preload_shims]
        env = base_env(alloc.preload(shims), alloc.env)
        res = runner.run(cmd, env, timeout or self.timeout(mode), log_base)
        rec = record_from_process(res, None)
        rec["cmd"] = " ".join(cmd)
        return finish_record(rec, res)


def _q(mode, quick, full, smoke):
    return {QUICK: quick, FULL: full, SMOKE: smoke}[mode]


def c_workloads():
    W = []
    W.append(CWorkload(
        "malloc_test", "Oracle harness: thread pairs, one allocates 5000-block batches, the "
        "other frees them (random sizes up to 4 KiB); loops/s",
        lambda m, t, v: ["-t", t, "-n", 5000, "-m", 4096, "-r", "-c", 0, "-l", 1000,
                         "-f", _q(m, 120, 300, 3)],
        scaling=True, est=(0.19, 1.26)))
    W.append(CWorkload(
        "threads-1k", "each thread: malloc(1024)/free pairs (reference 001)",
        lambda m, t, v: ["-t", t, "-i", _q(m, 8000000, 20000000, 2000)],
        scaling=True, est=(0.23, 1.4)))
    W.append(CWorkload(
        "general", "libmtmalloc general: NCPUS threads each keep N blocks of 0..63 bytes, "
        "then free them",
        lambda m, t, v: ["-t", t, "-n", _q(m, 1000000, 1000000, 2000),
                         "-r", _q(m, 2, 5, 1)],
        est=(0.19, 1.05)))
    W.append(CWorkload(
        "mmap-lock", "NTT: K threads fault on a mmapped file while one thread mallocs "
        "64 KiB/16 MiB; that thread's malloc p99 latency",
        lambda m, t, v: ["-t", t, "-i", _q(m, 150, 300, 5), "--file-mb", _q(m, 256, 512, 8)],
        est=(0.31, 1.61), preload_shims=("mmapcount",)))
    W.append(CWorkload(
        "rwlock-fairness", "glibc rwlock kinds: writer wait p99 while readers overlap "
        "(not an allocator test: runs under glibc only)",
        lambda m, t, v: ["-t", 4, "-k", v, "-d", _q(m, 1500, 5000, 200),
                         "--timeout-ms", _q(m, 300, 1000, 100)],
        variants=("default", "prefer-writer", "nonrecursive"), allocator_independent=True,
        est=(1.79, 3.71)))
    W.append(CWorkload(
        "threadtest", "Hoard threadtest: each thread allocates and frees its share of "
        "8-byte objects",
        lambda m, t, v: ["-t", t, "-i", _q(m, 1000, 2500, 2), "-n", 30000],
        scaling=True, est=(0.34, 1.47)))
    W.append(CWorkload(
        "larson", "Larson server simulation: random replacement, thread churn, cross-thread "
        "frees",
        lambda m, t, v: ["-t", t, "-n", 1000, "-o", _q(m, 300000, 500000, 500),
                         "-g", _q(m, 5, 8, 2)],
        scaling=True, est=(0.12, 1.54)))
    W.append(CWorkload(
        "xmalloc", "producer/consumer: T threads allocate, T others free",
        lambda m, t, v: ["-t", t, "-n", _q(m, 1000000, 2500000, 2000)],
        scaling=True, est=(0.14, 1.4)))
    W.append(CWorkload(
        "cache-thrash", "active false sharing: small objects written by their threads",
        lambda m, t, v: ["-t", t, "-i", _q(m, 4000, 10000, 10), "-r", _q(m, 10000, 10000, 10)],
        est=(0.49, 1.26)))
    W.append(CWorkload(
        "cache-scratch", "passive false sharing: threads free neighbouring objects, then "
        "allocate their own",
        lambda m, t, v: ["-t", t, "-i", _q(m, 4000, 10000, 10), "-r", _q(m, 10000, 10000, 10)],
        est=(0.56, 1.26)))
    W.append(CWorkload(
        "shbench", "random sizes (skewed small), random lifetimes",
        lambda m, t, v: ["-t", t, "-n", _q(m, 40000, 100000, 20)],
        est=(0.17, 1.33)))
    W.append(CWorkload(
        "mstress", "mixed lifetimes, thread churn, long-lived shared pool",
        lambda m, t, v: ["-t", t, "-r", _q(m, 40, 80, 2), "-o", _q(m, 40000, 40000, 500)],
        est=(0.15, 2.1)))
    W.append(CWorkload(
        "realloc", "growth chains with realloc, contents checked at every step",
        lambda m, t, v: ["-t", t, "-n", _q(m, 300, 600, 5)],
        est=(0.19, 1.96)))
    W.append(CWorkload(
        "large", "64 KiB..64 MiB blocks, every page touched, 4 live per thread",
        lambda m, t, v: ["-t", t, "-i", _q(m, 120, 400, 3)] + (
            ["--max-size", "4m"] if m == SMOKE else []),
        est=(0.41, 1.4)))
    W.append(CWorkload(
        "lone", "each thread: malloc(n); free() with no other block live, n = the variant",
        lambda m, t, v: ["-t", t, "-i", _q(m, 3000000, 20000000, 2000), "-s", v],
        variants=("16", "64", "256", "1024", "4096", "16384"), scaling=True, est=(0.11, 0.8)))
    W.append(CWorkload(
        "window", "each thread keeps 2000 live blocks of random size (8..4096 or 8..65536) and "
        "replaces one per op; 64k-head writes only each block's first 64 bytes (buffers sized "
        "for the worst case)",
        lambda m, t, v: ["-t", t, "-w", _q(m, 2000, 2000, 100),
                         "-n", _q(m, {"4k": 1000000, "64k": 300000, "64k-head": 3000000}[v],
                                  {"4k": 5000000, "64k": 1500000, "64k-head": 6000000}[v], 2000),
                         "-m", {"4k": 4096, "64k": 65536, "64k-head": 65536}[v]] + (
            ["--head"] if v.endswith("-head") else []),
        variants=("4k", "64k", "64k-head"), scaling=True, est=(0.15, 1.4)))
    W.append(CWorkload(
        "glibc-thread", "glibc's bench-malloc-thread shape: each thread replaces blocks in 1024 "
        "slots, sizes inverse-square over 4..32768 (9 in 10 under 40 bytes), ~40 KiB live a "
        "thread over every class",
        lambda m, t, v: ["-t", t, "-n", _q(m, 2000000, 10000000, 2000)],
        scaling=True, est=(0.15, 0.7)))
    W.append(CWorkload(
        "xfree", "threads free each other's blocks in a random pattern: each churns 1000 slots "
        "of 8..16000 bytes, 100 a round, and every 2nd round hands 100 new blocks to a random "
        "other thread",
        lambda m, t, v: ["-t", t, "-n", _q(m, 3000, 8000, 20), "-w", _q(m, 1000, 1000, 50),
                         "-k", _q(m, 100, 100, 10)],
        scaling=True, est=(0.5, 1.4)))
    rss = CWorkload(
        "rss-return", "a 1 GiB peak freed but 1 block in 100, then a little work every ms: "
        "% of the peak still resident after 3 s (mixed: 64 B..32 MiB blocks; small: 64 B..4 KiB)",
        lambda m, t, v: ["-t", t, "-s", _q(m, 1024, 1024, 32), "-w", _q(m, 3000, 3000, 300),
                         "-m", {"mixed": 1 << 20, "small": 4096}[v]],
        est=(4.02, 4.6), threads=1, timed=False, variants=("mixed", "small"))
    rss.once = True   # the figures repeat to the decimal; one run per allocator is enough
    W.append(rss)
    return W


class MmapSyscalls(Workload):
    """Counts the allocator's memory-mapping system calls for the mmap-lock allocation pattern
    with strace, which sees what the preload shim cannot (glibc's internal __mmap, raw
    syscalls).  Two traced runs, N+1 and 1 iterations, are subtracted so start-up mappings
    cancel out.  The count is deterministic enough that it runs once, not per repetition."""

    name = "mmap-syscalls"
    in_summary = False
    description = ("mmap/munmap/mremap/madvise/brk calls per 1000 mallocs of the mmap-lock "
                   "pattern (64 KiB + 16 MiB), counted with strace -f -c; run once")
    once = True
    SYSCALLS = ("mmap", "munmap", "mremap", "madvise", "brk")

    def est_seconds(self, mode):
        return {QUICK: 0.29, FULL: 1.05, SMOKE: 1.0}[mode]

    def fixed_threads(self, ctx, mode):
        return 0

    def iterations(self, mode):
        return {QUICK: 200, FULL: 1000, SMOKE: 10}[mode]

    @staticmethod
    def parse_strace(text):
        counts = {}
        for line in text.splitlines():
            cells = line.split()
            # "% time  seconds  usecs/call  calls  [errors]  syscall"
            if len(cells) >= 5 and cells[-1] in MmapSyscalls.SYSCALLS:
                try:
                    counts[cells[-1]] = int(cells[3])
                except ValueError:
                    pass
        return counts

    def run(self, ctx, alloc, threads, variant, mode, log_base, timeout=None):
        import shutil
        rec = {"cmd": ""}
        if not shutil.which("strace"):
            rec.update(status="FAIL", reason="strace not installed", wall_s=0, user_s=0,
                       sys_s=0, maxrss_kb=0)
            return rec
        n = self.iterations(mode)
        counts = []
        for it, tag in ((n + 1, "long"), (1, "base")):
            trace = "%s.%s.strace" % (log_base, tag)
            cmd = ["strace", "-f", "-c", "-o", trace, "-e", "trace=" + ",".join(self.SYSCALLS),
                   ctx.binary("mmap-lock"), "-t", "0", "-i", str(it), "--drop-ms", "0",
                   "--file-mb", "8"]
            # strace itself must not run under the allocator: it passes LD_PRELOAD on via env.
            res = runner.run(cmd, base_env(alloc.preload(), alloc.env), timeout or self.timeout(mode),
                             "%s.%s" % (log_base, tag))
            if tag == "long":
                rec.update(record_from_process(res, None))
                rec["cmd"] = " ".join(cmd)
            reason = fail_reason(res, stats.parse_output(res.stdout)[1])
            if reason:
                rec.update(status="FAIL", reason=reason)
                return rec
            try:
                with open(trace) as f:
                    counts.append(self.parse_strace(f.read()))
            except OSError as e:
                rec.update(status="FAIL", reason="no strace output: %s" % e)
                return rec
        delta = {s: counts[0].get(s, 0) - counts[1].get(s, 0) for s in self.SYSCALLS}
        mallocs = 2 * n
        total = sum(max(0, d) for d in delta.values())
        extra = {"%s_calls" % s: d for s, d in delta.items()}
        extra["mallocs"] = mallocs
        rec.update(status="ok", reason="", metric="syscalls_per_1000_mallocs",
                   value=1000.0 * total / mallocs, unit="calls", better="lower", extra=extra)
        return rec


class PlockstatCost(Workload):
    """What plockstat adds to an uncontended mutex lock+unlock pair: bench/workloads/lock-pairs
    run bare, under `plockstat -C` and under `plockstat -H`, interleaved round by round, the
    medians compared.  Not an allocator test (glibc's malloc only); its time is not a speed."""

    name = "plockstat-cost"
    allocator_independent = True
    in_summary = False
    once = True
    description = ("ns that plockstat -C and -H add to an uncontended mutex lock+unlock pair "
                   "(lock-pairs bare and under plockstat, interleaved)")
    MODES = (("bare", []), ("C", ["-C"]), ("H", ["-H"]))

    def est_seconds(self, mode):
        return {QUICK: 1.62, FULL: 8.4, SMOKE: 2.0}[mode]

    def fixed_threads(self, ctx, mode):
        return 2

    def run(self, ctx, alloc, threads, variant, mode, log_base, timeout=None):
        import statistics
        plockstat = os.path.join(ctx.build_dir, "src", "plockstat", "plockstat")
        exe = ctx.binary("lock-pairs")
        rec = {"cmd": "", "wall_s": 0.0, "user_s": 0.0, "sys_s": 0.0, "maxrss_kb": 0, "minflt": 0}
        for need in (plockstat, exe):
            if not os.access(need, os.X_OK):
                rec.update(status="FAIL", reason="%s not built" % need)
                return rec
        pairs = {QUICK: 3000000, FULL: 10000000, SMOKE: 200000}[mode]
        rounds = {QUICK: 3, FULL: 5, SMOKE: 1}[mode]
        got = {m: [] for m, _ in self.MODES}
        for r in range(rounds):
            for m, flags in self.MODES:
                report = "%s.%s%d.plockstat" % (log_base, m, r)
                cmd = [exe, "-n", str(pairs), "-r", "3"]
                if flags:
                    cmd = [plockstat] + flags + ["-o", report] + cmd
                res = runner.run(cmd, base_env(alloc.preload(), alloc.env),
                                 timeout or self.timeout(mode), "%s.%s%d" % (log_base, m, r))
                sub = finish_record(record_from_process(res, None), res)
                for k in ("wall_s", "user_s", "sys_s", "minflt"):
                    rec[k] += sub[k]
                rec["maxrss_kb"] = max(rec["maxrss_kb"], sub["maxrss_kb"])
                rec["cmd"] = " ".join(cmd)
                if sub["status"] != "ok":
                    rec.update(status="FAIL", reason="%s: %s" % (m, sub["reason"]))
                    return rec
                got[m].append(sub["value"])
        med = {m: statistics.median(v) for m, v in got.items()}
        extra = {"bare_ns": round(med["bare"], 2), "C_ns": round(med["C"], 2),
                 "H_ns": round(med["H"], 2), "H_added_ns": round(med["H"] - med["bare"], 2),
                 "rounds": rounds}
        rec.update(status="ok", reason="", metric="C_added_ns_per_pair",
                   value=med["C"] - med["bare"], unit="ns", better="lower", extra=extra)
        return rec


def registry():
    from . import langs, programs
    ws = (c_workloads() + [MmapSyscalls(), PlockstatCost()] + programs.program_workloads()
          + [langs.LangThreads()])
    return {w.name: w for w in ws}
