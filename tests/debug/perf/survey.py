#!/usr/bin/env python3
"""Survey: real programs under libmtheap-debug.so, looking for false reports and broken runs.

    survey.py --build BUILD_DIR [--modes "full;guardpage;..."] [--only NAME,...]

Each command runs once without any preload (its reference stdout and exit status), then under
libmtheap.so and under libmtheap-debug.so in each MTHEAP_DEBUG mode.  A row is flagged when the
exit status or stdout differs from the reference, or when stderr holds an mtheap-debug report
other than a leak report (programs that leak at exit by design: gcc, perl, ruby, binutils, the
JVM).  Programs that are not installed are listed as such; nothing is installed.  This is the
survey that found rust-lld's abort on libLLVM's operator new (src/debug/foreign.c); it is not
part of `make test` (it needs compilers and interpreters the stock machine may lack, and takes a
few minutes).  No assertions: the table goes into docs/DEBUG.md.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# name: (programs it needs, shell command run in the work directory; stdout must be reproducible)
COMMANDS = {
    "xz-threads": (["xz"], "xz -T2 -3 -c data.txt | xz -d -T2 | md5sum"),
    "zstd-threads": (["zstd"], "zstd -T2 -3 -q -c data.txt | zstd -d -q -c | md5sum"),
    "gzip": (["gzip"], "gzip -c data.txt | gzip -dc | md5sum"),
    "sort-parallel": (["sort"], "sort --parallel=2 -S 50M data.txt | md5sum"),
    "awk": (["awk"], "awk '{c[substr($0,1,2)]++} END{n=0; for(k in c) n++; print n}' data.txt"),
    "sed": (["sed"], "sed 's/[aeiou]/_/g' data.txt | md5sum"),
    "grep-r": (["grep"], "grep -r -c include /usr/include 2>/dev/null | sort | md5sum"),
    "tar": (["tar"], "tar cf - -C /usr/share/doc . 2>/dev/null | tar tf - | sort | md5sum"),
    "openssl": (["openssl"], "openssl enc -aes-256-cbc -pbkdf2 -pass pass:x -in data.txt | "
                             "openssl enc -d -aes-256-cbc -pbkdf2 -pass pass:x | md5sum"),
    "ssh-keygen": (["ssh-keygen"], "rm -f k k.pub && ssh-keygen -q -t ed25519 -N '' -f k && test -s k.pub && echo ok"),
    "git": (["git"], "rm -rf r && git init -q r && cd r && for i in 1 2 3; do seq $i 3000 > f$i; done && "
                     "git add . && git -c user.name=t -c user.email=t@t commit -qm one && "
                     "git -c pack.threads=2 repack -adfq && git log --format=%s && git count-objects -v | grep -c size"),
    "gcc": (["gcc"], "gcc -O2 -o hello hello.c && ./hello"),
    "g++": (["g++"], "g++ -O2 -o maps maps.cc && ./maps"),
    "as+ld": (["gcc", "as", "ld"], "gcc -S -O2 -o h.s hello.c && as -o h.o h.s && ld -r -o hh.o h.o && echo ok"),
    "cmake+ninja": (["cmake", "ninja"], "rm -rf cm/b && cmake -S cm -B cm/b -G Ninja > /dev/null && "
                                        "ninja -C cm/b > /dev/null && echo built"),
    "python-threads": (["python3"], PY + " threads.py"),
    "perl": (["perl"], "perl -e 'my %h; $h{\"k$_\"}=[($_)x($_%5)] for 1..200000; my $s=0; $s+=@$_ for values %h; "
                       "print scalar(keys %h),\" $s\\n\"'"),
    "ruby-threads": (["ruby"], "ruby -e 'q=Queue.new; t=Thread.new{ 100000.times{|i| q << \"x\"*(i%50)}; q << nil }; "
                               "n=0; while (x=q.pop); n+=x.size; end; t.join; puts n'"),
    "node": (["node"], "node -e 'const m=new Map(); for(let i=0;i<200000;i++) m.set(\"k\"+i,{i}); console.log(m.size)'"),
    "tclsh": (["tclsh"], "echo 'set d [dict create]; for {set i 0} {$i < 100000} {incr i} {dict set d k$i $i}; "
                         "puts [dict size $d]' | tclsh"),
    "jq": (["jq"], "seq 1 100000 | jq -s 'map({k: ., v: (. * 2)}) | group_by(.k % 7) | map(length)' -c"),
    "sqlite3": (["sqlite3"], "sqlite3 :memory: 'create table t(a,b); with recursive c(x) as (select 1 union all "
                             "select x+1 from c where x<100000) insert into t select x, hex(x*7919) from c; "
                             "create index i on t(b); select count(*), sum(length(b)) from t;'"),
    "java": (["java"], "java -XX:+UseSerialGC -Xshare:off -version 2>&1 | head -1"),
    "groff": (["groff", "zcat"], "zcat /usr/share/man/man1/ls.1.gz | groff -man -Tutf8 2>/dev/null | md5sum"),
    "apt-cache": (["apt-cache"], "apt-cache policy libc6 | head -3 | md5sum"),
    "objdump": (["objdump"], "objdump -d /usr/bin/ls | md5sum"),
    "rustc": (["rustc"], "rustc -O -o hello_rs hello.rs && ./hello_rs"),
}

FILES = {
    "hello.c": '#include <stdio.h>\nint main(void) { puts("hello, world"); return 0; }\n',
    "maps.cc": "#include <map>\n#include <string>\n#include <iostream>\nint main() { std::map<int, std::string> m;\n"
               "  for (int i = 0; i < 20000; i++) m[i] = std::to_string(i) + \"-value\";\n"
               "  std::cout << m.size() << \"\\n\"; }\n",
    "hello.rs": "use std::collections::HashMap;\nfn main() { let mut m = HashMap::new();\n"
                "  for i in 0..100000u64 { m.insert(i, format!(\"v{}\", i)); } println!(\"{}\", m.len()); }\n",
    "threads.py": "import threading, queue\nq = queue.Queue()\n"
                  "def p():\n    for i in range(50000): q.put([i] * 3)\n    q.put(None)\n"
                  "def c():\n    n = 0\n    while True:\n        x = q.get()\n        if x is None: break\n"
                  "        n += len(x)\n    print(n)\n"
                  "t = [threading.Thread(target=p), threading.Thread(target=c)]\n"
                  "[x.start() for x in t]; [x.join() for x in t]\n",
    "cm/CMakeLists.txt": "cmake_minimum_required(VERSION 3.10)\nproject(x C)\nadd_executable(x x.c)\n",
    "cm/x.c": "int main(void) { return 0; }\n",
}


def setup(work):
    for name, text in FILES.items():
        path = os.path.join(work, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
    # 8 MB of text lines, the same every run
    with open(os.path.join(work, "data.txt"), "w") as f:
        x = 12345
        for i in range(200000):
            x = (x * 1103515245 + 12345) % (1 << 31)
            f.write("%08x %d line %d of the survey's data\n" % (x, x % 977, i))


def run(cmd, work, env):
    try:
        p = subprocess.run(["bash", "-c", cmd], cwd=work, env=env, capture_output=True, text=True,
                           errors="replace", timeout=600)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return "timeout", "", ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", required=True, help="CMake build directory (src/libmtheap.so, src/debug/...)")
    ap.add_argument("--modes", default="full;guardpage;guardpage,sample_side=random;full,unwind=fp,-leaks",
                    help="MTHEAP_DEBUG values, separated by ';'")
    ap.add_argument("--only", default="", help="comma-separated command names")
    a = ap.parse_args()
    plain = os.path.join(a.build, "src", "libmtheap.so")
    debug = os.path.join(a.build, "src", "debug", "libmtheap-debug.so")
    for lib in (plain, debug):
        if not os.path.exists(lib):
            sys.exit("survey: %s not found (build first)" % lib)
    names = [n for n in a.only.split(",") if n] or list(COMMANDS)
    for n in names:
        if n not in COMMANDS:
            sys.exit("survey: unknown command %r (known: %s)" % (n, ", ".join(COMMANDS)))
    configs = [("libmtheap", plain, None)] + [(m, debug, m) for m in a.modes.split(";") if m]
    work = tempfile.mkdtemp(prefix="mthd-survey-")
    setup(work)
    base = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "MTHEAP_DEBUG")}
    # HOME stays (rustup finds its toolchains there); git reads no user or system config
    base.update(LC_ALL="C", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")
    flagged = 0
    print("%-15s %-40s %s" % ("command", "mode", "result"))
    for n in names:
        needs, cmd = COMMANDS[n]
        missing = [p for p in needs if not shutil.which(p)]
        if missing:
            print("%-15s %-40s not installed (%s)" % (n, "-", ", ".join(missing)))
            continue
        ref_rc, ref_out, ref_err = run(cmd, work, base)
        if ref_rc != 0:
            print("%-15s %-40s fails without the library (exit %s): %s" % (n, "-", ref_rc, ref_err.strip()[-200:]))
            flagged += 1
            continue
        for label, lib, mode in configs:
            env = dict(base, LD_PRELOAD=lib)
            if mode:
                env["MTHEAP_DEBUG"] = mode
            rc, out, err = run(cmd, work, env)
            kinds = re.findall(r"mtheap-debug: ([a-z-]+)", err)
            errors = sorted(set(k for k in kinds if k not in ("memory-leak", "warning")))
            leaks = kinds.count("memory-leak")
            problems = []
            if rc != ref_rc:
                problems.append("exit %s (without: %s)" % (rc, ref_rc))
            if out != ref_out:
                problems.append("stdout differs")
            if errors:
                problems.append("reports: " + ", ".join(errors))
            flagged += bool(problems)
            note = "; ".join(problems) if problems else "ok" + (" (%d leak report%s)" % (leaks, "s" * (leaks > 1)) if leaks else "")
            print("%-15s %-40s %s" % (n, label, note), flush=True)
    shutil.rmtree(work, ignore_errors=True)
    print("%d flagged" % flagged)


if __name__ == "__main__":
    main()
