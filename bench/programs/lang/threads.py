"""lang-threads in Python: the same task in every language (see README in this directory).

  threads.py TASK THREADS UNITS   ->  ANSWER <checksum> <units>  and  TIME <seconds>

The UNITS are split evenly over THREADS threads; TIME covers only the threaded part."""
import sys
import threading
import time

M = 1000003


def unit_cpu(i):
    h = i
    for k in range(200):
        h = (h * 31 + k) % M
    s = str(h) * 3
    return (h + len(s)) % M


def unit_alloc(i):
    lst = [str(i + k) for k in range(100)]
    d = {s: len(s) for s in lst}
    return (sum(d.values()) + len(lst)) % M


def main():
    task, nthreads, units = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    fn = {"cpu": unit_cpu, "alloc": unit_alloc}[task]
    sums = [0] * nthreads

    def work(t):
        s = 0
        for i in range(t, units, nthreads):
            s += fn(i)
        sums[t] = s

    ts = [threading.Thread(target=work, args=(t,)) for t in range(nthreads)]
    t0 = time.monotonic()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    elapsed = time.monotonic() - t0
    print("ANSWER %d %d" % (sum(sums) % (1 << 31), units))
    print("TIME %.6f" % elapsed)


if __name__ == "__main__":
    main()
