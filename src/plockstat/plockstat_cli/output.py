"""Where a report goes: text, --json, --folded."""
import json
import sys

from .analyze import analyze
from .common import EV_OWNER_DEAD, EV_TRY_FAIL, HAVE_LIBDW, HOLD_KINDS, VERSION, note
from .symbols import Symbols
from .text import dropped_lines, format_report


def sanitize(frame):
    return frame.replace(";", ":").replace(" ", "_").replace("\t", "_")


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
