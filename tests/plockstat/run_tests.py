#!/usr/bin/env python3
"""plockstat tests: run the CLI on small programs with known answers and check the report.

  run_tests.py --plockstat PATH --bin DIR --schema FILE TEST

Most checks read the --json report (same data as the text report) so that they do not depend
on column widths; a few check the text format itself.  No check depends on how fast anything
runs: counts, names, flags and structure only.
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

A = None
TMP = None


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def prog(name):
    return os.path.join(A.bin, name)


def plockstat(args, timeout=60, env=None, expect_rc=0):
    """Run plockstat; returns (stdout, stderr, json-or-None)."""
    jpath = os.path.join(TMP, "report.json")
    if os.path.exists(jpath):
        os.unlink(jpath)
    cmd = [A.plockstat] + args
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    sys.stdout.write("$ %s\n%s" % (" ".join(cmd), p.stdout))
    sys.stdout.write(p.stderr)
    if expect_rc is not None:
        check(p.returncode == expect_rc, "exit status %d, expected %d" % (p.returncode, expect_rc))
    doc = None
    if os.path.exists(jpath):
        with open(jpath) as f:
            doc = json.load(f)
    return p.stdout, p.stderr, doc


def J():
    return ["--json", os.path.join(TMP, "report.json")]


def entries(proc, category):
    for c in proc["categories"]:
        if c["name"] == category:
            return c["entries"]
    return []


def by_lock(proc, category, name):
    return [e for e in entries(proc, category) if e["lock"]["name"] == name]


def only_proc(doc):
    check(doc is not None, "no JSON report written")
    check(len(doc["processes"]) == 1, "expected one process, got %d" % len(doc["processes"]))
    return doc["processes"][0]


# ---------------------------------------------------------------------------------------------

def t_mutex_test():
    out, err, doc = plockstat(["-Cv"] + J() + [prog("mutex_test")])
    check("tracing enabled for pid" in err, "-v did not say tracing started")
    check("has exited" in err, "-v did not say the process exited")
    lines = out.split("\n")
    check("Mutex block" in lines, "no 'Mutex block' section")
    i = lines.index("Mutex block")
    check(any(re.match(r"^Count\s+nsec\s+Lock\s+Caller$", l) for l in lines[i:i + 4]), "no header line")
    rows = [l for l in lines if re.match(r"^\s*\d+\s+\d+\s+\S+\s+\S+", l)]
    check(rows, "no report rows")
    m = re.match(r"^\s*(\d+)\s+(\d+)\s+(\S+)\s+(\S+)$", rows[0])
    check(m, "row does not match 'Count nsec Lock Caller': %r" % rows[0])
    check(m.group(1) == "3", "Count is %s, expected 3" % m.group(1))
    check(m.group(3) == "mutex_test`mp", "Lock is %s, expected mutex_test`mp" % m.group(3))
    check(re.match(r"^mutex_test`func\+0x[0-9a-f]+$", m.group(4)), "Caller is %s" % m.group(4))
    check(int(m.group(2)) >= 500000000, "mean wait %s ns: main held the lock for 1 s" % m.group(2))
    p = only_proc(doc)
    hs = p["holders"]
    check(hs and hs[0]["lock"]["name"] == "mutex_test`mp", "no 'who held it' for mp")
    check(hs[0]["holders"][0]["site"]["name"].startswith("mutex_test`main+"),
          "holder site is not main: %s" % hs[0]["holders"][0]["site"])
    check("Who held it" in out, "no 'Who held it' section in the text")


def t_mutex_test_stacks():
    out, _, doc = plockstat(["-s", "5"] + J() + [prog("mutex_test")])
    check("---- Time Distribution ---" in out, "no histogram header")
    p = only_proc(doc)
    e = by_lock(p, "Mutex block", "mutex_test`mp")
    check(len(e) == 1 and e[0]["count"] == 3, "expected one entry with count 3: %s" % e)
    check(sum(h["count"] for h in e[0]["histogram"]) == 3, "histogram does not add up to 3")
    for h in e[0]["histogram"]:
        check(h["nsec"] & (h["nsec"] - 1) == 0, "bucket %d is not a power of two" % h["nsec"])
    names = [f["name"] for f in e[0]["stack"]]
    check(names[0].startswith("mutex_test`func+"), "stack does not start at func: %s" % names)
    check(any("start_thread" in n for n in names), "stack does not reach start_thread: %s" % names)
    check(e[0]["stack"][0].get("file", "").endswith("mutex_test.c"), "no source file for func")
    hist_lines = [l for l in out.split("\n") if re.match(r"^\s+\d+ \|[@ ]{24}\|\s+\d+", l)]
    check(hist_lines, "no histogram rows in the text")


def t_hold_events():
    out, _, doc = plockstat(["-H", "-x", "holdsample=1"] + J() + [prog("mutex_test")])
    p = only_proc(doc)
    check(not entries(p, "Mutex block"), "-H must not print contention events")
    holds = by_lock(p, "Mutex hold", "mutex_test`mp")
    check(sum(e["count"] for e in holds) == 4, "expected 4 holds of mp (main + 3 threads): %s" % holds)
    main = [e for e in holds if e["caller"]["name"].startswith("mutex_test`main+")]
    check(main and main[0]["count"] == 1 and main[0]["nsec"] >= 500000000,
          "main's 1 s hold is missing: %s" % main)
    check("Mutex hold" in out, "no 'Mutex hold' section")


def t_threads_table():
    out, _, doc = plockstat(["--threads"] + J() + [prog("mutex_test")])
    p = only_proc(doc)
    ts = p["threads"]
    check(len(ts) == 4, "expected 4 threads, got %d" % len(ts))
    blocked = [t for t in ts if t["blocks"] == 1]
    check(len(blocked) == 3, "expected 3 threads that blocked once")
    for t in blocked:
        check(t["lck_pct"] > 50, "thread %d spent %.1f%% on locks, expected most of its life"
              % (t["tid"], t["lck_pct"]))
    check(re.search(r"TID\s+NAME\s+RUN\s+LAT\s+LCK\s+CVW\s+SLP", out), "no thread table header")


def t_thread_window():
    # one window per thread, every row adding up to 100; main's window starts at its start, so
    # the 300 ms it spun before its first lock are in its RUN (about half its ~0.6 s life)
    out, _, doc = plockstat(["--threads"] + J() + [prog("thread_window")])
    ts = only_proc(doc)["threads"]
    check(len(ts) == 3, "expected 3 threads, got %d" % len(ts))
    for t in ts:
        total = t["run_pct"] + t["lat_pct"] + t["lck_pct"] + t["cvw_pct"] + t["slp_pct"]
        check(abs(total - 100.0) <= 1.0, "thread %d: columns add up to %.1f: %s" % (t["tid"], total, t))
    main = [t for t in ts if t["tid"] == only_proc(doc)["pid"]]
    check(main, "no row for the main thread")
    m = main[0]
    check(m["run_pct"] + m["lat_pct"] >= 30, "main's spin before its first lock is not in its window: %s" % m)
    check(m["lck_pct"] >= 20, "main blocked ~300 ms of ~600: LCK %.1f" % m["lck_pct"])
    check(re.search(r"adding up to 100", out), "the table does not say what its columns are")


def t_event_table_size():
    # 40000 hold rows: the default table takes them all; a table made small with -x aggsize
    # drops events and says so, with the size to ask for, in the report and on stderr
    out, err, doc = plockstat(["-H", "-x", "holdsample=1"] + J() + [prog("many_locks")], timeout=120)
    p = only_proc(doc)
    holds = sum(e["count"] for e in entries(p, "Mutex hold"))
    check(p["dropped"] == 0, "%d events dropped with the default table" % p["dropped"])
    check(holds == 40000, "expected 40000 holds, got %d" % holds)
    out, err, doc = plockstat(["-H", "-x", "holdsample=1", "-x", "aggsize=1m"] + J() + [prog("many_locks")],
                              timeout=120)
    p = only_proc(doc)
    holds = sum(e["count"] for e in entries(p, "Mutex hold"))
    check(p["dropped"] > 0 and holds + p["dropped"] == 40000,
          "aggsize=1m: %d held + %d dropped, expected 40000 in all" % (holds, p["dropped"]))
    check(p["event_rows"] * p["event_row_bytes"] <= 1 << 20, "aggsize=1m not honoured: %d rows"
          % p["event_rows"])
    check(re.search(r"%d events dropped.*-x aggsize=\d+m" % p["dropped"], err, re.S),
          "the drops are not reported with the size to ask for:\n" + err)
    out, err, _ = plockstat(["-H", "-x", "aggsize=lots", prog("many_locks")], expect_rc=2)
    check("aggsize=lots" in err, "a bad size is not named: " + err)


def t_heap_lock_names():
    # two heap locks (and their condvars) made by one function at one call site: distinct
    # names (init site, its caller, #n in order of creation), the same in two runs and in the
    # text, JSON and folded outputs; -x lockaddr adds the address
    fpath = os.path.join(TMP, "folded.txt")
    runs = []
    for _ in range(2):
        out, _, doc = plockstat(["-C"] + J() + ["--folded", fpath, prog("heap_locks")])
        p = only_proc(doc)
        got = {}
        for cat, want in (("Mutex block", {"#1": 3, "#2": 5}), ("Condvar wait", {"#1": 2, "#2": 4})):
            rows = entries(p, cat)
            names = {r["lock"]["name"] for r in rows}
            check(len(names) == 2, "%s: expected 2 distinct lock names, got %s" % (cat, sorted(names)))
            for r in rows:
                n = r["lock"]["name"]
                check("new_lock" in n and "setup" in n, "%s: name lacks the site and its caller: %s" % (cat, n))
                rank = re.search(r"#(\d+)\]+$", n)
                check(rank, "%s: no #n rank in %s" % (cat, n))
                check(r["count"] == want["#" + rank.group(1)],
                      "%s %s: count %d, expected %d" % (cat, n, r["count"], want["#" + rank.group(1)]))
                check(n in out, "%s: %s is not in the text report" % (cat, n))
                folded = open(fpath).read()
                check(n.replace(" ", "_") in folded, "%s: %s is not in the folded output" % (cat, n))
            got[cat] = sorted(names)
        check(any(n.startswith("[cv of [") for n in got["Condvar wait"]), "condvars not named by their mutex")
        runs.append(got)
    check(runs[0] == runs[1], "names changed between runs: %s vs %s" % (runs[0], runs[1]))
    _, _, doc = plockstat(["-C", "-x", "lockaddr"] + J() + [prog("heap_locks")])
    for r in entries(only_proc(doc), "Mutex block"):
        check(r["lock"]["name"].endswith("@" + r["lock"]["address"]),
              "-x lockaddr: %s does not end with its address %s" % (r["lock"]["name"], r["lock"]["address"]))


def t_deadlock():
    # a program that hangs: an ABBA deadlock and a thread parked on a condvar.  Stopped from
    # outside, the report lists the three waits (lock, time, stack, holder), names the cycle as
    # a deadlock with both locks and both stacks, and the JSON validates
    jpath = os.path.join(TMP, "report.json")
    cmd = [A.plockstat, "-C", "-s", "4", "--json", jpath, prog("abba")]
    bg = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    check(bg.stdout.readline().strip() == "ready", "the program did not start")
    time.sleep(0.2)
    bg.send_signal(signal.SIGTERM)
    out, err = bg.communicate(timeout=60)
    sys.stdout.write(out + err)
    with open(jpath) as f:
        doc = json.load(f)
    validate_schema(doc)
    p = only_proc(doc)
    ws = {w["lock"]["name"]: w for w in p["waiting"]}
    for name, fn, kind in (("abba`lock_b", "a_then_b", "mutex"), ("abba`lock_a", "b_then_a", "mutex"),
                           ("abba`never_cv", "parked", "condvar")):
        w = ws.get(name)
        check(w, "no wait in progress on %s: %s" % (name, sorted(ws)))
        check(w["kind"] == kind, "%s: kind %s" % (name, w["kind"]))
        check(w["stack"][0]["name"].startswith("abba`" + fn), "%s: stack %s" % (name, w["stack"][:1]))
        check(w["waited_nsec"] >= 200 * 1000 * 1000, "%s: waited only %d ns" % (name, w["waited_nsec"]))
    check(ws["abba`never_cv"]["mutex"]["name"] == "abba`never_mutex", "the condvar's mutex is not named")
    check(ws["abba`lock_b"]["holder"]["tid"] == ws["abba`lock_a"]["tid"], "lock_b's holder is not the lock_a waiter")
    check(ws["abba`lock_b"]["holder"]["site"]["name"].startswith("abba`b_then_a"), "lock_b's holder site")
    check(len(p["deadlocks"]) == 1 and len(p["deadlocks"][0]["threads"]) == 2,
          "expected one deadlock of two threads: %s" % p["deadlocks"])
    check({w["lock"]["name"] for w in p["deadlocks"][0]["threads"]} == {"abba`lock_a", "abba`lock_b"},
          "the deadlock does not name both locks")
    check("DEADLOCK" in out and "Waits in progress" in out, "the text report does not say it")


def validate_schema(doc):
    import jsonschema
    with open(A.schema) as f:
        jsonschema.validate(doc, json.load(f))


def t_shared_mutex_advice():
    # a starved writer on a std::shared_mutex gets advice that works for it; the pthread
    # rwlock of rwlock_starve.c keeps the pthread attribute advice
    out, _, doc = plockstat(["-C"] + J() + [prog("cxx_shared_starve")])
    r = [x for x in only_proc(doc)["rwlocks"] if x["lock"]["name"].endswith("table_lock")]
    check(r and r[0]["writer_starved"], "the std::shared_mutex writer is not reported starved: %s" % r)
    check(r[0]["api"] == "std::shared_mutex", "not recognized as a std::shared_mutex: %s" % r[0]["api"])
    check("It is a std::shared_mutex" in out and "takes no attribute" in out, "no C++ advice:\n" + out)
    out, _, doc = plockstat(["-C"] + J() + [prog("rwlock_starve"), "default"])
    r = only_proc(doc)["rwlocks"]
    check(r and r[0]["api"] == "pthread_rwlock_t", "the C rwlock is taken for C++: %s" % r)
    check("Initialize it with" in out and "It is a std::shared_mutex" not in out, "wrong advice for C")


def t_exec_static():
    # `sh -c ./static_prog`: the shell's report alone would look complete; plockstat must say
    # the exec'd program left no data and why (dash execs from a vfork child, bash after fork)
    path = prog("mutex_test_static")
    if not os.path.exists(path):
        print("SKIP: no static libc to build the test program")
        sys.exit(77)
    for shell in ("sh", "bash"):
        if not shutil.which(shell):
            continue
        _, err, _ = plockstat([shell, "-c", path + "; true"])
        check("exec'd %s, which left no data: it is statically linked" % path in err,
              "%s: the lost exec is not explained:\n%s" % (shell, err))
    _, err, _ = plockstat(["sh", "-c", prog("mutex_test") + "; true"])
    check("left no data" not in err, "a dynamic program is said to have left no data:\n" + err)


def t_folded_sampled_holds():
    # hold times are timed 1 in 16: in the folded output their weights are scaled by 16 and
    # the category frame says so (40000 holds: about 2500 timed); block times stay complete
    fpath = os.path.join(TMP, "folded.txt")
    _, _, doc = plockstat(["-A"] + J() + ["--folded", fpath, prog("many_locks")], timeout=120)
    p = only_proc(doc)
    lines = [l for l in open(fpath).read().split("\n") if l]
    holds = [l for l in lines if "Mutex_hold" in l]
    check(holds and all("Mutex_hold_(1_in_16_timed,_x16)" in l for l in holds),
          "hold lines do not say they are sampled: %s" % holds[:2])
    want = 16 * sum(e["total_nsec"] for e in entries(p, "Mutex hold"))
    got = sum(int(l.rsplit(" ", 1)[1]) for l in holds)
    check(got == want, "hold weights %d, expected 16 x %d" % (got, want // 16))
    fpath2 = os.path.join(TMP, "folded2.txt")
    _, _, doc = plockstat(["-C"] + J() + ["--folded", fpath2, prog("mutex_test")])
    blocks = [l for l in open(fpath2).read().split("\n") if "Mutex_block" in l]
    check(sum(int(l.rsplit(" ", 1)[1]) for l in blocks) ==
          sum(e["total_nsec"] for e in entries(only_proc(doc), "Mutex block")),
          "block weights are not the blocked time")


def t_command_name():
    # a program run through a link is named as run (Debian's redis-server links to
    # redis-check-rdb): JSON command and the folded root say the name, exe the binary
    link = os.path.join(TMP, "renamed_prog")
    os.symlink(prog("mutex_test"), link)
    fpath = os.path.join(TMP, "folded.txt")
    _, _, doc = plockstat(["-C"] + J() + ["--folded", fpath, link])
    p = only_proc(doc)
    check(p["command"] == "renamed_prog", "command %s, expected renamed_prog" % p["command"])
    check(os.path.basename(p["exe"]) == "mutex_test", "exe %s" % p["exe"])
    check(open(fpath).read().startswith("renamed_prog;"), "the folded root is not the command")
    redis = shutil.which("redis-server")
    check(redis, "redis-server is not installed (scripts/deps.sh installs it)")
    _, _, doc = plockstat(["-C"] + J() + [redis, "--version"])
    check(only_proc(doc)["command"] == "redis-server", "redis shows as %s" % only_proc(doc)["command"])


def t_daemon():
    # memcached -d: the command's parent exits at once; plockstat waits for the daemon it left
    # and reports its blocks
    out, err, doc = plockstat(["-C"] + J() + [prog("daemon")])
    procs = [x for x in doc["processes"] if by_lock(x, "Mutex block", "daemon`daemon_lock")]
    check(procs, "the daemon's data is lost:\n" + err)
    check(sum(r["count"] for r in by_lock(procs[0], "Mutex block", "daemon`daemon_lock")) == 4,
          "expected 4 blocks in the daemon")
    check("daemonized" in err, "not told it waited for a daemon:\n" + err)


def t_stripped_names():
    # a global lock in a stripped program (Debian's memcached) is object`0xoffset, the same in
    # every run, not a raw address that ASLR changes
    stripped = os.path.join(TMP, "mutex_test_stripped")
    r = subprocess.run(["strip", "-o", stripped, prog("mutex_test")], capture_output=True, text=True)
    check(r.returncode == 0, "strip failed: %s" % r.stderr)
    names = []
    for _ in range(2):
        _, _, doc = plockstat(["-C"] + J() + [stripped])
        rows = entries(only_proc(doc), "Mutex block")
        check(len(rows) == 1, "expected one block row: %s" % rows)
        names.append(rows[0]["lock"]["name"])
    check(re.fullmatch(r"mutex_test_stripped`0x[0-9a-f]+", names[0]), "name %s" % names[0])
    check(names[0] == names[1], "names differ between runs: %s" % names)


def t_json_schema():
    import jsonschema
    _, _, doc = plockstat(["-A", "-s", "4", "--threads", "-x", "holdsample=1"] + J() + [prog("mutex_test")])
    with open(A.schema) as f:
        schema = json.load(f)
    jsonschema.validate(doc, schema)
    # and the schema is not vacuous: a broken document must fail it
    bad = json.loads(json.dumps(doc))
    bad["processes"][0]["categories"][0]["entries"][0]["count"] = "three"
    try:
        jsonschema.validate(bad, schema)
    except jsonschema.ValidationError:
        pass
    else:
        raise Fail("schema accepted a string count")
    p = only_proc(doc)
    check(by_lock(p, "Mutex block", "mutex_test`mp")[0]["count"] == 3, "count is not 3")


FOLDED_RE = re.compile(r"^[^;\s]+(;[^;\s]+)* [0-9]+$")


def t_folded():
    path = os.path.join(TMP, "stacks.folded")
    plockstat(["-s", "8", "--folded", path, prog("mutex_test")])
    with open(path) as f:
        lines = f.read().split("\n")
    check(lines[-1] == "", "folded file does not end with a newline")
    lines = lines[:-1]
    check(lines, "folded file is empty")
    for l in lines:
        check(FOLDED_RE.match(l), "not 'frame;frame;frame count': %r" % l)
    # what a flame graph tool does with it: split the count off the last space, frames on ';'
    stacks = {}
    for l in lines:
        s, n = l.rsplit(" ", 1)
        stacks[tuple(s.split(";"))] = int(n)
    hit = [s for s in stacks if s[0] == "mutex_test" and s[-1] == "Mutex_block:mutex_test`mp"]
    check(hit, "no stack ending in the Mutex block on mp")
    check(any(f.startswith("mutex_test`func+") for f in hit[0]), "func not in the stack: %s" % (hit[0],))
    st = [i for i, f in enumerate(hit[0]) if "start_thread" in f]
    fn = [i for i, f in enumerate(hit[0]) if f.startswith("mutex_test`func+")]
    check(st and st[0] < fn[0], "frames are not root first: %s" % (hit[0],))
    check(stacks[hit[0]] > 0, "zero weight")


def rw_report(mode):
    out, _, doc = plockstat(J() + [prog("rwlock_starve"), mode])
    p = only_proc(doc)
    rws = [r for r in p["rwlocks"] if r["lock"]["name"] == "rwlock_starve`rw"]
    return out, p, rws


def t_rwlock_starvation():
    out, p, rws = rw_report("default")
    check(len(rws) == 1, "no writer-starvation entry for rwlock_starve`rw")
    r = rws[0]
    check(r["kind_value"] == 0, "kind %s, expected glibc default (prefer reader)" % r["kind"])
    check(r["reads_while_writer_waited"] > 0, "no reads counted while the writer waited")
    check(r["writer_starved"], "writer starvation not diagnosed: %s" % r)
    check("PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP" in out, "no advice in the text")
    check("recursive" in out, "no recursive-read caveat")
    check(by_lock(p, "R/W writer block", "rwlock_starve`rw"), "no R/W writer block row")


def t_rwlock_nonrecursive():
    out, p, rws = rw_report("nonrec")
    for r in rws:
        check(r["kind_value"] == 2, "kind %s, expected prefer-writer-nonrecursive" % r["kind"])
        check(not r["writer_starved"], "writer-preferring lock diagnosed as starving")
    check("writers starved" not in out, "starvation advice printed for a writer-preferring lock")


def t_condvar_pingpong():
    out, _, doc = plockstat(J() + [prog("condvar_pingpong")])
    p = only_proc(doc)
    ping = by_lock(p, "Condvar wait", "condvar_pingpong`cv_ping")
    pong = by_lock(p, "Condvar wait", "condvar_pingpong`cv_pong")
    check(ping and pong, "both condition variables must appear: %s" % [e["lock"]["name"] for e in entries(p, "Condvar wait")])
    check(sum(e["count"] for e in ping) > 0 and sum(e["count"] for e in pong) > 0, "zero waits")
    check(all(e["caller"]["name"].startswith("condvar_pingpong`pong+") for e in pong),
          "cv_pong waits not attributed to pong(): %s" % [e["caller"]["name"] for e in pong])
    check(all(not e["timed_out"] for e in ping + pong), "untimed waits flagged as timed out")
    check("Condvar wait" in out, "no Condvar wait section")


def t_c11_mtx():
    _, _, doc = plockstat(J() + [prog("c11_mtx")])
    p = only_proc(doc)
    e = by_lock(p, "Mutex block", "c11_mtx`c11_lock")
    check(sum(x["count"] for x in e) == 2, "expected 2 blocks on c11_lock: %s" % e)
    check(all(x["lock"]["type"] == "mtx_t" for x in e), "not recorded as a C11 mtx_t")
    check(all(x["caller"]["name"].startswith("c11_mtx`worker+") for x in e), "caller is not worker")
    cv = by_lock(p, "Condvar wait", "c11_mtx`c11_cv")
    check(len(cv) == 1 and cv[0]["timed_out"] and cv[0]["count"] == 1, "cnd_timedwait timeout missing: %s" % cv)


def t_cxx_mutex():
    _, _, doc = plockstat(["-s", "6"] + J() + [prog("cxx_mutex")])
    p = only_proc(doc)
    e = by_lock(p, "Mutex block", "cxx_mutex`g_mutex")
    check(sum(x["count"] for x in e) == 2, "expected 2 blocks on std::mutex g_mutex: %s" % e)
    check(any(f["name"].startswith("cxx_mutex`worker()") for x in e for f in x["stack"]),
          "worker() not in the (demangled) stack")
    w = by_lock(p, "R/W writer block", "cxx_mutex`g_shared")
    check(sum(x["count"] for x in w) == 1, "expected 1 writer block on std::shared_mutex g_shared: %s" % w)
    cv = by_lock(p, "Condvar wait", "cxx_mutex`g_cv")
    check(cv and all(x["timed_out"] for x in cv), "condition_variable::wait_for timeout missing: %s" % cv)


def t_recursive_robust():
    out, _, doc = plockstat(["-A", "-x", "holdsample=1"] + J() + [prog("recursive_robust")])
    check("robust=EOWNERDEAD errorcheck=EDEADLK trylock=EBUSY" in out, "program did not see the expected errors")
    p = only_proc(doc)
    rec = by_lock(p, "Mutex block", "recursive_robust`rec_lock")
    check(sum(x["count"] for x in rec) == 1, "recursive mutex: expected 1 block: %s" % rec)
    recholds = by_lock(p, "Mutex hold", "recursive_robust`rec_lock")
    check(sum(x["count"] for x in recholds) == 4, "recursive mutex: expected 3+1 holds: %s" % recholds)
    od = by_lock(p, "Mutex owner died", "recursive_robust`robust_lock")
    check(sum(x["count"] for x in od) == 1, "EOWNERDEAD not reported: %s" % od)
    check(not by_lock(p, "Mutex block", "recursive_robust`ec_lock"), "EDEADLK counted as a block")
    tf = by_lock(p, "Trylock failures", "recursive_robust`ec_lock")
    check(sum(x["count"] for x in tf) == 1, "trylock failure not reported: %s" % tf)


def t_timedlock():
    _, _, doc = plockstat(["-A", "-x", "holdsample=1"] + J() + [prog("timedlock")])
    p = only_proc(doc)
    tm = by_lock(p, "Mutex block", "timedlock`tm_lock")
    check(sum(x["count"] for x in tm) == 4, "expected 4 timed-out waits on tm_lock: %s" % tm)
    check(all(x["timed_out"] for x in tm), "waits not flagged as timed out")
    check(len(tm) == 2, "timedlock and clocklock should be two call sites: %s" % [x["caller"]["name"] for x in tm])
    holds = by_lock(p, "Mutex hold", "timedlock`tm_lock")
    check(all(not x["caller"]["name"].startswith("timedlock`worker") for x in holds),
          "a timed-out lock started a hold: %s" % holds)
    check(sum(x["count"] for x in holds) == 1, "only main's hold of tm_lock expected: %s" % holds)
    rw = by_lock(p, "R/W writer block", "timedlock`tm_rw")
    check(len(rw) == 1 and rw[0]["timed_out"] and rw[0]["count"] == 1, "timedwrlock timeout: %s" % rw)
    check(not by_lock(p, "R/W writer hold", "timedlock`tm_rw"), "timed-out wrlock started a hold")
    cv = by_lock(p, "Condvar wait", "timedlock`tm_cv")
    check(len(cv) == 1 and cv[0]["timed_out"], "pthread_cond_clockwait timeout: %s" % cv)
    sem = by_lock(p, "Semaphore wait", "timedlock`tm_sem")
    check(len(sem) == 1 and sem[0]["timed_out"], "sem_timedwait timeout: %s" % sem)


def t_fork_exec():
    out, _, doc = plockstat(J() + [prog("fork_exec")])
    check(doc and len(doc["processes"]) == 3, "expected 3 process images (parent, child, exec'd child)")
    locks = {}
    for p in doc["processes"]:
        names = {e["lock"]["name"] for e in entries(p, "Mutex block")}
        locks[p["pid"], p["reason"]] = names
    par = [k for k, v in locks.items() if v == {"fork_exec`parent_lock"}]
    chi = [k for k, v in locks.items() if v == {"fork_exec`child_lock"}]
    exe = [k for k, v in locks.items() if v == {"fork_exec`exec_lock"}]
    check(par and chi and exe, "each image must see only its own lock: %s" % locks)
    check(par[0][1] == "exit", "parent reason %s" % par[0][1])
    check(chi[0][1] == "exec", "forked child should report at exec, got %s" % chi[0][1])
    check(exe[0][1] == "_exit", "exec'd child should report at _exit, got %s" % exe[0][1])
    check(chi[0][0] == exe[0][0] != par[0][0], "pids: exec keeps the child's pid")
    check(out.count("=== pid") == 3, "text report should have one section per process")


def wait_file(path, secs=20):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        if os.path.exists(path) and os.path.getsize(path) > 0:
            return True
        time.sleep(0.02)
    return False


def pid_alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def wait_exit(pid, secs=20):
    end = time.monotonic() + secs
    while time.monotonic() < end and pid_alive(pid):
        time.sleep(0.05)
    return not pid_alive(pid)


def t_duration():
    stop, pidf = os.path.join(TMP, "stop"), os.path.join(TMP, "pid")
    rep = os.path.join(TMP, "report.txt")
    jpath = os.path.join(TMP, "report.json")
    errf = open(os.path.join(TMP, "stderr"), "w+")
    p = subprocess.run([A.plockstat, "-v", "-e", "1", "-o", rep, "--json", jpath,
                        prog("loop_contend"), stop, pidf],
                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=errf, timeout=60)
    errf.seek(0)
    err = errf.read()
    sys.stdout.write(err)
    try:
        check(p.returncode == 0, "exit status %d" % p.returncode)
        check(wait_file(pidf), "program did not start")
        pid = int(open(pidf).read())
        check(pid_alive(pid), "the command must keep running after -e expires")
        check("keeps running" in err, "-v did not say tracing stopped")
        with open(jpath) as f:
            doc = json.load(f)
        pr = only_proc(doc)
        check(pr["reason"] == "expired", "reason %s, expected expired" % pr["reason"])
        e = by_lock(pr, "Mutex block", "loop_contend`loop_lock")
        check(e and sum(x["count"] for x in e) > 0, "no contention recorded in the window")
        check(open(rep).read().startswith("\nMutex block"), "-o file does not hold the report")
    finally:
        open(stop, "w").close()
    check(wait_exit(pid), "program did not stop")


def t_attach():
    stop, pidf = os.path.join(TMP, "stop"), os.path.join(TMP, "pid")
    ctl = os.path.join(TMP, "ctl")
    env = dict(os.environ, PLOCKSTAT_CTLDIR=ctl)
    bg = subprocess.Popen([A.plockstat, "--attachable", prog("loop_contend"), stop, pidf],
                          env=env, stdin=subprocess.DEVNULL)
    try:
        check(wait_file(pidf), "attachable program did not start")
        pid = int(open(pidf).read())
        check(pid == bg.pid, "--attachable should exec the command in place")
        check(wait_file(os.path.join(ctl, "%d.ctl" % pid)), "no control file")
        out, err, doc = plockstat(["-v", "-e", "1", "-p", str(pid)] + J(), env=env)
        check("tracing enabled for pid %d" % pid in err, "-v did not say tracing started")
        pr = only_proc(doc)
        check(pr["reason"] == "detach", "reason %s, expected detach" % pr["reason"])
        e = by_lock(pr, "Mutex block", "loop_contend`loop_lock")
        check(e and sum(x["count"] for x in e) > 0, "no contention seen while attached")
        check(pid_alive(pid), "target must keep running after detach")
        # a second window works too
        out, err, doc = plockstat(["-e", "0.5", "-p", str(pid)] + J(), env=env)
        pr = only_proc(doc)
        check(by_lock(pr, "Mutex block", "loop_contend`loop_lock"), "second attach saw nothing")
    finally:
        open(stop, "w").close()
        bg.wait(timeout=30)
    check(not os.path.exists(os.path.join(ctl, "%d.ctl" % pid)), "control file left behind")


def t_attach_refused():
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        _, err, _ = plockstat(["-e", "1", "-p", str(sleeper.pid)], expect_rc=2)
        check("cannot attach to pid %d" % sleeper.pid in err, "no clear refusal")
        check("plockstat --attachable" in err, "does not say how to start it")
    finally:
        sleeper.kill()
        sleeper.wait()
    _, err, _ = plockstat(["-p", "999999999"], expect_rc=2)
    check("no such process" in err, "bad pid not reported")


def t_static_binary():
    path = prog("mutex_test_static")
    if not os.path.exists(path):
        print("SKIP: no static libc to build the test program")
        return
    _, err, _ = plockstat([path], expect_rc=2)
    check("statically linked" in err, "no clear error for a static binary")


def t_interposed_list():
    out, _, _ = plockstat(["-V"])
    for name, vers in [("pthread_cond_wait", ["@GLIBC_2.2.5", "@@GLIBC_2.3.2"]),
                       ("pthread_cond_timedwait", ["@GLIBC_2.2.5", "@@GLIBC_2.3.2"]),
                       ("pthread_cond_clockwait", ["@@GLIBC_2.34"]),
                       ("pthread_mutex_lock", []), ("pthread_mutex_clocklock", []),
                       ("pthread_rwlock_clockwrlock", []), ("pthread_spin_lock", []),
                       ("sem_clockwait", []), ("mtx_lock", ["@GLIBC_2.28", "@@GLIBC_2.34"]),
                       ("cnd_timedwait", []), ("_exit", []), ("_Exit", []), ("execve", [])]:
        line = [l for l in out.split("\n") if l.split() and l.split()[0] == name]
        check(line, "%s not listed" % name)
        for v in vers:
            check(v in line[0].split(), "%s lacks version %s" % (name, v))


def t_old_cond_abi():
    _, _, doc = plockstat(J() + [prog("old_cond")])
    p = only_proc(doc)
    cv = by_lock(p, "Condvar wait", "old_cond`oc_cond")
    check(len(cv) == 1 and cv[0]["timed_out"], "old-ABI pthread_cond_timedwait not seen: %s" % cv)


PY_SCRIPT = r"""
import threading
def spin():
    x = 0
    for i in range(2000000):
        x += i
ts = [threading.Thread(target=spin) for _ in range(3)]
for t in ts: t.start()
for t in ts: t.join()
print("python done")
"""


def t_python_gil():
    out, _, doc = plockstat(["--threads"] + J() + [sys.executable, "-c", PY_SCRIPT], timeout=120)
    check(doc and doc["processes"], "no report")
    p = [x for x in doc["processes"] if "python" in os.path.basename(x["exe"])]
    check(p, "no python process in the report")
    p = p[0]
    names = {e["lock"]["name"] for c in p["categories"] for e in c["entries"]}
    gil = [n for n in names if "_PyRuntime" in n]
    check(gil, "the GIL (inside _PyRuntime) does not appear: %s" % sorted(names))
    cv = [e for e in entries(p, "Condvar wait") if "_PyRuntime" in e["lock"]["name"]]
    check(cv, "no condition-variable wait on the GIL")
    check(len(p["threads"]) >= 4, "threads table should list main + 3 threads")


def t_overhead_runs():
    # Not a threshold: just show the two numbers (docs/PLOCKSTAT.md quotes a longer run).
    base = subprocess.run([prog("overhead"), "2000000"], capture_output=True, text=True, timeout=60)
    check(base.returncode == 0 and "ns/pair" in base.stdout, "overhead program failed")
    out, _, _ = plockstat([prog("overhead"), "2000000"])
    check("ns/pair" in out, "overhead program failed under plockstat")
    print("without plockstat: %s" % base.stdout.strip())


def t_spin_sem():
    _, _, doc = plockstat(J() + [prog("spin_sem")])
    p = only_proc(doc)
    sp = by_lock(p, "Spin block", "spin_sem`g_spin")
    check(len(sp) == 1 and sp[0]["count"] == 1, "expected 1 spin block on g_spin: %s" % sp)
    check(sp[0]["caller"]["name"].startswith("spin_sem`spinner+"), "caller is not spinner")
    se = by_lock(p, "Semaphore wait", "spin_sem`g_sem")
    check(len(se) == 1 and se[0]["count"] == 1 and not se[0]["timed_out"], "expected 1 wait on g_sem: %s" % se)


def t_early_constructor():
    _, _, doc = plockstat(["--threads"] + J() + [prog("early_main")])
    p = only_proc(doc)
    e = by_lock(p, "Mutex block", "libearly.so`early_lock")
    check(len(e) == 1 and e[0]["count"] == 1, "the constructor's wait on early_lock is missing: %s" % e)
    check(e[0]["caller"]["name"].startswith("libearly.so`early_ctor+"), "caller is not early_ctor")
    check(len(p["threads"]) == 2, "main and the constructor's thread expected: %s" % p["threads"])


def t_signal_exit():
    stop, pidf = os.path.join(TMP, "stop"), os.path.join(TMP, "pid")
    jpath = os.path.join(TMP, "report.json")
    bg = subprocess.Popen([A.plockstat, "-o", os.devnull, "--json", jpath, prog("loop_contend"), stop, pidf],
                          stdin=subprocess.DEVNULL)
    try:
        check(wait_file(pidf), "program did not start")
        pid = int(open(pidf).read())
        time.sleep(0.3)  # let some contention happen; the count is not checked beyond > 0
        os.kill(pid, signal.SIGTERM)
        rc = bg.wait(timeout=30)
    finally:
        open(stop, "w").close()
    check(rc == 128 + signal.SIGTERM, "exit status %d, expected the child's SIGTERM" % rc)
    with open(jpath) as f:
        doc = json.load(f)
    p = only_proc(doc)
    check(p["reason"] == "signal", "reason %s, expected signal" % p["reason"])
    check(by_lock(p, "Mutex block", "loop_contend`loop_lock"), "data lost on SIGTERM")


def t_installed():
    # install only plockstat's files (the allocator has its own install test) into a scratch
    # prefix, then run the installed launcher from elsewhere: it must find its library.
    prefix = os.path.join(TMP, "prefix")
    script = os.path.join(os.path.dirname(A.plockstat), "cmake_install.cmake")
    r = subprocess.run(["cmake", "-DCMAKE_INSTALL_PREFIX=" + prefix, "-P", script],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "install failed: %s" % r.stderr)
    launcher = os.path.join(prefix, "bin", "plockstat")
    libs = [os.path.join(dp, f) for dp, _, fs in os.walk(prefix) for f in fs]
    check(any(l.endswith("/mtheap/libplockstat.so") for l in libs), "no lib/.../mtheap/libplockstat.so: %s" % libs)
    check(any(l.endswith("/mtheap/plockstat-resolve") for l in libs), "no plockstat-resolve installed")
    check(any(l.endswith("/share/mtheap/plockstat.schema.json") for l in libs), "no schema installed")
    link = os.path.join(TMP, "elsewhere", "plockstat")
    os.makedirs(os.path.dirname(link))
    os.symlink(launcher, link)  # found relative to the real file, not to the link
    p = subprocess.run([link, prog("mutex_test")], capture_output=True, text=True, timeout=60)
    sys.stdout.write(p.stdout + p.stderr)
    check(p.returncode == 0, "installed plockstat failed")
    check(re.search(r"^\s*3\s+\d+\s+mutex_test`mp\s+mutex_test`func\+0x", p.stdout, re.M),
          "installed plockstat did not produce the mutex_test report")
    p = subprocess.run([link, "-V"], capture_output=True, text=True, timeout=60)
    check(prefix in p.stdout, "-V does not show the installed library: %s" % p.stdout[:200])


def t_heap_contention():
    """Reference 003's heap-contention example: libmtmalloc's `general` under a malloc with one
    global lock (bench/shims/lockedmalloc.c: glibc's allocator behind a pthread mutex, as
    Solaris libc had; glibc's own arena locks are internal and invisible to any preload tool),
    then under libmtheap, where that lock is gone."""
    general, locked, mtheap = (os.environ.get(k) for k in ("PS_GENERAL", "PS_LOCKED", "PS_MTHEAP"))
    check(general and locked and mtheap, "PS_GENERAL, PS_LOCKED and PS_MTHEAP must be set")
    args = [general, "-t", "4", "-n", "200000"]
    env = dict(os.environ, LD_PRELOAD=locked)
    out, _, doc = plockstat(["-C", "-s", "8"] + J() + args, env=env)
    check("RESULT workload=general" in out, "general did not finish")
    p = only_proc(doc)
    e = by_lock(p, "Mutex block", "liblockedmalloc.so`libc_malloc_lock")
    check(e, "the malloc lock is not in the report: %s" % [x["lock"]["name"] for x in
                                                           entries(p, "Mutex block")])
    check(sum(x["count"] for x in e) >= 4, "only %d blocks on the malloc lock with 4 threads"
          % sum(x["count"] for x in e))
    stacks = [[f["name"] for f in x["stack"]] for x in e]
    check(any(n.startswith("liblockedmalloc.so`malloc+") or n.startswith("liblockedmalloc.so`free+")
              for st in stacks for n in st[:1]), "callers are not malloc/free: %s" % stacks[:2])
    check(any(any(n.startswith("general`worker+") for n in st) for st in stacks),
          "no stack reaches general`worker: %s" % stacks[:2])
    # Who held it: the holder's site is known for most waits, although one malloc is usually
    # over before the waiter looks (the holder's last release is remembered).  Before that
    # record existed, about 1 wait in 10 had a site here.
    hs = [h for h in p.get("holders", []) if h["lock"]["name"] == "liblockedmalloc.so`libc_malloc_lock"]
    check(hs, "no holder table for the malloc lock")
    rows = hs[0]["holders"]
    with_site = sum(x["waits"] for x in rows if x["site"])
    total = sum(x["waits"] for x in rows)
    check(total > 0 and with_site >= total / 2,
          "holder site known for only %d of %d waits: %s" % (with_site, total, rows[:4]))
    check(all(x["site"]["name"].split("+")[0] in ("liblockedmalloc.so`malloc", "liblockedmalloc.so`free",
                                                  "liblockedmalloc.so`calloc", "liblockedmalloc.so`realloc")
              for x in rows if x["site"]), "holder sites outside the shim's malloc/free: %s" % rows[:4])
    env = dict(os.environ, LD_PRELOAD=mtheap)
    out, _, doc = plockstat(["-C"] + J() + args, env=env)
    check("RESULT workload=general" in out, "general did not finish under libmtheap")
    p = only_proc(doc)
    left = [x["lock"]["name"] for x in entries(p, "Mutex block")]
    check(not left, "locks still block under libmtheap: %s" % left)


def t_no_contention():
    # a program with no lock contention gets a sentence, not an empty report
    out, _, _ = plockstat(["sleep", "0.2"])
    check("No lock contention: no thread blocked or spun on a lock." in out, "no 'No lock contention' line")
    out, _, _ = plockstat(["-H", "sleep", "0.2"])
    check("no lock hold was recorded" in out, "-H: no 'no lock hold was recorded'")
    out, _, _ = plockstat(["-C", prog("mutex_test")], timeout=120)
    check("No lock contention" not in out, "a contended program is told it had no contention")


def t_no_libdw_says_so():
    # the same launcher as built without libdw (a copy beside the real one, where it finds its
    # parts): -s must say once that stacks come without source lines, not drop them silently
    src = open(A.plockstat).read()
    check("HAVE_LIBDW = " in src, "the launcher has no HAVE_LIBDW setting")
    copy = A.plockstat + "-nodw-test"
    with open(copy, "w") as f:
        f.write(re.sub(r'HAVE_LIBDW = .*', 'HAVE_LIBDW = False', src))
    os.chmod(copy, 0o755)
    try:
        p = subprocess.run([copy, "-s", "3", "sleep", "0.1"], capture_output=True, text=True, timeout=60)
        check(p.returncode == 0, "exit %d: %s" % (p.returncode, p.stderr))
        check(p.stderr.count("built without libdw") == 1, "no single libdw line:\n" + p.stderr)
        p = subprocess.run([A.plockstat, "-s", "3", "sleep", "0.1"], capture_output=True, text=True, timeout=60)
        check("libdw" not in p.stderr, "the real build (with libdw) warns about libdw")
    finally:
        os.unlink(copy)


def crash_blocks(doc, what):
    p = only_proc(doc)
    rows = by_lock(p, "Mutex block", "crash`crash_lock")
    check(rows and sum(r["count"] for r in rows) == 5,
          "%s: expected 5 blocks on crash_lock, got %s" % (what, [r["count"] for r in rows]))
    return p


def t_fatal_signal():
    # a crash, an abort or a default-fatal signal: the data is written on the way out and the
    # exit status is the program's own
    for how, sig in (("abort", signal.SIGABRT), ("segv", signal.SIGSEGV), ("quit", signal.SIGQUIT),
                     ("usr1", signal.SIGUSR1), ("overflow", signal.SIGSEGV)):
        _, err, doc = plockstat(["-C"] + J() + [prog("crash"), how], expect_rc=128 + sig)
        p = crash_blocks(doc, how)
        check(p["reason"] == "signal", "%s: reason %s, expected signal" % (how, p["reason"]))
        check("killed by %s" % signal.Signals(sig).name in err, "%s: the signal is not named:\n%s" % (how, err))
        check("did not load" not in err, "%s: blamed on the preload:\n%s" % (how, err))


def t_killed_periodic():
    # SIGKILL gives no chance to write: what the helper thread wrote a second before is reported
    _, err, doc = plockstat(["-C"] + J() + [prog("crash"), "kill"], expect_rc=128 + signal.SIGKILL)
    p = crash_blocks(doc, "kill")
    check(p["reason"] == "flush", "reason %s, expected flush (the periodic write)" % p["reason"])
    check("last periodic write" in err, "not told the data is the periodic write:\n" + err)


def t_plockstat_killed():
    # plockstat itself stopped by timeout (SIGTERM to the whole group), by SIGINT, or by SIGHUP
    # to plockstat alone: it reports, exits 128+signal, and leaves no file behind
    tmpdir = os.path.join(TMP, "tmpdir")
    os.mkdir(tmpdir)
    env = dict(os.environ, TMPDIR=tmpdir)
    jpath = os.path.join(TMP, "report.json")
    for sig, how in ((signal.SIGTERM, "timeout"), (signal.SIGINT, "timeout"), (signal.SIGHUP, "alone")):
        if os.path.exists(jpath):
            os.unlink(jpath)
        cmd = [A.plockstat, "-C", "--json", jpath, prog("crash"), "term-wait"]
        if how == "timeout":
            p = subprocess.run(["timeout", "-s", signal.Signals(sig).name, "2"] + cmd,
                               capture_output=True, text=True, timeout=60, env=env)
            check(p.returncode == 124, "timeout: exit %d, expected 124:\n%s" % (p.returncode, p.stderr))
            err = p.stderr
        else:
            bg = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
            check(bg.stdout.readline().strip() == "ready", "the program did not start")
            time.sleep(0.2)
            bg.send_signal(sig)
            out, err = bg.communicate(timeout=60)
            check(bg.returncode == 128 + sig, "exit %d, expected %d" % (bg.returncode, 128 + sig))
        check(os.path.exists(jpath), "%s: no report written:\n%s" % (signal.Signals(sig).name, err))
        with open(jpath) as f:
            crash_blocks(json.load(f), signal.Signals(sig).name)
        left = os.listdir(tmpdir)
        check(not left, "%s: files left behind: %s" % (signal.Signals(sig).name, left))


def t_privilege_drop():
    # a program that gives up root for nobody still writes its data (memcached -u nobody)
    if os.geteuid() != 0:
        print("SKIP: only root can run a program that drops privileges")
        sys.exit(77)
    _, err, doc = plockstat(["-C"] + J() + [prog("dropper")])
    p = only_proc(doc)
    rows = by_lock(p, "Mutex block", "dropper`drop_lock")
    check(rows and sum(r["count"] for r in rows) == 3, "expected 3 blocks on drop_lock:\n" + err)


TESTS = {n[2:]: f for n, f in globals().items() if n.startswith("t_")}


def main():
    global A, TMP
    ap = argparse.ArgumentParser()
    ap.add_argument("--plockstat", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--schema", required=True)
    ap.add_argument("test", choices=sorted(TESTS))
    A = ap.parse_args()
    TMP = tempfile.mkdtemp(prefix="plockstat-test.")
    try:
        TESTS[A.test]()
    except Fail as e:
        print("FAIL %s: %s" % (A.test, e))
        return 1
    except subprocess.TimeoutExpired as e:
        print("FAIL %s: timed out: %s" % (A.test, e))
        return 1
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    print("PASS %s" % A.test)
    return 0


if __name__ == "__main__":
    sys.exit(main())
