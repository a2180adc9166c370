#!/usr/bin/env python3
"""Fuzzing the option strings a user feeds: MTHEAP_* for libmtheap.so and MTHEAP_DEBUG for
libmtheap-debug.so.  Each case sets random, malformed or extreme values (empty, huge numbers,
signs, suffixes, commas, '=', non-ASCII, very long strings) and runs a real program (sort) with
the library preloaded: it must exit 0 with its normal output, never crash or hang, and say
at most one warning line per variable it could not use (MTHEAP_DEBUG: one per bad item).

  fuzz_env.py LIBMTHEAP_SO LIBMTHEAP_DEBUG_SO [--cases N] [--seed S]
"""
import argparse
import os
import random
import subprocess
import sys

VARS = ["MTHEAP_STATS", "MTHEAP_VERBOSE", "MTHEAP_THP", "MTHEAP_ABORT_ON_INVALID",
        "MTHEAP_PURGE_DELAY_MS", "MTHEAP_REGION_SIZE"]
DEBUG_ITEMS = ["full", "guards", "patterns", "quarantine", "audit", "leaks", "sample", "continue",
               "qblocks", "qmax", "fill", "depth", "unwind", "lines", "sample_slots", "sample_max",
               "sample_align", "sample_mprotect", "leaks_exitcode", "no-leaks", "-guards", "bogus"]
ATOMS = ["", "0", "1", "-1", "yes", "no", "on", "off", "true", "banana", "1G", "2g", "64G",
         "65G", "1k", "999999999999999999999999", "-9223372036854775808", "9223372036854775807",
         "0x10", "1e9", " 5", "5 ", "3600000", "3600001", "=", ",", ",,", "==", "\t", "é",
         "\u00ff\u00fe", "4096", "1M", "cfi", "fp", "%s%n%x", "a" * 5000]


def value(rng):
    n = rng.choice([1, 1, 1, 2, 3])
    return "".join(rng.choice(ATOMS) for _ in range(n))


def debug_value(rng):
    items = []
    for _ in range(rng.randint(0, 6)):
        it = rng.choice(DEBUG_ITEMS)
        if rng.random() < 0.6:
            it += "=" + value(rng)
        items.append(it)
    return rng.choice([",", ",", ", ", ";"]).join(items)


def run(lib, env_extra, text):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTHEAP_") and k != "LD_PRELOAD"}
    env.update(env_extra)
    env["LD_PRELOAD"] = lib
    return subprocess.run(["sort"], input=text, env=env, capture_output=True, text=True,
                          timeout=60, errors="replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("debug_lib")
    ap.add_argument("--cases", type=int, default=150)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    text = "".join("%d\n" % rng.randrange(10 ** 6) for _ in range(2000))
    want = "".join(sorted(text.splitlines(keepends=True)))
    bad = []
    for case in range(a.cases):
        debug = case % 3 == 2
        if debug:
            env = {"MTHEAP_DEBUG": debug_value(rng)}
            limit = max(1, env["MTHEAP_DEBUG"].count(",") + env["MTHEAP_DEBUG"].count(";") + 1)
            lib = a.debug_lib
        else:
            env = {v: value(rng) for v in rng.sample(VARS, rng.randint(1, len(VARS)))}
            env.pop("MTHEAP_STATS", None)      # a report, not a warning: its own test covers it
            env.pop("MTHEAP_VERBOSE", None)
            env.pop("MTHEAP_ABORT_ON_INVALID", None) if rng.random() < 0.5 else None
            limit = len(env)
            lib = a.lib
        env = {k: v.replace("\0", "") for k, v in env.items()}
        try:
            p = run(lib, env, text)
        except subprocess.TimeoutExpired:
            bad.append("case %d %r: timed out" % (case, env))
            continue
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        if p.returncode != 0 or p.stdout != want:
            bad.append("case %d %r: exit %d, output %s:\n%s" % (
                case, env, p.returncode, "right" if p.stdout == want else "wrong", p.stderr[-500:]))
        elif len(lines) > limit:
            bad.append("case %d %r: %d stderr lines for %d settings:\n%s" % (
                case, env, len(lines), limit, p.stderr[-800:]))
    # Values that are certainly wrong: each must be named in one warning, not ignored silently.
    for var, val, lib in [("MTHEAP_PURGE_DELAY_MS", "banana", a.lib),
                          ("MTHEAP_REGION_SIZE", "65G", a.lib), ("MTHEAP_THP", "%s%n", a.lib),
                          ("MTHEAP_DEBUG", "qblocks=-1", a.debug_lib),
                          ("MTHEAP_DEBUG", "bogus", a.debug_lib)]:
        p = run(lib, {var: val}, text)
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        name = val.split("=")[0] if var == "MTHEAP_DEBUG" else var
        if p.returncode != 0 or p.stdout != want or len(lines) != 1 or name not in lines[0]:
            bad.append("%s=%s: exit %d, want one warning naming %s, got:\n%s" % (
                var, val, p.returncode, name, p.stderr[-500:]))
    for b in bad:
        print("FAIL " + b)
    print("fuzz_env: %d cases (seed %d), %d failed" % (a.cases, a.seed, len(bad)))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
