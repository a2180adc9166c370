# The README's commands.  CMake does the building; this file only wires the steps together.
BUILD  ?= build
PREFIX ?= /usr/local
OUT    ?= bench-results

.PHONY: all deps build test bench install clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD)

test: build
	@cd $(BUILD) && ctest --output-on-failure -j2 --timeout 900

bench: build
	@python3 bench/mtheap-bench run --quick --out $(OUT) --build $(BUILD)

install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	@rm -rf $(BUILD)
