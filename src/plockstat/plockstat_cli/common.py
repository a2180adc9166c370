"""What every part shares: the data format's event and lock codes, the report's categories, the
configured build facts (set by the launcher), and messages."""
import os
import signal
import sys

VERSION = "?"
LIBDIR_REL = ""
HAVE_LIBDW = False   # source lines in stacks need elfutils' libdw
HERE = "."           # where the launcher is: its parts are beside it or in ../LIBDIR_REL


def configure(version, libdir_rel, have_libdw, here):
    """The build's facts, from the launcher CMake configured; called before any other module
    is imported, so that their `from .common import ...` see these values."""
    global VERSION, LIBDIR_REL, HAVE_LIBDW, HERE
    VERSION, LIBDIR_REL, HAVE_LIBDW, HERE = version, libdir_rel, have_libdw, here

LIBNAME = "libplockstat.so"
RESOLVER = "plockstat-resolve"

# Event kinds, as numbered in src/plockstat/ps.h.
EV_MUTEX_BLOCK, EV_MUTEX_HOLD, EV_RD_BLOCK, EV_WR_BLOCK, EV_RD_HOLD, EV_WR_HOLD, \
    EV_COND_WAIT, EV_TRY_FAIL, EV_SPIN_BLOCK, EV_SEM_WAIT, EV_OWNER_DEAD = range(11)
HOLD_KINDS = (EV_MUTEX_HOLD, EV_RD_HOLD, EV_WR_HOLD)
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


def find_part(name):
    here = HERE
    cands = [os.path.join(here, name)]
    for rel in (LIBDIR_REL, "lib/mtheap", "lib64/mtheap"):
        if rel and not rel.startswith("@"):
            cands.append(os.path.normpath(os.path.join(here, "..", rel, name)))
    for c in cands:
        if os.path.exists(c):
            return c
    die("cannot find %s (looked in: %s)" % (name, ", ".join(cands)))


def signame(sig):
    try:
        return signal.Signals(sig).name
    except ValueError:
        return "signal %d" % sig
