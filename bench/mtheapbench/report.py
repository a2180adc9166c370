"""Turning run records into tables, the Markdown report, CSV/JSON and the plots."""

import csv
import math
import json
import os
import sys
from collections import OrderedDict

from .stats import geomean, median, ratio, spread

CSV_FIELDS = ["workload", "variant", "threads", "allocator", "rep", "set", "superseded", "status",
              "reason", "metric", "value", "unit", "better", "wall_s", "user_s", "sys_s",
              "maxrss_kb", "minflt", "exit", "signal", "cmd"]


def case_key(r):
    return (r["workload"], r.get("variant", ""), int(r["threads"]))


def case_label(key):
    """workload[/variant] t=N; no thread count for a case that has none (threads 0)."""
    w, v, t = key
    return "%s%s%s" % (w, "/" + v if v else "", " t=%d" % t if t else "")


# A case whose runs of one allocator spread by more than this (max/min) proves nothing.
NOISY_SPREAD = 1.5


def is_noisy(c):
    """True when some allocator's repetitions of the case spread by more than NOISY_SPREAD."""
    for cell in c["allocs"].values():
        lo, hi = cell.get("min"), cell.get("max")
        if cell.get("median") is not None and lo and hi and lo > 0 and hi / lo > NOISY_SPREAD:
            return True
    return False


def _alloc_order(runs, meta):
    order = list((meta or {}).get("allocator_order") or (meta or {}).get("allocators", {}))
    for r in runs:
        if r["allocator"] not in order:
            order.append(r["allocator"])
    return order


def remeasured_note(runs):
    """The cases measured again because they were noisy (cli.settle), for the report; "" when
    none was."""
    sets = OrderedDict()
    for r in runs:
        if r.get("set", 1) > 1 or r.get("superseded"):
            k = case_key(r)
            sets.setdefault(k, set())
            if not r.get("superseded"):
                sets[k].add(r.get("set", 1))
    if not sets:
        return ""
    items = []
    for k, kept in sets.items():
        last = max(kept) if kept else 1
        items.append("%s (%s)" % (case_label(k), "set %d kept" % last if last > 1 else
                                  "still noisy: the first set kept"))
    return ("Measured again because noisy (every repetition of every allocator once more, back "
            "to back; a set that is not noisy replaces the first in the medians, the runs left "
            "out stay in results.json marked superseded): %s" % ", ".join(items))


def summarize(runs, meta=None):
    """{case: {"metric", "unit", "better", "allocs": {name: cell}}} in run order, where a cell
    has n, ok, fails (reasons), median/min/max of the metric and medians of wall, CPU, RSS and
    minor page faults (None when a run did not record them: results from before they were)."""
    cases = OrderedDict()
    for r in runs:
        if r.get("superseded"):
            continue   # a set measured again (cli.settle): in the results, not in the medians
        k = case_key(r)
        c = cases.setdefault(k, {"metric": None, "unit": "", "better": "lower",
                                 "allocs": OrderedDict()})
        if r.get("status") == "ok" and c["metric"] is None:
            c["metric"], c["unit"], c["better"] = r["metric"], r["unit"], r["better"]
        cell = c["allocs"].setdefault(r["allocator"], {"runs": []})
        cell["runs"].append(r)
    for c in cases.values():
        for cell in c["allocs"].values():
            ok = [r for r in cell["runs"] if r.get("status") == "ok"]
            cell["n"] = len(cell["runs"])
            cell["ok"] = len(ok)
            cell["fails"] = [r.get("reason") or "failed" for r in cell["runs"]
                             if r.get("status") != "ok"]
            if ok:
                vals = [float(r["value"]) for r in ok]
                cell["median"] = median(vals)
                cell["min"], cell["max"] = spread(vals)
                for f in ("wall_s", "user_s", "sys_s", "maxrss_kb"):
                    cell[f] = median([float(r.get(f) or 0) for r in ok])
                flt = [float(r["minflt"]) for r in ok if r.get("minflt")]
                cell["minflt"] = median(flt) if len(flt) == len(ok) else None
            else:
                cell["median"] = None
        # A case where any run failed still shows its medians, but the FAIL is in the table.
        meds = [(n, cl["median"]) for n, cl in c["allocs"].items()
                if cl["median"] is not None]
        best = None
        if meds:
            pick = min if c["better"] == "lower" else max
            best = pick(meds, key=lambda x: x[1])
        c["best"] = best[0] if best else None
        for name, cell in c["allocs"].items():
            cell["vs_best"] = ratio(cell["median"], best[1], c["better"]) if best else None
            # a best of 0 (no system calls at all) makes every ratio infinite: show the
            # difference in the metric's own unit instead
            cell["vs_best_diff"] = None
            if best and cell["median"] is not None and best[1] == 0:
                cell["vs_best"] = None
                cell["vs_best_diff"] = cell["median"] - best[1]
            g = c["allocs"].get("glibc")
            cell["vs_glibc"] = ratio(cell["median"], g["median"], c["better"]) \
                if g and g.get("median") else None
    return cases


def allocator_summary(cases, order, ref="glibc"):
    """Per allocator: geometric means over cases of median wall time, peak RSS and minor page
    faults, relative to ref (glibc when it ran, else the first allocator), over the cases where
    both succeeded in every run; plus the count of failed runs.  The faults put the RSS in
    context: memory given back early is memory faulted in again, each fault a trip into the
    kernel under the mmap lock (the NTT report's stalls)."""
    if ref not in order:
        ref = order[0] if order else None
    out = OrderedDict()
    for a in order:
        tr, mr, fr, fails, n = [], [], [], 0, 0
        for key, c in cases.items():
            cell = c["allocs"].get(a)
            if not cell:
                continue
            fails += len(cell["fails"])
            rc = c["allocs"].get(ref)
            if c.get("allocator_independent") or c.get("untimed") or not rc:
                continue
            if cell["fails"] or rc["fails"] or cell["median"] is None or rc["median"] is None:
                continue
            if cell["wall_s"] > 0 and rc["wall_s"] > 0:
                tr.append(cell["wall_s"] / rc["wall_s"])
            if cell["maxrss_kb"] > 0 and rc["maxrss_kb"] > 0:
                mr.append(cell["maxrss_kb"] / rc["maxrss_kb"])
            if cell.get("minflt") and rc.get("minflt"):
                fr.append(cell["minflt"] / rc["minflt"])
            n += 1
        out[a] = {"time_geomean": geomean(tr) if tr else None,
                  "rss_geomean": geomean(mr) if mr else None,
                  "faults_geomean": geomean(fr) if fr else None,
                  "cases": n, "failed_runs": fails}
    return ref, out


def _fmt(v, unit=""):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1e6:
        s = "%.3gM" % (v / 1e6)
    elif a >= 1e4:
        s = "%.0f" % v
    elif a >= 100:
        s = "%.1f" % v
    elif a >= 1:
        s = "%.3f" % v
    else:
        s = "%.4g" % v
    return s


def _x(v):
    if v is None or math.isinf(v) or math.isnan(v):
        return "-"
    return "%.2fx" % v


def _vs_best(cell):
    if cell.get("vs_best_diff") is not None:
        d = cell["vs_best_diff"]
        return "best" if d == 0 else "+" + _fmt(d)
    return _x(cell["vs_best"])


def _rss(kb):
    if not kb:
        return "-"
    return "%.1f MiB" % (kb / 1024.0)


def _faults(n):
    """A count: whole numbers (the median of an even number of runs may be a half)."""
    if not n:
        return "-"
    return "%.3gM" % (n / 1e6) if n >= 1e6 else "%d" % round(n)


def _row_name(key, c, name):
    """What a row measured: the allocator, except for cases that do not measure one (the
    profiler's cost runs under glibc's malloc, but it is plockstat's number)."""
    if key[0] == "plockstat-cost":
        return "plockstat -C"
    return name


def case_rows(key, c):
    """Rows for one case: what ran, median, spread, vs best, vs glibc, wall, user, sys, RSS,
    minor faults, ok/n, note (a failure's reason, or that the runs spread too much to conclude
    anything)."""
    rows = []
    for name, cell in c["allocs"].items():
        label = _row_name(key, c, name)
        if cell["median"] is None:
            rows.append([label, "FAIL", "", "", "", "", "", "", "", "", "%d/%d" % (0, cell["n"]),
                         cell["fails"][0] if cell["fails"] else ""])
            continue
        lo, hi = cell["min"], cell["max"]
        note = ("FAIL: " + cell["fails"][0]) if cell["fails"] else ""
        if lo and hi and lo > 0 and hi / lo > NOISY_SPREAD:
            note = (note + "; " if note else "") + "noisy (%.1fx spread)" % (hi / lo)
        vs_glibc = "-" if c.get("allocator_independent") else _x(cell["vs_glibc"])
        rows.append([label, _fmt(cell["median"]), "%s..%s" % (_fmt(lo), _fmt(hi)),
                     _vs_best(cell), vs_glibc, "%.2f" % cell["wall_s"],
                     "%.2f" % cell["user_s"], "%.2f" % cell["sys_s"], _rss(cell["maxrss_kb"]),
                     _faults(cell.get("minflt")), "%d/%d" % (cell["ok"], cell["n"]), note])
        if key[0] == "plockstat-cost":
            ex = [r.get("extra") or {} for r in cell["runs"] if r.get("status") == "ok"]
            h = [e["H_added_ns"] for e in ex if isinstance(e.get("H_added_ns"), (int, float))]
            if h:
                rows.append(["plockstat -H", _fmt(sorted(h)[len(h) // 2]), "", "-", "-", "", "",
                             "", "", "", "%d/%d" % (len(h), cell["n"]), "same runs as -C"])
    return rows


HEAD = ["run", "median", "min..max", "vs best", "vs glibc", "wall s", "user s", "sys s",
        "peak RSS", "faults", "ok", "note"]


def _case_title(key, c):
    unit = c["unit"] or "?"
    t = "%s: %s [%s], %s is better" % (case_label(key), c["metric"] or "?", unit, c["better"])
    if c.get("allocator_independent"):
        t += " (not an allocator comparison)"
    if is_noisy(c):
        t += "  ** NOISY: runs spread by more than %.1fx, draw no conclusion **" % NOISY_SPREAD
    return t


def text_tables(cases, order, meta=None, runs=None):
    lines = []
    for key, c in cases.items():
        lines.append("")
        lines.append(_case_title(key, c))
        rows = [HEAD] + case_rows(key, c)
        widths = [max(len(str(r[i])) for r in rows) for i in range(len(HEAD) - 1)]
        for r in rows:
            lines.append("  " + "  ".join(str(r[i]).ljust(widths[i])
                                          for i in range(len(HEAD) - 1)) + "  " + str(r[-1]))
    ref, summ = allocator_summary(cases, order)
    if not any(s["cases"] for s in summ.values()):
        return "\n".join(lines) + "\n\n(no timed allocator comparison in this run: no summary)"
    lines.append("")
    lines.append("Summary (geometric means over cases of median wall time, peak RSS and minor "
                 "page faults, relative to %s; lower is better):" % ref)
    lines.append("  %-12s %10s %10s %12s %7s %12s" % ("allocator", "time", "peak RSS",
                                                      "page faults", "cases", "failed runs"))
    for a, s in summ.items():
        lines.append("  %-12s %10s %10s %12s %7d %12d" % (a, _x(s["time_geomean"]),
                                                          _x(s["rss_geomean"]),
                                                          _x(s["faults_geomean"]), s["cases"],
                                                          s["failed_runs"]))
    noisy = [case_label(k) for k, c in cases.items() if is_noisy(c)]
    if noisy:
        lines.append("Noisy cases (some allocator's runs spread by more than %.1fx; read no "
                     "conclusion into them): %s" % (NOISY_SPREAD, ", ".join(noisy)))
    again = remeasured_note(runs or [])
    if again:
        lines.append(again)
    return "\n".join(lines)


def summary_markdown(cases, order):
    ref, summ = allocator_summary(cases, order)
    out = ["| allocator | time (geomean vs %s) | peak RSS (geomean vs %s) | minor page faults "
           "(geomean vs %s) | cases | failed runs |" % (ref, ref, ref),
           "|---|---:|---:|---:|---:|---:|"]
    for a, s in summ.items():
        out.append("| %s | %s | %s | %s | %d | %d |" % (a, _x(s["time_geomean"]),
                                                        _x(s["rss_geomean"]),
                                                        _x(s["faults_geomean"]), s["cases"],
                                                        s["failed_runs"]))
    return "\n".join(out)


def matrix_markdown(cases, order, what="metric"):
    """One row per case, one column per allocator.  what="metric": the median of the workload's
    metric with its ratio to glibc; "rss": median peak RSS in MiB."""
    head = "| case | metric | " + " | ".join(order) + " |"
    out = [head, "|---|---|" + "---:|" * len(order)]
    for key, c in cases.items():
        if c.get("allocator_independent") or (what == "rss" and c.get("untimed")):
            continue   # not allocator comparisons: their own tables below
        cells = []
        for a in order:
            cell = c["allocs"].get(a)
            if not cell:
                cells.append("")
            elif cell["median"] is None:
                cells.append("**FAIL**")
            elif what == "rss":
                cells.append("%.1f" % (cell["maxrss_kb"] / 1024.0))
            else:
                v = _fmt(cell["median"])
                r = cell.get("vs_glibc")
                best = " **best**" if c.get("best") == a and len(c["allocs"]) > 1 else ""
                cells.append("%s (%s)%s" % (v, _x(r), best) if r is not None and a != "glibc"
                             else v + best)
                if cell["fails"]:
                    cells[-1] += " +%d FAIL" % len(cell["fails"])
        label = ("peak RSS MiB" if what == "rss" else
                 "%s [%s], %s better" % (c["metric"], c["unit"], c["better"]))
        name = case_label(key) + (" (noisy)" if is_noisy(c) else "")
        out.append("| %s | %s | %s |" % (name, label, " | ".join(cells)))
    return "\n".join(out)


def markdown(cases, order, meta, plots, runs=None):
    m = meta or {}
    out = ["# mtheap-bench results", ""]
    out.append("- date: %s" % m.get("date", "?"))
    out.append("- command: `%s`" % m.get("command", "?"))
    mach = m.get("machine", {})
    if mach:
        out.append("- machine: %s" % ", ".join("%s %s" % (k, v) for k, v in mach.items()))
    out.append("- mode: %s, repetitions: %s (interleaved across allocators), threads: %s"
               % (m.get("mode", "?"), m.get("repeat", "?"), m.get("threads", "?")))
    if m.get("allocators"):
        out.append("- allocators: " + ", ".join("%s (%s)" % (k, v or "no preload")
                                                for k, v in m["allocators"].items()))
    for name, fid in (m.get("allocator_files") or {}).items():
        out.append("- %s library: %s" % (name, fid))
    for name, why in m.get("skipped", []):
        out.append("- skipped %s: %s" % (name, why))
    out += ["", "## Summary", "",
            "Geometric means over all cases of each allocator's median wall time and median "
            "peak RSS, each divided by the reference allocator's for the same case "
            "(cases where either failed a run are left out; see the failures below).", "",
            summary_markdown(cases, order), ""]
    noisy = [case_label(k) for k, c in cases.items() if is_noisy(c)]
    if noisy:
        out += ["**Noisy cases** (some allocator's repetitions spread by more than %.1fx, "
                "max/min: the machine was disturbed; read no conclusion into them): %s"
                % (NOISY_SPREAD, ", ".join(noisy)), ""]
    again = remeasured_note(runs or [])
    if again:
        out += [again, ""]
    for p in plots:
        out.append("![%s](%s)" % (os.path.basename(p), p))
    out += ["", "## All cases at a glance", "",
            "Median of each workload's own metric; in brackets the ratio to glibc "
            "(1.00x = as good as glibc, 2.00x = twice as slow or half the rate).", "",
            matrix_markdown(cases, order), "", "Median peak RSS (MiB):", "",
            matrix_markdown(cases, order, "rss"), ""]
    out += ["", "## Workloads", "",
            "Per case: the median of the workload's own metric, its min..max over the "
            "repetitions, the ratio to the best allocator and to glibc (1.00x = as good, "
            "2.00x = twice as slow or half the rate), and medians of wall time, user and "
            "system CPU and peak RSS (os.wait4).", ""]
    for key, c in cases.items():
        out.append("### " + _case_title(key, c))
        out.append("")
        out.append("| " + " | ".join(HEAD) + " |")
        out.append("|" + "---|" * len(HEAD))
        for r in case_rows(key, c):
            out.append("| " + " | ".join(str(x).replace("|", "\\|") for x in r) + " |")
        out.append("")
    out += lang_markdown(cases, order)
    fails = [(case_label(k), a, reason) for k, c in cases.items()
             for a, cell in c["allocs"].items() for reason in cell["fails"]]
    out += ["## Failures", ""]
    if fails:
        for cl, a, reason in fails:
            out.append("- %s, %s: %s" % (cl, a, reason))
    else:
        out.append("None: every run exited 0 and passed its self-check.")
    out.append("")
    return "\n".join(out)


def write_csv(runs, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CSV_FIELDS + ["extra"], extrasaction="ignore")
        w.writeheader()
        for r in runs:
            row = dict(r)
            row["set"] = r.get("set", 1)
            row["superseded"] = "yes" if r.get("superseded") else ""
            row["extra"] = " ".join("%s=%s" % kv for kv in sorted((r.get("extra") or {}).items()))
            w.writerow(row)


def throughput(r):
    """(value, unit) for the scaling plot: the workload's own metric when higher is better (in
    its unit: loops/s, req/s, ...), else its ops_per_s when it reports one, else runs per
    second (1/time)."""
    ex = r.get("extra") or {}
    if r.get("better") == "higher":
        return float(r["value"]), r.get("unit") or "per s"
    if isinstance(ex.get("ops_per_s"), (int, float)):
        return float(ex["ops_per_s"]), "ops/s"
    v = float(r["value"])
    return (1.0 / v if v > 0 else None), "runs/s (1 / time)"


PLOT_DPI = 160
MARKERS = "osD^vP*X<>"


def _ratio_axis(axis):
    """Log-scale ticks labelled as ratios: 0.25x, 0.5x, 1x, 2x, 4x."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator
    ticks = [2.0 ** k for k in range(-6, 7)]
    axis.set_major_locator(FixedLocator(ticks))
    axis.set_minor_locator(NullLocator())
    axis.set_major_formatter(FuncFormatter(lambda v, _: ("%gx" % v)))


def scaling_figure(cases, order, colors):
    """Throughput against threads, one panel per workload that ran at several thread counts.
    Returns the figure, or None."""
    import matplotlib.pyplot as plt
    by_w = OrderedDict()
    for (w, v, t), c in cases.items():
        if c.get("allocator_independent") or w == LANG:
            continue   # lang-threads has its own figure
        by_w.setdefault((w, v), []).append((t, c))
    multi = [(wv, lst) for wv, lst in by_w.items() if len({t for t, _ in lst}) > 1]
    if not multi:
        return None
    n = len(multi)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 3.3 * rows + 0.9), squeeze=False)
    step = 0.035   # markers of different allocators side by side, not on top of each other
    for idx, ((w, v), lst) in enumerate(multi):
        ax = axes[idx // cols][idx % cols]
        threads = sorted({t for t, _ in lst})
        unit = "ops/s"
        for j, a in enumerate(order):
            xs, ys = [], []
            for t, c in sorted(lst, key=lambda x: x[0]):
                cell = c["allocs"].get(a)
                if not cell or not cell["ok"]:
                    continue
                got = [throughput(r) for r in cell["runs"] if r.get("status") == "ok"]
                tp = sorted(x for x, _ in got if x)
                if tp:
                    unit = got[0][1]
                    xs.append(t * (1 + step * (j - (len(order) - 1) / 2.0)))
                    ys.append(tp[len(tp) // 2])
            if xs:
                ax.plot(xs, ys, marker=MARKERS[j % len(MARKERS)], markersize=5, linewidth=1.2,
                        label=a, color=colors[a], alpha=0.9)
        ax.set_title(w + ("/" + v if v else ""), fontsize=10)
        ax.set_xlabel("threads", fontsize=9)
        ax.set_ylabel(unit + " (higher is better)", fontsize=9)
        ax.tick_params(labelsize=8)
        ax.set_xscale("log", base=2)
        ax.set_xticks(threads)
        ax.set_xticklabels([str(t) for t in threads])
        ax.set_ylim(bottom=0)
        ax.grid(linewidth=0.3, alpha=0.5)
    for idx in range(n, rows * cols):
        axes[idx // cols][idx % cols].axis("off")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.suptitle("Throughput against threads (median of the repetitions)", fontsize=12)
    fig.legend(handles, labels, loc="upper center", ncol=len(order), fontsize=9,
               bbox_to_anchor=(0.5, 1.0 - 0.45 / (3.3 * rows + 0.9)))
    fig.tight_layout(rect=(0, 0, 1, 1.0 - 0.9 / (3.3 * rows + 0.9)))
    return fig


def relative_figure(cases, order, colors, field, ref, what):
    """One row per case, one marker per allocator: its median over the reference's, log scale
    labelled as ratios.  Returns the figure, or None."""
    import matplotlib.pyplot as plt
    keys = [k for k, c in cases.items() if not c.get("allocator_independent")
            and not (field == "wall_s" and c.get("untimed"))
            and c["allocs"].get(ref) and c["allocs"][ref].get("median") is not None]
    if not keys:
        return None
    fig, ax = plt.subplots(figsize=(8.0, 0.28 * len(keys) + 2.0))
    k_off = 0.5 / max(1, len(order))   # each allocator on its own sub-row: nothing hidden
    for j, a in enumerate(order):
        ys, xs, fx = [], [], []
        for i, k in enumerate(keys):
            cell = cases[k]["allocs"].get(a)
            rc = cases[k]["allocs"][ref]
            if not cell:
                continue
            y = i + (j - (len(order) - 1) / 2.0) * k_off
            if cell.get("median") is None:
                fx.append(y)
            elif cell.get(field) and rc.get(field):
                ys.append(y)
                xs.append(cell[field] / rc[field])
        ax.plot(xs, ys, linestyle="none", marker=MARKERS[j % len(MARKERS)], markersize=5,
                color=colors[a], label=a, alpha=0.9)
        if fx:
            ax.plot([1.0] * len(fx), fx, "x", color=colors[a], markersize=8)
    ax.set_xscale("log")
    _ratio_axis(ax.xaxis)
    lo = min([0.5] + [l.get_xdata().min() for l in ax.get_lines() if len(l.get_xdata())])
    hi = max([2.0] + [l.get_xdata().max() for l in ax.get_lines() if len(l.get_xdata())])
    ax.set_xlim(lo / 1.2, hi * 1.2)
    ax.axvline(1.0, color="black", linewidth=0.7)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([case_label(k) + (" (noisy)" if is_noisy(cases[k]) else "")
                        for k in keys], fontsize=8)
    ax.set_ylim(len(keys) - 0.5, -0.5)
    ax.grid(axis="x", linewidth=0.3, alpha=0.5)
    ax.tick_params(axis="x", labelsize=8)
    ax.set_xlabel("%s relative to %s (log scale; lower is better; x = failed)" % (what, ref),
                  fontsize=9)
    ax.set_ylabel("case (workload/variant, threads)", fontsize=9)
    ax.set_title("%s of every allocator relative to %s, per case" % (what[0].upper() + what[1:], ref),
                 fontsize=11)
    ax.legend(fontsize=8, ncol=min(len(order), 6), loc="upper center",
              bbox_to_anchor=(0.5, -0.9 / (0.28 * len(keys) + 2.0) - 0.02))
    fig.tight_layout()
    return fig


def figures(cases, order, cores=None):
    """{file name: figure} of every plot there is data for (matplotlib needed)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    cmap = plt.get_cmap("tab10")
    colors = {a: cmap(i % 10) for i, a in enumerate(order)}
    out = OrderedDict()
    fig = scaling_figure(cases, order, colors)
    if fig is not None:
        out["scaling.png"] = fig
    fig = lang_figure(cases, order, cores)
    if fig is not None:
        out["lang_threads.png"] = fig
    ref = "glibc" if "glibc" in order else (order[0] if order else None)
    for field, what, fname in (("wall_s", "wall time", "relative_time.png"),
                               ("maxrss_kb", "peak RSS", "relative_rss.png")):
        fig = relative_figure(cases, order, colors, field, ref, what)
        if fig is not None:
            out[fname] = fig
    return out


def plots(cases, order, runs, out_dir, prefix="", cores=None):
    """Writes the PNGs; returns their paths, or None when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return None
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for fname, fig in figures(cases, order, cores).items():
        p = os.path.join(out_dir, prefix + fname)
        fig.savefig(p, dpi=PLOT_DPI, bbox_inches="tight")
        plt.close(fig)
        written.append(p)
    return written


# ---- lang-threads: threads in four languages, as reference 001 ends --------------------------
LANG = "lang-threads"


def lang_rows(cases, order):
    """Per language/task, for the reference allocator (glibc when it ran): units/s at each
    thread count, the speedup over one thread, and peak RSS; plus, per allocator, the rate at
    the most threads relative to the reference.  [] when lang-threads did not run."""
    by = OrderedDict()
    for (w, v, t), c in cases.items():
        if w == LANG:
            by.setdefault(v, {})[t] = c
    if not by:
        return None, []
    ref = "glibc" if "glibc" in order else order[0]
    rows = []
    for v, per_t in by.items():
        ts = sorted(per_t)
        med = {t: per_t[t]["allocs"].get(ref, {}).get("median") for t in ts}
        rss = {t: per_t[t]["allocs"].get(ref, {}).get("maxrss_kb") for t in ts}
        base = med.get(ts[0])
        top = ts[-1]
        others = OrderedDict()
        for a in order:
            cell = per_t[top]["allocs"].get(a)
            others[a] = (cell["median"] / med[top]) if cell and cell.get("median") and med[top] else None
        per_thread = None
        if rss.get(ts[0]) and rss.get(top) and top > ts[0]:
            per_thread = (rss[top] - rss[ts[0]]) / 1024.0 / (top - ts[0])
        rows.append({"variant": v, "threads": ts, "rate": med,
                     "speedup": {t: (med[t] / base if med[t] and base else None) for t in ts},
                     "rss_mib": {t: (rss[t] / 1024.0 if rss[t] else None) for t in ts},
                     "rss_per_thread_mib": per_thread, "vs_ref_at_top": others, "top": top})
    return ref, rows


def _sp(x):
    return "-" if x is None else "%.2fx" % x


def lang_text(cases, order):
    ref, rows = lang_rows(cases, order)
    if not rows:
        return ""
    ts = rows[0]["threads"]
    out = ["", "lang-threads (%s): units/s at 1 thread, speedup at each thread count, peak RSS "
           "(MiB) at 1 and %d threads and per added thread:" % (ref, ts[-1])]
    out.append("  %-14s %11s %s %9s %9s %9s" % ("language/task", "units/s@1", " ".join(
        "%7s" % ("x@%d" % t) for t in ts), "RSS@1", "RSS@%d" % ts[-1], "RSS/thr"))
    for r in rows:
        out.append("  %-14s %11s %s %9s %9s %9s" % (
            r["variant"], _fmt(r["rate"].get(ts[0])), " ".join("%7s" % _sp(r["speedup"].get(t)) for t in ts),
            _fmt(r["rss_mib"].get(ts[0])), _fmt(r["rss_mib"].get(ts[-1])),
            _fmt(r["rss_per_thread_mib"])))
    out.append("  at %d threads, each allocator's rate relative to %s:" % (rows[0]["top"], ref))
    out.append("  %-14s %s" % ("", " ".join("%10s" % a for a in order)))
    for r in rows:
        out.append("  %-14s %s" % (r["variant"], " ".join("%10s" % _sp(r["vs_ref_at_top"].get(a))
                                                           for a in order)))
    return "\n".join(out) + "\n"


def lang_markdown(cases, order):
    ref, rows = lang_rows(cases, order)
    if not rows:
        return []
    ts = rows[0]["threads"]
    out = ["## lang-threads: threads in Python, Ruby, Perl and Java", "",
           "The same task in each language, a fixed total split over the threads (allocator: "
           "%s). Speedup is units/s over the one-thread rate; RSS/thread is the peak RSS added "
           "per thread from 1 to %d threads." % (ref, ts[-1]), "",
           "| language/task | units/s at 1 | " + " | ".join("x at %d" % t for t in ts)
           + " | RSS at 1 (MiB) | RSS at %d | RSS/thread |" % ts[-1],
           "|---|---:|" + "---:|" * len(ts) + "---:|---:|---:|"]
    for r in rows:
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            r["variant"], _fmt(r["rate"].get(ts[0])), " | ".join(_sp(r["speedup"].get(t)) for t in ts),
            _fmt(r["rss_mib"].get(ts[0])), _fmt(r["rss_mib"].get(ts[-1])),
            _fmt(r["rss_per_thread_mib"])))
    out += ["", "At %d threads, each allocator's rate relative to %s:" % (rows[0]["top"], ref), "",
            "| language/task | " + " | ".join(order) + " |", "|---|" + "---:|" * len(order)]
    for r in rows:
        out.append("| %s | %s |" % (r["variant"], " | ".join(_sp(r["vs_ref_at_top"].get(a))
                                                             for a in order)))
    out.append("")
    return out


def lang_figure(cases, order, cores=None):
    """Speedup against threads, one line per language, a panel per task.  None if lang-threads
    did not run."""
    ref, rows = lang_rows(cases, order)
    if not rows:
        return None
    import matplotlib.pyplot as plt
    tasks = []
    for r in rows:
        t = r["variant"].split("/")[1]
        if t not in tasks:
            tasks.append(t)
    fig, axes = plt.subplots(1, len(tasks), figsize=(5.2 * len(tasks), 4.2), squeeze=False)
    cmap = plt.get_cmap("tab10")
    titles = {"cpu": "integer and string work", "alloc": "building and dropping lists and hashes"}
    for i, task in enumerate(tasks):
        ax = axes[0][i]
        langs = [r for r in rows if r["variant"].endswith("/" + task)]
        ts = langs[0]["threads"]
        ideal = [min(t, cores) for t in ts] if cores else ts
        ax.plot(ts, ideal, linestyle=":", color="grey", linewidth=1,
                label="ideal on %d cores" % cores if cores else "ideal")
        for j, r in enumerate(langs):
            xs = [t for t in ts if r["speedup"].get(t)]
            ax.plot(xs, [r["speedup"][t] for t in xs], marker=MARKERS[j % len(MARKERS)],
                    color=cmap(j), label=r["variant"].split("/")[0], linewidth=1.4)
        ax.set_title("%s (%s)" % (task, titles.get(task, task)), fontsize=10)
        ax.set_xlabel("threads (fixed total work)", fontsize=9)
        ax.set_ylabel("speedup over 1 thread (higher is better)", fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_xticks(ts)
        ax.set_xticklabels([str(t) for t in ts])
        ax.set_ylim(bottom=0)
        ax.grid(linewidth=0.3, alpha=0.5)
        ax.legend(fontsize=8)
    fig.suptitle("Threads in four languages: speedup against threads (allocator: %s%s)"
                 % (ref, ", %d cores" % cores if cores else ""), fontsize=12)
    fig.tight_layout()
    return fig


def write_all(data, out_dir, quiet=False):
    """From results.json's content: results.csv, report.md, plots/*.png; returns the terminal
    text."""
    runs, meta = data["runs"], data.get("meta", {})
    order = _alloc_order(runs, meta)
    cases = summarize(runs, meta)
    indep = set(meta.get("allocator_independent", []))
    untimed = set(meta.get("untimed", []))
    for (w, v, t), c in cases.items():
        c["allocator_independent"] = w in indep
        c["untimed"] = w in untimed
    write_csv(runs, os.path.join(out_dir, "results.csv"))
    pngs = plots(cases, order, runs, os.path.join(out_dir, "plots"),
                 cores=(meta.get("machine") or {}).get("cores"))
    rel = [os.path.relpath(p, out_dir) for p in pngs or []]
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write(markdown(cases, order, meta, rel, runs))
    text = text_tables(cases, order, meta, runs) + lang_text(cases, order)
    if pngs is None:
        text += ("\nmtheap-bench: no plots: matplotlib is not installed for %s "
                 "(scripts/deps.sh installs it)" % sys.executable)
    return text


def outputs(out_dir):
    """The files a run or `report` leaves in out_dir, as paths to show the user."""
    names = ["results.json", "results.csv", "report.md"]
    plots_dir = os.path.join(out_dir, "plots")
    if os.path.isdir(plots_dir):
        names += [os.path.join("plots", f) for f in sorted(os.listdir(plots_dir))
                  if f.endswith(".png")]
    return [os.path.join(out_dir, n) for n in names if os.path.exists(os.path.join(out_dir, n))]


def load(out_dir):
    path = os.path.join(out_dir, "results.json")
    with open(path) as f:
        data = json.load(f)
    if not isinstance(data, dict) or "runs" not in data:
        raise ValueError("%s has no 'runs'" % path)
    return data
