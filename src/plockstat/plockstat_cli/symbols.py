"""Addresses to names: the batch symbolizer (plockstat-resolve) and lock names."""
import os
import subprocess
import tempfile


class Symbols:
    def __init__(self, proc, resolver):
        self.tab = {}
        addrs = {}
        for e in proc.events:
            addrs.setdefault(e["lock"], False)
            for pc in e["stack"]:
                addrs[pc] = True
        for a, l in proc.locks.items():
            addrs.setdefault(a, False)
            for pc in (l["init_pc"], l["first_pc"], l["init_caller"]):
                if pc:
                    addrs[pc] = True
        for h in proc.holders:
            if h["pc"]:
                addrs[h["pc"]] = True
        for w in proc.waits:
            for a in (w["lock"], w["mutex"]):
                if a:
                    addrs.setdefault(a, False)
            for pc in [w["pc"], w["owner_pc"]] + w["stack"]:
                if pc:
                    addrs[pc] = True
        if not addrs:
            return
        with tempfile.NamedTemporaryFile("w", suffix=".maps", delete=False) as mf:
            mf.write(proc.maps)
            mpath = mf.name
        try:
            inp = "".join("0x%x%s\n" % (a, " r" if r else "") for a, r in addrs.items())
            out = subprocess.run([resolver, "--lines", "--demangle", mpath], input=inp,
                                 capture_output=True, text=True, check=False).stdout
        finally:
            os.unlink(mpath)
        for line in out.split("\n"):
            f = line.split("\t")
            if len(f) < 6:
                continue
            a = int(f[0], 16)
            self.tab[a] = {
                "path": None if f[1] == "-" else f[1], "symbol": None if f[2] == "-" else f[2],
                "offset": int(f[3], 16), "file": None if f[4] == "-" else f[4], "line": int(f[5])}

    def info(self, a):
        return self.tab.get(a, {"path": None, "symbol": None, "offset": 0, "file": None, "line": 0})

    def code(self, a):
        i = self.info(a)
        if not i["path"]:
            return "0x%x" % a
        obj = os.path.basename(i["path"])
        if not i["symbol"]:
            return "%s`0x%x" % (obj, i["offset"])
        return "%s`%s+0x%x" % (obj, i["symbol"], i["offset"])

    def data(self, a):
        """object`symbol for a global lock (object`0xoffset in a stripped object: stable from
        run to run, unlike the address), or None for one on the heap or a stack."""
        i = self.info(a)
        if not i["path"] or i["path"] == "-":
            return None
        obj = os.path.basename(i["path"])
        if not i["symbol"]:
            return "%s`0x%x" % (obj, i["offset"])
        if i["offset"]:
            return "%s`%s+0x%x" % (obj, i["symbol"], i["offset"])
        return "%s`%s" % (obj, i["symbol"])

    def frame(self, a):
        d = {"address": "0x%x" % a, "name": self.code(a)}
        i = self.info(a)
        if i["file"]:
            d["file"] = i["file"]
            d["line"] = i["line"]
        return d


def lock_name(proc, syms, addr, opts=None, as_partner=False):
    """A lock's name: its symbol if it is a global (or inside one); else, in brackets, the
    call that initialized it, that function's caller and the lock's rank among those made
    there (#n, in order of creation: stable from run to run for a program that creates its locks
    in the same order); a condition variable never seen initialized, after the mutex it waits
    with; else the call that first used it.  -x lockaddr appends the address."""
    n = syms.data(addr)
    if not n:
        li = proc.locks.get(addr)
        if li and li["init_pc"]:
            site = syms.code(li["init_pc"])
            if li.get("init_caller"):
                site += " from " + syms.code(li["init_caller"])
            # the rank only where it tells locks apart: a site that made more than one
            if proc.sites is None:
                proc.sites = {}
                for o in proc.locks.values():
                    k = (o["init_pc"], o["init_caller"])
                    proc.sites[k] = proc.sites.get(k, 0) + 1
            many = li["ordinal"] > 1 or proc.sites[(li["init_pc"], li["init_caller"])] > 1
            n = "[%s%s]" % (site, " #%d" % li["ordinal"] if many and li["ordinal"] else "")
        elif li and li.get("partner") and not as_partner:
            n = "[cv of %s]" % lock_name(proc, syms, li["partner"], None, True)
        elif li and li["first_pc"]:
            n = "[%s]" % syms.code(li["first_pc"])
        else:
            n = "0x%x" % addr
    if opts and opts.get("lockaddr") and not n.startswith("0x"):
        n += "@0x%x" % addr
    return n
