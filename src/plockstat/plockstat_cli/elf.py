"""ELF facts about a program before it runs: static, set-user-ID, what libplockstat exports (-V)."""
import os
import struct

from .common import VERSION, die, note


def elf_info(path):
    """(is_elf, has_interp, is_setuid)"""
    try:
        st = os.stat(path)
        with open(path, "rb") as f:
            hdr = f.read(64)
            if hdr[:4] != b"\x7fELF" or hdr[4] != 2:
                return False, False, False
            phoff, = struct.unpack_from("<Q", hdr, 32)
            phentsize, phnum = struct.unpack_from("<HH", hdr, 54)
            f.seek(phoff)
            ph = f.read(phentsize * phnum)
            interp = any(struct.unpack_from("<I", ph, i * phentsize)[0] == 3 for i in range(phnum))
            return True, interp, bool(st.st_mode & 0o6000)
    except OSError:
        return False, False, False


def elf_exports(path):
    """Defined dynamic symbols with their versions: [(name, version, is_default)]."""
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 40)
    shentsize, shnum, _shstrndx = struct.unpack_from("<HHH", data, 58)
    secs = []
    for i in range(shnum):
        name, typ, flags, addr, off, size, link, info, align, entsize = \
            struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
        secs.append((typ, off, size, link, entsize, info))
    dynsym = next((s for s in secs if s[0] == 11), None)
    versym = next((s for s in secs if s[0] == 0x6fffffff), None)
    verdef = next((s for s in secs if s[0] == 0x6ffffffd), None)
    if not dynsym:
        return []
    strtab = secs[dynsym[3]]

    def cstr(off):
        end = data.index(b"\0", off)
        return data[off:end].decode()
    vnames = {}
    if verdef:
        off = verdef[1]
        for _ in range(verdef[5]):
            _ver, _flags, ndx, cnt, _hash, aux, nxt = struct.unpack_from("<HHHHIII", data, off)
            vname, = struct.unpack_from("<I", data, off + aux)
            vnames[ndx] = cstr(strtab[1] + vname)
            if not nxt:
                break
            off += nxt
    out = []
    n = dynsym[2] // 24
    for i in range(1, n):
        st_name, st_info, _o, st_shndx, _v, _s = struct.unpack_from("<IBBHQQ", data, dynsym[1] + i * 24)
        if st_shndx == 0 or st_shndx >= 0xff00 or (st_info & 0xf) not in (1, 2):
            continue
        ver = ""
        hidden = False
        if versym:
            vs, = struct.unpack_from("<H", data, versym[1] + i * 2)
            hidden = bool(vs & 0x8000)
            ver = vnames.get(vs & 0x7fff, "")
        out.append((cstr(strtab[1] + st_name), ver, not hidden))
    return out


def print_interposed(lib):
    syms = elf_exports(lib)
    by = {}
    for name, ver, dflt in syms:
        by.setdefault(name, []).append(("@@" if dflt else "@") + ver)
    print("plockstat %s: %s interposes (LD_PRELOAD, no root needed):" % (VERSION, lib))
    for name in sorted(by):
        print("  %-28s %s" % (name, " ".join(sorted(by[name]))))
    print("Not seen: locks taken inside libc itself (malloc arenas, stdio), futex(2) used")
    print("directly, and statically linked programs.")


def check_command(cmd):
    path = cmd[0]
    if "/" not in path:
        for d in os.environ.get("PATH", "").split(":"):
            c = os.path.join(d or ".", path)
            if os.path.isfile(c) and os.access(c, os.X_OK):
                path = c
                break
        else:
            die("%s: command not found" % cmd[0], 127)
    if not os.path.exists(path):
        die("%s: no such file" % path, 127)
    is_elf, interp, setuid = elf_info(path)
    if is_elf and not interp:
        die("%s is statically linked: plockstat works by preloading libplockstat.so through the "
            "dynamic linker (LD_PRELOAD), which a static program does not have, so its locks cannot "
            "be observed.  Relink it dynamically (without -static) to use plockstat." % path, 2)
    if setuid and os.getuid() != 0:
        note("warning: %s is set-user-ID: the dynamic linker ignores LD_PRELOAD for it" % path)
    return path


def resolve_path(prog):
    if "/" in prog:
        return prog
    for d in os.environ.get("PATH", "").split(":"):
        c = os.path.join(d or ".", prog)
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None
