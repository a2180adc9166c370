"""Running a command under libplockstat, to its end (or its daemons', or a signal's)."""
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from .common import LIBNAME, die, note, signame
from .datafile import exec_markers, expired_file, load_dir
from .elf import check_command, elf_info, resolve_path
from .output import emit


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
