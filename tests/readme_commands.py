#!/usr/bin/env python3
"""The README as written must work: a newcomer follows it literally.

usage: readme_commands.py SOURCE_DIR BUILD_DIR

1. Every path the README names (in commands, inline code and links) exists: in the source tree,
   or for `build/...` in the build directory.
2. Every command in its ```sh blocks and every `$ command` of its transcripts runs and exits 0,
   unless it is listed in SKIP with the reason it cannot run here in a few seconds offline (a
   placeholder program, a long benchmark, an install).  A command the README gains is run until
   someone says why it cannot be; a SKIP entry the README lost fails the test, so the list
   cannot rot.
3. The numbers the README states about the benchmark suite match the driver: how many C
   workloads and real programs `mtheap-bench list` shows.
Prints 'N passed, N failed' last."""

import os
import re
import shlex
import subprocess
import sys

# Commands that are not run, with why.  Matched against the command's text as the README has it.
SKIP = {
    "make bench": "the whole benchmark run (minutes); CI runs `make test` itself",
    "make test": "this test is part of it",
    "make fuzz FUZZ_SECONDS=1200": "20 minutes of libFuzzer; make test runs the fuzzer's short form",
    "make soak SOAK_SECONDS=1800": "30 minutes of soak; make test runs a 30-second one (soak_short)",
    "LD_PRELOAD=/usr/local/lib/libmtheap.so ./server": "placeholder program; the preload is "
        "tested by tests/real_programs.py",
    "cc app.c $(pkg-config --cflags --libs mtheap)": "needs an installed prefix: "
        "tests/install/install_test.sh links and runs this",
    "cc app.c -Wl,-Bstatic -lmtheap -Wl,-Bdynamic -lpthread": "needs an installed prefix: "
        "tests/install/install_test.sh links and runs the static consumer",
    "export PKG_CONFIG_PATH=$HOME/opt/lib/pkgconfig": "install into $HOME/opt: "
        "tests/install/install_test.sh does it in a scratch prefix",
    "cc app.c $(pkg-config --cflags --libs mtheap) -Wl,-rpath,$(pkg-config --variable=libdir mtheap)":
        "tests/install/install_test.sh links and runs exactly this",
    "LD_LIBRARY_PATH=$HOME/opt/lib ./a.out": "tests/install/install_test.sh runs this",
    "bench/mtheap-bench run --full --out results": "the full benchmark run (tens of minutes)",
    "bench/mtheap-bench run --allocators glibc,mtheap,mine=/opt/lib/libfoo.so "
    "--workloads larson,xmalloc,python --threads 1,2 --repeat 5":
        "placeholder library /opt/lib/libfoo.so; the driver's tests run its options",
    "bench/mtheap-bench report results": "needs a finished run in results/; "
        "bench/tests/test_driver.py rebuilds reports",
    "plockstat -Cv ./mutex_test": "tests/plockstat/run_tests.py runs mutex_test under plockstat",
    "LD_PRELOAD=build/src/debug/libmtheap-debug.so ./app": "placeholder program; the corpus "
        "tests run real ones",
    "MTHEAP_DEBUG=full,continue LD_PRELOAD=... ./app": "placeholder program",
    "MTHEAP_DEBUG=sample=1000 LD_PRELOAD=... ./server": "placeholder program",
    "MTHEAP_DEBUG=guardpage LD_PRELOAD=... ./test_suite": "placeholder program; the corpus case "
        "guardpage_many and debug_real_programs run it",
    "MTHEAP_DEBUG=guardpage,sample_side=before LD_PRELOAD=... ./test_suite": "placeholder program; the corpus "
        "cases underflow_before, underflow_read and overflow_1_before run it",
}

PATH_PREFIXES = ("bench/", "build/", "tests/", "src/", "docs/", "scripts/", "include/", "cmake/")

passed = failed = 0


def check(ok, what, detail=""):
    global passed, failed
    if ok:
        passed += 1
        print("ok   %s" % what)
    else:
        failed += 1
        print("FAIL %s%s" % (what, ("\n     " + detail.replace("\n", "\n     ")) if detail else ""))


def strip_comment(line):
    """A shell line without its trailing '# ...' comment (quotes respected)."""
    out, q = [], None
    for i, ch in enumerate(line):
        if q:
            if ch == q:
                q = None
        elif ch in "'\"":
            q = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            break
        out.append(ch)
    return "".join(out).strip()


def commands(readme):
    """(text, line number) of every command: ```sh block lines (backslash continuations
    joined) and '$ ' lines in other fenced blocks."""
    cmds, fence, buf, start = [], None, "", 0
    for n, line in enumerate(readme.splitlines(), 1):
        if line.startswith("```"):
            fence = None if fence is not None else line[3:].strip()
            continue
        if fence is None:
            continue
        if fence == "sh":
            text = line.rstrip()
            if not buf:
                start = n
            if text.endswith("\\"):
                buf += text[:-1].strip() + " "
                continue
            cmd = strip_comment(buf + text.strip())
            buf = ""
            if cmd:
                cmds.append((" ".join(cmd.split()), start))
        elif line.startswith("$ "):
            cmds.append((" ".join(line[2:].split()), n))
    return cmds


def named_paths(readme):
    """Repository paths named anywhere: inline code, commands, Markdown links."""
    found = set()
    for tok in re.findall(r"[A-Za-z0-9_./-]+", readme):
        tok = tok.rstrip(".,:;)")
        if tok.startswith(PATH_PREFIXES) and "..." not in tok and "*" not in tok:
            found.add(tok)
    for link in re.findall(r"\]\(([^)#:]+)\)", readme):
        found.add(link)
    return sorted(found)


def path_exists(p, src, build):
    if p.startswith("build/"):
        return os.path.exists(os.path.join(build, p[len("build/"):]))
    return os.path.exists(os.path.join(src, p))


def run(cmd, src, build):
    """Runs a README command from the source tree as the README means it: build/ is this
    build directory, plockstat is the one the build made (the README's is the installed one)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["PATH"] = os.path.join(build, "src", "plockstat") + os.pathsep + env["PATH"]
    env["MTHEAP_BUILD"] = build          # the driver's default build directory
    text = re.sub(r"(?<![\w/.$-])build/", build + "/", cmd)
    return subprocess.run(["bash", "-c", text], cwd=src, env=env, capture_output=True,
                          text=True, timeout=120)


def bench_counts(src, build):
    out = subprocess.run([sys.executable, os.path.join(src, "bench", "mtheap-bench"), "list",
                          "--build", build], capture_output=True, text=True, timeout=60).stdout
    c = programs = 0
    for line in out.splitlines():
        m = re.match(r"\s+(\S+)\s+.*\[(c|program)\b", line)
        if not m:
            continue
        if m.group(2) == "program":
            programs += 1
        elif m.group(1) != "plockstat-cost":   # the profiler's cost, counted on its own
            c += 1
    return c, programs


def main():
    if len(sys.argv) != 3:
        print(__doc__.splitlines()[2].strip(), file=sys.stderr)
        return 2
    src, build = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    with open(os.path.join(src, "README.md")) as f:
        readme = f.read()

    for p in named_paths(readme):
        check(path_exists(p, src, build), "README names %s: it exists" % p)

    cmds = commands(readme)
    texts = {c for c, _ in cmds}
    for s in SKIP:
        check(s in texts, "SKIP entry still a README command: %s" % s)
    for cmd, line in cmds:
        if cmd in SKIP:
            print("skip %s (line %d): %s" % (cmd, line, SKIP[cmd]))
            continue
        try:
            r = run(cmd, src, build)
            check(r.returncode == 0, "README line %d runs: %s" % (line, cmd),
                  "exit %d\n%s" % (r.returncode, (r.stdout + r.stderr)[-1500:]))
        except subprocess.TimeoutExpired:
            check(False, "README line %d runs: %s" % (line, cmd), "timed out after 120 s")

    c, programs = bench_counts(src, build)
    m = re.search(r"(\d+) C workloads", readme)
    check(m is not None and int(m.group(1)) == c,
          "README's count of C workloads matches `mtheap-bench list` (%d)" % c,
          "README says: %s" % (m.group(0) if m else "no 'N C workloads'"))
    m = re.search(r"(\d+) real programs", readme)
    check(m is not None and int(m.group(1)) == programs,
          "README's count of real programs matches `mtheap-bench list` (%d)" % programs,
          "README says: %s" % (m.group(0) if m else "no 'N real programs'"))

    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
