#!/usr/bin/env bash
# Installs what the build, the tests and the benchmarks need, only when it is missing,
# so `make test` and `make bench` work on a fresh Debian machine.
set -euo pipefail

pkgs=(cmake ninja-build gcc g++ make python3 pkg-config valgrind
      git perl sqlite3 coreutils strace procps
      openjdk-17-jdk-headless   # tests: a JVM under LD_PRELOAD (javac + java)
      libjemalloc2 libtcmalloc-minimal4 libmimalloc2.0 libtbbmalloc2
      redis-server memcached libmemcached-tools
      libdw-dev)   # plockstat: DWARF source lines in reports (elfutils)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "deps: missing packages: ${missing[*]} (run as root or install them)" >&2
    exit 1
  fi
  echo "deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Python packages for the benchmark driver's plots and the tests.
py_missing=()
python3 -c 'import matplotlib' 2>/dev/null || py_missing+=(matplotlib)
python3 -c 'import pytest' 2>/dev/null || py_missing+=(pytest)
python3 -c 'import jsonschema' 2>/dev/null || py_missing+=(jsonschema)
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "deps: pip installing ${py_missing[*]}"
  python3 -m pip install -q "${py_missing[@]}"
fi
