"""mtheap-bench command line: run, list, report."""

import argparse
import datetime
import json
import os
import platform
import re
import sys
import time

from . import allocators, report
from .workloads import FULL, QUICK, SMOKE, Context, registry

MODE_DEFAULTS = {
    QUICK: {"threads": [1, 2], "repeat": 3, "settle": 1},
    FULL: {"threads": [1, 2, 4, 8], "repeat": 3, "settle": 1},
    SMOKE: {"threads": [1, 2], "repeat": 1, "settle": 0},
}


class UsageError(Exception):
    pass


def parse_threads(s):
    try:
        ts = [int(x) for x in s.split(",") if x.strip()]
    except ValueError:
        raise UsageError("--threads needs a comma-separated list of integers, got %r" % s)
    if not ts or any(t < 1 or t > 1024 for t in ts):
        raise UsageError("--threads values must be between 1 and 1024, got %r" % s)
    return sorted(set(ts))


def select_workloads(spec, reg, mode=QUICK):
    """The workloads a spec names; by default all but the opt-in ones (kind "lang": minutes
    of interpreters at four thread counts), which --full and 'all' include."""
    if spec in (None, ""):
        return [w for w in reg.values() if w.kind != "lang" or mode == FULL]
    if spec == "all":
        return list(reg.values())
    names = [x.strip() for x in spec.split(",") if x.strip()]
    out = []
    for n in names:
        if n == "c":
            out += [w for w in reg.values() if w.kind == "c"]
        elif n == "programs":
            out += [w for w in reg.values() if w.kind == "program"]
        elif n == "lang":
            out += [w for w in reg.values() if w.kind == "lang"]
        elif n in reg:
            out.append(reg[n])
        else:
            raise UsageError("unknown workload %r (see 'mtheap-bench list')" % n)
    seen, uniq = set(), []
    for w in out:
        if w.name not in seen:
            seen.add(w.name)
            uniq.append(w)
    return uniq


def threads_for(w, ctx, mode, threads):
    if w.kind == "lang":
        return w.thread_counts(mode)
    if w.kind != "c" or w.allocator_independent or getattr(w, "once", False):
        return [w.fixed_threads(ctx, mode)]
    if w.scaling or mode == FULL:
        return threads
    return [w.fixed_threads(ctx, mode)]


def plan(workloads, allocs, ctx, mode, threads, repeat):
    """The run order: for each repetition, for each case, every allocator in turn, so that
    repetitions of a case are interleaved across allocators (A B C A B C)."""
    cases = []
    for w in workloads:
        for t in threads_for(w, ctx, mode, threads):
            for v in w.variants:
                cases.append((w, t, v))
    ref = [a for a in allocs if a.name == "glibc"] or allocs[:1]
    runs = []
    for rep in range(repeat):
        for w, t, v in cases:
            if getattr(w, "once", False) and rep > 0:
                continue
            for a in (ref if w.allocator_independent else allocs):
                runs.append((rep, w, t, v, a))
    return runs


def settle(runs, meta, passes, measure):
    """Noisy cases measured again.  The schedule runs a case's repetitions minutes apart (one
    round of every case, then the next), so a neighbour's load that comes and goes spreads them
    (`make bench` on a busy host: 32 of 50 cases over NOISY_SPREAD).  For each case that is
    noisy, measure(key, set_no) runs a fresh set of it -- every repetition, every allocator
    interleaved, back to back -- and returns the records, up to `passes` times.  A fresh set
    that is not noisy replaces the case's runs in the medians; a noisy one is kept for the
    record only.  Either way the runs left out stay in the results, marked "superseded", and the
    report names the case.  A set is judged by its spread alone, never by which allocator won;
    a set with a failed run replaces nothing and is never left out, so no failure is hidden.
    Cases without a timed comparison (untimed, allocator-independent) are not measured again."""
    skip = set(meta.get("untimed") or []) | set(meta.get("allocator_independent") or [])
    for set_no in range(2, passes + 2):
        cases = report.summarize(runs, meta)
        todo = [k for k, c in cases.items() if k[0] not in skip and report.is_noisy(c)]
        if not todo:
            return
        print("mtheap-bench: %d noisy case%s, measuring %s again (set %d)"
              % (len(todo), "" if len(todo) == 1 else "s", "it" if len(todo) == 1 else "them",
                 set_no), file=sys.stderr)
        for key in todo:
            new = measure(key, set_no)
            for r in new:
                r["set"] = set_no
            runs.extend(new)
            if any(r.get("status") != "ok" for r in new):
                continue
            fresh = report.summarize(new, meta).get(key)
            if fresh is None:
                continue
            if report.is_noisy(fresh):
                gone = new
            else:
                gone = [r for r in runs if report.case_key(r) == key and r not in new]
            for r in gone:
                r["superseded"] = True


def machine_info():
    info = {}
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"model name\s*:\s*(.*)", f.read())
            if m:
                info["cpu"] = m.group(1).strip()
    except OSError:
        pass
    info["cores"] = os.cpu_count()
    try:
        with open("/proc/meminfo") as f:
            m = re.search(r"MemTotal:\s*(\d+)", f.read())
            if m:
                info["memory"] = "%.0f GiB" % (int(m.group(1)) / 1048576.0)
    except OSError:
        pass
    info["kernel"] = platform.release()
    try:
        info["libc"] = os.confstr("CS_GNU_LIBC_VERSION")
    except (ValueError, OSError):
        pass
    try:
        with open("/etc/debian_version") as f:
            info["debian"] = f.read().strip()
    except OSError:
        pass
    return info


def file_id(path):
    """Size, mtime and a short sha256 of a library, so a report says which build it measured."""
    import hashlib
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            h = hashlib.sha256(f.read()).hexdigest()[:12]
    except OSError as e:
        return str(e)
    mt = datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc)
    return "%s, %d bytes, built %s, sha256 %s" % (os.path.realpath(path), st.st_size,
                                                 mt.strftime("%Y-%m-%d %H:%M UTC"), h)


def fmt_dur(s):
    s = int(round(max(0, s)))
    return "%dm%02ds" % (s // 60, s % 60) if s >= 60 else "%ds" % s


class Progress:
    """The progress line.  Time left = the remaining runs' static estimates, each scaled by how
    long runs of the same workload have really taken relative to their estimate so far (or by
    the overall ratio for workloads not seen yet)."""

    def __init__(self, plan_items, stream=sys.stderr):
        self.items = plan_items          # [(workload name, estimated seconds)]
        self.total = len(plan_items)
        self.stream = stream
        self.t0 = time.monotonic()
        self.tty = stream.isatty()
        self.est = {}
        self.real = {}
        self.closed = False

    def left(self, i):
        te, tr = sum(self.est.values()), sum(self.real.values())
        overall = tr / te if te > 0 else 1.0
        s = 0.0
        for name, e in self.items[i:]:
            f = self.real[name] / self.est[name] if self.est.get(name) else overall
            s += e * f
        return s

    def show(self, i, label):
        el = time.monotonic() - self.t0
        msg = "[%d/%d] %s | elapsed %s, about %s left" % (i + 1, self.total, label, fmt_dur(el),
                                                          fmt_dur(self.left(i)))
        if self.tty:
            self.stream.write("\r\033[K" + msg)
        else:
            self.stream.write(msg + "\n")
        self.stream.flush()

    def done(self, name, est, real):
        self.est[name] = self.est.get(name, 0.0) + est
        self.real[name] = self.real.get(name, 0.0) + real

    def close(self):
        if self.tty and not self.closed:
            self.stream.write("\n")
            self.stream.flush()
        self.closed = True


def cmd_run(a):
    mode = SMOKE if a.smoke else (FULL if a.full else QUICK)
    threads = parse_threads(a.threads) if a.threads else MODE_DEFAULTS[mode]["threads"]
    repeat = a.repeat if a.repeat is not None else MODE_DEFAULTS[mode]["repeat"]
    if repeat < 1 or repeat > 1000:
        raise UsageError("--repeat must be between 1 and 1000, got %d" % repeat)
    passes = a.settle if a.settle is not None else MODE_DEFAULTS[mode]["settle"]
    if passes < 0 or passes > 5:
        raise UsageError("--settle must be between 0 and 5, got %d" % passes)
    if a.timeout is not None and a.timeout <= 0:
        raise UsageError("--timeout must be positive")
    reg = registry()
    workloads = select_workloads(a.workloads, reg, mode)
    try:
        allocs, skipped = allocators.resolve(a.allocators, a.build)
    except allocators.AllocatorError as e:
        raise UsageError(str(e))
    for name, why in skipped:
        print("mtheap-bench: skipping %s: %s" % (name, why), file=sys.stderr)
    if not allocs:
        raise UsageError("no allocator left to run")
    out = os.path.abspath(a.out)
    ctx = Context(a.build, os.path.join(out, "logs"))
    missing = sorted({w.name for w in workloads if w.kind == "c" and
                      not os.path.isfile(ctx.binary(getattr(w, "binary", "mmap-lock")))})
    if missing:
        raise UsageError("workload programs not built in %s: %s (build them: cmake --build %s)"
                         % (ctx.bin_dir, ", ".join(missing), a.build))
    os.makedirs(ctx.log_dir, exist_ok=True)
    schedule = plan(workloads, allocs, ctx, mode, threads, repeat)
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": " ".join(["mtheap-bench"] + sys.argv[1:]),
        "machine": machine_info(), "mode": mode, "repeat": repeat, "settle": passes,
        "threads": ",".join(map(str, threads)),
        "allocators": {x.name: x.path for x in allocs},
        "allocator_order": [x.name for x in allocs],
        "allocator_files": {x.name: file_id(x.path) for x in allocs if x.path},
        "skipped": skipped,
        "allocator_independent": [w.name for w in workloads if w.allocator_independent],
        # Wall time that is not a speed: fixed-duration or traced runs.
        "untimed": [w.name for w in workloads if not w.in_summary],
    }
    est = [w.est_seconds(mode) for (_, w, _, _, _) in schedule]
    print("mtheap-bench: %d runs (%s mode, %d repetition%s, allocators %s), about %s"
          % (len(schedule), mode, repeat, "" if repeat == 1 else "s",
             ",".join(x.name for x in allocs), fmt_dur(sum(est))), file=sys.stderr)
    if a.dry_run:
        for rep, w, t, v, al in schedule:
            print("rep %d  %-28s %-10s %s" % (rep + 1, "%s%s t=%d" % (w.name, "/" + v if v else "",
                                                                      t), al.name,
                                               " ".join(w.args(mode, t, v))
                                               if hasattr(w, "args") else ""))
        return 0
    for w in workloads:
        err = w.prepare(ctx, mode)
        if err:
            print("mtheap-bench: warning: %s" % err, file=sys.stderr)
    prog = Progress([(w.name, e) for (_, w, _, _, _), e in zip(schedule, est)])
    started = time.monotonic()
    runs = []
    data = {"meta": meta, "runs": runs}
    interrupted = False
    inflight = [[]]   # a set being measured again (settle): saved with the rest if interrupted

    def run_one(w, t, v, al, rep, suffix=""):
        """One run, its logs under a name that says what it was; the record labelled."""
        base = os.path.join(ctx.log_dir, "%s%s-t%d-%s-r%d%s" % (
            w.name, "-" + v.replace("/", "-") if v else "", t, al.name, rep + 1, suffix))
        rec = w.run(ctx, al, t, v, mode, base, timeout=a.timeout)
        rec.update(workload=w.name, variant=v, threads=t, allocator=al.name, rep=rep + 1)
        return rec

    try:
        for i, (rep, w, t, v, al) in enumerate(schedule):
            label = "%s%s t=%d %s rep %d/%d" % (w.name, "/" + v if v else "", t, al.name,
                                                rep + 1, repeat)
            prog.show(i, label)
            t0 = time.monotonic()
            rec = run_one(w, t, v, al, rep)
            prog.done(w.name, est[i], time.monotonic() - t0)
            runs.append(rec)
            if rec["status"] != "ok":
                prog.stream.write(("\n" if prog.tty else "") + "FAIL %s: %s\n"
                                  % (label, rec["reason"]))
            save(data, out)
        prog.close()
        case_of = {}   # case key -> (workload, threads, variant, its allocators in run order)
        for rep, w, t, v, al in schedule:
            if rep == 0:
                case_of.setdefault((w.name, v or "", int(t)), (w, t, v, []))[3].append(al)

        def measure(key, set_no):
            w, t, v, als = case_of[key]
            new = inflight[0] = []
            for rep in range(repeat):
                for al in als:
                    label = "%s %s rep %d/%d (set %d)" % (report.case_label(key), al.name,
                                                          rep + 1, repeat, set_no)
                    print("  " + label, file=sys.stderr)
                    rec = run_one(w, t, v, al, rep, "-s%d" % set_no)
                    rec["set"] = set_no   # for the save below; settle() stamps it too
                    new.append(rec)
                    if rec["status"] != "ok":
                        print("FAIL %s: %s" % (label, rec["reason"]), file=sys.stderr)
                    save(dict(data, runs=runs + new), out)
            return new

        settle(runs, meta, passes, measure)
    except KeyboardInterrupt:
        interrupted = True
        runs.extend(r for r in inflight[0] if all(r is not x for x in runs))
    finally:
        prog.close()
        save(data, out)
    text = report.write_all(data, out)
    print(text)
    nfail = sum(1 for r in runs if r["status"] != "ok")
    print("\n%d runs, %d FAIL in %s. The report and the plots:\n%s"
          % (len(runs), nfail, fmt_dur(time.monotonic() - started),
             "\n".join("  " + x for x in report.outputs(out))))
    if interrupted:
        print("mtheap-bench: interrupted; partial results saved", file=sys.stderr)
        return 130
    return 1 if (a.strict and nfail) else 0


def save(data, out):
    os.makedirs(out, exist_ok=True)
    tmp = os.path.join(out, "results.json.tmp")
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, os.path.join(out, "results.json"))


def cmd_list(a):
    reg = registry()
    print("Workloads (%s):" % "c = C program under bench/workloads, program = real program, "
          "lang = the same task in four languages")
    for w in reg.values():
        tags = [w.kind]
        if w.kind == "lang":
            tags.append("threads %s" % ",".join(map(str, w.thread_counts(QUICK))))
        elif w.scaling:
            tags.append("thread-scaling in --quick")
        if w.allocator_independent:
            tags.append("glibc only")
        if getattr(w, "once", False):
            tags.append("once per allocator")
        print("  %-16s %s [%s]" % (w.name, w.description, ", ".join(tags)))
    print("\nAllocators:")
    for name in allocators.KNOWN:
        mine = name == "mtheap" or name in allocators.DEBUG_ENV
        path = allocators.build_path(name, a.build) if mine else allocators.KNOWN[name]
        if path is None:
            state = "built in (no preload)"
        elif os.path.isfile(path):
            state = path
        else:
            state = "%s (missing)" % path
        env = " ".join("%s=%s" % kv for kv in allocators.DEBUG_ENV.get(name, {}).items())
        extra = []
        if env:
            extra.append("with " + env)
        if name not in allocators.DEFAULT:
            extra.append("not in the default set")
        print("  %-13s %s%s" % (name, state, " (%s)" % "; ".join(extra) if extra else ""))
    print("  name=/path/lib.so  any other malloc library")
    return 0


def cmd_report(a):
    try:
        data = report.load(a.dir)
    except (OSError, ValueError) as e:
        raise UsageError("cannot read results from %s: %s" % (a.dir, e))
    print(report.write_all(data, a.dir))
    print("\nwritten:\n" + "\n".join("  " + x for x in report.outputs(a.dir)))
    return 0


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def build_parser():
    p = _Parser(prog="mtheap-bench", description="Benchmark malloc implementations "
                "(preloaded with LD_PRELOAD) on allocation workloads and real programs.")
    sub = p.add_subparsers(dest="cmd", metavar="{run,list,report}")
    r = sub.add_parser("run", help="run workloads and write a report")
    g = r.add_mutually_exclusive_group()
    g.add_argument("--quick", action="store_true", help="about 5 minutes on 2 cores (default)")
    g.add_argument("--full", action="store_true", help="threads 1,2,4,8, larger sizes: "
                   "1-2 hours on 2 cores")
    g.add_argument("--smoke", action="store_true", help="tiny parameters, for the tests")
    r.add_argument("--allocators", default=",".join(allocators.DEFAULT),
                   help="comma-separated names (%s) or name=/path/lib.so; default: all"
                   % ", ".join(allocators.KNOWN))
    r.add_argument("--workloads", default=None,
                   help="comma-separated workload names, 'c', 'programs', 'lang' or 'all' "
                        "(default: all but lang-threads in --quick, everything in --full)")
    r.add_argument("--threads", help="thread counts, e.g. 1,2,4,8 (quick: 1,2; full: 1,2,4,8)")
    r.add_argument("--repeat", type=int, help="repetitions (quick: 3, full: 3)")
    r.add_argument("--settle", type=int,
                   help="times a noisy case is measured again as a fresh set, whose runs "
                        "replace the first set's if they are not noisy (quick and full: 1, "
                        "smoke: 0)")
    r.add_argument("--out", default="bench-results", help="output directory")
    r.add_argument("--build", default=os.environ.get("MTHEAP_BUILD", "build"),
                   help="build directory with bench/ and src/libmtheap.so (default ./build)")
    r.add_argument("--timeout", type=float, help="per-run time limit in seconds")
    r.add_argument("--strict", action="store_true", help="exit 1 if any run failed")
    r.add_argument("--dry-run", action="store_true", help="print the schedule and exit")
    l = sub.add_parser("list", help="list workloads and allocators")
    l.add_argument("--build", default=os.environ.get("MTHEAP_BUILD", "build"))
    rp = sub.add_parser("report", help="rebuild tables, report.md and plots from DIR")
    rp.add_argument("dir")
    return p


def _interrupt(signum, frame):
    raise KeyboardInterrupt


def main(argv=None):
    import signal
    # SIGTERM (and SIGINT, which a background shell job may have ignored) end the run the same
    # way: stop the current run and any server, save what was measured.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    p = build_parser()
    try:
        a = p.parse_args(argv)
        if a.cmd is None:
            p.print_help()
            return 2
        return {"run": cmd_run, "list": cmd_list, "report": cmd_report}[a.cmd](a)
    except UsageError as e:
        print("mtheap-bench: error: %s" % e, file=sys.stderr)
        return 2
