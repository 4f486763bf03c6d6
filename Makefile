# Run every target from the repository root (the go.work root).
SHELL   := /bin/bash
GO      ?= go
MODULES := libs interfaces slurmctld-operator slurmd-operator tests
PKGS    := $(foreach m,$(MODULES),./$(m)/...)
# Unit-test modules run under the race detector; tests/ drives real daemons and runs without it.
RACE_PKGS := $(foreach m,libs interfaces slurmctld-operator slurmd-operator,./$(m)/...)

.PHONY: deps build test test-unit test-integration lint fmt clean

deps:
	@scripts/deps.sh

build:
	$(GO) build $(PKGS)

# The README's test command: unit tests (race), then the integration tests on real hosts.
test: deps lint test-unit test-integration

test-unit:
	$(GO) test -race -count=1 $(RACE_PKGS)

test-integration: deps
	$(GO) test -count=1 -timeout 15m ./tests/...

lint: deps
	@bad=$$(gofmt -l $(MODULES)); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet $(PKGS)
	build/bin/staticcheck $(PKGS)

fmt:
	gofmt -w $(MODULES)

clean:
	rm -rf build
