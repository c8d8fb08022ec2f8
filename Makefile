# Chronos build and test entry points. `make test` is what CI runs.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := test

GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK_VERSION := v0.8.2
STATICCHECK := $(or $(shell command -v staticcheck 2>/dev/null),$(GOBIN)/staticcheck)
TEST_TIMEOUT ?= 12m
FUZZTIME    ?= 20s
PKGS        ?= ./...

.PHONY: test fmt-check vet staticcheck lint gotest build fuzz bench dev clean screenshots

## test: gofmt check, go vet, staticcheck, then go test -race against a real Postgres.
test: lint gotest

## lint: gofmt check, go vet and staticcheck.
lint: fmt-check vet staticcheck

fmt-check:
	@files=$$(gofmt -l $$(find . -name '*.go' -not -path './.git/*' -not -path './bin/*')); \
	if [ -n "$$files" ]; then echo "gofmt: these files are not formatted (run gofmt -w):"; echo "$$files"; exit 1; fi; \
	echo "gofmt: ok"

vet:
	$(GO) vet $(PKGS)

$(GOBIN)/staticcheck:
	GOBIN=$(GOBIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

staticcheck: $(STATICCHECK)
	$(STATICCHECK) $(PKGS)

## gotest: go test -race with TEST_DATABASE_URL from scripts/testdb.sh
## (CHRONOS_TESTDB=auto|server|local|docker picks where Postgres comes from).
gotest:
	bash scripts/testdb.sh $(GO) test -race -timeout $(TEST_TIMEOUT) $(PKGS)

## build: the chronos binary in bin/.
build:
	$(GO) build -o bin/chronos ./cmd/chronos

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
