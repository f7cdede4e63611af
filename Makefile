# Stackline: `make run` (deps, build, demo) and `make test` are all a fresh machine needs.
SWIFT ?= swift
BIN := .build/debug
RELEASE_BIN := .build/release

FUZZ_SECONDS ?= 60

.PHONY: deps build test run bench fuzz clean

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

# After the tests, a short libFuzzer pass over every fuzz target (docs/fuzzing.md), so the
# harness keeps building and the seeds keep passing.
test: deps
	$(SWIFT) test
	@FUZZ_SECONDS=2 scripts/fuzz.sh --smoke

# Each fuzz target for FUZZ_SECONDS; findings land in .build-fuzz/crashes/TARGET/.
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

run: build
	@scripts/demo.sh

bench: deps
	$(SWIFT) build -c release
	@scripts/bench.sh

clean:
	rm -rf .build .build-fuzz demo-out
