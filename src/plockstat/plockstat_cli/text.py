"""The text report, section by section, in the Solaris format."""
import os


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
