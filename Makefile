# Stackline: `make run` (deps, build, demo) and `make test` are all a fresh machine needs.
SWIFT ?= swift
BIN := .build/debug
RELEASE_BIN := .build/release

.PHONY: deps build test run bench clean

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

test: deps
	$(SWIFT) test

run: build
	@scripts/demo.sh

bench: deps
	$(SWIFT) build -c release
	@scripts/bench.sh

clean:
	rm -rf .build demo-out
