#!/usr/bin/env python3
"""Run heap-debug test cases under LD_PRELOAD=libmtheap-debug.so and check their reports.

    run_debug_tests.py --lib libmtheap-debug.so --bindir DIR CASE...   (CASE 'all' runs every one)

A corpus case passes when stderr holds a report of the expected kind (first line
"==PID== mtheap-debug: KIND on address ..."), the expected function appears in the expected stack
section (allocation site, free site, or the detecting call), the extra patterns match, and the
process ends as expected (SIGABRT, SIGSEGV or an exit code).  'real_programs' runs python3, git,
gcc, sort, perl, sqlite3 and a JVM without the library, under full, full,-leaks, full,unwind=fp, sample=3 and guardpage, and requires the
same output and exit status and no error report (leak reports only where the program leaks).
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

ABORT, SEGV = "abort", "segv"
# the interpreter itself, not a wrapper script (pyenv's shims run a dozen processes)
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# name: (MTHEAP_DEBUG, kind, function, section, exit, [extra regexes])
# section: "alloc" (allocation stack), "free" (free stack), "detect" (where it was found),
#          "leak" (a leak group's stack)
CASES = {
    "mcb_sizeof_pointer": ("full", "heap-buffer-overflow", "make_key_buffer", "alloc", ABORT,
                           [r"past a 8-byte block"]),
    "mcb_off_by_one": ("full", "heap-buffer-overflow", "copy_command_value", "alloc", ABORT,
                       [r"\(1 byte past a 23-byte block\)", r"\*00 fa fa"]),
    "overflow_1": ("full", "heap-buffer-overflow", "make_record", "alloc", ABORT,
                   [r"\(1 byte past a 40-byte block\)",
                    r"the write itself was not seen.*\n.*not who wrote; MTHEAP_DEBUG=\n  guardpage puts every block"]),
    "overflow_100": ("full", "heap-buffer-overflow", "make_packet", "alloc", ABORT,
                     [r"bytes past a 64-byte block", r"\*41\*41"]),
    "underflow": ("full", "heap-buffer-underflow", "make_prefix_buffer", "alloc", ABORT,
                  [r"\(1 byte before a 32-byte block\)", r"MTHEAP_DEBUG=\n  guardpage,sample_side=before puts"]),
    "underflow_header": ("full", "heap-buffer-underflow", "make_record_buffer", "alloc", ABORT,
                         [r"\(at least 17 bytes before a 48-byte block: into its header\)"]),
    "use_after_free": ("full", "use-after-free", "make_session", "alloc", ABORT,
                       [r"write to a freed 36-byte block", r"MTHEAP_DEBUG=\n  guardpage puts every block"],
                       ("free", "close_session")),
    "double_free": ("full", "double-free", "make_buffer", "alloc", ABORT,
                    [r"free\(\) of a 100-byte block freed before"], ("free", "release_buffer")),
    "invalid_free_stack": ("full", "bad-free", "free_local_name", "detect", ABORT,
                           [r"on the stack of the calling thread"]),
    "free_global": ("full", "bad-free", "set_name", "detect", ABORT,
                    [r"the address is in the read-only data \(a string literal or a constant\) of .*free_global"]),
    "free_global_array": ("full", "bad-free", "release_table", "detect", ABORT,
                          [r"0 bytes into the global or static variable 'names' of free_global"], None, ["array"],
                          "free_global"),
    "free_global_bss": ("guardpage", "bad-free", "drop_entry", "detect", ABORT,
                        [r"in the zero-initialized data \(a global or static variable\) of the program"], None,
                        ["bss"], "free_global"),
    "interior_free": ("full", "bad-free", "make_table", "alloc", ABORT,
                      [r"16 bytes inside a 64-byte live block"]),
    "leak": ("full,leaks_exitcode=23", "memory-leak", "leak_session_buffers", "leak", 23,
             [r"SUMMARY: mtheap-debug: 384 bytes leaked in 3 blocks",
              r"Direct leak of 384 bytes in 3 blocks"]),
    "leak_every_block": ("full,leaks_exitcode=23", "memory-leak", "leak_ten_records", "leak", 23,
                         [r"SUMMARY: mtheap-debug: 1045 bytes leaked in 10 blocks",
                          r"Direct leak of 1045 bytes in 10 blocks"]),
    "leak_threads": ("full,leaks_exitcode=23", "memory-leak", "leak_in_worker", "leak", 23,
                     [r"Direct leak of 45400 bytes in 400 blocks", r"Direct leak of 80 bytes in 1 block",
                      r"Indirect leak of 2000 bytes in 10 blocks",
                      r"SUMMARY: mtheap-debug: 45480 bytes leaked in 401 blocks \(2000 bytes in 10 blocks only",
                      r"\(\d+ of these blocks were reachable only through dead memory"]),
    "uaf_write_at_exit": ("full", "use-after-free", "make_entry", "alloc", ABORT,
                          [r"write to a freed 40-byte block, offset 8", r"checked at exit"]),
    "uaf_write_soon": ("full", "use-after-free", "fill_table", "detect", ABORT,
                       [r"write to a freed 48-byte block, offset 20", r"a sweep of the quarantine"],
                       ("free", "close_conn")),
    "realloc_freed": ("full", "use-after-free", "make_list", "alloc", ABORT,
                      [r"realloc\(\) of a 40-byte block freed before"]),
    "sample_overflow": ("sample=1", "heap-buffer-overflow", "make_sampled_key", "alloc", SEGV,
                        [r"\(1 byte past a 32-byte block\) \[sampled guard page\]",
                         r"WRITE of memory at", r"re-raising SIGSEGV"]),
    # the same bug with natural alignment (GWP-ASan style): a 23-byte block faults too
    "sample_overflow_natural": ("sample=1,sample_align=1", "heap-buffer-overflow", "make_sampled_key", "alloc",
                                SEGV, [r"\(1 byte past a 23-byte block\) \[sampled guard page\]"],
                                None, ["set key:0001 0 0 1024\r\n"], "sample_overflow"),
    # default alignment, 23 bytes: 9 bytes of slack before the guard; the write is found at free()
    "sample_overflow_slack": ("sample=1", "heap-buffer-overflow", "make_sampled_key", "alloc", ABORT,
                              [r"\(1 byte past a 23-byte block\)", r"slack of a sampled block"],
                              None, ["set key:0001 0 0 1024\r\n"], "sample_overflow"),
    # a freed sampled slot is closed: the access after free (refs++ reads first) faults at once
    "sample_use_after_free": ("sample=1", "use-after-free", "make_session", "alloc", SEGV,
                              [r"\(32 bytes into a freed 36-byte block\) \[sampled guard page\]",
                               r"READ of memory at"], ("free", "close_session"), [], "use_after_free"),
    # the same two with slots opened and closed by mprotect (kernels before 6.13: no guard markers)
    "sample_overflow_mprotect": ("sample=1,sample_mprotect", "heap-buffer-overflow", "make_sampled_key", "alloc",
                                 SEGV, [r"\(1 byte past a 32-byte block\) \[sampled guard page\]"],
                                 None, [], "sample_overflow"),
    "sample_use_after_free_mprotect": ("sample=1,sample_mprotect", "use-after-free", "make_session", "alloc", SEGV,
                                       [r"\(32 bytes into a freed 36-byte block\) \[sampled guard page\]"],
                                       ("free", "close_session"), [], "use_after_free"),
    # the fault is in libc (memmove under sprintf): the stack must reach the caller through it
    "sprintf_overflow": ("sample=1", "heap-buffer-overflow", "format_id", "detect", SEGV,
                         [r"\(5 bytes past a 12-byte block\) \[sampled guard page\]", r"WRITE of memory at",
                          r"in sprintf"]),
    # a freed block's slot reused by a smaller block: the read of the old one is named as such
    "sample_reused_slot": ("sample=1,sample_slots=1", "use-after-free", "make_message", "alloc", SEGV,
                           [r"into a freed 6000-byte block, whose slot now holds another", r"READ of memory at",
                            r"the slot now holds a 100-byte block"], ("free", "drop_message")),
    "guardpage_many": ("guardpage", "heap-buffer-overflow", "corrupt_record", "detect", SEGV,
                       [r"\(1 byte past a 32-byte block\) \[sampled guard page\]", r"WRITE of memory at"]),
    # without headers (sample=N alone) the core finds the bad pointer: same report, with the stack
    "sample_invalid_free_stack": ("sample=1", "bad-free", "free_local_name", "detect", ABORT,
                                  [r"on the stack of the calling thread"], None, [], "invalid_free_stack"),
    # double frees of blocks no guard-page slot holds (larger than 64 KiB): guardpage checks
    # them with headers, so the report has the allocation and the first free
    "double_free_unsampled": ("guardpage", "double-free", "release_frame", "detect", ABORT,
                              [r"\(free\(\) of a 100000-byte block freed before\)", r"in make_frame"],
                              ("free", "release_frame")),
    # ... also with another free between, and the second free on another thread
    "double_free_late": ("guardpage", "double-free", "make_image", "alloc", ABORT,
                         [r"\(free\(\) of a 100000-byte block freed before\)", r"in release_late"],
                         ("free", "drop_image")),
    "sample_double_free": ("sample=1000", "double-free", "release_buffer", "detect", ABORT,
                           [r"\(free\(\) of a 1\d\d-byte block that is free already\)"], None, [], "double_free"),
    # a plugin unloaded and another loaded at its address: the stack must run through it
    "dlclose_reload": ("full", "heap-buffer-overflow", "load_and_run", "alloc", ABORT,
                       [r"\(1 byte past a 40-byte block\)", r"in make_reloaded_record", r"in plugin_call"]),
    "overflow_memcpy": ("full", "heap-buffer-overflow", "make_header", "alloc", ABORT,
                        [r"\(4 bytes past a 16-byte block\)"]),
    "overflow_large": ("full", "heap-buffer-overflow", "make_table", "alloc", ABORT,
                       [r"\(1 byte past a 1048576-byte block\)"]),
    # the block's start keeps posix_memalign's 64-byte alignment under the debug layout
    "overflow_aligned": ("full", "heap-buffer-overflow", "make_aligned", "alloc", ABORT,
                         [r"\(1 byte past a 100-byte block\)", r"block 0x[0-9a-f]*[048c]0\.\.0x"]),
    "uaf_write_late": ("full", "use-after-free", "make_node", "alloc", ABORT,
                       [r"write to a freed 40-byte block, offset 8"], ("free", "drop_node")),
    "use_after_realloc": ("full", "use-after-free", "make_buf", "alloc", ABORT,
                          [r"write to a freed 32-byte block, offset 4"], ("free", "grow_buf")),
    "double_free_threads": ("full", "double-free", "make_job", "alloc", ABORT,
                            [r"\(free\(\) of a 72-byte block freed before\)", r"in finish_again"],
                            ("free", "finish_job")),
    # reads are caught only with guard pages, at the faulting instruction
    "read_overflow": ("guardpage", "heap-buffer-overflow", "sum_values", "detect", SEGV,
                      [r"READ of memory at", r"\(1 byte past a 32-byte block\)", r"in make_values"]),
    "strlen_overread": ("guardpage", "heap-buffer-overflow", "key_length", "detect", SEGV,
                        [r"READ of memory at", r"\(1 byte past a 16-byte block\)", r"in copy_key"]),
    # guard page before the block (sample_side=before): underflows stop at the write or read
    "underflow_before": ("guardpage,sample_side=before", "heap-buffer-underflow", "parse_prefix", "detect", SEGV,
                         [r"\(1 byte before a 32-byte block\) \[sampled guard page\]", r"WRITE of memory at",
                          r"in make_prefix_buffer", r"guard page before it at"], None, [], "underflow"),
    "underflow_header_before": ("guardpage,sample_side=before", "heap-buffer-underflow", "fill_with_prefix", "detect",
                                SEGV, [r"\(1 byte before a 48-byte block\) \[sampled guard page\]",
                                       r"in make_record_buffer"], None, [], "underflow_header"),
    "underflow_read": ("guardpage,sample_side=before", "heap-buffer-underflow", "trim_right", "detect", SEGV,
                       [r"READ of memory at", r"\(1 byte before a 4-byte block\) \[sampled guard page\]",
                        r"in make_field"]),
    # ... and an overflow then lands in the slack after the block: found at free, with the hint
    "overflow_1_before": ("guardpage,sample_side=before", "heap-buffer-overflow", "make_record", "alloc", ABORT,
                          [r"\(1 byte past a 40-byte block\)", r"WRITE into the slack of a sampled block, found at free",
                           r"sample_side=after faults on the write itself"], None, [], "overflow_1"),
    # a block never freed: its redzone (full) is checked at exit
    "overflow_at_exit": ("full", "heap-buffer-overflow", "make_config", "alloc", ABORT,
                         [r"\(1 byte past a 23-byte block\)", r"found at exit"]),
    # ... and the slack of a sampled block never freed (guardpage): checked at exit too
    "overflow_at_exit_guardpage": ("guardpage", "heap-buffer-overflow", "make_config", "alloc", ABORT,
                                   [r"\(1 byte past a 23-byte block\)",
                                    r"WRITE into the slack of a sampled block, found at exit \(the block is live\)"],
                                   None, [], "overflow_at_exit"),
    # the guard page between two slots, one block on each side of it: the nearer block is named
    "guard_between": ("guardpage,sample_side=random", "heap-buffer-overflow", "poke_past", "detect", SEGV,
                      [r"\(13 bytes past a 100-byte block\) \[sampled guard page\]",
                       r"pair: (0x[0-9a-f]+) (0x[0-9a-f]+)\n[\s\S]*block \1\.\.", r"in make_items"], None, ["over"]),
    "guard_between_under": ("guardpage,sample_side=random", "heap-buffer-underflow", "poke_before", "detect", SEGV,
                            [r"\(1 byte before a 100-byte block\) \[sampled guard page\]",
                             r"pair: (0x[0-9a-f]+) (0x[0-9a-f]+)\n[\s\S]*block \2\.\.", r"in make_items"],
                            None, ["under"], "guard_between"),
    # a read after free, 100000 allocations later: the slot outlasts them (262144 slots)
    "uaf_read_late": ("guardpage", "use-after-free", "make_name", "alloc", SEGV,
                      [r"READ of memory at", r"\(3 bytes into a freed 24-byte block\) \[sampled guard page\]",
                       r"in print_initial"], ("free", "drop_name")),
    "new_array_delete": ("full", "alloc-dealloc-mismatch", "make_ids", "alloc", ABORT,
                         [r"\(operator new\[\] vs operator delete\)"]),
    "new_free": ("full", "alloc-dealloc-mismatch", "make_widget", "alloc", ABORT,
                 [r"\(operator new vs free\)"]),
    "malloc_delete": ("full", "alloc-dealloc-mismatch", "make_raw_record", "alloc", ABORT,
                      [r"\(malloc vs operator delete\)"]),
    # beside a library whose operators are not ours (no check for its calls), the program's own
    # new[] + free is still found
    "foreign_new_bug": ("full", "alloc-dealloc-mismatch", "make_scratch", "alloc", ABORT,
                        [r"\(operator new\[\] vs free\)"], ("detect", "drop_scratch"), ["bug"], "foreign_new"),
    "foreign_new_bug_guardpage": ("guardpage", "alloc-dealloc-mismatch", "make_scratch", "alloc", ABORT,
                                  [r"\(operator new\[\] vs free\)"], ("detect", "drop_scratch"), ["bug"],
                                  "foreign_new"),
    "sized_delete": ("full", "new-delete-type-mismatch", "make_shape", "alloc", ABORT,
                     [r"with size 4 for a 44-byte block"]),
}


def sections(stderr):
    """Map section name -> list of frame lines, per report (first occurrence wins)."""
    out = {}
    cur = None
    for line in stderr.splitlines():
        if re.match(r"\s+#\d+ ", line):
            if cur is not None:
                out.setdefault(cur, []).append(line)
            continue
        cur = None
        if re.search(r"allocated by .* at:$", line):
            cur = "alloc"
        elif re.search(r"^  freed by .* at:$", line):
            cur = "free"
        elif re.search(r"^  detected in .* at:$", line) or "caught by the guard page" in line:
            cur = "detect"
        elif re.search(r"^(Direct|Indirect) leak of .* allocated at:$", line):
            cur = "leak"
        if cur in out and cur != "leak":
            cur = cur + "+"  # later sections of the same name: keep the first one clean
    return out


def run(cmd, env, cwd=None, stdin=None, timeout=90):
    return subprocess.run(cmd, env=env, cwd=cwd, stdin=stdin, capture_output=True, text=True,
                          errors="replace", timeout=timeout)


def check_case(name, lib, bindir):
    spec = CASES[name]
    opts, kind, func, section, exit_, extra = spec[:6]
    also = spec[6] if len(spec) > 6 else None
    args = spec[7] if len(spec) > 7 else []
    binary = spec[8] if len(spec) > 8 else name
    env = dict(os.environ, LD_PRELOAD=lib, MTHEAP_DEBUG=opts)
    r = run([os.path.join(bindir, binary)] + args, env)
    err = r.stderr
    problems = []
    first = re.search(r"^==(\d+)== mtheap-debug: ([a-z-]+)( on address 0x[0-9a-f]+ |: )", err, re.M)
    if not first:
        problems.append("no mtheap-debug report on stderr")
    elif first.group(2) != kind:
        problems.append("first report is %r, expected %r" % (first.group(2), kind))
    secs = sections(err)
    if not any(func in l for l in secs.get(section, [])):
        problems.append("function %s not in the %s stack" % (func, section))
    if also and not any(also[1] in l for l in secs.get(also[0], [])):
        problems.append("function %s not in the %s stack" % (also[1], also[0]))
    for pat in extra:
        if not re.search(pat, err, re.M):
            problems.append("pattern not found: %s" % pat)
    rc = r.returncode
    if exit_ == ABORT and rc != -signal.SIGABRT:
        problems.append("expected SIGABRT, got returncode %d" % rc)
    elif exit_ == SEGV and rc != -signal.SIGSEGV:
        problems.append("expected SIGSEGV, got returncode %d" % rc)
    elif isinstance(exit_, int) and rc != exit_:
        problems.append("expected exit %d, got %d" % (exit_, rc))
    # file:line is a bonus that needs addr2line; when it is there, the expected stack has it
    # (the guard page's SIGSEGV reports too)
    if shutil.which("addr2line") and section in ("alloc", "detect"):
        src = re.escape(binary) + r"\.cc?:\d+"
        if not any(re.search(src, l) for l in secs.get(section, [])):
            problems.append("no %s.c:LINE in the %s stack" % (binary, section))
    return problems, err


CLEAN = ["clean_program", "legal_live_pointers", "legal_tricks", "foreign_new"]
# the modes a clean program runs under (full alone unless listed)
CLEAN_MODES = {"foreign_new": ["full", "guardpage", "sample=1"]}


def check_clean(lib, bindir, name):
    problems, errs = [], []
    for mode in CLEAN_MODES.get(name, ["full"]):
        env = dict(os.environ, LD_PRELOAD=lib, MTHEAP_DEBUG=mode)
        r = run([os.path.join(bindir, name)], env)
        errs.append(r.stderr)
        if "mtheap-debug:" in r.stderr:
            problems.append("unexpected report under %s" % mode)
        if r.returncode != 0 or r.stdout.strip() != "OK":
            problems.append("under %s: exit %d, stdout %r" % (mode, r.returncode, r.stdout.strip()))
    return problems, "".join(errs)


def guardpage_no_room(lib, bindir):
    """guardpage where its 18 GiB reservation cannot be had (an address-space limit): a warning
    that sampling is off, and the program runs as without it, never a silent no-op."""
    env = dict(os.environ, LD_PRELOAD=lib, MTHEAP_DEBUG="guardpage")
    cmd = "ulimit -v 8000000 && exec %s" % shquote(os.path.join(bindir, "clean_program"))
    r = run(["sh", "-c", cmd], env)
    problems = []
    if not re.search(r"mtheap-debug: warning: cannot reserve \d+ MiB for 262144 guard-page slots; sampling is off",
                     r.stderr):
        problems.append("no warning that the guard-page pool could not be reserved")
    if r.returncode != 0 or r.stdout.strip() != "OK":
        problems.append("exit %d, stdout %r" % (r.returncode, r.stdout.strip()))
    return problems, r.stderr


JAVA_HELLO = """import java.util.*;
import java.util.zip.*;
public class Hello {
  public static void main(String[] a) throws Exception {
    Map<String, Integer> m = new HashMap<>();
    for (int i = 0; i < 200000; i++) m.merge("k" + (i % 5000), 1, Integer::sum);
    byte[] data = String.join(",", new TreeSet<>(m.keySet())).getBytes("UTF-8");
    long total = 0;
    for (int r = 0; r < 50; r++) {
      Deflater d = new Deflater(); d.setInput(data); d.finish();
      byte[] out = new byte[data.length + 64]; int n = d.deflate(out); d.end();
      Inflater f = new Inflater(); f.setInput(out, 0, n);
      byte[] back = new byte[data.length]; total += f.inflate(back); f.end();
    }
    System.out.println(m.size() + " " + total);
  }
}
"""


def real_programs(lib):
    tmp = tempfile.mkdtemp(prefix="mthd-real-")
    problems, log = [], []
    base = dict(os.environ, HOME=tmp, GIT_CONFIG_NOSYSTEM="1", LC_ALL="C",
                GIT_AUTHOR_DATE="2020-01-01T00:00:00Z", GIT_COMMITTER_DATE="2020-01-01T00:00:00Z")
    with open(os.path.join(tmp, "hello.c"), "w") as f:
        f.write('#include <stdio.h>\nint main(void) { puts("hello, world"); return 0; }\n')
    with open(os.path.join(tmp, "lines.txt"), "w") as f:
        x = 12345
        for i in range(100000):
            x = (x * 1103515245 + 12345) % (1 << 31)
            f.write("%d line %d\n" % (x, i))
    script = ("import json, re, collections\n"
              "d = collections.Counter(re.findall(r'\\w+', json.dumps([{'k%d' % i: list(range(i % 20))} for i in range(5000)])))\n"
              "print(len(d), sum(d.values()))\n")
    with open(os.path.join(tmp, "Hello.java"), "w") as f:
        f.write(JAVA_HELLO)
    # compiled once, without the library: the JVM runs under it below
    if subprocess.run(["javac", "-d", tmp, os.path.join(tmp, "Hello.java")]).returncode != 0:
        return ["javac failed: the JVM case cannot run (scripts/deps.sh installs openjdk-17-jdk-headless)"], ""
    sql = ("create table t(a,b); with recursive c(x) as (select 1 union all select x+1 from c where x<20000) "
           "insert into t select x, hex(randomblob(20)) from c; create index i on t(b); "
           "select count(*), sum(length(b)) from t;")
    git = "git init -q r && cd r && echo a > f && git add f && git -c user.name=t -c user.email=t@t commit -qm one && " \
          "echo b >> f && git -c user.name=t -c user.email=t@t commit -qam two && git log --format=%s"
    # (name, shell command, leaks: True if the program frees what it allocates by exit)
    progs = [
        ("python3", "%s -c %s" % (PYTHON, shquote(script)), True),
        ("git", git, False),
        ("gcc", "gcc -O1 -o hello_%s hello.c && ./hello_%s", False),
        ("sort", "sort lines.txt | md5sum", True),
        ("perl", "perl -e 'my %h; $h{$_} = $_ * 2 for 1..100000; my $s = 0; $s += $_ for values %h; print \"$s\\n\"'", False),
        ("sqlite3", "sqlite3 :memory: %s" % shquote(sql), True),
        # the JVM: its own threads, stacks and signal handlers; native zlib through malloc
        ("java", "java -Xshare:auto -cp %s Hello" % shquote(tmp), False),
    ]
    for name, cmd, leak_clean in progs:
        outs = {}
        # full,unwind=fp: the frame-pointer walk meets frameless code (gcc's cc1 left rbp = -8)
        for mode in ("plain", "full", "full,-leaks", "full,unwind=fp", "sample=3", "guardpage",
                     "guardpage,sample_side=random"):
            c = cmd.replace("%s", mode.replace(",", "_").replace("-", "")) if name == "gcc" else cmd
            d = os.path.join(tmp, mode.replace(",", "_").replace("=", ""))
            os.makedirs(d, exist_ok=True)
            for fn in ("hello.c", "lines.txt"):
                if not os.path.exists(os.path.join(d, fn)):
                    shutil.copy(os.path.join(tmp, fn), d)
            env = dict(base)
            if mode != "plain":
                env["LD_PRELOAD"] = lib
                env["MTHEAP_DEBUG"] = mode
            r = run(["sh", "-c", c], env, cwd=d, stdin=subprocess.DEVNULL, timeout=100)
            outs[mode] = (r.returncode, r.stdout)
            reports = [l for l in r.stderr.splitlines() if "mtheap-debug:" in l]
            errors = [l for l in reports if "memory-leak" not in l and "SUMMARY" not in l]
            leaks = [l for l in reports if "memory-leak" in l]
            log.append("%-8s %-12s rc=%d reports=%d (leak reports %d)" % (name, mode, r.returncode, len(reports), len(leaks)))
            if errors:
                problems.append("%s under %s: error report(s):\n%s" % (name, mode, r.stderr[:3000]))
            if leaks and (leak_clean or mode not in ("full", "full,unwind=fp")):
                problems.append("%s under %s: leak report:\n%s" % (name, mode, r.stderr[:3000]))
        for mode in outs:
            if outs[mode] != outs["plain"]:
                problems.append("%s: output/exit differs under %s: %r vs %r" % (name, mode, outs[mode], outs["plain"]))
    # the cached unwind rules must walk these programs' stacks themselves: a frame shape they
    # wrongly decline sends every stack to libgcc (slow, but silently right)
    for name, cmd, _ in progs:
        if name not in ("python3", "gcc", "perl", "java"):
            continue
        d = os.path.join(tmp, "verbose")
        os.makedirs(d, exist_ok=True)
        shutil.copy(os.path.join(tmp, "hello.c"), d)
        r = run(["sh", "-c", cmd.replace("%s", "v")], dict(base, LD_PRELOAD=lib, MTHEAP_DEBUG="full,-leaks,verbose"),
                cwd=d, stdin=subprocess.DEVNULL, timeout=100)
        counts = [(int(a), int(b)) for a, b in re.findall(r"stacks: (\d+) walked by the cached unwind rules, (\d+) by libgcc", r.stderr)]
        cached, declined = sum(c for c, _ in counts), sum(d for _, d in counts)
        log.append("%-8s unwinding: %d stacks by the cached rules, %d by libgcc (%d processes)" % (name, cached, declined, len(counts)))
        if not counts or cached < 100 or declined * 100 > cached:
            problems.append("%s: the cached unwinder walked %d stacks and declined %d (want under 1%%)" % (name, cached, declined))
    shutil.rmtree(tmp, ignore_errors=True)
    return problems, "\n".join(log)


def shquote(s):
    return "'" + s.replace("'", "'\\''") + "'"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--bindir", required=True)
    ap.add_argument("cases", nargs="+")
    a = ap.parse_args()
    # the programs run in other directories: a relative LD_PRELOAD would not load there (and
    # the dynamic loader only warns), so every "clean" run would be a run without the library
    a.lib = os.path.abspath(a.lib)
    if not os.path.isfile(a.lib):
        ap.error("--lib %s: no such file" % a.lib)
    names = a.cases
    if names == ["all"]:
        names = sorted(CASES) + CLEAN + ["real_programs", "guardpage_no_room"]
    failed = 0
    for n in names:
        if n in CLEAN:
            problems, err = check_clean(a.lib, a.bindir, n)
        elif n == "real_programs":
            problems, err = real_programs(a.lib)
            print(err)
        elif n == "guardpage_no_room":
            problems, err = guardpage_no_room(a.lib, a.bindir)
        else:
            problems, err = check_case(n, a.lib, a.bindir)
        if problems:
            failed += 1
            print("FAIL %s:\n  %s" % (n, "\n  ".join(problems)))
            if n != "real_programs":
                print("---- stderr ----\n%s----------------" % err[-6000:])
        else:
            print("ok   %s" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
