"""Reading what libplockstat wrote: one data file per process image, exec markers."""
import os

from .common import note


class Proc:
    def __init__(self):
        self.hdr = {}
        self.threads = []
        self.events = []
        self.locks = {}
        self.holders = []
        self.waits = []    # threads blocked when the data was written
        self.maps = ""
        self.sites = None  # (init pc, caller) -> locks made there, for lock_name


def parse_data(path):
    p = Proc()
    with open(path, "r", errors="replace") as f:
        text = f.read()
    head, _, maps = text.partition("\nmaps\n")
    p.maps = maps
    p.bad_lines = 0
    for line in head.split("\n"):
        if line:
            try:
                parse_line(p, line)
            except (ValueError, IndexError):
                # a damaged line (a file cut short by a kill, a disk error) costs that line
                p.bad_lines += 1
    if p.bad_lines:
        note("%s: %d malformed line%s skipped" % (os.path.basename(path), p.bad_lines,
                                                 "" if p.bad_lines == 1 else "s"))
    for k in ("pid", "ppid", "image_start_ns", "window_start_ns", "end_ns", "hold",
              "holdsample", "depth", "dropped", "evrows", "evsize", "signal"):
        try:
            p.hdr[k] = int(p.hdr.get(k, "0") or 0)
        except ValueError:
            raise ValueError("bad header field %s: %r" % (k, p.hdr[k][:40]))
    return p


def parse_line(p, line):
    """One record of the data file (format: src/plockstat/datafile.c) into p."""
    parts = line.split(" ")
    tag = parts[0]
    if tag == "T" and len(parts) >= 13:
        p.threads.append({
            "tid": int(parts[1]), "alive": parts[2] == "1", "start_ns": int(parts[3]),
            "end_ns": int(parts[4]), "run_ns": int(parts[5]), "lat_ns": int(parts[6]),
            "lck_ns": int(parts[7]), "cvw_ns": int(parts[8]), "acquisitions": int(parts[9]),
            "blocks": int(parts[10]), "cv_waits": int(parts[11]), "name": " ".join(parts[12:])})
    elif tag == "E" and len(parts) >= 10:
        hist = {}
        if parts[8] != "-":
            for kv in parts[8].split(","):
                b, c = kv.split(":")
                hist[int(b)] = int(c)
        stack = [int(x, 16) for x in parts[9].split(",") if x]
        p.events.append({
            "kind": int(parts[1]), "flags": int(parts[2]), "ltype": int(parts[3]),
            "lock": int(parts[4], 16), "count": int(parts[5]), "sum": int(parts[6]),
            "max": int(parts[7]), "hist": hist, "stack": stack})
    elif tag == "L" and len(parts) >= 8:
        extra = parts[8:11] if len(parts) >= 11 else ["0", "0", "0"]
        p.locks[int(parts[1], 16)] = {
            "ltype": int(parts[2]), "subkind": int(parts[3]), "init_pc": int(parts[4], 16),
            "first_pc": int(parts[5], 16), "reads_while_wwait": int(parts[6]),
            "wwait_busy_ns": int(parts[7]), "init_caller": int(extra[0], 16),
            "ordinal": int(extra[1]), "partner": int(extra[2], 16)}
    elif tag == "H" and len(parts) >= 6:
        p.holders.append({"lock": int(parts[1], 16), "tid": int(parts[2]),
                          "pc": int(parts[3], 16), "count": int(parts[4]), "sum": int(parts[5])})
    elif tag == "W" and len(parts) >= 10:
        p.waits.append({"tid": int(parts[1]), "kind": int(parts[2]), "lock": int(parts[3], 16),
                        "mutex": int(parts[4], 16), "waited_ns": int(parts[5]),
                        "pc": int(parts[6], 16), "owner": int(parts[7]),
                        "owner_pc": int(parts[8], 16),
                        "stack": [int(x, 16) for x in parts[9].split(",") if x]})
    elif tag in ("T", "E", "L", "H", "W"):
        raise ValueError("short %s record" % tag)
    else:
        p.hdr[tag] = " ".join(parts[1:])


def load_dir(d):
    procs = []
    for name in sorted(os.listdir(d)):
        if name.endswith(".data"):
            try:
                procs.append(parse_data(os.path.join(d, name)))
            except (OSError, ValueError) as e:
                note("skipping unreadable %s: %s" % (name, e))
    procs.sort(key=lambda p: (p.hdr["image_start_ns"], p.hdr["pid"]))
    return procs


def expired_file(d, pid):
    """Has pid written the data file of an expired -e window?  (Its exec'd images and its
    other dumps carry other reasons.)"""
    for n in os.listdir(d):
        if n.startswith("%d." % pid) and n.endswith(".data"):
            try:
                with open(os.path.join(d, n)) as f:
                    if "\nreason expired\n" in f.read(4096):
                        return True
            except OSError:
                pass
    return False


def exec_markers(d):
    """pid -> path for the <pid>.exec files vfork children leave before they exec."""
    out = {}
    for n in os.listdir(d):
        if n.endswith(".exec") and n[:-5].isdigit():
            try:
                with open(os.path.join(d, n)) as f:
                    out[int(n[:-5])] = f.read().partition("exec_path ")[2].strip()
            except OSError:
                pass
    return out
