"""The README's statistics example: four threads each build and drop lists and dicts of small
objects, so a preloaded allocator's statistics have something to show.  Run it with
PYTHONMALLOC=malloc (otherwise pymalloc serves the small objects) and MTHEAP_STATS=1."""

import threading


def work(seed, rounds=40):
    total = 0
    for r in range(rounds):
        d = {"k%d_%d" % (seed, i): [i, str(i), (i, r)] for i in range(5000)}
        lst = [v[1] * 2 for v in d.values()]
        total += len(lst) + len(d)
    return total


def main():
    results = [0] * 4

    def run(i):
        results[i] = work(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [400000] * 4, results
    print("built and dropped %d objects in 4 threads" % sum(results))


if __name__ == "__main__":
    main()
