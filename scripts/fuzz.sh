#!/usr/bin/env bash
# make fuzz: the allocator's API fuzzer (tests/fuzz) for N seconds.  With clang (installed from
# Debian when missing and allowed): libFuzzer + ASan on the prefixed API, starting from the
# checked-in corpus, new inputs merged back into it.  Without: mtfz_replay's generated inputs.
#   scripts/fuzz.sh SECONDS BUILD_DIR
set -euo pipefail
secs=${1:-60}
build=${2:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
corpus=$here/tests/fuzz/corpus
say() { echo "fuzz: $*" >&2; }
case $secs in ''|*[!0-9]*) say "FUZZ_SECONDS must be a number of seconds, got '$secs'"; exit 2;; esac

if ! command -v clang >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    say "installing clang from Debian (libFuzzer comes with it)"
    apt-get install -y -q clang >/dev/null || say "apt-get install clang failed"
  else
    say "clang is not installed; to get libFuzzer: sudo apt-get install -y clang"
  fi
fi

if command -v clang >/dev/null; then
  fb=$build-fuzz
  cmake -S "$here" -B "$fb" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
        -DCMAKE_CXX_COMPILER=clang++ -DMTHEAP_SANITIZER_TESTS=OFF >/dev/null
  if cmake --build "$fb" --target mtfz_libfuzzer >/dev/null 2>&1; then
    work=$(mktemp -d /tmp/mtfz-work.XXXXXX)
    trap 'rm -rf "$work"' EXIT
    say "libFuzzer for $secs s (corpus $corpus, artifacts in $fb/tests/fuzz)"
    ASAN_OPTIONS=abort_on_error=1:detect_leaks=0 "$fb/tests/fuzz/mtfz_libfuzzer" \
      -max_total_time="$secs" -max_len=8192 -timeout=30 -print_final_stats=1 \
      -artifact_prefix="$fb/tests/fuzz/" "$work" "$corpus"
    # keep what is new and interesting, small: merge the work corpus into the checked-in one
    "$fb/tests/fuzz/mtfz_libfuzzer" -merge=1 -max_len=8192 "$corpus" "$work" 2>&1 | tail -1
    exit 0
  fi
  say "clang could not build the libFuzzer target; using the replay driver"
fi
cmake --build "$build" --target mtfz_replay >/dev/null
say "mtfz_replay with generated inputs for $secs s"
"$build/tests/fuzz/mtfz_replay" --seconds "$secs" --seed "$(date +%s)" --len 8192 \
  --crash-dir "$build/tests/fuzz" "$corpus"
