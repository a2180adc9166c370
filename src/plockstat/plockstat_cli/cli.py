"""The command line."""
import getopt
import signal
import sys

from .attach import attach, attachable
from .common import IGNORED_X, LIBNAME, RESOLVER, VERSION, die, find_part, note
from .elf import print_interposed
from .run import parse_size, run_command

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


def bounded(opt, val, conv, lo, hi, what):
    """val converted and within [lo, hi], or a one-line error naming the option (exit 2)."""
    try:
        x = conv(val)
    except (ValueError, OverflowError):
        x = None
    if x is None or not lo <= x <= hi:   # nan fails both comparisons
        sep = "=" if opt.startswith("-x ") else " "
        die("bad value: %s%s%s (want %s)" % (opt, sep, val, what), 2)
    return x


def default_opts():
    """The options before the command line is read (what the report code expects to find)."""
    return {"mode": "", "depth": 0, "count": 0, "secs": 0.0, "verbose": False, "pid": None,
            "out": None, "json": None, "folded": None, "threads": False, "holdsample": 16,
            "aggsize": 0, "bufsize": 0, "lockaddr": False, "attachable": False, "V": False}


def main(argv):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `plockstat -V | head` is not an error
    try:
        optlist, args = getopt.getopt(argv, "ACHVvhn:s:e:x:p:o:",
                                      ["json=", "folded=", "threads", "attachable", "help", "version"])
    except getopt.GetoptError as e:
        sys.stderr.write("plockstat: %s\n%s" % (e, USAGE))
        return 2
    opts = default_opts()
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
                opts["count"] = bounded(o, v, int, 0, 1 << 31, "a count >= 0")
            elif o == "-s":
                opts["depth"] = bounded(o, v, int, 0, 1 << 31, "a depth >= 0")
                if opts["depth"] > 32:
                    note("-s %d: stacks are kept 32 frames deep" % opts["depth"])
                    opts["depth"] = 32
            elif o == "-e":
                opts["secs"] = bounded(o, v, float, 0.001, 1e9, "seconds > 0")
            elif o == "-p":
                opts["pid"] = bounded(o, v, int, 1, 1 << 31, "a process id")
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
                    opts["holdsample"] = bounded("-x holdsample", val or "1", int, 1, (1 << 31) - 1,
                                                 "a count N >= 1 (time 1 hold in N)")
                elif name == "lockaddr":
                    opts["lockaddr"] = True
                elif name in ("aggsize", "bufsize"):
                    opts[name] = bounded("-x " + name, val, parse_size, 1, 1 << 40,
                                         "a size from 1 to 1024g (k, m, g suffixes)")
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
