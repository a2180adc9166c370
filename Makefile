# The README's commands.  CMake does the building; this file only wires the steps together.
BUILD  ?= build
PREFIX ?= /usr/local
OUT    ?= bench-results

CONFIGURE = cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release
# The interpreter scripts/deps.sh chose, as CMake recorded it: tests and driver use the same one.
PYTHON    = $$(sed -n 's/^Python3_EXECUTABLE:[A-Z]*=//p' $(BUILD)/CMakeCache.txt)

.PHONY: all deps build test bench fuzz soak install clean

all: build

deps:
	@bash scripts/deps.sh

build:
	@py=$$(bash scripts/deps.sh --print-python) && \
	  $(CONFIGURE) -DPython3_EXECUTABLE="$$py" >/dev/null && \
	  cmake --build $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j2 --timeout 900

bench: build
	@$(PYTHON) bench/mtheap-bench run --quick --out $(OUT) --build $(BUILD)

# The allocator's API fuzzer for FUZZ_SECONDS (libFuzzer with ASan; clang comes from Debian),
# new inputs merged into tests/fuzz/corpus; without clang, the replay driver's random seeds.
FUZZ_SECONDS ?= 60
fuzz:
	@bash scripts/fuzz.sh $(FUZZ_SECONDS) $(BUILD)

# A real server under libmtheap and a bounded loopback load for SOAK_SECONDS, every answer
# checked, RSS sampled (docs/RELIABILITY.md).
SOAK_SECONDS ?= 600
soak: build
	@$(PYTHON) tests/soak/soak.py --seconds $(SOAK_SECONDS) --lib $(BUILD)/src/libmtheap.so

# No apt or pip here: install builds with what is on the machine (run `make build` first on a
# fresh one) and copies; cmake/ldconfig.cmake refreshes the loader's cache for system prefixes.
install:
	@$(CONFIGURE) >/dev/null && cmake --build $(BUILD) && cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	@rm -rf $(BUILD)
