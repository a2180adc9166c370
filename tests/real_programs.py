#!/usr/bin/env python3
"""Real programs under LD_PRELOAD=libmtheap.so give the same results as without it.

Usage: real_programs.py LIBMTHEAP_SO

Each workload runs twice, in fresh identical temporary directories: once plain, once with the
library preloaded.  stdout, stderr and the exit status must match (after replacing the
temporary directory's name); a mismatch fails with a unified diff.  A missing program is a
failure, not a skip (scripts/deps.sh installs them all).  Before the comparison, each program
is run once with MTHEAP_VERBOSE=1 to prove the preload takes effect in it (mtheap prints its
options when it initialises, i.e. on the program's first malloc).  MTHEAP_STATS=1 would not
do: coreutils close stderr at exit, before the report is written.

Workloads: python3 (dicts, lists, strings; prints a hash), git (init, commits, log, gc),
gcc (compile and run a small C program), sort (a generated 200,000-line file), perl (a
hash-heavy one-liner), sqlite3 (a SQL script), java (javac compiles a program that HotSpot
then runs in four worker threads: hash maps, strings, zlib through JNI; the JVM's own GC, JIT
and signal-based safepoint machinery all run on top of the preloaded malloc).
"""
import difflib
import hashlib
import os
import random
import shutil
import subprocess
import sys
import tempfile

failures = []

PY_SCRIPT = r'''
import hashlib, sys
d = {}
for i in range(200000):
    d["k%d" % i] = [i, str(i) * (i % 7), {"x": i % 13}]
for i in range(0, 200000, 3):
    del d["k%d" % i]
s = []
for k in sorted(d):
    v = d[k]
    s.append("%s=%d:%s:%d" % (k, v[0], v[1][:20], v[2]["x"]))
text = "\n".join(s)
big = [bytes(range(256)) * (i % 50) for i in range(5000)]
h = hashlib.sha256(text.encode())
for b in big:
    h.update(b)
print(len(d), len(text), h.hexdigest())
'''

C_PROGRAM = r'''
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
int main(void) {
  enum { N = 100000 };
  char **v = malloc(N * sizeof *v);
  unsigned long h = 5381;
  for (int i = 0; i < N; i++) {
    v[i] = malloc(32);
    snprintf(v[i], 32, "%x-%d", (unsigned)(i * 2654435761u), i);
  }
  qsort(v, N, sizeof *v, cmp);
  for (int i = 0; i < N; i++) {
    for (char *c = v[i]; *c; c++) h = h * 33 + (unsigned char)*c;
    free(v[i]);
  }
  free(v);
  printf("%lu\n", h);
  return 0;
}
'''

SQL_SCRIPT = r'''
CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, grp INTEGER, payload BLOB);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000)
INSERT INTO t SELECT x, 'name-' || x, x % 97, zeroblob(x % 300) FROM c;
CREATE INDEX t_grp ON t(grp, name);
SELECT grp, count(*), sum(length(payload)), min(name), max(name) FROM t GROUP BY grp ORDER BY grp LIMIT 10;
UPDATE t SET name = upper(name) || name WHERE id % 5 = 0;
DELETE FROM t WHERE id % 7 = 0;
SELECT count(*), sum(id), group_concat(substr(name, 1, 3), '') FROM (SELECT * FROM t ORDER BY name DESC LIMIT 100);
VACUUM;
SELECT count(*) FROM t;
'''

JAVA_PROGRAM = r'''
import java.util.*;
import java.util.concurrent.*;
import java.util.zip.*;
public class Work {
  public static void main(String[] args) throws Exception {
    ExecutorService ex = Executors.newFixedThreadPool(4);
    List<Future<Long>> fs = new ArrayList<>();
    for (int t = 0; t < 4; t++) {
      final int s = t;
      fs.add(ex.submit(() -> {
        long h = s;
        HashMap<String, int[]> m = new HashMap<>();
        for (int i = 0; i < 200000; i++) {
          m.put("k" + (i % 40000), new int[i % 17]);
          h = h * 31 + m.size();
        }
        byte[] in = new byte[1 << 20];
        for (int i = 0; i < in.length; i++) in[i] = (byte) (i * (s + 1) % 251);
        Deflater d = new Deflater();   // native zlib: its buffers come from malloc
        d.setInput(in);
        d.finish();
        byte[] out = new byte[1 << 21];
        int n = d.deflate(out);
        d.end();
        Inflater f = new Inflater();
        f.setInput(out, 0, n);
        byte[] back = new byte[in.length];
        int k = f.inflate(back);
        f.end();
        if (k != in.length || !Arrays.equals(in, back)) throw new IllegalStateException("zlib round trip");
        return h + n;
      }));
    }
    long total = 0;
    for (Future<Long> f : fs) total += f.get();
    ex.shutdown();
    System.out.println("result " + total);
  }
}
'''

PERL = (r'my %h; for my $i (1..300000) { $h{"key$i"} = "v" x ($i % 17) . $i; } '
        r'delete $h{"key$_"} for grep { $_ % 3 == 0 } 1..300000; '
        r'my $s = 0; $s += length($h{$_}) for keys %h; my @k = sort keys %h; '
        r'my %inv = map { $h{$_} => $_ } @k[0..9999]; '
        r'print scalar(keys %h), " $s $k[0] $k[-1] ", scalar(keys %inv), "\n";')

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "test@example.com",
    "GIT_COMMITTER_NAME": "Test", "GIT_COMMITTER_EMAIL": "test@example.com",
    "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
    "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
}


def prepare_sort(d):
    rng = random.Random(12345)
    with open(os.path.join(d, "in.txt"), "w") as f:
        for i in range(200000):
            f.write("%08x %s %d\n" % (rng.getrandbits(32), "x" * rng.randrange(0, 40), i))


def prepare_gcc(d):
    with open(os.path.join(d, "prog.c"), "w") as f:
        f.write(C_PROGRAM)


def prepare_sql(d):
    with open(os.path.join(d, "script.sql"), "w") as f:
        f.write(SQL_SCRIPT)


def prepare_java(d):
    with open(os.path.join(d, "Work.java"), "w") as f:
        f.write(JAVA_PROGRAM)


def prepare_py(d):
    with open(os.path.join(d, "work.py"), "w") as f:
        f.write(PY_SCRIPT)


def git_script():
    lines = ["set -e", "git init -q -b main repo", "cd repo"]
    for i in range(30):
        lines.append(f"for j in $(seq 1 {20 + i}); do echo \"line $j of file {i} $(seq -s, 1 $j)\"; done > f{i % 7}.txt")
        lines.append(f"git add -A && git commit -q -m 'commit {i}'")
    lines += ["git log --stat --format='%H %s' | head -200", "git gc -q --aggressive", "git count-objects -v | grep -v size",
              "git log --format='%H %T %s' | sha256sum", "git fsck --full 2>&1 | sort"]
    return "\n".join(lines)


def workloads():
    py = sys.executable  # the real interpreter, not a shell-script shim in front of it
    return [
        ("python3", py, prepare_py, [py, "work.py"], {}),
        ("git", "git", None, ["bash", "-c", git_script()], GIT_ENV),
        ("gcc", "gcc", prepare_gcc, ["bash", "-c", "gcc -O2 -o prog prog.c && ./prog"], {}),
        ("sort", "sort", prepare_sort, ["bash", "-c", "sort in.txt | sha256sum; sort -k2,2 -k1,1 -s in.txt | sha256sum; "
                                        "LC_ALL=C sort -n -r -t' ' -k3 in.txt | head -5"], {}),
        ("perl", "perl", None, ["perl", "-e", PERL], {}),
        ("sqlite3", "sqlite3", prepare_sql, ["bash", "-c", "sqlite3 db.sqlite < script.sql"], {}),
        # javac is itself a JVM program; both get the preload.
        ("java", "java", prepare_java, ["bash", "-c", "javac Work.java && java -Xmx256m Work"], {}),
    ]


def base_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTHEAP_") and k != "LD_PRELOAD"}
    env["LC_ALL"] = "C.UTF-8"
    env["TZ"] = "UTC"
    env["PYTHONHASHSEED"] = "0"
    return env


def run_in(tmp, name, prepare, cmd, extra, preload):
    # Same path length for both runs; the directory's name is replaced in the output below.
    d = os.path.join(tmp, ("p1-" if preload else "p0-") + name)
    os.mkdir(d)
    if prepare:
        prepare(d)
    env = base_env()
    env.update(extra)
    env["HOME"] = d
    if preload:
        env["LD_PRELOAD"] = preload
    p = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True, timeout=600)
    norm = lambda s: s.replace(d, "<DIR>")
    return p.returncode, norm(p.stdout), norm(p.stderr)


def main():
    lib = os.path.abspath(sys.argv[1])
    if not os.path.exists(lib):
        print(f"FAIL: {lib} does not exist")
        return 1
    with tempfile.TemporaryDirectory(prefix="mtheap-real-") as tmp:
        for name, prog, prepare, cmd, extra in workloads():
            if shutil.which(prog) is None and not os.path.exists(prog):
                print(f"FAIL {name}: program {prog!r} not found (scripts/deps.sh installs it)")
                failures.append(name)
                continue
            # The preload must really be in effect for this program.
            probe = [prog, "--version"] if name != "sqlite3" else [prog, "-version"]
            env = base_env()
            env.update({"LD_PRELOAD": lib, "MTHEAP_VERBOSE": "1"})
            pr = subprocess.run(probe, env=env, capture_output=True, text=True, timeout=60)
            if pr.returncode != 0 or "mtheap" not in pr.stderr:
                print(f"FAIL {name}: {' '.join(probe)} under LD_PRELOAD with MTHEAP_VERBOSE=1 printed no mtheap "
                      f"message (exit {pr.returncode}, stderr {pr.stderr[-500:]!r}): the preload is not in effect")
                failures.append(name)
                continue
            plain = run_in(tmp, name, prepare, cmd, extra, None)
            pre = run_in(tmp, name, prepare, cmd, extra, lib)
            if plain[0] != 0:
                print(f"FAIL {name}: the plain run itself failed (exit {plain[0]}):\n{plain[2][-2000:]}")
                failures.append(name)
                continue
            if plain == pre:
                digest = hashlib.sha256(plain[1].encode()).hexdigest()[:16]
                print(f"ok   {name}: identical output ({len(plain[1])} bytes stdout, sha256 {digest}...)")
                continue
            failures.append(name)
            print(f"FAIL {name}: output under LD_PRELOAD differs (exit {plain[0]} plain, {pre[0]} preloaded)")
            for label, a, b in (("stdout", plain[1], pre[1]), ("stderr", plain[2], pre[2])):
                if a != b:
                    diff = difflib.unified_diff(a.splitlines(True), b.splitlines(True), f"{label} plain",
                                                f"{label} preloaded", n=2)
                    sys.stdout.writelines(list(diff)[:200])
    if failures:
        print(f"{len(failures)} program(s) failed: {', '.join(failures)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
