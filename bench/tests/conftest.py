"""Shared fixtures: where the build is, and libmtheap.so (which must exist once it is built:
the mtheap smoke tests fail rather than skip, unless MTHEAP_BENCH_ALLOW_MISSING=1)."""

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, BENCH)

BUILD = os.path.abspath(os.environ.get("BENCH_BUILD_DIR", os.path.join(BENCH, "..", "build")))
BIN = os.path.join(BUILD, "bench")
DRIVER = os.path.join(BENCH, "mtheap-bench")


def mtheap_lib():
    return os.environ.get("MTHEAP_LIB") or os.path.join(BUILD, "src", "libmtheap.so")


@pytest.fixture
def mtheap():
    p = mtheap_lib()
    if not os.path.isfile(p):
        if os.environ.get("MTHEAP_BENCH_ALLOW_MISSING") == "1":
            pytest.skip("libmtheap.so not built yet (%s)" % p)
        pytest.fail("libmtheap.so not found at %s: build the mtheap target" % p)
    return p


@pytest.fixture(autouse=True)
def _tmpdir_env(tmp_path, monkeypatch):
    # mmap-lock's data file goes here, not into /var/tmp.
    monkeypatch.setenv("MTHEAP_BENCH_TMPDIR", str(tmp_path))
