#!/usr/bin/env bash
# make install's promise: header, shared and static library, mtheap.pc and the CMake package
# config under a prefix, usable by a program that knows nothing of this source tree, and the
# programs linked against them start as the README says (custom prefix: rpath from pkg-config).
set -euo pipefail
build=$1; src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
unset LD_LIBRARY_PATH LD_PRELOAD
log=$(cmake --install "$build" --prefix "$prefix")
for f in include/mtheap.h lib/libmtheap.so lib/libmtheap.a lib/pkgconfig/mtheap.pc lib/cmake/mtheap/mtheapConfig.cmake; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
# A custom prefix is not in the loader's path: the install says how to link instead.
grep -q "is not in the dynamic loader's search path" <<<"$log" ||
  { echo "install into $prefix did not say how programs find the library:"; echo "$log"; exit 1; }

export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
libdir=$(pkg-config --variable=libdir mtheap)
[ "$(cd "$libdir" && pwd -P)" = "$(cd "$prefix/lib" && pwd -P)" ] ||
  { echo "pkg-config libdir $libdir is not $prefix/lib"; exit 1; }
# pkg-config, shared, as the README shows it for a custom prefix: link and run, no LD_LIBRARY_PATH.
cc -o "$work/pc" "$src/consumer.c" $(pkg-config --cflags --libs mtheap) -Wl,-rpath,"$libdir"
"$work/pc"
# Without the rpath the loader must fail cleanly (proves the run above used the rpath).
cc -o "$work/pc_norpath" "$src/consumer.c" $(pkg-config --cflags --libs mtheap)
if "$work/pc_norpath" 2>/dev/null; then echo "pc_norpath ran without rpath: the test proves nothing"; exit 1; fi
LD_LIBRARY_PATH=$libdir "$work/pc_norpath"
# find_package, shared and static: CMake puts the imported library's directory in the rpath.
mkdir -p "$work/c"; cp "$src/consumer.c" "$work/c/"; cp "$src/CMakeLists.txt.in" "$work/c/CMakeLists.txt"
cmake -S "$work/c" -B "$work/c/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/c/b" >/dev/null
"$work/c/b/consumer_cmake"
"$work/c/b/consumer_cmake_static"
ldd "$work/c/b/consumer_cmake_static" | grep -q libmtheap && { echo "static consumer still links libmtheap.so"; exit 1; }

# A prefix the dynamic loader searches (as /usr/local/lib is): the install must run ldconfig,
# so a program linked with plain `pkg-config --libs mtheap` starts as it is.  Needs root (CI
# is): the prefix is made a loader directory for the test's duration by a file in
# /etc/ld.so.conf.d, removed again (and the cache rebuilt) however the test ends.
if [ "$(id -u)" = 0 ] && [ -d /etc/ld.so.conf.d ] && command -v ldconfig >/dev/null; then
  sysprefix=$work/sysprefix
  conf=/etc/ld.so.conf.d/zz-mtheap-install-test-$$.conf
  trap 'rm -f "$conf"; ldconfig; rm -rf "$work"' EXIT
  mkdir -p "$sysprefix/lib"
  echo "$sysprefix/lib" > "$conf"
  ldconfig
  log=$(cmake --install "$build" --prefix "$sysprefix")
  grep -q "Running ldconfig" <<<"$log" || { echo "install into a loader directory ran no ldconfig:"; echo "$log"; exit 1; }
  PKG_CONFIG_PATH=$sysprefix/lib/pkgconfig cc -o "$work/sys" "$src/consumer.c" \
    $(PKG_CONFIG_PATH=$sysprefix/lib/pkgconfig pkg-config --cflags --libs mtheap)
  "$work/sys"
  echo "system-prefix install: ldconfig ran, the consumer started without LD_LIBRARY_PATH"
else
  echo "system-prefix install not tested: needs root and ldconfig"
fi
echo "install test ok"
