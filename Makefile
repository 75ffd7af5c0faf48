# seedkit — build, test and measure. A fresh machine needs `make demo` and `make test`.
SWIFT      ?= swift
SWIFTFLAGS := -Xswiftc -warnings-as-errors
SHARED     ?= ../shared
VECTORS    ?= $(SHARED)/vectors/canonical-v1.json
SEEDKIT    := .build/debug/seedkit

.PHONY: all deps build release test bench demo clean

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

demo: build
	@scripts/demo.sh "$(SEEDKIT)" "$(VECTORS)"

clean:
	rm -rf .build
