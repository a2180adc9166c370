"""lang-threads: reference 001's language experiment.  The same task in Python, Ruby, Perl and
Java (bench/programs/lang/), a fixed total split over 1, 2, 4 and 8 threads, with the allocator
preloaded: how each runtime's threads use the cores (a global interpreter lock, copied
interpreters, or real parallel threads), measured as throughput and peak RSS.

Each run prints ANSWER <checksum> <units> and TIME <seconds of the threaded part>; the checksum
is checked against a closed form of the task (below), the same for every language and thread
count.  The metric is units per second over the threaded part (startup, JIT warm-up of an
empty JVM and interpreter teardown left out)."""

import os
import re
import shutil
import subprocess

from . import runner
from .workloads import QUICK, FULL, SMOKE, Workload, base_env, fail_reason, record_from_process

M = 1000003
TASKS = ("cpu", "alloc")
LANGS = ("python", "ruby", "perl", "java")
THREADS = {QUICK: [1, 2, 4, 8], FULL: [1, 2, 4, 8], SMOKE: [1, 2]}

# Units per run, per language and task: half a second or more at one thread in --quick on these
# machines (the languages differ by 10x), so that every point is well above the noise.
UNITS = {
    ("python", "cpu"): 40000, ("python", "alloc"): 40000,
    ("ruby", "cpu"): 60000, ("ruby", "alloc"): 8000,
    ("perl", "cpu"): 60000, ("perl", "alloc"): 8000,
    # the JVM's JIT compiler and collector threads share the cores in the first half second:
    # Java gets enough work (about 2 s at one thread) for its threads to be what is measured
    ("java", "cpu"): 2000000, ("java", "alloc"): 200000,
}
SCALE = {QUICK: 1, FULL: 2}
SMOKE_UNITS = 400          # divisible by every thread count


def expected(task, units):
    """The checksum every program must print for `units` units of `task` (mod 2**31).

    cpu: h <- (31 h + k) mod M for k = 0..199 is affine in the start value i, so
    h(i) = (a i + c) mod M; the unit adds 3 * (decimal digits of h).
    alloc: the unit sums the lengths of the decimal strings of i .. i+99 (all distinct keys)
    plus 100."""
    if task == "cpu":
        a, c = 1, 0
        for k in range(200):
            a, c = a * 31 % M, (c * 31 + k) % M
        total = 0
        for i in range(units):
            h = (a * i + c) % M
            total += (h + 3 * len(str(h))) % M
        return total % (1 << 31)
    total = 0
    for i in range(units):
        total += (digits_sum(i, i + 100) + 100) % M
    return total % (1 << 31)


def digits_sum(lo, hi):
    """Sum of len(str(x)) for lo <= x < hi (x >= 0)."""
    s, p, d = 0, 1, 1
    while p < hi:
        a, b = max(lo, p if d > 1 else 0), min(hi, p * 10)
        if b > a:
            s += (b - a) * d
        p, d = p * 10, d + 1
    return s


class LangThreads(Workload):
    """One workload; variants are language/task, thread counts its own (1, 2, 4, 8)."""
    kind = "lang"
    name = "lang-threads"
    scaling = True
    in_summary = False        # a comparison of languages first; its own table and plot
    variants = tuple("%s/%s" % (l, t) for l in LANGS for t in TASKS)
    description = ("reference 001's experiment: the same integer/string task and an "
                   "allocating task (lists and hashes) in Python, Ruby, Perl (ithreads) and "
                   "Java, a fixed total over 1, 2, 4, 8 threads; answers checked; its own "
                   "speedup table and plot [opt-in in --quick, in --full]")
    TOOLS = {"python": ("python3",), "ruby": ("ruby",), "perl": ("perl",),
             "java": ("java", "javac")}

    def __init__(self):
        self._answers = {}
        self._java_dir = None
        self._java_err = None

    def thread_counts(self, mode):
        return THREADS[mode]

    def est_seconds(self, mode):
        return {QUICK: 0.8, FULL: 1.4, SMOKE: 0.4}[mode]

    def timeout(self, mode):
        return {QUICK: 120, FULL: 300, SMOKE: 60}[mode]

    def units(self, lang, task, mode):
        return SMOKE_UNITS if mode == SMOKE else UNITS[(lang, task)] * SCALE[mode]

    def prepare(self, ctx, mode):
        """Compiles the Java program once per run of the suite (javac is not timed)."""
        if not shutil.which("javac"):
            self._java_err = "not installed: javac (openjdk-17-jdk-headless)"
            return None
        out = os.path.join(ctx.log_dir, "lang-threads-java")
        os.makedirs(out, exist_ok=True)
        src = os.path.join(ctx.src_dir, "programs", "lang", "Threads.java")
        p = subprocess.run(["javac", "-d", out, src], capture_output=True, text=True)
        if p.returncode != 0:
            self._java_err = "javac failed: " + (p.stderr.strip().splitlines() or ["?"])[-1]
            return self._java_err
        self._java_dir = out
        return None

    def command(self, ctx, lang, task, threads, units):
        d = os.path.join(ctx.src_dir, "programs", "lang")
        args = [task, str(threads), str(units)]
        if lang == "python":
            return ["python3", os.path.join(d, "threads.py")] + args
        if lang == "ruby":
            return ["ruby", os.path.join(d, "threads.rb")] + args
        if lang == "perl":
            return ["perl", os.path.join(d, "threads.pl")] + args
        # a bounded heap: the JVM reserves a quarter of the machine's memory otherwise
        return ["java", "-Xmx512m", "-cp", self._java_dir, "Threads"] + args

    @staticmethod
    def env_extra(lang):
        # Python's own small-object allocator would hide the preloaded malloc.
        return {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"} if lang == "python" else {}

    def answer(self, task, units):
        key = (task, units)
        if key not in self._answers:
            self._answers[key] = expected(task, units)
        return self._answers[key]

    def run(self, ctx, alloc, threads, variant, mode, log_base, timeout=None):
        lang, task = variant.split("/")
        rec = {"cmd": ""}
        missing = [t for t in self.TOOLS[lang] if not shutil.which(t)]
        why = ("not installed: %s" % ", ".join(missing) if missing else
               self._java_err if lang == "java" and not self._java_dir else None)
        if why:
            rec.update(status="FAIL", reason=why, wall_s=0, user_s=0, sys_s=0, maxrss_kb=0)
            return rec
        units = self.units(lang, task, mode)
        cmd = self.command(ctx, lang, task, threads, units)
        env = base_env(alloc.preload(), alloc.env)
        env.update(self.env_extra(lang))
        res = runner.run(cmd, env, timeout or self.timeout(mode), log_base)
        rec.update(record_from_process(res, None))
        rec["cmd"] = " ".join(cmd)
        reason = fail_reason(res, [])
        m = re.search(r"^ANSWER (\d+) (\d+)$", res.stdout, re.M)
        t = re.search(r"^TIME ([0-9.]+)$", res.stdout, re.M)
        if not reason and not (m and t):
            reason = "no ANSWER and TIME lines in the output"
        if not reason:
            want = self.answer(task, units)
            if int(m.group(1)) != want or int(m.group(2)) != units:
                reason = "self-check: answer %s for %s units, expected %d for %d" % (
                    m.group(1), m.group(2), want, units)
        if reason:
            rec.update(status="FAIL", reason=reason)
            return rec
        secs = max(float(t.group(1)), 1e-6)
        rec.update(status="ok", reason="", metric="units_per_s", value=units / secs,
                   unit="units/s", better="higher",
                   extra={"units": units, "threaded_s": secs, "language": lang, "task": task})
        return rec
