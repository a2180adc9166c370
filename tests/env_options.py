#!/usr/bin/env python3
"""Environment options of libmtheap, checked from the outside.

Usage: env_options.py ENV_HELPER LIBMTHEAP_SO

Proves: an unparsable value (MTHEAP_PURGE_DELAY_MS=banana, and the other variables) gives
exactly one warning line on stderr naming the variable, and the program carries on (exit 0,
normal output); MTHEAP_ABORT_ON_INVALID=0 turns the abort on an invalid free into a message;
MTHEAP_STATS=1 prints the statistics report to stderr at exit, for a linked
program and for an unrelated program under LD_PRELOAD; without options, stderr stays empty.
"""
import os
import re
import subprocess
import sys

failures = []


def run(cmd, env_extra, preload=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTHEAP_") and k != "LD_PRELOAD"}
    env.update(env_extra)
    if preload:
        env["LD_PRELOAD"] = preload
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    return p


def check(name, ok, p, why):
    status = "ok" if ok else "FAIL"
    print(f"{status:4} {name}: {why}")
    if not ok:
        failures.append(name)
        print(f"     exit {p.returncode}\n     stdout: {p.stdout!r}\n     stderr: {p.stderr!r}")


def main():
    helper, lib = sys.argv[1], sys.argv[2]
    plain_ok = "env_helper ok\n"

    p = run([helper], {})
    check("no options", p.returncode == 0 and p.stdout == plain_ok and p.stderr == "", p,
          "exit 0, normal output, empty stderr")

    bad_values = {
        "MTHEAP_PURGE_DELAY_MS": ["banana", "12x", "", "99999999999999999999", "-5"],
        "MTHEAP_STATS": ["banana", "2"],
        "MTHEAP_VERBOSE": ["maybe"],
        "MTHEAP_THP": ["sometimes"],
        "MTHEAP_ABORT_ON_INVALID": ["perhaps"],
        "MTHEAP_BCACHE": ["lots"],
        "MTHEAP_REGION_SIZE": ["huge", "1500M"],
    }
    for var, values in bad_values.items():
        for val in values:
            p = run([helper], {var: val})
            if val == "":
                # An empty value means "unset": no warning at all.
                check(f"{var}=''", p.returncode == 0 and p.stdout == plain_ok and p.stderr == "", p,
                      "treated as unset")
                continue
            lines = p.stderr.splitlines()
            ok = (p.returncode == 0 and p.stdout == plain_ok and len(lines) == 1
                  and "mtheap" in lines[0] and var in lines[0] and val in lines[0])
            check(f"{var}={val}", ok, p, "one warning line naming the variable and value, then runs normally")

    # Two bad variables: one line each.
    p = run([helper], {"MTHEAP_PURGE_DELAY_MS": "banana", "MTHEAP_THP": "cheese"})
    lines = p.stderr.splitlines()
    check("two bad values", p.returncode == 0 and len(lines) == 2
          and any("MTHEAP_PURGE_DELAY_MS" in l for l in lines) and any("MTHEAP_THP" in l for l in lines),
          p, "one warning line per variable")

    # Good values are accepted silently.
    for var, val in [("MTHEAP_PURGE_DELAY_MS", "0"), ("MTHEAP_PURGE_DELAY_MS", "-1"),
                     ("MTHEAP_PURGE_DELAY_MS", "5000"), ("MTHEAP_STATS", "0"), ("MTHEAP_THP", "1"),
                     ("MTHEAP_REGION_SIZE", "2G"), ("MTHEAP_BCACHE", "0")]:
        p = run([helper], {var: val})
        check(f"{var}={val}", p.returncode == 0 and p.stdout == plain_ok and p.stderr == "", p,
              "accepted without a message")

    # Invalid pointers: abort by default, report and carry on with MTHEAP_ABORT_ON_INVALID=0.
    p = run([helper, "invalid"], {})
    check("invalid free, default", p.returncode == -6 and "mtheap" in p.stderr, p, "SIGABRT with a message")
    p = run([helper, "invalid"], {"MTHEAP_ABORT_ON_INVALID": "0"})
    lines = p.stderr.splitlines()
    check("invalid free, MTHEAP_ABORT_ON_INVALID=0", p.returncode == 0 and p.stdout == plain_ok and len(lines) == 2
          and all("mtheap" in l for l in lines), p, "one message per invalid call (free, realloc), then runs normally")

    # Double frees: the owner's free finds the block free already (the head of its page's free
    # list, or a page with no block out) and reports it; ignored, the list stays intact.
    p = run([helper, "double"], {})
    check("double free, default", p.returncode == -6 and "double free" in p.stderr, p,
          "SIGABRT with a message naming the double free")
    p = run([helper, "double"], {"MTHEAP_ABORT_ON_INVALID": "0"})
    lines = p.stderr.splitlines()
    check("double free, MTHEAP_ABORT_ON_INVALID=0", p.returncode == 0 and p.stdout == plain_ok
          and len(lines) == 6 and all("double free" in l for l in lines), p,
          "six messages (two per size), no block handed out twice, then runs normally")

    # Statistics at exit.
    report = re.compile(r"mtheap.*\n(.*\n){3,}", re.S)
    p = run([helper], {"MTHEAP_STATS": "1"})
    check("MTHEAP_STATS=1", p.returncode == 0 and p.stdout == plain_ok and report.search(p.stderr) is not None
          and re.search(r"malloc", p.stderr) is not None, p, "a multi-line report on stderr at exit")
    p = run([helper], {"MTHEAP_STATS": "yes"})
    check("MTHEAP_STATS=yes", p.returncode == 0 and report.search(p.stderr) is not None, p,
          "report on stderr at exit")
    # Under LD_PRELOAD, for a program that knows nothing of mtheap.
    prog = [sys.executable, "-c", "print(sum(len(str(i)) for i in range(100000)))"]
    p = run(prog, {"MTHEAP_STATS": "1"}, preload=lib)
    check("MTHEAP_STATS=1 preloaded into python", p.returncode == 0 and p.stdout == "488890\n"
          and report.search(p.stderr) is not None, p, "report on stderr at exit")

    if failures:
        print(f"{len(failures)} failure(s): {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
