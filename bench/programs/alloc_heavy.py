"""An allocation-heavy Python program for mtheap-bench: a dict-based cache with random churn,
JSON round trips, sorting and string building.  Run with PYTHONMALLOC=malloc so that every
object comes from the preloaded malloc (pymalloc would otherwise serve the small ones).
Checks what it built and prints one RESULT line; FAIL and exit 3 on a mismatch."""

import argparse
import json
import random
import sys
import time


def fail(msg):
    print("FAIL workload=python reason=selfcheck %s" % msg, flush=True)
    sys.exit(3)


def one_round(rng, cache, rnd):
    for i in range(60000):
        k = "k%d" % rng.randrange(150000)
        if k in cache and rng.random() < 0.3:
            del cache[k]
        else:
            cache[k] = {"id": i, "name": k * 3, "tags": [k[:3], str(i), str(rnd)],
                        "v": (i, rnd, k)}
    values = list(cache.values())[:20000]
    docs = [json.dumps(v, sort_keys=True) for v in values]
    for d, v in zip(docs, values):
        back = json.loads(d)
        if back["name"] != v["name"] or back["id"] != v["id"]:
            fail("json round trip changed %r" % d[:60])
    names = sorted((v["name"] for v in cache.values()), reverse=True)
    text = ",".join(names[:5000])
    if text.count(",") != min(5000, len(names)) - 1:
        fail("join lost elements")
    for k, v in cache.items():
        if v["name"] != k * 3 or v["tags"][0] != k[:3] or v["tags"][1] != str(v["id"]) \
                or v["v"][2] != k:
            fail("entry %s holds %r" % (k, v))
    return len(cache)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=int, default=3, help="rounds of churn (default 3)")
    a = ap.parse_args()
    if a.scale < 1:
        ap.error("--scale must be at least 1")
    rng = random.Random(12345)
    cache = {}
    t0 = time.monotonic()
    size = 0
    for rnd in range(a.scale):
        size = one_round(rng, cache, rnd)
    dt = time.monotonic() - t0
    print("RESULT workload=python threads=1 metric=time value=%.6f unit=s better=lower "
          "entries=%d" % (dt, size), flush=True)


if __name__ == "__main__":
    main()
