# An allocation-heavy Python workload for measuring the debug mode's cost (docs/DEBUG.md):
# dicts, lists, strings and JSON round trips, as ordinary Python code makes them.
import json

def work(n):
    total = 0
    for i in range(n):
        d = {"id": i, "name": "item-%d" % i, "tags": [str(j) for j in range(i % 12)], "w": i * 0.5}
        s = json.dumps(d)
        total += len(json.loads(s)["tags"]) + len(s)
    words = " ".join("w%d" % (i % 997) for i in range(n)).split()
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    return total + len(counts)

print(work(60000))
