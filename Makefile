# Stackline: `make run` (deps, build, demo) and `make test` are all a fresh machine needs.
SWIFT ?= swift
BIN := .build/debug
RELEASE_BIN := .build/release

FUZZ_SECONDS ?= 60

.PHONY: deps build test test-api run bench fuzz clean man install

deps:
	@scripts/install-deps.sh

build: deps
	$(SWIFT) build

# `man` first: a test renders the generated page. scripts/test.sh builds, then runs the Swift
# suites with schemathesis (test-api) and every fuzz target's seeds through the debug build's
# replay harness (docs/fuzzing.md) beside them; `make fuzz` builds the libFuzzer harness and fuzzes.
test: deps man
	@SWIFT=$(SWIFT) scripts/test.sh

# schemathesis (PyPI, into .build/schemathesis-venv) against the OpenAPI document a real
# `stackline serve` serves: no 5xx, no response outside the document, no endpoint without auth.
test-api: deps
	@scripts/test-api.sh

# Each fuzz target for FUZZ_SECONDS; findings land in .build-fuzz/crashes/TARGET/.
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh

run: build
	@scripts/demo.sh

bench: deps
	$(SWIFT) build -c release
	@scripts/bench.sh

# Man pages from the commands' own help (argument-parser's generate-manual plugin; mdoc, read
# with `man -l`): .build/plugins/GenerateManual/outputs/stackline/stackline.1.
MAN_DIR := .build/plugins/GenerateManual/outputs
# Debug configuration: the pages come from the help text, the same in any build, and the debug
# build is the one `make build` and `make test` already have.
man:
	$(SWIFT) package plugin generate-manual --configuration debug

# `make install PREFIX=~/.local` (DESTDIR for staging; CONFIG=debug skips the release build):
# both binaries side by side (the master finds its worker next to itself), the man pages, and
# bash, zsh and fish completions.
PREFIX ?= /usr/local
CONFIG ?= release
install: man
	$(SWIFT) build -c $(CONFIG) --product stackline
	$(SWIFT) build -c $(CONFIG) --product stackline-worker
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions \
		$(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	install -m 755 .build/$(CONFIG)/stackline .build/$(CONFIG)/stackline-worker $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(MAN_DIR)/stackline/stackline.1 $(MAN_DIR)/stackline-worker/stackline-worker.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	.build/$(CONFIG)/stackline --generate-completion-script bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/stackline
	.build/$(CONFIG)/stackline --generate-completion-script zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_stackline
	.build/$(CONFIG)/stackline --generate-completion-script fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/stackline.fish

clean:
	rm -rf .build .build-fuzz demo-out
