# seedkit — build, test and measure. A fresh machine needs `make demo` and `make test`.
SWIFT      ?= swift
SWIFTFLAGS := -Xswiftc -warnings-as-errors
SHARED     ?= ../shared
VECTORS    ?= $(SHARED)/vectors/canonical-v1.json
SEEDKIT    := .build/debug/seedkit

.PHONY: all deps build release test bench demo clean crash fuzz drills install docs
PREFIX     ?= /usr/local

all: build

deps:
	@scripts/deps.sh

build: deps
	$(SWIFT) build $(SWIFTFLAGS)

release: deps
	$(SWIFT) build -c release $(SWIFTFLAGS)

test: deps
	@scripts/run-tests.sh

bench: release
	.build/release/seedkit-bench

# The randomized crash harness (docs/reliability.md): 200 trials each of sync, export, install and pipeline run
# by default; SEEDKIT_CRASH_TRIALS and SEEDKIT_CRASH_SEED (printed by every run) reproduce a failure.
crash: deps
	SEEDKIT_CRASH_TRIALS=$${SEEDKIT_CRASH_TRIALS:-200} \
		$(SWIFT) test $(SWIFTFLAGS) --no-parallel --filter 'Harness[A-Za-z]*CrashTests'

# Seeded mutation fuzzing of every input boundary (docs/reliability.md) for SEEDKIT_FUZZ_SECONDS per target
# (default 120); the input under test is kept in SEEDKIT_FUZZ_ARTIFACTS, so a crash leaves it behind.
fuzz: deps
	SEEDKIT_FUZZ_SECONDS=$${SEEDKIT_FUZZ_SECONDS:-120} SEEDKIT_FUZZ_ARTIFACTS=$${SEEDKIT_FUZZ_ARTIFACTS:-.build/fuzz} \
		$(SWIFT) test $(SWIFTFLAGS) --no-parallel --filter 'Fuzz[A-Za-z]*Tests'

# Staging drills (docs/reliability.md): seedkit serve, stores warmed with seedkit sync, a server-side change, sync
# again; converged or a named blocking state. make test runs them small; this runs more rows and stores.
drills: deps
	SEEDKIT_DRILLS=long $(SWIFT) test $(SWIFTFLAGS) --no-parallel --filter 'StagingDrillTests'

demo: build
	@scripts/demo.sh "$(SEEDKIT)" "$(VECTORS)"

# docs/cli.md's option tables (each `<!-- options:NAME -->` region), rewritten from the command declarations;
# CLIDocsTests fails when they drift.
docs: build
	$(SEEDKIT) help --markdown docs/cli.md > docs/cli.md.new && mv docs/cli.md.new docs/cli.md

# A release build of the command, installed as $(PREFIX)/bin/seedkit (make install PREFIX=$$HOME/.local).
install: release
	install -d "$(DESTDIR)$(PREFIX)/bin"
	install -m 0755 .build/release/seedkit "$(DESTDIR)$(PREFIX)/bin/seedkit"

clean:
	rm -rf .build
