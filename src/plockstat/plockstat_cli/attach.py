"""--attachable and -p: observing a process that is already running."""
import os
import signal
import struct
import time

from .common import CTL_FMT_OFF, CTL_MAGIC, LIBNAME, die, note
from .datafile import load_dir
from .elf import check_command
from .output import emit
from .run import data_dir, lib_env


def ctl_dir():
    d = os.environ.get("PLOCKSTAT_CTLDIR")
    if d:
        return d
    rt = os.environ.get("XDG_RUNTIME_DIR")
    if rt and os.path.isdir(rt) and os.access(rt, os.W_OK):
        return os.path.join(rt, "plockstat")
    return "/tmp/plockstat-%d" % os.getuid()


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
