#!/usr/bin/env python3
"""plockstat: user-level lock statistics for Linux, without root.

The Solaris interface, built on LD_PRELOAD interposition instead of DTrace:

  plockstat [-ACHV] [-n count] [-s depth] [-e secs] [-x opt[=val]] [-v]
            [-o file] [--json file] [--folded file] [--threads]
            [-p pid | command [arg...]]
  plockstat --attachable command [arg...]

libplockstat.so (next to this script in the build tree, in ../lib/mtheap when installed) runs
inside the program and writes one data file per process image; this script turns those files
into the report.  One pass: read data -> symbolize addresses -> aggregate -> print.
"""
import getopt
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

VERSION = "@PROJECT_VERSION@"
LIBDIR_REL = "@PLOCKSTAT_LIBDIR_REL@"
HAVE_LIBDW = "@PLOCKSTAT_HAVE_LIBDW@" == "1"   # source lines in stacks need elfutils' libdw
LIBNAME = "libplockstat.so"
RESOLVER = "plockstat-resolve"

# Event kinds, as numbered in src/plockstat/ps.h.
EV_MUTEX_BLOCK, EV_MUTEX_HOLD, EV_RD_BLOCK, EV_WR_BLOCK, EV_RD_HOLD, EV_WR_HOLD, \
    EV_COND_WAIT, EV_TRY_FAIL, EV_SPIN_BLOCK, EV_SEM_WAIT, EV_OWNER_DEAD = range(11)
F_TIMEDOUT = 1
LT_NAMES = {0: "unknown", 1: "mutex", 2: "rwlock", 3: "condvar", 4: "spinlock",
            5: "semaphore", 6: "mtx_t", 7: "cnd_t"}

# Report order and which mode shows each category.
CATEGORIES = [
    (EV_MUTEX_BLOCK, "Mutex block", "C"),
    (EV_MUTEX_HOLD, "Mutex hold", "H"),
    (EV_RD_BLOCK, "R/W reader block", "C"),
    (EV_WR_BLOCK, "R/W writer block", "C"),
    (EV_RD_HOLD, "R/W reader hold", "H"),
    (EV_WR_HOLD, "R/W writer hold", "H"),
    (EV_COND_WAIT, "Condvar wait", "C"),
    (EV_TRY_FAIL, "Trylock failures", "C"),
    (EV_SPIN_BLOCK, "Spin block", "C"),
    (EV_SEM_WAIT, "Semaphore wait", "C"),
    (EV_OWNER_DEAD, "Mutex owner died", "C"),
]
CAT_NAME = {k: n for k, n, _ in CATEGORIES}

RW_KINDS = {0: "prefer-reader (glibc default)",
            1: "prefer-writer (glibc: acts as prefer-reader)",
            2: "prefer-writer-nonrecursive"}
MUTEX_KINDS = {0: "normal", 1: "recursive", 2: "errorcheck", 3: "adaptive"}

IGNORED_X = {
    "aggrate", "switchrate", "dynvarsize", "cleanrate", "strsize",
    "stackframes", "ustackframes", "bufpolicy", "bufresize", "specsize", "nspec", "statusrate",
}

CTL_MAGIC = 0x504C4B53
CTL_FMT_OFF = {"magic": 0, "version": 4, "cmd_seq": 8, "ack_seq": 12, "cmd": 16,
               "mode_hold": 20, "depth": 24, "hold_period": 28, "state": 32, "dir": 40}


def die(msg, code=1):
    sys.stderr.write("plockstat: %s\n" % msg)
    sys.exit(code)


def note(msg):
    sys.stderr.write("plockstat: %s\n" % msg)
    sys.stderr.flush()


# ---------------------------------------------------------------------------------------------
# Locating our parts: beside this script (build tree) or ../<libdir>/mtheap (installed).

def find_part(name):
    here = os.path.dirname(os.path.realpath(__file__))
    cands = [os.path.join(here, name)]
    for rel in (LIBDIR_REL, "lib/mtheap", "lib64/mtheap"):
        if rel and not rel.startswith("@"):
            cands.append(os.path.normpath(os.path.join(here, "..", rel, name)))
    for c in cands:
        if os.path.exists(c):
            return c
    die("cannot find %s (looked in: %s)" % (name, ", ".join(cands)))


def ctl_dir():
    d = os.environ.get("PLOCKSTAT_CTLDIR")
    if d:
        return d
    rt = os.environ.get("XDG_RUNTIME_DIR")
    if rt and os.path.isdir(rt) and os.access(rt, os.W_OK):
        return os.path.join(rt, "plockstat")
    return "/tmp/plockstat-%d" % os.getuid()


# ---------------------------------------------------------------------------------------------
# ELF helpers: static-binary check and -V.

def elf_info(path):
    """(is_elf, has_interp, is_setuid)"""
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            hdr = f.read(64)
            if hdr[:4] != b"\x7fELF" or hdr[4] != 2:
                return False, False, False
            phoff, = struct.unpack_from("<Q", hdr, 32)
            phentsize, phnum = struct.unpack_from("<HH", hdr, 54)
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
            interp = any(struct.unpack_from("<I", ph, i * phentsize)[0] == 3 for i in range(phnum))
            return True, interp, bool(st.st_mode & 0o6000)
    except OSError:
        return False, False, False


def elf_exports(path):
    """Defined dynamic symbols with their versions: [(name, version, is_default)]."""
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, _shstrndx = struct.unpack_from("<HHH", data, 58)
    secs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, info, align, entsize = \
            struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append((typ, off, size, link, entsize, info))
    dynsym = next((s for s in secs if s[0] == 11), None)
    versym = next((s for s in secs if s[0] == 0x6fffffff), None)
    verdef = next((s for s in secs if s[0] == 0x6ffffffd), None)
    if not dynsym:
        return []
    strtab = secs[dynsym[3]]

    def cstr(off):
        end = data.index(b"\0", off)
        return data[off:end].decode()
    vnames = {}
    if verdef:
        off = verdef[1]
        for _ in range(verdef[5]):
            _ver, _flags, ndx, cnt, _hash, aux, nxt = struct.unpack_from("<HHHHIII", data, off)
            vname, = struct.unpack_from("<I", data, off + aux)
            vnames[ndx] = cstr(strtab[1] + vname)
            if not nxt:
                break
            off += nxt
    out = []
    n = dynsym[2] // 24
    for i in range(1, n):
        st_name, st_info, _o, st_shndx, _v, _s = struct.unpack_from("<IBBHQQ", data, dynsym[1] + i * 24)
        if st_shndx == 0 or st_shndx >= 0xff00 or (st_info & 0xf) not in (1, 2):
            continue
        ver = ""
        hidden = False
        if versym:
            vs, = struct.unpack_from("<H", data, versym[1] + i * 2)
            hidden = bool(vs & 0x8000)
            ver = vnames.get(vs & 0x7fff, "")
        out.append((cstr(strtab[1] + st_name), ver, not hidden))
    return out


def print_interposed(lib):
    syms = elf_exports(lib)
    by = {}
    for name, ver, dflt in syms:
        by.setdefault(name, []).append(("@@" if dflt else "@") + ver)
    print("plockstat %s: %s interposes (LD_PRELOAD, no root needed):" % (VERSION, lib))
    for name in sorted(by):
        print("  %-28s %s" % (name, " ".join(sorted(by[name]))))
    print("Not seen: locks taken inside libc itself (malloc arenas, stdio), futex(2) used")
    print("directly, and statically linked programs.")


# ---------------------------------------------------------------------------------------------
# Data files

class Proc:
    def __init__(self):
        self.hdr = {}
        self.threads = []
        self.events = []
        self.locks = {}
        self.holders = []
        self.waits = []    # threads blocked when the data was written
        self.maps = ""
        self.sites = None  # (init pc, caller) -> locks made there, for lock_name


def parse_data(path):
    p = Proc()
    with open(path, "r", errors="replace") as f:
        text = f.read()
    head, _, maps = text.partition("\nmaps\n")
    p.maps = maps
    for line in head.split("\n"):
        if not line:
            continue
        parts = line.split(" ")
        tag = parts[0]
        if tag == "T" and len(parts) >= 13:
            p.threads.append({
                "tid": int(parts[1]), "alive": parts[2] == "1", "start_ns": int(parts[3]),
                "end_ns": int(parts[4]), "run_ns": int(parts[5]), "lat_ns": int(parts[6]),
                "lck_ns": int(parts[7]), "cvw_ns": int(parts[8]), "acquisitions": int(parts[9]),
                "blocks": int(parts[10]), "cv_waits": int(parts[11]), "name": " ".join(parts[12:])})
        elif tag == "E" and len(parts) >= 10:
            hist = {}
            if parts[8] != "-":
                for kv in parts[8].split(","):
                    b, c = kv.split(":")
                    hist[int(b)] = int(c)
            stack = [int(x, 16) for x in parts[9].split(",") if x]
            p.events.append({
                "kind": int(parts[1]), "flags": int(parts[2]), "ltype": int(parts[3]),
                "lock": int(parts[4], 16), "count": int(parts[5]), "sum": int(parts[6]),
                "max": int(parts[7]), "hist": hist, "stack": stack})
        elif tag == "L" and len(parts) >= 8:
            extra = parts[8:11] if len(parts) >= 11 else ["0", "0", "0"]
            p.locks[int(parts[1], 16)] = {
                "ltype": int(parts[2]), "subkind": int(parts[3]), "init_pc": int(parts[4], 16),
                "first_pc": int(parts[5], 16), "reads_while_wwait": int(parts[6]),
                "wwait_busy_ns": int(parts[7]), "init_caller": int(extra[0], 16),
                "ordinal": int(extra[1]), "partner": int(extra[2], 16)}
        elif tag == "H" and len(parts) >= 6:
            p.holders.append({"lock": int(parts[1], 16), "tid": int(parts[2]),
                              "pc": int(parts[3], 16), "count": int(parts[4]), "sum": int(parts[5])})
        elif tag == "W" and len(parts) >= 10:
            p.waits.append({"tid": int(parts[1]), "kind": int(parts[2]), "lock": int(parts[3], 16),
                            "mutex": int(parts[4], 16), "waited_ns": int(parts[5]),
                            "pc": int(parts[6], 16), "owner": int(parts[7]),
                            "owner_pc": int(parts[8], 16),
                            "stack": [int(x, 16) for x in parts[9].split(",") if x]})
        elif tag in ("T", "E", "L", "H", "W"):
            continue
        else:
            p.hdr[tag] = " ".join(parts[1:])
    for k in ("pid", "ppid", "image_start_ns", "window_start_ns", "end_ns", "hold",
              "holdsample", "depth", "dropped", "evrows", "evsize", "signal"):
        p.hdr[k] = int(p.hdr.get(k, "0") or 0)
    return p


def load_dir(d):
    procs = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".data"):
            try:
                procs.append(parse_data(os.path.join(d, name)))
            except (OSError, ValueError) as e:
                note("skipping unreadable %s: %s" % (name, e))
    procs.sort(key=lambda p: (p.hdr["image_start_ns"], p.hdr["pid"]))
    return procs


# ---------------------------------------------------------------------------------------------
# Symbolization (plockstat-resolve wraps symbolize.c)

class Symbols:
    def __init__(self, proc, resolver):
        self.tab = {}
        addrs = {}
        for e in proc.events:
            addrs.setdefault(e["lock"], False)
            for pc in e["stack"]:
                addrs[pc] = True
        for a, l in proc.locks.items():
            addrs.setdefault(a, False)
            for pc in (l["init_pc"], l["first_pc"], l["init_caller"]):
                if pc:
                    addrs[pc] = True
        for h in proc.holders:
            if h["pc"]:
                addrs[h["pc"]] = True
        for w in proc.waits:
            for a in (w["lock"], w["mutex"]):
                if a:
                    addrs.setdefault(a, False)
            for pc in [w["pc"], w["owner_pc"]] + w["stack"]:
                if pc:
                    addrs[pc] = True
        if not addrs:
            return
        with tempfile.NamedTemporaryFile("w", suffix=".maps", delete=False) as mf:
            mf.write(proc.maps)
            mpath = mf.name
        try:
            inp = "".join("0x%x%s\n" % (a, " r" if r else "") for a, r in addrs.items())
            out = subprocess.run([resolver, "--lines", "--demangle", mpath], input=inp,
                                 capture_output=True, text=True, check=False).stdout
        finally:
            os.unlink(mpath)
        for line in out.split("\n"):
            f = line.split("\t")
            if len(f) < 6:
                continue
            a = int(f[0], 16)
            self.tab[a] = {
                "path": None if f[1] == "-" else f[1], "symbol": None if f[2] == "-" else f[2],
                "offset": int(f[3], 16), "file": None if f[4] == "-" else f[4], "line": int(f[5])}

    def info(self, a):
        return self.tab.get(a, {"path": None, "symbol": None, "offset": 0, "file": None, "line": 0})

    def code(self, a):
        i = self.info(a)
        if not i["path"]:
            return "0x%x" % a
        obj = os.path.basename(i["path"])
        if not i["symbol"]:
            return "%s`0x%x" % (obj, i["offset"])
        return "%s`%s+0x%x" % (obj, i["symbol"], i["offset"])

    def data(self, a):
        """object`symbol for a global lock, or None."""
        i = self.info(a)
        if not i["path"] or not i["symbol"]:
            return None
        obj = os.path.basename(i["path"])
        if i["offset"]:
            return "%s`%s+0x%x" % (obj, i["symbol"], i["offset"])
        return "%s`%s" % (obj, i["symbol"])

    def frame(self, a):
        d = {"address": "0x%x" % a, "name": self.code(a)}
        i = self.info(a)
        if i["file"]:
            d["file"] = i["file"]
            d["line"] = i["line"]
        return d


def lock_name(proc, syms, addr, opts=None, as_partner=False):
    """A lock's name: its symbol if it is a global (or inside one); else, in brackets, the
    call that initialized it, that function's caller and the lock's rank among those made
    there (#n, in order of creation: stable from run to run for a program that creates its locks
    in the same order); a condition variable never seen initialized, after the mutex it waits
    with; else the call that first used it.  -x lockaddr appends the address."""
    n = syms.data(addr)
    if not n:
        li = proc.locks.get(addr)
        if li and li["init_pc"]:
            site = syms.code(li["init_pc"])
            if li.get("init_caller"):
                site += " from " + syms.code(li["init_caller"])
            # the rank only where it tells locks apart: a site that made more than one
            if proc.sites is None:
                proc.sites = {}
                for o in proc.locks.values():
                    k = (o["init_pc"], o["init_caller"])
                    proc.sites[k] = proc.sites.get(k, 0) + 1
            many = li["ordinal"] > 1 or proc.sites[(li["init_pc"], li["init_caller"])] > 1
            n = "[%s%s]" % (site, " #%d" % li["ordinal"] if many and li["ordinal"] else "")
        elif li and li.get("partner") and not as_partner:
            n = "[cv of %s]" % lock_name(proc, syms, li["partner"], None, True)
        elif li and li["first_pc"]:
            n = "[%s]" % syms.code(li["first_pc"])
        else:
            n = "0x%x" % addr
    if opts and opts.get("lockaddr") and not n.startswith("0x"):
        n += "@0x%x" % addr
    return n


# ---------------------------------------------------------------------------------------------
# Analysis: one pass from events to report rows

def microstates(t):
    """One thread's row of --threads, as prstat -mL: percentages of one window (the thread's
    life in the traced image) that add up to 100.  The kernel's RUN and LAT are exact; LCK and
    CVW are our timers around blocking calls, which also cover the cpu a waiter spends spinning
    in the lock and waiting to run after its wake-up: that overlap stays in RUN and LAT, and
    LCK and CVW get what is left.  Returns (run, lat, lck, cvw, slp, window_ns)."""
    wall = max(t["end_ns"] - t["start_ns"], 1)
    left = [1000]  # tenths of a percent, so the rounded columns add up exactly

    def take(ns):
        v = min(int(round(1000.0 * ns / wall)), left[0])
        left[0] -= v
        return v / 10.0
    run, lat, lck, cvw = take(t["run_ns"]), take(t["lat_ns"]), take(t["lck_ns"]), take(t["cvw_ns"])
    return run, lat, lck, cvw, left[0] / 10.0, wall


WAIT_KIND = {EV_MUTEX_BLOCK: "mutex", EV_RD_BLOCK: "rwlock (read)", EV_WR_BLOCK: "rwlock (write)",
             EV_COND_WAIT: "condvar", EV_SPIN_BLOCK: "spinlock", EV_SEM_WAIT: "semaphore"}


def waits_in_progress(proc, syms, opts, tnames):
    """The threads that were blocked when the data was written (a hang, a deadlock, workers
    parked on a condition variable), longest wait first, and the deadlocks among them: a
    cycle of threads each waiting for a lock the next one holds."""
    waiting = []
    for w in proc.waits:
        owner = None
        if w["owner"]:
            owner = {"tid": w["owner"], "thread": tnames.get(w["owner"], "?"),
                     "site": syms.frame(w["owner_pc"]) if w["owner_pc"] else None}
        waiting.append({
            "tid": w["tid"], "thread": tnames.get(w["tid"], "?"),
            "kind": WAIT_KIND.get(w["kind"], "lock"), "waited_nsec": w["waited_ns"],
            "lock": {"address": "0x%x" % w["lock"], "name": lock_name(proc, syms, w["lock"], opts)},
            "mutex": ({"address": "0x%x" % w["mutex"], "name": lock_name(proc, syms, w["mutex"], opts)}
                      if w["mutex"] else None),
            "holder": owner, "stack": [syms.frame(pc) for pc in (w["stack"] or [w["pc"]])]})
    waiting.sort(key=lambda x: (-x["waited_nsec"], x["tid"]))
    # Each blocked thread waits for at most one holder: follow the arrows from every thread;
    # coming back to a thread on the current path closes a cycle.
    by_tid = {x["tid"]: x for x in waiting}
    deadlocks, seen = [], set()
    for start in sorted(by_tid):
        path, t = [], start
        while t in by_tid and t not in seen and t not in path:
            path.append(t)
            h = by_tid[t]["holder"]
            t = h["tid"] if h else None
        if t in path:
            cycle = path[path.index(t):]
            deadlocks.append({"threads": [by_tid[x] for x in cycle]})
        seen.update(path)
    return waiting, deadlocks


def format_waits(rep):
    o = []
    if not rep["waiting"]:
        return o
    o.append("")
    o.append("Waits in progress (threads blocked when the data was written)")
    o.append("")
    o.append("%8s %-16s %12s %-15s %-28s %s" % ("TID", "NAME", "Waited ms", "Kind", "Lock", "Holder"))
    o.append(SEP)
    for w in rep["waiting"]:
        hold = ""
        if w["holder"]:
            hold = "tid %d" % w["holder"]["tid"]
            if w["holder"]["site"]:
                hold += " at " + w["holder"]["site"]["name"]
        elif w["mutex"]:
            hold = "(re-takes %s)" % w["mutex"]["name"]
        o.append("%8d %-16s %12.1f %-15s %-28s %s" % (w["tid"], w["thread"][:16], w["waited_nsec"] / 1e6,
                                                      w["kind"], w["lock"]["name"], hold))
        for f in w["stack"]:
            o.append("%38s %s" % ("", f["name"] + (" (%s:%d)" % (os.path.basename(f["file"]), f["line"])
                                                    if f.get("file") else "")))
    for d in rep["deadlocks"]:
        o.append("")
        ts = d["threads"]
        o.append("DEADLOCK: %d threads wait for each other:" % len(ts))
        for w in ts:
            site = " (taken at %s)" % w["holder"]["site"]["name"] if w["holder"]["site"] else ""
            o.append("  tid %d waits for %s at %s, held by tid %d%s" % (
                w["tid"], w["lock"]["name"], w["stack"][0]["name"], w["holder"]["tid"], site))
        o.append("  Take the locks in one global order in every thread (or use trylock and back off).")
    return o


def analyze(proc, syms, opts):
    tnames = {t["tid"]: t["name"] for t in proc.threads}
    cats = []
    show = set()
    if "C" in opts["mode"]:
        show |= {k for k, _, m in CATEGORIES if m == "C"}
    if "H" in opts["mode"]:
        show |= {k for k, _, m in CATEGORIES if m == "H"}
    for kind, name, _m in CATEGORIES:
        if kind not in show:
            continue
        rows = []
        for e in proc.events:
            if e["kind"] != kind:
                continue
            stack = e["stack"]
            rows.append({
                "count": e["count"], "nsec": e["sum"] // max(e["count"], 1), "total_nsec": e["sum"],
                "max_nsec": e["max"], "timed_out": bool(e["flags"] & F_TIMEDOUT),
                "lock": {"address": "0x%x" % e["lock"], "name": lock_name(proc, syms, e["lock"], opts),
                         "type": LT_NAMES.get(e["ltype"], "unknown")},
                "caller": syms.frame(stack[0]) if stack else {"address": "0x0", "name": "?"},
                "stack": [syms.frame(pc) for pc in stack],
                "histogram": [{"nsec": 1 << b, "count": c} for b, c in sorted(e["hist"].items())],
            })
        if kind in (EV_TRY_FAIL, EV_OWNER_DEAD):
            rows.sort(key=lambda r: (-r["count"], r["lock"]["name"]))
        else:
            rows.sort(key=lambda r: (-r["total_nsec"], -r["count"], r["lock"]["name"]))
        if opts["count"]:
            rows = rows[:opts["count"]]
        if rows:
            cats.append({"name": name, "kind": kind, "entries": rows})

    # Who held it: top contended mutexes (and write-held rwlocks) by total blocked time.
    holders = []
    blocked = {}
    for e in proc.events:
        if e["kind"] in (EV_MUTEX_BLOCK, EV_RD_BLOCK, EV_WR_BLOCK):
            b = blocked.setdefault(e["lock"], [0, 0])
            b[0] += e["count"]
            b[1] += e["sum"]
    by_lock = {}
    for h in proc.holders:
        by_lock.setdefault(h["lock"], []).append(h)
    top = sorted((l for l in blocked if l in by_lock), key=lambda l: -blocked[l][1])
    for l in top[:opts["count"] or 5]:
        hs = sorted(by_lock[l], key=lambda h: -h["sum"])
        holders.append({
            "lock": {"address": "0x%x" % l, "name": lock_name(proc, syms, l, opts)},
            "blocked_count": blocked[l][0], "blocked_nsec": blocked[l][1],
            "holders": [{"tid": h["tid"], "thread": tnames.get(h["tid"], "?"),
                         "site": syms.frame(h["pc"]) if h["pc"] else None,
                         "waits": h["count"], "nsec": h["sum"]} for h in hs]})

    # Writer starvation, per rwlock with writer waits.
    rwl = []
    ww = {}
    for e in proc.events:
        if e["kind"] == EV_WR_BLOCK:
            w = ww.setdefault(e["lock"], {"count": 0, "sum": 0, "max": 0, "timed_out": 0})
            w["count"] += e["count"]
            w["sum"] += e["sum"]
            w["max"] = max(w["max"], e["max"])
            if e["flags"] & F_TIMEDOUT:
                w["timed_out"] += e["count"]
    for l, w in sorted(ww.items(), key=lambda kv: -kv[1]["max"]):
        li = proc.locks.get(l, {})
        kind = li.get("subkind", 0)
        reads = li.get("reads_while_wwait", 0)
        busy = li.get("wwait_busy_ns", 0) or w["sum"]
        rate = reads / (busy / 1e9) if busy else 0.0
        starved = kind in (0, 1) and w["max"] >= 1000000 and reads >= max(2 * w["count"], 10)
        # std::shared_mutex (libstdc++ wraps a pthread_rwlock_t it initializes itself) takes
        # no attribute: its lock calls are inlined from <shared_mutex>, which the line table
        # (or, unoptimized, the caller's name) shows
        frames = [f for e in proc.events if e["lock"] == l for f in map(syms.frame, e["stack"])]
        cxx = any(os.path.basename(f.get("file") or "") == "shared_mutex" or
                  re.search(r"shared_(timed_)?mutex|shared_lock", f["name"]) for f in frames)
        rwl.append({
            "lock": {"address": "0x%x" % l, "name": lock_name(proc, syms, l, opts)},
            "kind": RW_KINDS.get(kind, "kind %d" % kind), "kind_value": kind,
            "writer_waits": w["count"], "writer_timeouts": w["timed_out"],
            "longest_writer_wait_nsec": w["max"], "mean_writer_wait_nsec": w["sum"] // max(w["count"], 1),
            "reads_while_writer_waited": reads, "reads_per_sec_while_writer_waited": round(rate, 1),
            "writer_starved": starved, "api": "std::shared_mutex" if cxx else "pthread_rwlock_t"})

    threads = []
    for t in proc.threads:
        run, lat, lck, cvw, slp, wall = microstates(t)
        threads.append({
            "tid": t["tid"], "name": t["name"], "alive": t["alive"], "wall_nsec": wall,
            "run_pct": run, "lat_pct": lat, "lck_pct": lck, "cvw_pct": cvw, "slp_pct": slp,
            "acquisitions": t["acquisitions"], "blocks": t["blocks"], "cv_waits": t["cv_waits"]})
    threads.sort(key=lambda t: (-t["lck_pct"], t["tid"]))

    waiting, deadlocks = waits_in_progress(proc, syms, opts, tnames)
    h = proc.hdr
    return {
        "pid": h["pid"], "ppid": h["ppid"], "exe": h.get("exe", "?"), "reason": h.get("reason", "?"),
        # the name it was run by (argv[0]); exe is where the binary is, links resolved
        "command": os.path.basename(h.get("argv0") or h.get("exe", "?")),
        "signal": h["signal"] or None,
        "duration_nsec": max(h["end_ns"] - h["window_start_ns"], 0), "dropped": h["dropped"],
        "event_rows": h["evrows"], "event_row_bytes": h["evsize"],
        "hold_sample_period": h["holdsample"] if h["hold"] else None,
        "stack_depth": h["depth"], "categories": cats, "holders": holders,
        "rwlocks": rwl, "threads": threads, "waiting": waiting, "deadlocks": deadlocks}


# ---------------------------------------------------------------------------------------------
# Output

SEP = "-" * 79


def hist_lines(hist, total):
    if not hist:
        return []
    lo, hi = hist[0]["nsec"], hist[-1]["nsec"]
    counts = {h["nsec"]: h["count"] for h in hist}
    out = []
    v = lo
    while v <= hi:
        c = counts.get(v, 0)
        bar = "@" * int(round(24.0 * c / total)) if total else ""
        out.append("%10d |%-24s| %6d" % (v, bar, c))
        v <<= 1
    return out


def starvation_advice(r):
    if r["api"] == "std::shared_mutex":
        return ["  It is a std::shared_mutex: libstdc++ builds it on glibc's rwlock, which prefers",
                "  readers, and it takes no attribute to change that.  What works: a",
                "  pthread_rwlock_t of your own initialized with",
                "    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);",
                "  behind the same lock()/lock_shared() interface (a small class), or a writer-",
                "  pending flag that new readers wait on; or shorten the read sections.  Caveat of",
                "  the writer-preferring kind: a thread must never take the read lock recursively."]
    return ["  glibc's default rwlock prefers readers (PTHREAD_RWLOCK_PREFER_WRITER_NP is",
            "  treated the same).  Initialize it with",
            "    pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);",
            "  caveat: a thread must then never take the read lock recursively: a second",
            "  rdlock while a writer waits deadlocks.  (A std::shared_mutex cannot take the",
            "  attribute: wrap such a pthread_rwlock_t in a class of your own.)"]


def format_report(rep, opts, multi):
    o = []
    if multi:
        o.append("")
        o.append("=== pid %d (%s), %s ===" % (rep["pid"], rep["command"], rep["reason"]))
    if rep["hold_sample_period"] and rep["hold_sample_period"] > 1 and "H" in opts["mode"]:
        o.append("(hold times sampled: 1 acquisition in %d timed; hold counts are sampled counts)"
                 % rep["hold_sample_period"])
    anon = False
    for cat in rep["categories"]:
        o.append("")
        o.append(cat["name"])
        o.append("")
        if not opts["depth"]:
            o.append("%5s %8s %-28s %s" % ("Count", "nsec", "Lock", "Caller"))
            o.append(SEP)
        for r in cat["entries"]:
            anon = anon or r["lock"]["name"].startswith("[")
            caller = r["caller"]["name"] + (" (timed out)" if r["timed_out"] else "")
            if opts["depth"]:
                o.append("%5s %8s %-28s %s" % ("Count", "nsec", "Lock", "Caller"))
                o.append(SEP)
            o.append("%5d %8d %-28s %s" % (r["count"], r["nsec"], r["lock"]["name"], caller))
            if opts["depth"]:
                o.append("")
                hl = hist_lines(r["histogram"], r["count"])
                frames = [f["name"] + (" (%s:%d)" % (os.path.basename(f["file"]), f["line"])
                                       if f.get("file") else "") for f in r["stack"]]
                o.append("%10s ---- Time Distribution --- %6s %s" % ("nsec", "count", "Stack"))
                for i in range(max(len(hl), len(frames))):
                    left = hl[i] if i < len(hl) else " " * 43
                    right = frames[i] if i < len(frames) else ""
                    o.append(("%s %s" % (left, right)).rstrip())
                o.append("")
    o.extend(format_waits(rep))
    if rep["holders"] and "C" in opts["mode"]:
        o.append("")
        o.append("Who held it (top contended locks: the thread and call site holding the lock")
        o.append("while others waited)")
        o.append("")
        for h in rep["holders"]:
            o.append("%s: blocked %d times, %d nsec in total" % (h["lock"]["name"], h["blocked_count"],
                                                                  h["blocked_nsec"]))
            o.append("  %6s %12s  %s" % ("Waits", "nsec", "Holder"))
            for x in h["holders"][:5]:
                # No site: before the waiter looked, the holder had released this lock and
                # then another one, so neither its held-lock stack nor its last release
                # still named this lock.
                site = ("at " + x["site"]["name"] if x["site"]
                        else "(site not captured: it had released this lock and another since when the waiter looked)")
                o.append("  %6d %12d  tid %d (%s) %s" % (x["waits"], x["nsec"], x["tid"], x["thread"], site))
    if rep["rwlocks"] and "C" in opts["mode"]:
        o.append("")
        o.append("R/W lock writer starvation")
        o.append("")
        o.append("%-28s %-30s %6s %12s %12s %9s %11s" % ("Lock", "Kind", "Waits", "Longest ns",
                                                       "Mean ns", "Reads", "Reads/s"))
        o.append(SEP + "-" * 36)
        for r in rep["rwlocks"]:
            o.append("%-28s %-30s %6d %12d %12d %9d %11.1f" % (
                r["lock"]["name"], r["kind"], r["writer_waits"], r["longest_writer_wait_nsec"],
                r["mean_writer_wait_nsec"], r["reads_while_writer_waited"],
                r["reads_per_sec_while_writer_waited"]))
        o.append("(Reads: read locks granted while a writer was waiting)")
        for r in rep["rwlocks"]:
            if r["writer_starved"]:
                o.append("")
                o.append("%s: writers starved: readers took the lock %d times while a writer waited "
                         "(longest writer wait %.3f s)." % (r["lock"]["name"], r["reads_while_writer_waited"],
                                                         r["longest_writer_wait_nsec"] / 1e9))
                o.extend(starvation_advice(r))
    if opts["threads"] and rep["threads"]:
        o.append("")
        o.append("Threads (prstat -mL style: % of each thread's time in the window)")
        o.append("")
        o.append("%8s %-16s %5s %5s %5s %5s %5s %10s %8s %8s" % (
            "TID", "NAME", "RUN", "LAT", "LCK", "CVW", "SLP", "LOCKS", "BLOCKS", "CVWAITS"))
        for t in rep["threads"]:
            o.append("%8d %-16s %5.1f %5.1f %5.1f %5.1f %5.1f %10d %8d %8d" % (
                t["tid"], t["name"][:16], t["run_pct"], t["lat_pct"], t["lck_pct"], t["cvw_pct"],
                t["slp_pct"], t["acquisitions"], t["blocks"], t["cv_waits"]))
        o.append("(percent of each thread's life in this image, adding up to 100: RUN on cpu, LAT")
        o.append(" waiting for a cpu, LCK blocked on locks/semaphores, CVW in condition-variable")
        o.append(" waits, SLP everything else; cpu spent spinning in a wait counts as RUN)")
    shown = rep["categories"] or rep["waiting"] or ("C" in opts["mode"] and (rep["holders"] or rep["rwlocks"]))
    if not shown:
        # say it: an empty report is otherwise one blank line, which reads as a failure
        said = []
        if "C" in opts["mode"]:
            said.append("no thread blocked or spun on a lock")
        if "H" in opts["mode"]:
            said.append("no lock hold was recorded")
        o.append("")
        o.append("No lock contention: %s." % "; ".join(said or ["no lock events recorded"]))
    if anon:
        o.append("")
        o.append("[object`function+0x.. from caller #n]: a lock that is not a global variable, named")
        o.append("by the call that initialized it, that function's caller, and #n, the n-th lock made")
        o.append("there; [cv of ...]: a condition variable, by its mutex; [object`function+0x..]")
        o.append("alone: the call that first used it.")
    if rep["dropped"]:
        o.append("")
        o.extend(dropped_lines(rep))
    return "\n".join(o) + "\n"


def dropped_lines(rep):
    """What a full table cost and how to avoid it (the counts above are short by this many)."""
    rows, size = rep.get("event_rows"), rep.get("event_row_bytes")
    if rows and size:
        # every dropped event may have wanted a row of its own: room for all, plus a quarter
        need = max((rows + rep["dropped"]) * size * 5 // 4, 2 * rows * size)
        return ["plockstat: %d events dropped: the event table's %d rows were all in use, so the counts"
                % (rep["dropped"], rows),
                "above miss them; rerun with -x aggsize=%dm (now %dm) for room"
                % (-(-need // (1 << 20)), -(-rows * size // (1 << 20)))]
    return ["plockstat: %d events dropped (event table full)" % rep["dropped"]]


def sanitize(frame):
    return frame.replace(";", ":").replace(" ", "_").replace("\t", "_")


HOLD_KINDS = (EV_MUTEX_HOLD, EV_RD_HOLD, EV_WR_HOLD)


def folded_lines(rep):
    """Block and wait times are complete; hold times are timed for 1 acquisition in N (-x
    holdsample): their weights are scaled by N, so the flame graph compares like with like, and
    the category frame says so."""
    agg = {}
    exe = sanitize(rep["command"])
    period = rep["hold_sample_period"] or 1
    for cat in rep["categories"]:
        scaled = cat["kind"] in HOLD_KINDS and period > 1
        label = cat["name"] + (" (1 in %d timed, x%d)" % (period, period) if scaled else "")
        for r in cat["entries"]:
            weight = r["total_nsec"] if cat["kind"] not in (EV_TRY_FAIL, EV_OWNER_DEAD) else r["count"]
            if scaled:
                weight *= period
            if weight <= 0:
                continue
            frames = [exe] + [sanitize(f["name"]) for f in reversed(r["stack"])]
            frames.append(sanitize("%s:%s" % (label, r["lock"]["name"])))
            key = ";".join(frames)
            agg[key] = agg.get(key, 0) + weight
    return ["%s %d" % (k, v) for k, v in sorted(agg.items())]


def emit(procs, opts, resolver):
    if opts["depth"] and not HAVE_LIBDW:
        print("plockstat: stacks without source lines: this plockstat was built without libdw "
              "(install libdw-dev and rebuild)", file=sys.stderr)
    reports = []
    for p in procs:
        syms = Symbols(p, resolver)
        reports.append(analyze(p, syms, opts))
    text = "".join(format_report(r, opts, len(reports) > 1) for r in reports)
    if opts["out"] or opts["json"]:
        # the report goes to a file: the drops still reach the terminal
        for r in reports:
            if r["dropped"]:
                note("pid %d: %s" % (r["pid"], " ".join(dropped_lines(r))[len("plockstat: "):]))
    if opts["out"]:
        with open(opts["out"], "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
        sys.stdout.flush()
    if opts["json"]:
        doc = {"tool": "plockstat", "version": VERSION, "format": 1,
               "mode": opts["mode"], "processes": reports}
        with open(opts["json"], "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
    if opts["folded"]:
        with open(opts["folded"], "w") as f:
            for r in reports:
                for line in folded_lines(r):
                    f.write(line + "\n")


# ---------------------------------------------------------------------------------------------
# Running a command, attaching to a pid

def lib_env(lib, extra):
    env = dict(os.environ)
    pre = env.get("LD_PRELOAD", "")
    env["LD_PRELOAD"] = lib + ((":" + pre) if pre else "")
    env.update(extra)
    return env


def parse_size(val):
    """A DTrace size: bytes, or a number with k, m, g (or K, M, G) appended."""
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)\s*", val or "")
    if not m:
        raise ValueError(val)
    return int(m.group(1)) << {"": 0, "k": 10, "m": 20, "g": 30}[m.group(2).lower()]


def opts_string(opts):
    s = "hold=%d,depth=%d,holdsample=%d" % (1 if "H" in opts["mode"] else 0, opts["depth"],
                                            opts["holdsample"])
    for k in ("aggsize", "bufsize"):
        if opts[k]:
            s += ",%s=%d" % (k, opts[k])
    if opts["secs"]:
        s += ",duration=%d" % int(opts["secs"] * 1000)
    return s


def check_command(cmd):
    path = cmd[0]
    if "/" not in path:
        for d in os.environ.get("PATH", "").split(":"):
            c = os.path.join(d or ".", path)
            if os.path.isfile(c) and os.access(c, os.X_OK):
                path = c
                break
        else:
            die("%s: command not found" % cmd[0], 127)
    if not os.path.exists(path):
        die("%s: no such file" % path, 127)
    is_elf, interp, setuid = elf_info(path)
    if is_elf and not interp:
        die("%s is statically linked: plockstat works by preloading libplockstat.so through the "
            "dynamic linker (LD_PRELOAD), which a static program does not have, so its locks cannot "
            "be observed.  Relink it dynamically (without -static) to use plockstat." % path, 2)
    if setuid and os.getuid() != 0:
        note("warning: %s is set-user-ID: the dynamic linker ignores LD_PRELOAD for it" % path)
    return path


def expired_file(d, pid):
    """Has pid written the data file of an expired -e window?  (Its exec'd images and its
    other dumps carry other reasons.)"""
    for n in os.listdir(d):
        if n.startswith("%d." % pid) and n.endswith(".data"):
            try:
                with open(os.path.join(d, n)) as f:
                    if "\nreason expired\n" in f.read(4096):
                        return True
            except OSError:
                pass
    return False


def signame(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal %d" % sig


def data_dir():
    """The directory the traced processes write into.  As root it is 01733 (anyone may create a
    file, nobody but us may list or remove): a server that drops privileges (memcached -u
    nobody) must still be able to write its data; the library creates its files with O_EXCL
    and O_NOFOLLOW."""
    d = tempfile.mkdtemp(prefix="plockstat.")
    if os.geteuid() == 0:
        os.chmod(d, 0o1733)
    return d


class Stopper:
    """SIGTERM, SIGINT or SIGHUP to plockstat: stop the program the way the signal would have
    (its handler in libplockstat writes the data first), then report what it wrote.  The
    signal is passed on after a grace period, since `timeout` and a terminal's Ctrl-C already
    send it to the whole process group and a second one could cut short the program's own
    handler."""
    SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
    GRACE = 0.5

    def __init__(self, child):
        self.child, self.sig, self.at = child, None, None
        self.pids = []  # daemons the command left running, signalled with it
        self.old = {s: signal.signal(s, self.handler) for s in self.SIGNALS}

    def handler(self, sig, frame):
        if self.sig is None:
            self.sig, self.at = sig, time.monotonic()
            note("%s: stopping pid %d and reporting what it has written" % (signame(sig), self.child.pid))

    def poll(self):
        """Pass the signal on once the grace period is over; True if it was."""
        if self.sig is not None and self.at is not None and time.monotonic() >= self.at + self.GRACE:
            self.at = None
            try:
                self.child.send_signal(self.sig)
            except OSError:
                pass
            for pid in self.pids:
                try:
                    os.kill(pid, self.sig)
                except OSError:
                    pass
            return True
        return False

    def restore(self):
        for s, h in self.old.items():
            signal.signal(s, h)


def wait_child(child, opts, d, stopper):
    """Wait for the child to exit (or its -e window to expire).  Returns (status, expired)."""
    deadline = time.monotonic() + opts["secs"] + 10 if opts["secs"] else None
    killed_at = None
    while True:
        status = child.poll()
        if status is not None:
            return status, False
        if stopper.poll():
            killed_at = time.monotonic()
        if killed_at is not None and time.monotonic() > killed_at + 10:
            note("pid %d is still running 10 s after %s; reporting what it wrote so far"
                 % (child.pid, signame(stopper.sig)))
            return None, True
        if deadline is not None and stopper.sig is None:
            if expired_file(d, child.pid):
                return None, True
            if time.monotonic() > deadline:
                note("pid %d did not report after %g s" % (child.pid, opts["secs"]))
                return None, True
        time.sleep(0.02)


def running(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def traced_daemons(d):
    """Processes still running with this run's data directory in their environment: what the
    command left behind when it daemonized (memcached -d: the parent exits at once)."""
    key = ("PLOCKSTAT_DIR=%s" % d).encode()
    pids = []
    for n in os.listdir("/proc"):
        if not n.isdigit() or int(n) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % n, "rb") as f:
                if key in f.read().split(b"\0") and running(int(n)):
                    pids.append(int(n))
        except OSError:
            pass
    return sorted(pids)


def wait_daemons(d, child, opts, stopper):
    """After the command exited: wait for the daemons it left, as for the command itself
    (their exit, a signal to plockstat, or the -e window).  Returns True if any was waited
    for."""
    pids = traced_daemons(d)
    if not pids:
        return False
    note("pid %d exited and left %s running (daemonized): waiting for %s; stop %s (or plockstat) "
         "for the report" % (child.pid, ", ".join("pid %d" % p for p in pids),
                             "it" if len(pids) == 1 else "them", "it" if len(pids) == 1 else "them"))
    stopper.pids = pids
    deadline = time.monotonic() + opts["secs"] + 10 if opts["secs"] else None
    killed_at = None
    while any(running(p) for p in pids):
        if stopper.poll():
            killed_at = time.monotonic()
        if killed_at is not None and time.monotonic() > killed_at + 10:
            note("still running 10 s after %s; reporting what was written so far" % signame(stopper.sig))
            break
        if deadline is not None and stopper.sig is None:
            if all(expired_file(d, p) or not running(p) for p in pids) or time.monotonic() > deadline:
                break
        time.sleep(0.05)
    return True


def resolve_path(prog):
    if "/" in prog:
        return prog
    for d in os.environ.get("PATH", "").split(":"):
        c = os.path.join(d or ".", prog)
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def exec_markers(d):
    """pid -> path for the <pid>.exec files vfork children leave before they exec."""
    out = {}
    for n in os.listdir(d):
        if n.endswith(".exec") and n[:-5].isdigit():
            try:
                with open(os.path.join(d, n)) as f:
                    out[int(n[:-5])] = f.read().partition("exec_path ")[2].strip()
            except OSError:
                pass
    return out


def explain_lost_execs(procs, markers):
    """An image that exec'd a program which then wrote nothing (`sh -c ./static_prog`): say
    why, or the report looks complete while it misses the program the user meant."""
    later = {(p.hdr["pid"], p.hdr["image_start_ns"]) for p in procs}
    execs = [(p.hdr["pid"], p.hdr["image_start_ns"], p.hdr.get("exec_path")) for p in procs
             if p.hdr.get("reason") == "exec"]
    execs += [(pid, -1, path) for pid, path in markers.items()]
    for pid, start, path in execs:
        if not path or any(q == pid and t > start for q, t in later):
            continue
        full = resolve_path(path)
        why = "it did not load %s (it cleared LD_PRELOAD, or was killed before writing)" % LIBNAME
        if full and os.path.exists(full):
            is_elf, interp, setuid = elf_info(full)
            if is_elf and not interp:
                why = "it is statically linked, so nothing can be preloaded into it"
            elif setuid and os.getuid() != 0:
                why = "it is set-user-ID, so the dynamic linker ignored LD_PRELOAD"
        note("pid %d exec'd %s, which left no data: %s; the report covers only what ran before"
             % (pid, path, why))


def explain_end(child, status, procs):
    """Say how the program ended when that shapes what the report holds."""
    mine = [p for p in procs if p.hdr["pid"] == child.pid]
    if status is not None and status < 0:
        how = "pid %d was killed by %s" % (child.pid, signame(-status))
        if mine and mine[-1].hdr.get("reason") == "flush":
            ago = max(0.0, (time.monotonic_ns() - mine[-1].hdr["end_ns"]) / 1e9)
            note("%s before it could write its final data: this report is its last periodic "
                 "write, from %.1f s before plockstat saw it end" % (how, ago))
        elif mine:
            note("%s; its data was written on the way out" % how)
        elif -status == signal.SIGKILL:
            note("%s before it wrote any data (a program writes once a second while it has "
                 "threads; a single-threaded one only at its end)" % how)
        else:
            note("%s and wrote no data: it did not load %s (statically linked, set-user-ID, or it "
                 "cleared LD_PRELOAD), or the signal's handler was the program's own"
                 % (how, LIBNAME))
    elif not mine:
        note("no data from pid %d: it did not load %s (statically linked, set-user-ID, or it "
             "cleared LD_PRELOAD), or it could not write to the data directory (it changed its "
             "user or root directory, or the disk is full)" % (child.pid, LIBNAME))


def run_command(cmd, opts, lib, resolver):
    check_command(cmd)
    d = data_dir()
    try:
        env = lib_env(lib, {"PLOCKSTAT_DIR": d, "PLOCKSTAT_OPTS": opts_string(opts)})
        env.pop("PLOCKSTAT_CTLDIR", None)
        try:
            child = subprocess.Popen(cmd, env=env)
        except OSError as e:
            die("cannot run %s: %s" % (cmd[0], e), 127)
        if opts["verbose"]:
            note("tracing enabled for pid %d" % child.pid)
        stopper = Stopper(child)
        try:
            status, expired = wait_child(child, opts, d, stopper)
            daemons = status is not None and wait_daemons(d, child, opts, stopper)
        finally:
            stopper.restore()
        if opts["verbose"]:
            if expired:
                note("tracing stopped for pid %d; it keeps running" % child.pid)
            else:
                note("pid %d has exited" % child.pid)
        procs = load_dir(d)
        if expired and not daemons:
            procs = [p for p in procs if p.hdr["pid"] == child.pid]
        explain_end(child, status, procs)
        explain_lost_execs(procs, exec_markers(d))
        emit(procs, opts, resolver)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if stopper.sig is not None:
        return 128 + stopper.sig
    if status is not None and status < 0:
        return 128 - status
    return status or 0


def attachable(cmd, opts, lib):
    check_command(cmd)
    cd = ctl_dir()
    os.makedirs(cd, mode=0o700, exist_ok=True)
    env = lib_env(lib, {"PLOCKSTAT_CTLDIR": cd, "PLOCKSTAT_OPTS": "attachable=1"})
    env.pop("PLOCKSTAT_DIR", None)
    if opts["verbose"]:
        note("pid %d is attachable: plockstat -p %d" % (os.getpid(), os.getpid()))
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        die("cannot run %s: %s" % (cmd[0], e), 127)


def not_attachable(pid, why):
    die("cannot attach to pid %d: %s.\n"
        "  plockstat observes locks from inside the process (LD_PRELOAD interposition), and Linux\n"
        "  gives no way to load a library into a running process without ptrace or root, which\n"
        "  plockstat does not use.  Start the program under plockstat instead:\n"
        "      plockstat --attachable COMMAND [ARG...] &     # library loaded, collection off\n"
        "      plockstat -e 10 -p PID                       # observe it later, for 10 seconds\n"
        "  or run it directly under plockstat: plockstat [options] COMMAND [ARG...]" % (pid, why), 2)


def attach(pid, opts, resolver):
    if not os.path.exists("/proc/%d" % pid):
        die("pid %d: no such process" % pid, 2)
    try:
        with open("/proc/%d/maps" % pid) as f:
            loaded = LIBNAME in f.read()
    except OSError:
        not_attachable(pid, "its memory map is not readable (another user's process?)")
    if not loaded:
        not_attachable(pid, "it was not started with plockstat --attachable (%s is not loaded)" % LIBNAME)
    cpath = os.path.join(ctl_dir(), "%d.ctl" % pid)
    try:
        fd = os.open(cpath, os.O_RDWR)
    except OSError:
        not_attachable(pid, "%s is loaded but the process was not started attachable (no %s)"
                       % (LIBNAME, cpath))
    import mmap
    m = mmap.mmap(fd, 4096)
    os.close(fd)
    if struct.unpack_from("<I", m, 0)[0] != CTL_MAGIC:
        not_attachable(pid, "%s is not a plockstat control file" % cpath)

    def put(field, val):
        struct.pack_into("<I", m, CTL_FMT_OFF[field], val)

    def get(field):
        return struct.unpack_from("<I", m, CTL_FMT_OFF[field])[0]

    def command(cmd, timeout):
        seq = (get("cmd_seq") + 1) & 0xffffffff
        put("cmd", cmd)
        put("cmd_seq", seq)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if get("ack_seq") == seq:
                return True
            if not os.path.exists("/proc/%d" % pid):
                return False
            time.sleep(0.02)
        return False

    d = data_dir()
    os.chmod(d, 0o700)
    db = d.encode() + b"\0"
    m[CTL_FMT_OFF["dir"]:CTL_FMT_OFF["dir"] + len(db)] = db
    put("mode_hold", 1 if "H" in opts["mode"] else 0)
    put("depth", opts["depth"])
    put("hold_period", opts["holdsample"])
    if not command(1, 5.0):
        die("pid %d did not answer (stopped, or exiting?)" % pid)
    if opts["verbose"]:
        note("tracing enabled for pid %d" % pid)
    stop = [False]
    old = signal.signal(signal.SIGINT, lambda s, f: stop.__setitem__(0, True))
    end = time.monotonic() + opts["secs"] if opts["secs"] else None
    while not stop[0] and os.path.exists("/proc/%d" % pid):
        if end and time.monotonic() >= end:
            break
        time.sleep(0.05)
    signal.signal(signal.SIGINT, old)
    if os.path.exists("/proc/%d" % pid):
        if not command(2, 10.0):
            note("pid %d did not write its data" % pid)
        elif opts["verbose"]:
            note("tracing stopped for pid %d; it keeps running" % pid)
    else:
        time.sleep(0.1)
        if opts["verbose"]:
            note("pid %d has exited" % pid)
    m.close()
    procs = load_dir(d)
    emit(procs, opts, resolver)
    for n in os.listdir(d):
        os.unlink(os.path.join(d, n))
    os.rmdir(d)
    return 0


USAGE = """usage: plockstat [-ACHV] [-n count] [-s depth] [-e secs] [-x opt[=val]] [-v]
                 [-o file] [--json file] [--folded file] [--threads]
                 [-p pid | command [arg...]]
       plockstat --attachable command [arg...]

  -C  contention events (default)     -H  hold events (sampled)     -A  both
  -s depth   stacks of that depth, with time-distribution histograms
  -n count   top entries per category        -e secs  stop collecting after secs
  -p pid     observe a process started with --attachable
  -v         say when tracing starts and stops
  -V         print what is interposed
  -x holdsample=N  time 1 hold in N (default 16)
  -x aggsize=SIZE  memory for the event table (default 44m: 65536 rows; k, m, g suffixes)
  -x bufsize=SIZE  memory for the lock records (default 5m: 65536 locks)
  -x lockaddr      append each lock's address to its name
                   other DTrace -x options are accepted and ignored
  -o file    report to file              --json file   machine-readable report
  --folded file  stacks for flame graphs ("frame;frame;frame nsec")
  --threads  per-thread table: RUN LAT LCK CVW SLP (prstat -mL style)
"""


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `plockstat -V | head` is not an error
    try:
        optlist, args = getopt.getopt(argv, "ACHVvhn:s:e:x:p:o:",
                                      ["json=", "folded=", "threads", "attachable", "help", "version"])
    except getopt.GetoptError as e:
        sys.stderr.write("plockstat: %s\n%s" % (e, USAGE))
        return 2
    opts = {"mode": "", "depth": 0, "count": 0, "secs": 0.0, "verbose": False, "pid": None,
            "out": None, "json": None, "folded": None, "threads": False, "holdsample": 16,
            "aggsize": 0, "bufsize": 0, "lockaddr": False,
            "attachable": False, "V": False}
    for o, v in optlist:
        try:
            if o == "-A":
                opts["mode"] = "CH"
            elif o == "-C":
                opts["mode"] = "".join(sorted(set(opts["mode"] + "C")))
            elif o == "-H":
                opts["mode"] = "".join(sorted(set(opts["mode"] + "H")))
            elif o == "-V":
                opts["V"] = True
            elif o == "-v":
                opts["verbose"] = True
            elif o == "-n":
                opts["count"] = int(v)
            elif o == "-s":
                opts["depth"] = max(0, min(int(v), 32))
            elif o == "-e":
                opts["secs"] = float(v)
            elif o == "-p":
                opts["pid"] = int(v)
            elif o == "-o":
                opts["out"] = v
            elif o == "--json":
                opts["json"] = v
            elif o == "--folded":
                opts["folded"] = v
            elif o == "--threads":
                opts["threads"] = True
            elif o == "--attachable":
                opts["attachable"] = True
            elif o in ("-h", "--help"):
                sys.stdout.write(USAGE)
                return 0
            elif o == "--version":
                print("plockstat (mtheap) %s" % VERSION)
                return 0
            elif o == "-x":
                name, _, val = v.partition("=")
                if name == "holdsample":
                    opts["holdsample"] = max(1, int(val or "1"))
                elif name == "lockaddr":
                    opts["lockaddr"] = True
                elif name in ("aggsize", "bufsize"):
                    opts[name] = parse_size(val)
                elif name in IGNORED_X:
                    note("-x %s ignored: DTrace tuning with no equivalent here (libplockstat "
                         "aggregates in place in the process)" % v)
                else:
                    note("-x %s ignored: unknown option (known: holdsample=N, aggsize=SIZE, "
                         "bufsize=SIZE, lockaddr)" % v)
        except ValueError:
            die("bad value for %s: %s" % (o, v), 2)
    if not opts["mode"]:
        opts["mode"] = "C"
    lib = find_part(LIBNAME)
    if opts["V"]:
        print_interposed(lib)
        if not args and opts["pid"] is None:
            return 0
    if opts["attachable"]:
        if not args:
            die("--attachable needs a command", 2)
        return attachable(args, opts, lib)
    resolver = find_part(RESOLVER)
    if opts["pid"] is not None:
        if args:
            die("-p and a command are mutually exclusive", 2)
        return attach(opts["pid"], opts, resolver)
    if not args:
        sys.stderr.write(USAGE)
        return 2
    return run_command(args, opts, lib, resolver)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
