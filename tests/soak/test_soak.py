#!/usr/bin/env python3
"""The soak's own checks can fail: growth after warm-up is flagged and a flat run is not; the
statistics check catches a class with more live blocks than mallocs and bytes that disagree
with redis's count; a value changed behind the clients' back fails the soak, named.

  test_soak.py path/libmtheap.so"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import soak  # noqa: E402

failed = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failed.append(what)


flat = [(t, 100.0 + (t % 3), 0) for t in range(1, 121)]
grow = [(t, 100.0 + t, 0) for t in range(1, 121)]
check(soak.rss_growth(flat, 120)[2] is None, "a flat RSS passes")
check("RSS grew" in (soak.rss_growth(grow, 120)[2] or ""), "an RSS growing by 1 MiB/s is flagged")

REPORT = """mtheap statistics (pid 1)
  in use     %s     peak 50.0 MiB      in pages 60.0 MiB      peak 60.0 MiB
  mallocs    1000  frees 900  (from another thread 0)  large 0  huge 0
  block size        mallocs          frees         live    pages
          16            600            550           %d        1
          32            400            350           50        1
"""
good = REPORT % ("43.3 MiB", 50)
p, _ = soak.check_stats(good, int(43.2 * 2**20))
check(p == [], "a consistent report passes: %r" % p)
p, _ = soak.check_stats(REPORT % ("43.3 MiB", 70), int(43.2 * 2**20))
check(any("class 16" in x for x in p), "a class with more live blocks than mallocs - frees is flagged")
p, _ = soak.check_stats(good, int(80 * 2**20))
check(any("redis counts" in x for x in p), "live bytes below redis's own count are flagged")
p, _ = soak.check_stats("no report here", 1)
check(any("no mtheap statistics" in x for x in p), "a missing report is flagged")

r = subprocess.run([sys.executable, soak.__file__, "--seconds", "10", "--clients", "2",
                    "--lib", sys.argv[1], "--sabotage"], capture_output=True, text=True, timeout=300)
# found by the next GET (got b'sabotage') or APPEND (a wrong length) of one of its keys
check(r.returncode == 1 and re.search(r"^FAIL client 0, operation \d+, \w+ soak:0:s:\d+: got", r.stdout, re.M),
      "a value overwritten behind the clients' back fails the soak (exit %d): %s"
      % (r.returncode, r.stdout[-400:]))
print("test_soak: %d failed" % len(failed))
sys.exit(1 if failed else 0)
