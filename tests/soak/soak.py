#!/usr/bin/env python3
"""soak.py: a real server under libmtheap for a long time, every answer checked.

Debian's redis-server runs with libmtheap.so preloaded (MTHEAP_STATS=1) on 127.0.0.1 and a
free port.  Client threads, each with its own keys and an exact model of them, run a mixed
workload over loopback: SET of small to 1 MiB values, GET (compared with the model), DEL,
APPEND, INCRBY, list pushes and ranges, hashes; each client disconnects and reconnects every
few thousand operations (clients come and go).  The key space per client is bounded, so after
a warm-up the server's memory must stop growing.  Checked:

  - every response equals the model's (a mismatch, a protocol error or a dropped connection
    fails the soak at once, naming the operation);
  - the server's RSS, sampled every second, stays bounded: the highest value after the first
    half is at most 1.15 x the highest of the second quarter, plus 16 MiB;
  - at the end (SHUTDOWN NOSAVE), libmtheap's statistics balance: per size class, mallocs minus
    frees equals the live blocks, none negative, and the totals agree with the classes.

  soak.py --seconds N --lib path/libmtheap.so [--clients 6] [--out DIR] [--seed S]

Writes DIR/soak-rss.csv (seconds, RSS MiB, operations so far) and prints one summary line;
exit 0 when everything held, 1 with the reasons otherwise, 2 for bad arguments or a server
that will not start."""
import argparse
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time


class SoakError(Exception):
    pass


# ---- a small RESP client ----------------------------------------------------------------
class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.buf = b""

    def close(self):
        self.s.close()

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise SoakError("the server closed the connection")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\r\n")
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.s.recv(max(1 << 16, n + 2 - len(self.buf)))
            if not chunk:
                raise SoakError("the server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def _reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            raise SoakError("server error: " + rest.decode(errors="replace"))
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self._reply() for _ in range(n)]
        raise SoakError("unparsable reply: %r" % line[:80])

    def cmd(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))
        return self._reply()


# ---- one client: its own keys, an exact model -----------------------------------------
def value(rng):
    r = rng.random()
    if r < 0.01:
        n = rng.randint(256 << 10, 1 << 20)       # 1%: up to 1 MiB
    elif r < 0.10:
        n = rng.randint(4096, 64 << 10)
    else:
        n = rng.randint(1, 600)
    seed = rng.getrandbits(32)
    return (seed.to_bytes(4, "little") * (n // 4 + 1))[:n]


class Client(threading.Thread):
    KEYS = 300   # per client: the bounded data set

    def __init__(self, idx, port, seed, stop, stats):
        super().__init__(daemon=True)
        self.idx, self.port, self.stop, self.stats = idx, port, stop, stats
        self.rng = random.Random(seed * 1000 + idx)
        self.strings, self.counters, self.lists, self.hashes = {}, {}, {}, {}
        self.ops = 0
        self.error = None

    def key(self, kind, n):
        return "soak:%d:%s:%d" % (self.idx, kind, n)

    def expect(self, what, got, want):
        if got != want:
            g = got if not isinstance(got, bytes) or len(got) < 64 else got[:32] + b"...(%d)" % len(got)
            w = want if not isinstance(want, bytes) or len(want) < 64 else want[:32] + b"...(%d)" % len(want)
            raise SoakError("client %d, operation %d, %s: got %r, expected %r"
                            % (self.idx, self.ops, what, g, w))

    def step(self, c):
        rng = self.rng
        n = rng.randrange(self.KEYS)
        op = rng.random()
        if op < 0.25:
            k, v = self.key("s", n), value(rng)
            self.expect("SET", c.cmd("SET", k, v), "OK")
            self.strings[k] = v
        elif op < 0.50:
            k = self.key("s", n)
            self.expect("GET %s" % k, c.cmd("GET", k), self.strings.get(k))
        elif op < 0.58:
            k = self.key("s", n)
            self.expect("DEL %s" % k, c.cmd("DEL", k), 1 if k in self.strings else 0)
            self.strings.pop(k, None)
        elif op < 0.66:
            k, v = self.key("s", n), value(rng)[:2000]
            new = self.strings.get(k, b"") + v
            if len(new) > (2 << 20):
                return
            self.expect("APPEND %s" % k, c.cmd("APPEND", k, v), len(new))
            self.strings[k] = new
        elif op < 0.74:
            k, d = self.key("n", n % 50), rng.randint(-1000, 1000)
            want = self.counters.get(k, 0) + d
            self.expect("INCRBY %s" % k, c.cmd("INCRBY", k, d), want)
            self.counters[k] = want
        elif op < 0.86:
            k = self.key("l", n % 40)
            lst = self.lists.setdefault(k, [])
            if rng.random() < 0.6 or not lst:
                items = [value(rng)[:300] for _ in range(rng.randint(1, 8))]
                self.expect("RPUSH %s" % k, c.cmd("RPUSH", k, *items), len(lst) + len(items))
                lst.extend(items)
                if len(lst) > 400:
                    self.expect("LTRIM %s" % k, c.cmd("LTRIM", k, -200, -1), "OK")
                    del lst[:-200]
            else:
                self.expect("LPOP %s" % k, c.cmd("LPOP", k), lst.pop(0))
                if not lst:
                    del self.lists[k]
            if k in self.lists:
                a = rng.randrange(len(lst))
                self.expect("LRANGE %s" % k, c.cmd("LRANGE", k, a, a + 9), lst[a:a + 10])
        else:
            k = self.key("h", n % 40)
            h = self.hashes.setdefault(k, {})
            f, v = "f%d" % rng.randrange(100), value(rng)[:500]
            self.expect("HSET %s" % k, c.cmd("HSET", k, f, v), 0 if f in h else 1)
            h[f] = v
            g = "f%d" % rng.randrange(100)
            self.expect("HGET %s %s" % (k, g), c.cmd("HGET", k, g), h.get(g))
        self.ops += 1

    def run(self):
        try:
            while not self.stop.is_set():
                c = Conn(self.port)
                try:
                    for _ in range(self.rng.randint(500, 5000)):   # then leave, come back
                        if self.stop.is_set():
                            break
                        self.step(c)
                finally:
                    c.close()
            # the whole model, once more, at the end
            c = Conn(self.port)
            for k, v in list(self.strings.items()):
                self.expect("final GET %s" % k, c.cmd("GET", k), v)
            for k, v in self.counters.items():
                self.expect("final GET %s" % k, c.cmd("GET", k), str(v).encode())
            for k, lst in self.lists.items():
                self.expect("final LRANGE %s" % k, c.cmd("LRANGE", k, 0, -1), lst)
            c.close()
        except (SoakError, OSError, ValueError) as e:
            self.error = str(e)
            self.stop.set()


# ---- the server ---------------------------------------------------------------------------
def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mib(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            m = re.search(r"VmRSS:\s+(\d+) kB", f.read())
            return int(m.group(1)) / 1024.0 if m else None
    except OSError:
        return None


def rss_growth(samples, seconds):
    """Bounded memory: after warm-up, no growth beyond the second quarter's peak.  Returns the
    second quarter's and the second half's samples, and the complaint (or None)."""
    q2 = [r for t, r, _ in samples if seconds * 0.25 <= t < seconds * 0.5]
    late = [r for t, r, _ in samples if t >= seconds * 0.5]
    if q2 and late and max(late) > 1.15 * max(q2) + 16:
        return q2, late, ("RSS grew after warm-up: %.0f MiB in the second quarter, %.0f MiB later"
                          % (max(q2), max(late)))
    return q2, late, None


def parse_size(s):
    n, unit = s.split()
    return float(n) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit]


def check_stats(text, used_memory):
    """libmtheap's exit report (MTHEAP_STATS=1): per class mallocs - frees == live >= 0 (the
    report derives frees from the live blocks it finds in the pages: a class with more live
    blocks than mallocs shows as a mismatch), the classes' mallocs add up to no more than the
    total, and the bytes in live blocks agree with what redis itself counted (its zmalloc adds
    up malloc_usable_size of every block it holds): at least that, at most 10% + 8 MiB more
    (what other libraries in the process hold).  Returns (problems, summary)."""
    problems = []
    m = re.search(r"in use\s+([\d.]+ [KMG]?i?B)", text)
    in_use = parse_size(m.group(1)) if m else None
    if in_use is not None and used_memory is not None:
        # the report prints one decimal: 0.05 units of slack below
        if not used_memory * 0.995 - (64 << 10) <= in_use <= used_memory * 1.10 + (8 << 20):
            problems.append("libmtheap has %.1f MiB in live blocks, redis counts %.1f MiB"
                            % (in_use / 2**20, used_memory / 2**20))
    m = re.search(r"mallocs\s+(\d+)\s+frees\s+(\d+)", text)
    if not m:
        return ["no mtheap statistics in the server's stderr (was libmtheap loaded?)"], ""
    mallocs, frees = int(m.group(1)), int(m.group(2))
    cls = re.findall(r"^\s+(\d+)\s+(\d+)\s+(\d+)\s+(-?\d+)\s+(\d+)$", text, re.M)
    cm = cf = live = 0
    for size, ma, fr, lv, _pages in cls:
        ma, fr, lv = int(ma), int(fr), int(lv)
        if ma - fr != lv or lv < 0:
            problems.append("class %s: %d mallocs - %d frees != %d live" % (size, ma, fr, lv))
        cm, cf, live = cm + ma, cf + fr, live + lv
    if cm > mallocs or cf > frees:
        problems.append("the classes count more (%d mallocs, %d frees) than the totals (%d, %d)"
                        % (cm, cf, mallocs, frees))
    if frees > mallocs:
        problems.append("more frees (%d) than mallocs (%d)" % (frees, mallocs))
    return problems, ("%d mallocs, %d frees, %d live small blocks at exit; in use %.1f MiB, "
                      "redis's used_memory %.1f MiB" % (mallocs, frees, live, (in_use or 0) / 2**20,
                                                        (used_memory or 0) / 2**20))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--clients", type=int, default=6)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=None)
    ap.add_argument("--sabotage", action="store_true",
                    help="overwrite client 0's keys after 3 s (tests that the soak notices)")
    a = ap.parse_args()
    if a.seconds < 10 or a.clients < 1:
        print("soak: --seconds must be at least 10 and --clients at least 1")
        return 2
    if not os.path.isfile(a.lib):
        print("soak: %s does not exist (build the mtheap target)" % a.lib)
        return 2
    server = shutil.which("redis-server")
    if not server:
        print("soak: redis-server is not installed (scripts/deps.sh installs it)")
        return 2
    out = a.out or tempfile.mkdtemp(prefix="soak.")
    os.makedirs(out, exist_ok=True)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MTHEAP_")}
    env.update(LD_PRELOAD=os.path.abspath(a.lib), MTHEAP_STATS="1")
    err = open(os.path.join(out, "server.err"), "w+")
    proc = subprocess.Popen([server, "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                             "--appendonly", "no", "--daemonize", "no", "--dir", out,
                             "--loglevel", "warning"], env=env, stdout=err, stderr=err,
                            start_new_session=True)
    problems = []
    try:
        for _ in range(200):
            try:
                if Conn(port).cmd("PING") == "PONG":
                    break
            except (OSError, SoakError):
                time.sleep(0.05)
            if proc.poll() is not None:
                break
        else:
            print("soak: redis-server did not answer within 10 s")
            return 2
        if proc.poll() is not None:
            err.seek(0)
            print("soak: redis-server exited at start: %s" % err.read()[-300:])
            return 2
        stop = threading.Event()
        clients = [Client(i, port, a.seed, stop, None) for i in range(a.clients)]
        for c in clients:
            c.start()
        samples = []
        t0 = time.monotonic()
        while time.monotonic() - t0 < a.seconds and not stop.is_set():
            time.sleep(1.0)
            r = rss_mib(proc.pid)
            if r is None:
                problems.append("the server died during the soak (exit %s)" % proc.poll())
                break
            samples.append((time.monotonic() - t0, r, sum(c.ops for c in clients)))
            if a.sabotage and len(samples) == 3:
                # the soak's own test: a value changed behind the clients' back must be caught
                s = Conn(port)
                for n in range(Client.KEYS):
                    s.cmd("SET", "soak:0:s:%d" % n, "sabotage")
                s.close()
        stop.set()
        for c in clients:
            c.join(120)
            if c.is_alive():
                problems.append("client %d did not finish" % c.idx)
            elif c.error:
                problems.append(c.error)
        ops = sum(c.ops for c in clients)
        with open(os.path.join(out, "soak-rss.csv"), "w") as f:
            f.write("seconds,rss_mib,operations\n")
            for t, r, n in samples:
                f.write("%.1f,%.1f,%d\n" % (t, r, n))
        q2, late, grew = rss_growth(samples, a.seconds)
        if grew:
            problems.append(grew)
        # what redis believes it holds (zmalloc counts every block by malloc_usable_size)
        try:
            info = Conn(port).cmd("INFO", "memory").decode()
            m = re.search(r"^used_memory:(\d+)", info, re.M)
            used_memory = int(m.group(1)) if m else None
        except (OSError, SoakError):
            used_memory = None
        try:
            Conn(port).cmd("SHUTDOWN", "NOSAVE")
        except (OSError, SoakError):
            pass
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            problems.append("redis-server did not exit after SHUTDOWN")
        err.seek(0)
        sp, summary = check_stats(err.read(), used_memory)
        problems += sp
        peak = max((r for _, r, _ in samples), default=0)
        print("soak: %d s, %d clients, %d operations (%.0f/s), every answer checked; RSS: "
              "second quarter max %.0f MiB, second half max %.0f MiB, peak %.0f MiB; %s; "
              "samples in %s" % (a.seconds, a.clients, ops, ops / max(a.seconds, 1),
                                 max(q2, default=0), max(late, default=0), peak, summary,
                                 os.path.join(out, "soak-rss.csv")))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
