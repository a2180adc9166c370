"""The report a person reads (issue 10): tables without inf or t=0, the profiler's cost not
under an allocator's name and outside the geomeans, noisy cases marked, and plots that are
readable: 150 dpi or more, every axis labelled, every panel titled, ratio ticks on log axes,
each workload's own unit."""

import json
import os

import pytest

from mtheapbench import report


def rec(workload, allocator, value, rep=1, threads=2, variant="", metric="time", unit="s",
        better="lower", wall=None, rss=1000, extra=None):
    return dict(workload=workload, variant=variant, threads=threads, allocator=allocator,
                rep=rep, status="ok", reason="", metric=metric, value=value, unit=unit,
                better=better, wall_s=wall if wall is not None else value, user_s=0.1,
                sys_s=0.0, maxrss_kb=rss, exit=0, signal=None, cmd=workload, extra=extra or {})


def runs():
    out = []
    for rep in (1, 2, 3):
        # mmap-syscalls: counts, best 0, no thread dimension
        for a, v in (("glibc", 20.0), ("jemalloc", 500.0), ("mtheap", 0.0)):
            out.append(rec("mmap-syscalls", a, v, rep, threads=0,
                           metric="syscalls_per_1000_mallocs", unit="calls", wall=0.05))
        # malloc_test: loops/s, higher is better, at two thread counts
        for t in (1, 2):
            for a, v in (("glibc", 400.0), ("jemalloc", 900.0), ("mtheap", 1500.0)):
                out.append(rec("malloc_test", a, v * t, rep, threads=t, metric="loops_per_s",
                               unit="loops/s", better="higher", wall=1.0 / t))
        # a steady case and a noisy one (glibc's runs spread 3x)
        for a, v in (("glibc", 1.0), ("jemalloc", 1.1), ("mtheap", 0.9)):
            out.append(rec("steady", a, v, rep))
            out.append(rec("jumpy", a, v * (3.0 if a == "glibc" and rep == 3 else 1.0), rep))
    out.append(rec("plockstat-cost", "glibc", 3.5, 1, metric="C_added_ns_per_pair", unit="ns",
                   wall=1.5, extra={"H_added_ns": 8.9, "bare_ns": 10.0}))
    return out


META = {"allocator_order": ["glibc", "jemalloc", "mtheap"],
        "allocator_independent": ["plockstat-cost"], "untimed": ["plockstat-cost"]}


def cases():
    c = report.summarize(runs(), META)
    for (w, v, t), case in c.items():
        case["allocator_independent"] = w in META["allocator_independent"]
        case["untimed"] = w in META["untimed"]
    return c


def test_tables_have_no_inf_and_no_t0(tmp_path):
    text = report.text_tables(cases(), META["allocator_order"])
    assert "inf" not in text
    assert "t=0" not in text
    mm = text.split("mmap-syscalls:")[1].split("\n\n")[0]
    assert "+500" in mm and "best" in mm and "+20" in mm


def test_plockstat_cost_is_not_an_allocator_row():
    c = cases()
    text = report.text_tables(c, META["allocator_order"])
    block = text.split("plockstat-cost t=2:")[1].split("\n\n")[0]
    assert "not an allocator comparison" in block
    assert "plockstat -C" in block and "plockstat -H" in block and "8.9" in block
    assert "\n  glibc " not in block
    # not in the geomeans: the summary counts the allocator cases only (5 of them)
    ref, summ = report.allocator_summary(c, META["allocator_order"])
    assert summ["glibc"]["cases"] == 5
    md = report.matrix_markdown(c, META["allocator_order"])
    assert "plockstat-cost" not in md


def test_noisy_cases_are_marked():
    c = cases()
    assert report.is_noisy(c[("jumpy", "", 2)]) and not report.is_noisy(c[("steady", "", 2)])
    text = report.text_tables(c, META["allocator_order"])
    jumpy = text.split("jumpy t=2:")[1].split("\n\n")[0]
    assert "NOISY" in jumpy and "noisy (3.0x spread)" in jumpy
    assert "Noisy cases" in text and "jumpy t=2" in text.split("Noisy cases")[1]
    md = report.markdown(c, META["allocator_order"], META, [])
    assert "**Noisy cases**" in md and "jumpy t=2 (noisy)" in md


def test_figures_are_labelled():
    pytest.importorskip("matplotlib")
    figs = report.figures(cases(), META["allocator_order"])
    assert set(figs) == {"scaling.png", "relative_time.png", "relative_rss.png"}
    for name, fig in figs.items():
        assert fig._suptitle is not None or all(ax.get_title() for ax in fig.axes), name
        for ax in fig.axes:
            if not ax.axison:
                continue
            assert ax.get_title(), name
            assert ax.get_xlabel() and ax.get_ylabel(), (name, ax.get_title())
    scaling = figs["scaling.png"]
    units = {ax.get_title(): ax.get_ylabel() for ax in scaling.axes if ax.axison}
    assert units["malloc_test"].startswith("loops/s")
    rel = figs["relative_time.png"].axes[0]
    rel.figure.canvas.draw()
    labels = [t.get_text() for t in rel.get_xticklabels() if t.get_text()]
    assert "1x" in labels and "2x" in labels and "0.5x" in labels


def test_plots_are_150_dpi_or_more(tmp_path):
    pytest.importorskip("matplotlib")
    from PIL import Image
    data = {"meta": dict(META, date="2026-11-24", command="test", mode="quick", repeat=3),
            "runs": runs()}
    with open(tmp_path / "results.json", "w") as f:
        json.dump(data, f)
    report.write_all(data, str(tmp_path))
    pngs = sorted(os.listdir(tmp_path / "plots"))
    assert pngs == ["relative_rss.png", "relative_time.png", "scaling.png"]
    for p in pngs:
        dpi = Image.open(tmp_path / "plots" / p).info.get("dpi")
        assert dpi and min(dpi) >= 150, (p, dpi)
    listed = report.outputs(str(tmp_path))
    assert [os.path.basename(x) for x in listed] == ["results.json", "results.csv",
                                                     "report.md"] + pngs
