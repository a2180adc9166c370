"""Allocators by name: the Debian packages' libraries, this build's libmtheap.so, or name=path."""

import os
import re
import subprocess

LIBDIR = "/usr/lib/x86_64-linux-gnu"

# Debian's package libraries.  tbbmalloc is preloaded through its proxy, which replaces malloc.
KNOWN = {
    "glibc": None,
    "jemalloc": LIBDIR + "/libjemalloc.so.2",
    "tcmalloc": LIBDIR + "/libtcmalloc_minimal.so.4",
    "mimalloc": LIBDIR + "/libmimalloc.so.2",
    "tbbmalloc": LIBDIR + "/libtbbmalloc_proxy.so.2",
    "mtheap": None,  # <build>/src/libmtheap.so, filled in by resolve()
    # The heap-debugging library (not in the default set): its full mode, and the sampled
    # guard-page mode meant for production.  Leaks are not checked: the cost measured is the
    # checking while the program runs.
    "mtheap-debug": None,
    "mtheap-guard": None,
}
DEBUG_ENV = {
    "mtheap-debug": {"MTHEAP_DEBUG": "full,-leaks"},
    "mtheap-guard": {"MTHEAP_DEBUG": "sample=1000"},
}
PACKAGES = {
    "jemalloc": "libjemalloc2",
    "tcmalloc": "libtcmalloc-minimal4",
    "mimalloc": "libmimalloc2.0",
    "tbbmalloc": "libtbbmalloc2",
}
DEFAULT = ["glibc", "jemalloc", "tcmalloc", "mimalloc", "tbbmalloc", "mtheap"]


class AllocatorError(Exception):
    """A name or path that cannot be used: reported before anything runs."""


class Allocator:
    def __init__(self, name, path, env=None):
        self.name = name
        self.path = path  # None for glibc: nothing preloaded
        self.env = dict(env or {})  # variables the allocator is run with (debug modes)

    def preload(self, extra_before=()):
        """The LD_PRELOAD value: helper shims first, so their symbols win, then the allocator."""
        libs = [p for p in extra_before if p]
        if self.path:
            libs.append(self.path)
        return ":".join(libs)

    def __repr__(self):
        return "Allocator(%r, %r)" % (self.name, self.path)


def mtheap_path(build_dir):
    return os.path.join(os.path.abspath(build_dir), "src", "libmtheap.so")


def build_path(name, build_dir):
    """This build's library for mtheap and its debug modes."""
    if name in DEBUG_ENV:
        return os.path.join(os.path.abspath(build_dir), "src", "debug", "libmtheap-debug.so")
    return mtheap_path(build_dir)


def is_elf_shared(path):
    try:
        with open(path, "rb") as f:
            head = f.read(18)
    except OSError:
        return False
    # ELF magic, and e_type ET_DYN (3) at offset 16 (little-endian on x86-64).
    return len(head) == 18 and head[:4] == b"\x7fELF" and head[16] == 3


def preload_error(path):
    """None if the dynamic loader accepts the library as a preload, else its complaint."""
    if not os.path.isfile(path):
        return "no such file"
    if not is_elf_shared(path):
        return "not an ELF shared library"
    env = dict(os.environ, LD_PRELOAD=path)
    try:
        p = subprocess.run(["/bin/true"], env=env, capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return "loading it hangs"
    # ld.so does not fail the program; it prints this and goes on without the library.
    if "cannot be preloaded" in p.stderr or p.returncode != 0:
        msg = p.stderr.strip().splitlines()
        return msg[-1] if msg else "exit status %d" % p.returncode
    return None


def resolve(spec, build_dir):
    """spec: comma-separated names or name=path.  Returns (allocators, skipped), skipped being
    (name, reason) for known allocators whose library is not installed or not built.
    Raises AllocatorError for an unknown name or a path that is not a loadable library."""
    names = [s.strip() for s in spec.split(",") if s.strip()]
    if not names:
        raise AllocatorError("no allocators given")
    out, skipped, seen = [], [], set()
    for item in names:
        if "=" in item:
            name, path = item.split("=", 1)
            name, path = name.strip(), os.path.abspath(os.path.expanduser(path.strip()))
            if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name):
                raise AllocatorError("bad allocator name %r (letters, digits, _.+- only)" % name)
            err = preload_error(path)
            if err:
                raise AllocatorError("allocator %s: %s is not a loadable library: %s"
                                     % (name, path, err))
        elif item in KNOWN:
            name = item
            mine = name == "mtheap" or name in DEBUG_ENV
            path = build_path(name, build_dir) if mine else KNOWN[name]
            if path is not None and not os.path.isfile(path):
                if mine:
                    why = "%s not built (cmake --build %s)" % (path, build_dir)
                else:
                    why = "%s missing (apt-get install %s)" % (path, PACKAGES[name])
                skipped.append((name, why))
                continue
            if path is not None:
                err = preload_error(path)
                if err:
                    raise AllocatorError("allocator %s: %s cannot be preloaded: %s"
                                         % (name, path, err))
        else:
            raise AllocatorError("unknown allocator %r (known: %s; or name=/path/lib.so)"
                                 % (item, ", ".join(KNOWN)))
        if name in seen:
            raise AllocatorError("allocator %s given twice" % name)
        seen.add(name)
        out.append(Allocator(name, path, DEBUG_ENV.get(name)))
    return out, skipped
