"""Running one process with a deadline and collecting its rusage (os.wait4)."""

import os
import signal
import select
import subprocess
import time


# bench/tools/benchrun: set by the driver when built; see its source for why it is needed.
HELPER = None


class ProcResult:
    def __init__(self):
        self.rc = None          # exit status, or None when killed by a signal
        self.signal = None      # signal number that ended it
        self.timed_out = False
        self.wall = 0.0
        self.user = 0.0
        self.sys = 0.0
        self.maxrss_kb = 0
        self.minflt = 0         # page faults served without I/O: each one takes the mmap lock
        self.stdout = ""
        self.stderr = ""

    @property
    def ok(self):
        return self.rc == 0 and not self.timed_out

    def describe(self):
        if self.timed_out:
            return "timeout after %.0f s" % self.wall
        if self.signal is not None:
            try:
                name = signal.Signals(self.signal).name
            except ValueError:
                name = "signal %d" % self.signal
            return "killed by %s" % name
        return "exit status %d" % self.rc


def _read(path):
    try:
        with open(path, "r", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def kill_group(pid, sig=signal.SIGKILL):
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def reap(proc, deadline):
    """Waits for proc (a Popen) with os.wait4 until deadline (monotonic); on expiry kills its
    process group.  Returns (status, rusage, timed_out).  Sleeps on a pidfd where the kernel
    has them, so the wall time is not rounded up to a polling interval (which, at up to 50 ms,
    was a large part of a 0.1 s run)."""
    timed_out = False
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
        except OSError:
            pidfd = None
    try:
        delay = 0.002
        while True:
            pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                kill_group(proc.pid)
                pid, status, ru = os.wait4(proc.pid, 0)
                break
            if pidfd is not None:
                select.select([pidfd], [], [], left)
            else:
                time.sleep(min(delay, left))
                delay = min(delay * 2, 0.05)
    finally:
        if pidfd is not None:
            os.close(pidfd)
    proc.returncode = 0  # reaped by us: keep Popen from waiting again
    return status, ru, timed_out


def start(cmd, env, log_base, cwd=None):
    """Starts cmd in its own session (so a timeout can kill all its children), output to files."""
    if HELPER:
        try:
            os.unlink(log_base + ".rusage")
        except OSError:
            pass
        cmd = [HELPER, log_base + ".rusage", "--"] + list(cmd)
    out = open(log_base + ".out", "w")
    err = open(log_base + ".err", "w")
    try:
        return subprocess.Popen(cmd, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                cwd=cwd, start_new_session=True)
    finally:
        out.close()
        err.close()


def finish(proc, log_base, t0, deadline):
    try:
        status, ru, timed_out = reap(proc, deadline)
    except BaseException:
        # Interrupted (Ctrl-C, SIGTERM): take the run down with us, never leave it behind.
        kill_group(proc.pid)
        try:
            os.waitpid(proc.pid, 0)
        except ChildProcessError:
            pass
        raise
    r = ProcResult()
    r.wall = time.monotonic() - t0
    r.timed_out = timed_out
    if os.WIFSIGNALED(status):
        r.signal = os.WTERMSIG(status)
    else:
        r.rc = os.WEXITSTATUS(status)
    r.user, r.sys, r.maxrss_kb, r.minflt = ru.ru_utime, ru.ru_stime, ru.ru_maxrss, ru.ru_minflt
    if HELPER and not timed_out:
        helper = _read(log_base + ".rusage")
        kv = dict(x.split("=", 1) for x in helper.split() if "=" in x)
        if kv:
            sig = int(kv["signal"])
            r.rc, r.signal = (None, sig) if sig else (int(kv["exit"]), None)
            r.user, r.sys = float(kv["utime"]), float(kv["stime"])
            r.maxrss_kb = int(kv["maxrss_kb"])
            r.minflt = int(kv.get("minflt", 0))
    r.stdout, r.stderr = _read(log_base + ".out"), _read(log_base + ".err")
    return r


def run(cmd, env, timeout, log_base, cwd=None):
    t0 = time.monotonic()
    try:
        proc = start(cmd, env, log_base, cwd)
    except OSError as e:
        r = ProcResult()
        r.rc = 127
        r.stderr = "cannot start %s: %s" % (cmd[0], e)
        return r
    return finish(proc, log_base, t0, t0 + timeout)
