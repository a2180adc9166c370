#!/usr/bin/env python3
"""The allocator's test suite, run once more with libmtheap preloaded into everything.

Usage: suite_preloaded.py CTEST LIBMTHEAP_SO BUILD_TESTS_DIR

Asks ctest for the tests labelled `alloc` (as JSON) and runs each one's command with its own
environment and working directory plus LD_PRELOAD=LIBMTHEAP_SO, one after the other, with its
timeout.  This script runs preloaded too (ctest gives it the same LD_PRELOAD), so python3 and
the ctest it asks are mtheap's users as well.  Not rerun, and why:
  *_tsan, *_ubsan,  sanitizer runtimes must own malloc; a preloaded one would take it from them
  *_asan            (ASan also refuses to start unless its runtime is first in the link map)
  dlopen            checks that an RTLD_LOCAL copy does *not* become the process's malloc,
                    which it cannot check when one is already preloaded
  real_programs     already compares every program with and without the preload
  suite_preloaded   this test
A test that fails prints its command, exit status and the tail of its output; the last line
is the count of passed and failed tests.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

SKIP = re.compile(r"(_tsan|_ubsan|_asan)$|^(dlopen|real_programs|suite_preloaded)$")


def main():
    if len(sys.argv) != 4:
        print(__doc__)
        return 2
    ctest, lib, tests_dir = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
    if not os.path.exists(lib):
        print(f"FAIL: {lib} does not exist")
        return 1
    if lib not in os.environ.get("LD_PRELOAD", ""):
        print("FAIL: this runner must itself run with LD_PRELOAD set to the library (ctest sets it)")
        return 1
    # ctest rewrites <dir>/Testing/Temporary/LastTest.log even for a listing; asked from the
    # build tree it would clobber the log of the ctest that is running this very test.  A
    # scratch directory whose test file just includes the tests directory keeps it apart.
    with tempfile.TemporaryDirectory(prefix="mtheap-suite-") as scratch:
        with open(os.path.join(scratch, "CTestTestfile.cmake"), "w") as f:
            f.write('subdirs("%s")\n' % tests_dir)
        listing = subprocess.run([ctest, "--show-only=json-v1", "-L", "alloc"], capture_output=True,
                                 text=True, check=True, cwd=scratch)
    tests = json.loads(listing.stdout)["tests"]
    passed, failed = 0, []
    for t in tests:
        name = t["name"]
        if SKIP.search(name):
            continue
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        env = dict(os.environ)
        for kv in props.get("ENVIRONMENT", []):
            k, _, v = kv.partition("=")
            env[k] = v
        env["LD_PRELOAD"] = lib  # the test's own preload, if any, is this same library
        timeout = float(props.get("TIMEOUT", 300))
        try:
            p = subprocess.run(t["command"], cwd=props.get("WORKING_DIRECTORY"), env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               errors="replace", timeout=timeout)
            status, out = p.returncode, p.stdout
        except subprocess.TimeoutExpired as e:
            status, out = f"timeout after {timeout:.0f} s", (e.stdout or b"").decode(errors="replace")
        if status == 0:
            passed += 1
            print(f"ok   {name}")
        else:
            failed.append(name)
            print(f"FAIL {name}: exit {status}: {' '.join(t['command'])}\n{out[-3000:]}")
    if passed + len(failed) < 20:
        print(f"FAIL: only {passed + len(failed)} tests found; the listing is wrong")
        return 1
    print(f"{passed} passed, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
