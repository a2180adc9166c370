#!/usr/bin/env bash
# make install's promise: header, shared and static library, mtheap.pc and the CMake package
# config under a prefix, usable by a program that knows nothing of this source tree.
set -euo pipefail
build=$1; src=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
for f in include/mtheap.h lib/libmtheap.so lib/libmtheap.a lib/pkgconfig/mtheap.pc lib/cmake/mtheap/mtheapConfig.cmake; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f"; exit 1; }
done
# pkg-config, shared
PKG_CONFIG_PATH=$prefix/lib/pkgconfig cc -o "$work/pc" "$src/consumer.c" $(PKG_CONFIG_PATH=$prefix/lib/pkgconfig pkg-config --cflags --libs mtheap)
LD_LIBRARY_PATH=$prefix/lib "$work/pc"
# find_package, shared and static
mkdir -p "$work/c"; cp "$src/consumer.c" "$work/c/"; cp "$src/CMakeLists.txt.in" "$work/c/CMakeLists.txt"
cmake -S "$work/c" -B "$work/c/b" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/c/b" >/dev/null
LD_LIBRARY_PATH=$prefix/lib "$work/c/b/consumer_cmake"
"$work/c/b/consumer_cmake_static"
ldd "$work/c/b/consumer_cmake_static" | grep -q libmtheap && { echo "static consumer still links libmtheap.so"; exit 1; }
echo "install test ok"
