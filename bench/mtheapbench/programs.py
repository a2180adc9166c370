"""Real programs with the allocator preloaded: redis, memcached, python, sqlite, perl, ruby, z3.

Servers listen on 127.0.0.1 only, on a port that was free a moment before, get a bounded
number of requests from a client that runs without the preload, and are always stopped (also
when the run fails); a server that does not come up in time is a FAIL, never a hang."""

import os
import re
import shutil
import signal
import socket
import time
import sys

from . import runner, stats
from .workloads import (QUICK, FULL, SMOKE, Workload, base_env, finish_record,
                        record_from_process)

START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _q(mode, quick, full, smoke):
    return {QUICK: quick, FULL: full, SMOKE: smoke}[mode]


class ServerError(Exception):
    pass


class Server:
    """A server child process in its own session, stopped by stop() whatever happened."""

    def __init__(self, cmd, env, log_base, port, probe):
        self.cmd, self.env, self.log_base, self.port, self.probe = cmd, env, log_base, port, probe
        self.proc = None
        self.result = None
        self.t0 = None

    def start(self):
        self.t0 = time.monotonic()
        try:
            self.proc = runner.start(self.cmd, self.env, self.log_base)
        except OSError as e:
            raise ServerError("cannot start %s: %s" % (self.cmd[0], e))
        deadline = time.monotonic() + START_TIMEOUT
        last = None
        while time.monotonic() < deadline:
            pid, status, ru = os.wait4(self.proc.pid, os.WNOHANG)
            if pid == self.proc.pid:
                self.proc.returncode = 0
                err = runner._read(self.log_base + ".err").strip().splitlines()
                out = runner._read(self.log_base + ".out").strip().splitlines()
                tail = (err or out or ["no output"])[-1][:200]
                self.result = "exited"
                raise ServerError("server exited at startup (status %d): %s" % (status, tail))
            try:
                if self.probe(self.port):
                    return
            except OSError as e:
                last = e
            time.sleep(0.05)
        raise ServerError("server did not answer on 127.0.0.1:%d within %.0f s (%s)"
                          % (self.port, START_TIMEOUT, last))

    def stop(self, graceful=None):
        """Asks politely (graceful(port) or SIGTERM), then kills the group.  Returns the
        server's ProcResult (its rusage: CPU time and peak RSS)."""
        if self.proc is None or self.result == "exited":
            return None
        try:
            if graceful:
                try:
                    graceful(self.port)
                except OSError:
                    pass
            else:
                runner.kill_group(self.proc.pid, signal.SIGTERM)
            # finish() kills the group with SIGKILL if the deadline passes.
            res = runner.finish(self.proc, self.log_base, self.t0,
                                time.monotonic() + STOP_TIMEOUT)
        finally:
            runner.kill_group(self.proc.pid)
        self.result = "stopped"
        return res


def _send(port, data, expect=None, timeout=2.0):
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        if expect is None:
            return b""
        buf = b""
        while expect not in buf:
            chunk = s.recv(4096)
            if not chunk:
                break
            buf += chunk
        return buf


class ProgramWorkload(Workload):
    kind = "program"

    def fixed_threads(self, ctx, mode):
        return 1

    def est_seconds(self, mode):
        return {QUICK: self._est[0], FULL: self._est[1], SMOKE: 1.0}[mode]

    def missing_tools(self):
        return [t for t in self.tools if not shutil.which(t)]


class ServerWorkload(ProgramWorkload):
    """Template: start the server with the preload, run the client without it, stop."""

    def server_cmd(self, port, mode):
        raise NotImplementedError

    def client_cmd(self, port, mode):
        raise NotImplementedError

    def probe(self, port):
        raise NotImplementedError

    # A function port -> None that asks the server to exit; None means SIGTERM.
    graceful = None

    def parse_client(self, out):
        raise NotImplementedError

    def preload_for(self, ctx, alloc):
        return alloc.preload()

    def run(self, ctx, alloc, threads, variant, mode, log_base, timeout=None):
        rec = {"cmd": ""}
        missing = self.missing_tools()
        if missing:
            rec.update(status="FAIL", reason="not installed: %s (scripts/deps.sh)"
                       % ", ".join(missing), wall_s=0, user_s=0, sys_s=0, maxrss_kb=0)
            return rec
        timeout = timeout or self.timeout(mode)
        port = free_port()
        scmd = self.server_cmd(port, mode)
        server = Server(scmd, base_env(self.preload_for(ctx, alloc), alloc.env), log_base + ".server",
                        port, self.probe)
        ccmd = self.client_cmd(port, mode)
        rec["cmd"] = " ".join(scmd) + " ; " + " ".join(ccmd)
        client = None
        sres = None
        try:
            server.start()
            client = runner.run(ccmd, base_env(None), timeout, log_base + ".client")
        except ServerError as e:
            rec.update(status="FAIL", reason=str(e))
        finally:
            sres = server.stop(self.graceful)
        if sres is not None:
            # The allocator runs in the server: its CPU time and peak RSS are what we report.
            rec.update(user_s=round(sres.user, 6), sys_s=round(sres.sys, 6),
                       maxrss_kb=sres.maxrss_kb, minflt=sres.minflt, exit=sres.rc,
                       signal=sres.signal)
        else:
            rec.update(user_s=0, sys_s=0, maxrss_kb=0)
        if rec.get("status") == "FAIL":
            rec.setdefault("wall_s", 0)
            return rec
        rec["wall_s"] = round(client.wall, 6)
        if not client.ok:
            tail = (client.stderr.strip().splitlines() or client.stdout.strip().splitlines()
                    or [""])[-1][:200]
            rec.update(status="FAIL", reason="client %s: %s" % (client.describe(), tail))
            return rec
        if sres is not None and sres.signal is not None and sres.signal not in (
                signal.SIGTERM, signal.SIGKILL):
            rec.update(status="FAIL", reason="server crashed: " + sres.describe())
            return rec
        if "cannot be preloaded" in runner._read(log_base + ".server.err"):
            rec.update(status="FAIL", reason="allocator not loaded into the server")
            return rec
        try:
            metric, value, unit, extra = self.parse_client(client.stdout)
        except (ValueError, KeyError, IndexError) as e:
            rec.update(status="FAIL", reason="cannot parse client output: %s" % e)
            return rec
        rec.update(status="ok", reason="", metric=metric, value=value, unit=unit,
                   better="higher", extra=extra)
        return rec


class Redis(ServerWorkload):
    name = "redis"
    description = "redis-server (allocator preloaded) driven by redis-benchmark over loopback"
    tools = ("redis-server", "redis-benchmark")
    _est = (2.12, 8.4)

    def preload_for(self, ctx, alloc):
        # Debian's redis-server links libjemalloc.so.2; for "glibc" preload a forwarder to
        # glibc's malloc, or the run would measure jemalloc.
        if alloc.path is None:
            return ctx.shim("benchglibc")
        return alloc.preload()

    def server_cmd(self, port, mode):
        return ["redis-server", "--bind", "127.0.0.1", "--port", str(port), "--save", "",
                "--appendonly", "no", "--protected-mode", "yes", "--daemonize", "no",
                "--io-threads", "1", "--loglevel", "warning", "--dir", "/tmp"]

    def client_cmd(self, port, mode):
        return ["redis-benchmark", "-h", "127.0.0.1", "-p", str(port), "-q", "--csv",
                "-n", str(_q(mode, 20000, 200000, 500)), "-c", "20", "-d", "200",
                "-r", "100000", "-t", "set,get,incr,lpush,lpop,sadd,hset,lrange_100"]

    def probe(self, port):
        return b"+PONG" in _send(port, b"PING\r\n", b"\r\n", timeout=1.0)

    def graceful(self, port):
        _send(port, b"SHUTDOWN NOSAVE\r\n")

    def parse_client(self, out):
        rates = {}
        for line in out.splitlines():
            cells = [c.strip('"') for c in line.strip().split(",")]
            if len(cells) >= 2 and cells[0] != "test":
                try:
                    rates[cells[0]] = float(cells[1])
                except ValueError:
                    pass
        if not rates:
            raise ValueError("no rates in redis-benchmark output")
        extra = {re.sub(r"\W+", "_", k.lower()).strip("_") + "_rps": v
                 for k, v in rates.items()}
        return "requests_per_s", stats.geomean(rates.values()), "req/s", extra


class Memcached(ServerWorkload):
    name = "memcached"
    description = "memcached (allocator preloaded) driven by memcaslap over loopback"
    tools = ("memcached",)
    _est = (0.64, 5.6)

    @staticmethod
    def client_tool():
        # Debian has called it memcslap and memcaslap; take whichever is installed.
        for t in ("memcaslap", "memcslap"):
            if shutil.which(t):
                return t
        return None

    def missing_tools(self):
        m = super().missing_tools()
        if not self.client_tool():
            m.append("memcaslap (libmemcached-tools)")
        return m

    def server_cmd(self, port, mode):
        return ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "2",
                "-m", "256", "-c", "256", "-u", "root"] if os.geteuid() == 0 else \
               ["memcached", "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-t", "2",
                "-m", "256", "-c", "256"]

    def client_cmd(self, port, mode):
        return [self.client_tool() or "memcaslap", "-s", "127.0.0.1:%d" % port,
                "-x", str(_q(mode, 60000, 400000, 500)), "-c", "16", "-T", "2"]

    def probe(self, port):
        return b"VERSION" in _send(port, b"version\r\n", b"\r\n", timeout=1.0)

    def parse_client(self, out):
        tps = [float(x) for x in re.findall(r"TPS:\s*([0-9.]+)", out)]
        if not tps:
            raise ValueError("no TPS in memcaslap output")
        ops = re.findall(r"Ops:\s*(\d+)", out)
        extra = {"ops": int(ops[-1])} if ops else {}
        return "ops_per_s", tps[-1], "ops/s", extra


class ScriptWorkload(ProgramWorkload):
    """A program that prints a RESULT line (after checking its own results)."""

    def cmd(self, ctx, mode):
        raise NotImplementedError

    def env_extra(self):
        return {}

    def run(self, ctx, alloc, threads, variant, mode, log_base, timeout=None):
        rec = {}
        missing = self.missing_tools()
        if missing:
            rec.update(status="FAIL", reason="not installed: %s" % ", ".join(missing),
                       wall_s=0, user_s=0, sys_s=0, maxrss_kb=0, cmd="")
            return rec
        cmd = self.cmd(ctx, mode)
        env = base_env(alloc.preload(), alloc.env)
        env.update(self.env_extra())
        res = runner.run(cmd, env, timeout or self.timeout(mode), log_base)
        rec.update(record_from_process(res, None))
        rec["cmd"] = " ".join(cmd)
        return finish_record(rec, res)


class Python(ScriptWorkload):
    name = "python"
    description = "python3 allocation-heavy script (PYTHONMALLOC=malloc so the preloaded " \
                  "malloc serves every object)"
    tools = ("python3",)
    _est = (0.71, 4.2)

    def cmd(self, ctx, mode):
        return ["python3", os.path.join(ctx.src_dir, "programs", "alloc_heavy.py"),
                "--scale", str(_q(mode, 2, 8, 1))]

    def env_extra(self):
        return {"PYTHONMALLOC": "malloc", "PYTHONHASHSEED": "0"}


class CheckedProgram(ProgramWorkload):
    """Template: write the program's input, run it with the allocator preloaded, check its
    answer; the metric is its wall time."""

    def command(self, ctx, mode, log_base):
        """(argv, extra): the command, and what the check and the record need to know."""
        raise NotImplementedError

    def check(self, extra, out):
        """None if the program's stdout is the right answer, else what is wrong."""
        raise NotImplementedError

    def run(self, ctx, alloc, threads, variant, mode, log_base, timeout=None):
        from .workloads import fail_reason
        rec = {"cmd": ""}
        missing = self.missing_tools()
        if missing:
            rec.update(status="FAIL", reason="not installed: %s" % ", ".join(missing),
                       wall_s=0, user_s=0, sys_s=0, maxrss_kb=0)
            return rec
        cmd, extra = self.command(ctx, mode, log_base)
        res = runner.run(cmd, base_env(alloc.preload(), alloc.env),
                         timeout or self.timeout(mode), log_base)
        rec.update(record_from_process(res, None))
        rec["cmd"] = " ".join(cmd)
        reason = fail_reason(res, []) or self.check(extra, res.stdout)
        if reason:
            rec.update(status="FAIL", reason=reason)
            return rec
        rec.update(status="ok", reason="", metric="time", value=res.wall, unit="s",
                   better="lower", extra=extra)
        return rec


class Sqlite(CheckedProgram):
    name = "sqlite"
    description = "sqlite3 CLI running an in-memory SQL workload (inserts, indexes, " \
                  "group-by, updates, a join); its answers are checked"
    tools = ("sqlite3",)
    _est = (0.40, 3.5)

    SQL = """
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT, val REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < {n})
  INSERT INTO t SELECT x, x % 97, printf('name-%08d', x), (x * 7919) % 10007 FROM c;
CREATE INDEX t_name ON t(name);
CREATE INDEX t_grp ON t(grp, val);
CREATE TABLE g AS SELECT grp, count(*) AS n, sum(val) AS s,
  group_concat(substr(name, 6, 4)) AS names FROM t GROUP BY grp;
SELECT 'A', count(*), sum(n), sum(s), sum(length(names)) FROM g;
UPDATE t SET name = name || '-x' WHERE id % 3 = 0;
DELETE FROM t WHERE id % 5 = 0;
SELECT 'B', count(*), sum(val), sum(length(name)) FROM t;
SELECT 'C', count(*) FROM t a JOIN t b ON a.id = b.id + 1 WHERE a.grp = b.grp + 1;
"""

    @staticmethod
    def expected(n):
        val = lambda x: (x * 7919) % 10007
        a = (min(n, 97), n, sum(val(x) for x in range(1, n + 1)), 5 * n - min(n, 97))
        kept = [x for x in range(1, n + 1) if x % 5]
        b = (len(kept), sum(val(x) for x in kept), sum(15 if x % 3 == 0 else 13 for x in kept))
        c = sum(1 for x in range(1, n) if x % 5 and (x + 1) % 5 and x % 97 != 96)
        return {"A": a, "B": b, "C": (c,)}

    def rows(self, mode):
        return _q(mode, 150000, 600000, 2000)

    def command(self, ctx, mode, log_base):
        n = self.rows(mode)
        sql = log_base + ".sql"
        with open(sql, "w") as f:
            f.write(self.SQL.format(n=n))
        return ["sqlite3", "-batch", ":memory:", ".read %s" % sql], {"rows": n}

    def check(self, extra, out):
        got = {}
        for line in out.splitlines():
            cells = line.split("|")
            if cells and cells[0] in ("A", "B", "C"):
                try:
                    got[cells[0]] = tuple(float(c) for c in cells[1:])
                except ValueError:
                    pass
        for k, v in self.expected(extra["rows"]).items():
            if k not in got or len(got[k]) != len(v) or any(
                    abs(a - b) > 1e-6 * max(1.0, abs(b)) for a, b in zip(got[k], v)):
                return "self-check: query %s returned %s, expected %s" % (k, got.get(k), v)
        return None


class Perl(ScriptWorkload):
    name = "perl"
    description = "perl building, sorting, deleting and rebuilding a hash of 60,000 records " \
                  "per round (Debian's perl allocates with malloc); its results are checked"
    tools = ("perl",)
    _est = (0.54, 3.5)

    def cmd(self, ctx, mode):
        return ["perl", os.path.join(ctx.src_dir, "programs", "alloc_heavy.pl"),
                "--scale", str(_q(mode, 1, 4, 1))]

    def env_extra(self):
        return {"PERL_HASH_SEED": "0", "PERL_PERTURB_KEYS": "0"}


class Ruby(ScriptWorkload):
    name = "ruby"
    description = "ruby building a 300,000-record hash, re-filtering it five times (its tables, " \
                  "huge blocks, rebuilt and dropped) and sorting 400,000 strings; results checked"
    tools = ("ruby",)
    _est = (3.3, 7.0)

    def cmd(self, ctx, mode):
        return ["ruby", os.path.join(ctx.src_dir, "programs", "alloc_heavy.rb"),
                "--scale", str(_q(mode, 1, 2, 1))]


class Z3(CheckedProgram):
    name = "z3"
    description = "z3 solving n queens as integer constraints (n = 28; 32 in --full); the " \
                  "placement it finds is checked"
    tools = ("z3",)
    _est = (1.70, 9.0)

    def command(self, ctx, mode, log_base):
        n = _q(mode, 28, 32, 10)
        smt = log_base + ".smt2"
        with open(smt, "w") as f:
            f.write(_z3_queens().problem(n))
        return ["z3", smt], {"queens": n}

    def check(self, extra, out):
        return _z3_queens().check(extra["queens"], out)


def _z3_queens():
    """bench/programs/z3_queens.py, the problem and its check (shipped with the workloads)."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "programs")
    if here not in sys.path:
        sys.path.insert(0, here)
    import z3_queens
    return z3_queens


def program_workloads():
    return [Redis(), Memcached(), Python(), Sqlite(), Perl(), Ruby(), Z3()]
