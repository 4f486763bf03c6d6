# Run every target from the repository root (the go.work root).
SHELL   := /bin/bash
GO      ?= go
MODULES := libs interfaces slurmctld-operator slurmd-operator sackd-operator slurmdbd-operator autoscaler tests
PKGS    := $(foreach m,$(MODULES),./$(m)/...)
# Unit-test modules run under the race detector; tests/ drives real daemons and runs without it.
RACE_PKGS := $(foreach m,libs interfaces slurmctld-operator slurmd-operator sackd-operator slurmdbd-operator autoscaler,./$(m)/...)

.PHONY: deps images build charms charmcraft-projects tools demo bench test test-unit test-referee test-integration lint fmt clean

deps:
	@scripts/deps.sh

# The Debian machine images (bookworm: Slurm 22.05; trixie: Slurm 24.11; forky: Slurm 26.05) the
# tests boot with systemd-nspawn, cached under build/images and rebuilt only when their package
# list changes.
images:
	@scripts/images.sh

build:
	$(GO) build $(PKGS)

# The local model's CLI and, beside it, its hook tools (jujuc).
tools:
	cd tests && CGO_ENABLED=0 $(GO) build -o ../build/bin/juju-local ./cmd/juju-local
	cd tests && CGO_ENABLED=0 $(GO) build -o ../build/bin/jujuc ./cmd/jujuc
	cd tests && CGO_ENABLED=0 $(GO) build -o ../build/bin/ctlevents ./cmd/ctlevents
	cd autoscaler && CGO_ENABLED=0 $(GO) build -o ../build/bin/slurm-autoscaler ./cmd/slurm-autoscaler

# Packed charms, as `juju deploy` takes them: build/slurmctld.charm, build/slurmd.charm,
# build/sackd.charm and build/slurmdbd.charm.
charms:
	$(GO) run ./tests/cmd/charmpack -o build/slurmctld.charm slurmctld-operator
	$(GO) run ./tests/cmd/charmpack -o build/slurmd.charm slurmd-operator
	$(GO) run ./tests/cmd/charmpack -o build/sackd.charm sackd-operator
	$(GO) run ./tests/cmd/charmpack -o build/slurmdbd.charm slurmdbd-operator

# Self-contained charmcraft projects (the charm plus the libs and interfaces it uses), for a
# plain `charmcraft pack` (managed mode mounts only the project directory):
#   make charmcraft-projects && cd build/charmcraft/slurmd-operator && charmcraft pack
charmcraft-projects:
	rm -rf build/charmcraft
	$(GO) run ./tests/cmd/charmpack --stage build/charmcraft/slurmctld-operator slurmctld-operator
	$(GO) run ./tests/cmd/charmpack --stage build/charmcraft/slurmd-operator slurmd-operator
	$(GO) run ./tests/cmd/charmpack --stage build/charmcraft/sackd-operator sackd-operator
	$(GO) run ./tests/cmd/charmpack --stage build/charmcraft/slurmdbd-operator slurmdbd-operator

# The main job: a real Slurm cluster run by the operators under the local model (needs root).
# TARGET=pebble (default), bookworm, trixie or forky: see scripts/demo.sh.
demo: deps tools charms
	TARGET=$(TARGET) scripts/demo.sh

# Benchmarks (docs/benchmarks.md), on real Slurm through the local model (needs root): prints
# name=value lines and writes build/bench.json, build/bench.md (with each figure's spread),
# build/bench-join.svg, build/bench-scale.svg and build/bench-trace.txt.
bench: deps
	$(GO) run ./tests/cmd/bench -out build

# The README's test command: unit tests (race), then the integration tests on real hosts, then
# one summary of both: passed, failed and skipped tests per package, every skip with its reason,
# and the closing line "N passed, N failed, N skipped in N packages". Each test target streams
# go test's usual lines through build/bin/testsummary (tests/cmd/testsummary), which keeps the
# run's JSON in build/test-*.json. Under CI=true a skipped test fails the run unless it is one
# of these helper tests (tests that skip themselves unless another test runs them):
SKIP_HELPERS := TestCrashChild,TestMachineCrashChild,TestRecordSlurm,TestRealLifecycle,TestRealNoReload,TestRealRestartOnFailure,TestRealKillAll,TestRealSuccessSignals,TestRealMunge,TestRealUnknownUnit
TESTSUMMARY   = build/bin/testsummary -helpers $(SKIP_HELPERS)

test: deps lint test-unit test-referee test-integration
	@$(TESTSUMMARY) -quiet build/test-unit.json build/test-referee.json build/test-integration.json

build/bin/testsummary: $(wildcard tests/cmd/testsummary/*.go)
	$(GO) build -o $@ ./tests/cmd/testsummary

test-unit: build/bin/testsummary
	set -o pipefail; $(GO) test -json -race -count=1 $(RACE_PKGS) | tee build/test-unit.json | $(TESTSUMMARY)

# The referee (tests/referee, docs/fidelity.md): Juju 3.6's own hook tools and resolver, in a
# module of its own outside the workspace (GOWORK=off). Its own tests run here; the model's and
# the e2e tests run every model under it (model.Options.Referee). Building it first also fills
# the build cache the test packages' builds of it then hit.
test-referee: build/bin/testsummary
	set -o pipefail; cd tests/referee && GOWORK=off CGO_ENABLED=0 $(GO) test -json -count=1 ./... | tee ../../build/test-referee.json | ../../$(TESTSUMMARY)

# The bound only keeps a hung package from hanging CI: tests/e2e took 12.8 min under a load
# average of 8 to 16 on 2 cores with the Debian 14 machines (issue 24).
test-integration: deps images build/bin/testsummary
	set -o pipefail; $(GO) test -json -count=1 -timeout 45m ./tests/... | tee build/test-integration.json | $(TESTSUMMARY)

lint: deps
	@bad=$$(gofmt -l $(MODULES)); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi
	$(GO) vet $(PKGS)
	cd tests/referee && GOWORK=off $(GO) vet ./...
	cd tests/referee && GOWORK=off ../../build/bin/staticcheck ./...
	build/bin/staticcheck $(PKGS)

fmt:
	gofmt -w $(MODULES)

clean:
	rm -rf build
