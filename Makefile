# Chronos build and test entry points. `make test` is what CI runs.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(or $(shell command -v staticcheck 2>/dev/null),$(GOBIN)/staticcheck)
# TEST_TIMEOUT bounds each test binary. The fault suite with the long
# scenarios (CI) takes about 9 minutes; on a throttled machine it took 12
# and hit the old bound mid-scenario.
TEST_TIMEOUT ?= 14m
# TEST_P is how many test binaries run at once (go test -p; Go's default is
# the number of CPUs): most packages' tests wait on real time more than they
# compute, so on two cores four overlap their waits instead of queueing.
TEST_P      ?= 4
# TEST_PARALLEL is how many of a package's parallel tests run at once (go
# test -parallel; Go's default is the number of CPUs). The sql package's
# tests wait on Postgres round trips, and at two it ran on alone for the
# last minute of a run: at four a plain `make test` took 4m25–4m34 in
# three runs (5m05 at two, the same hour). .ci/run keeps two beside its
# long fault scenarios.
TEST_PARALLEL ?= 4
FUZZTIME    ?= 20s
# GOTEST_FLAGS are passed on to go test in gotest (.ci/run skips TestCrash
# there with -skip and runs it alone afterwards: see test-crash).
GOTEST_FLAGS ?=
PKGS        ?= ./...
# SLOWEST_FIRST are the packages whose tests take longest, longest first:
# go test starts packages in the order named (./... after them adds the
# rest, each once), so the long ones do not start last and run on alone
# while the machine's other core idles.
SLOWEST_FIRST := ./sql/ ./faults/ ./reactor/ ./bench/ ./ui/ ./cmd/chronos/ ./tickets/tests/ ./http/
GOTEST_PKGS   := $(if $(filter ./...,$(PKGS)),$(SLOWEST_FIRST) $(PKGS),$(PKGS))

.PHONY: test test-crash fmt-check vet staticcheck lint gotest gotest-deploy build image fuzz bench dev clean screenshots

## test: gofmt check, then go vet, staticcheck and go test -race against a real Postgres
## (the chronos module and the deploy module's checks of deploy/ and compose.yaml)
## side by side: most of a test run waits on real time (instances starting, leases
## expiring, cron seconds), which the analyzers' CPU fills. Both modules' tests share
## one Postgres (a throwaway cluster is started once): the inner scripts/testdb.sh
## calls see TEST_DATABASE_URL set and use it as it is.
test: fmt-check
	bash scripts/testdb.sh $(MAKE) --no-print-directory -j4 vet staticcheck gotest gotest-deploy

## lint: gofmt check, go vet and staticcheck.
lint: fmt-check vet staticcheck

fmt-check:
	@files=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path './bin/*')); \
	if [ -n "$$files" ]; then echo "gofmt: these files are not formatted (run gofmt -w):"; echo "$$files"; exit 1; fi; \
	echo "gofmt: ok"

vet:
	$(GO) vet $(PKGS)
	cd deploy && $(GO) vet ./...

$(GOBIN)/staticcheck:
	GOBIN=$(GOBIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)
	cd deploy && $(STATICCHECK) ./...

## gotest: go test -race with TEST_DATABASE_URL from scripts/testdb.sh
## (CHRONOS_TESTDB=auto|server|local|docker picks where Postgres comes from).
gotest:
	bash scripts/testdb.sh $(GO) test -race -p $(TEST_P) -parallel $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) $(GOTEST_FLAGS) $(GOTEST_PKGS)

## test-crash: faults/TestCrash alone (a Postgres cluster of its own, killed twice
## under a burst). .ci/run runs it after make test rather than inside it: beside
## the other packages on a throttled machine its recovery took minutes (session 14's
## CI), and alone it takes about a minute and a half. It is as strict either way.
test-crash:
	CHRONOS_LONG_TESTS=1 bash scripts/testdb.sh $(GO) test -race -count=1 -timeout 10m -run '^TestCrash$$' ./faults/

## gotest-deploy: the deploy module (its own go.mod, so Prometheus's, Kubernetes's and
## compose's parsers stay out of chronos's dependencies): dashboard, alert rules,
## Kubernetes manifests, systemd unit, compose.yaml.
gotest-deploy:
	cd deploy && bash ../scripts/testdb.sh $(GO) test -race -p $(TEST_P) -timeout $(TEST_TIMEOUT) ./...

# Stamped into the binary (`chronos version`) with -ldflags, so it holds
# even where Go's own VCS stamping cannot run (-buildvcs=false, no .git).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)

## build: the chronos binary in bin/, version and commit stamped.
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/chronos ./cmd/chronos

## image: the production container image, chronos:$(VERSION) (needs Docker).
image:
	docker build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t chronos:$(VERSION) .

## fuzz: every fuzz target for FUZZTIME each.
fuzz:
	FUZZTIME=$(FUZZTIME) bash scripts/testdb.sh bash scripts/fuzz.sh

## bench: the data layer's go benchmarks (claim+complete throughput); the
## end-to-end load generator is `chronos bench`.
bench:
	bash scripts/testdb.sh $(GO) test -run '^$$' -bench . -benchmem -timeout 20m ./sql/...

## screenshots: every console page, light and dark, rendered by Chromium
## into docs/ (ui/screenshots_test.go); commit the PNGs with the change.
screenshots:
	CHRONOS_SCREENSHOTS=$(CURDIR)/docs bash scripts/testdb.sh $(GO) test -count=1 -run '^TestScreenshots$$' ./ui/

## dev: the local development environment.
dev:
	bash scripts/dev.sh

clean:
	rm -rf bin
