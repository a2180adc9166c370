#!/usr/bin/env bash
# Dependencies: installs what the build, the tests and the benchmarks need, only what is missing,
# so `make test` and `make bench` work on a fresh Debian 12 machine.
#
#   scripts/deps.sh [--print-python]
#
# Silent and quick when everything is present.  The Python interpreter is chosen once, here:
# the first `python3` on PATH (Debian's /usr/bin/python3 on a stock machine).  Its packages come
# from apt when it is the system's own, externally managed interpreter (PEP 668), and from pip
# only when it is not (a venv, pyenv); never with --break-system-packages.  --print-python prints
# that interpreter's path last, for the Makefile to hand to CMake and the benchmark driver.
set -euo pipefail

print_python=0
case "${1:-}" in
  "") ;;
  --print-python) print_python=1 ;;
  *) echo "usage: scripts/deps.sh [--print-python]" >&2; exit 2 ;;
esac

say() { echo "deps: $*" >&2; }

apt_pkgs=(cmake ninja-build gcc g++ make python3 pkg-config valgrind
          git perl sqlite3 coreutils strace procps
          openjdk-17-jdk-headless   # tests: a JVM under LD_PRELOAD (javac + java)
          libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libtbbmalloc2
          redis-server memcached libmemcached-tools
          z3           # mtheap-bench: a real program that spends its time allocating
          ruby         # mtheap-bench lang-threads: Ruby's threads (Python, Perl, Java above)
          libdw-dev)   # plockstat: DWARF source lines in reports (elfutils)

# Python modules the driver and the tests import, with the Debian package that ships each.
py_mods=(matplotlib pytest jsonschema)
py_debs=(python3-matplotlib python3-pytest python3-jsonschema)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

# The interpreter: python3 on PATH (after apt may have installed it).
find_python() { command -v python3 || true; }

# True when pip must not touch this interpreter: the system's own, marked EXTERNALLY-MANAGED
# (PEP 668), and not a virtual environment.
externally_managed() {
  "$1" - <<'EOF'
import os, sys, sysconfig
marker = os.path.join(sysconfig.get_path("stdlib"), "EXTERNALLY-MANAGED")
sys.exit(0 if os.path.exists(marker) and sys.prefix == sys.base_prefix else 1)
EOF
}

missing_py_mods() {  # prints the indexes (into py_mods) of modules the interpreter lacks
  local py=$1 i
  for i in "${!py_mods[@]}"; do
    "$py" -c "import ${py_mods[$i]}" 2>/dev/null || echo "$i"
  done
}

# apt and dpkg take fcntl locks on these files; unattended-upgrades may hold them for minutes.
apt_locks=(/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock
           /var/cache/apt/archives/lock)
APT_LOCK_WAIT=${APT_LOCK_WAIT:-600}

lock_holder() {  # prints "pid (command)" of a process holding one of apt's locks, if any
  local f ino pid
  for f in "${apt_locks[@]}"; do
    [ -e "$f" ] || continue
    ino=$(stat -c %i "$f")
    # /proc/locks columns: id: POSIX ADVISORY WRITE pid maj:min:inode start end
    pid=$(awk -v ino="$ino" '{ n = split($0, a, " "); for (i = 1; i <= n; i++)
            if (a[i] ~ /^[0-9a-f]+:[0-9a-f]+:[0-9]+$/) { split(a[i], m, ":");
              if (m[3] == ino) { print a[i-1]; exit } } }' /proc/locks)
    if [ -n "$pid" ] && [ -d "/proc/$pid" ]; then
      echo "$pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo '?'))"
      return
    fi
  done
}

wait_for_apt() {
  local holder waited=0
  holder=$(lock_holder)
  [ -z "$holder" ] && return 0
  say "another package manager is running: pid $holder holds apt's lock; waiting up to ${APT_LOCK_WAIT} s for it (APT_LOCK_WAIT=N to change)"
  while [ -n "$holder" ]; do
    if [ "$waited" -ge "$APT_LOCK_WAIT" ]; then
      say "error: apt's lock is still held by pid $holder after ${APT_LOCK_WAIT} s; let it finish (or stop it) and run this again"
      exit 1
    fi
    sleep 2; waited=$((waited + 2))
    holder=$(lock_holder)
  done
  say "apt's lock is free after ${waited} s"
}

# Runs apt-get quietly; on failure shows what apt said.
run_apt() {
  local log rc=0
  log=$(mktemp)
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$APT_LOCK_WAIT" "$@" >"$log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    say "error: 'apt-get $*' failed (exit $rc); its last lines:"
    tail -n 25 "$log" | sed 's/^/  | /' >&2
    rm -f "$log"
    exit 1
  fi
  rm -f "$log"
}

apt_install() {  # apt_install why pkg...
  local why=$1; shift
  local t0=$SECONDS
  if [ "$(id -u)" != 0 ]; then
    say "error: missing $why; install them with: sudo apt-get install -y --no-install-recommends $*"
    exit 1
  fi
  say "installing $# Debian package(s) for $why: $* (usually 1-5 minutes on a fresh machine)"
  wait_for_apt
  # An old or empty package list finds nothing: refresh it first (at most once per run).
  if [ -z "${apt_updated:-}" ]; then
    run_apt update -qq
    apt_updated=1
  fi
  run_apt install -y -qq --no-install-recommends "$@"
  say "installed in $((SECONDS - t0)) s"
}

missing=()
for p in "${apt_pkgs[@]}"; do installed "$p" || missing+=("$p"); done
[ ${#missing[@]} -eq 0 ] || apt_install "build tools, peer allocators and test programs" "${missing[@]}"

py=$(find_python)
if [ -z "$py" ]; then
  say "error: no python3 on PATH even after installing Debian's python3"
  exit 1
fi
mapfile -t lack < <(missing_py_mods "$py")
if [ ${#lack[@]} -gt 0 ]; then
  if externally_managed "$py"; then
    debs=(); for i in "${lack[@]}"; do debs+=("${py_debs[$i]}"); done
    apt_install "Python modules of $py" "${debs[@]}"
  else
    mods=(); for i in "${lack[@]}"; do mods+=("${py_mods[$i]}"); done
    say "pip installing ${mods[*]} into $py (not the system's interpreter)"
    t0=$SECONDS
    "$py" -m pip install -q --disable-pip-version-check "${mods[@]}" ||
      { say "error: pip could not install ${mods[*]} into $py"; exit 1; }
    say "installed in $((SECONDS - t0)) s"
  fi
  mapfile -t lack < <(missing_py_mods "$py")
  if [ ${#lack[@]} -gt 0 ]; then
    mods=(); for i in "${lack[@]}"; do mods+=("${py_mods[$i]}"); done
    say "error: $py still cannot import ${mods[*]} after installing them"
    exit 1
  fi
fi

[ "$print_python" = 1 ] && echo "$py"
exit 0
