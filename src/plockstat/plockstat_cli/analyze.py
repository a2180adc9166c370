"""One process's data to report rows: categories, holders, rwlock starvation, threads, waits."""
import os
import re

from .common import (CATEGORIES, EV_COND_WAIT, EV_MUTEX_BLOCK, EV_OWNER_DEAD, EV_RD_BLOCK,
                     EV_SEM_WAIT, EV_SPIN_BLOCK, EV_TRY_FAIL, EV_WR_BLOCK, F_TIMEDOUT, LT_NAMES, RW_KINDS)
from .symbols import lock_name


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
