# HyperFleet on Temporal. The two commands a new user needs:
#   make run    start the whole system locally (SQLite, embedded defaults)
#   make test   run every test: the unit tier, then the integration tier against real parts
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

export CGO_ENABLED := 0
export GOTOOLCHAIN := local

GO       ?= go
BIN      := $(CURDIR)/bin
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -X github.com/hyperfleet/hyperfleet/internal/version.Version=$(VERSION) \
            -X github.com/hyperfleet/hyperfleet/internal/version.BuildTime=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)
PKGS     := ./...
TEST_TIMEOUT ?= 30m

# Extra flags for `make run`, e.g. RUN_FLAGS="--kubeconfig ~/.kube/config".
RUN_FLAGS ?=

# The real control plane the adapter tests run against, built from Go
# modules (tools/) into bin/ once and reused; about 15 minutes cold on 2 cores.
KUBE_VERSION := v1.37.1
KUBE_LDFLAGS := -s -w -X k8s.io/component-base/version.gitVersion=$(KUBE_VERSION) \
                -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 \
                -X k8s.io/client-go/pkg/version.gitVersion=$(KUBE_VERSION)
TEST_TOOLS := $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/etcd $(BIN)/helm $(BIN)/maestro \
              $(BIN)/temporal-server $(BIN)/temporal-sql-tool
# helm renders and lints the chart in deploy/helm (tests/deploy).
HELM_VERSION := v3.19.0
# The linter `make lint` (and so `make test`) runs; settings in .golangci.yml.
GOLANGCI_VERSION := v2.15.0

.PHONY: all build build-rehearsal run run-ha test test-unit test-unit-race test-tools lint vet fmt-check bench race fuzz clean help

all: build

help: ## list targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: $(BIN)/hyperfleet ## build bin/hyperfleet

$(BIN)/hyperfleet: FORCE
	@mkdir -p $(BIN)
	$(GO) build -ldflags "$(LDFLAGS)" -o $@ ./cmd/hyperfleet

# A test build: the rolling-upgrade test (tests/topology) runs its
# `worker --upgrade-rehearsal` as a release the previous one's histories
# cannot replay on. bin/hyperfleet has no such flag.
build-rehearsal: $(BIN)/hyperfleet-rehearsal

$(BIN)/hyperfleet-rehearsal: FORCE
	@mkdir -p $(BIN)
	$(GO) build -tags rehearsal -ldflags "$(LDFLAGS)" -o $@ ./cmd/hyperfleet

run: build ## start the whole system: API :8000, Temporal + UI :8233, workers, adapters (state in .hyperfleet/)
	$(BIN)/hyperfleet dev $(RUN_FLAGS)

# The production shape as separate processes: PostgreSQL, Temporal's own
# server as four services with its UI, two API replicas, two workers.
run-ha: build $(BIN)/temporal-server $(BIN)/temporal-sql-tool ## start the production shape as separate processes (state in .hyperfleet-ha/)
	$(BIN)/hyperfleet run-ha --bin-dir $(BIN) $(RUN_FLAGS)

# Two tiers: the unit tier (no build tag: pure functions, workflows on
# Temporal's test suite, handlers on SQLite in a temp dir; no servers) runs
# under the race detector, which needs cgo; then the integration tier
# (-tags integration: PostgreSQL, kube-apiserver, Maestro, Temporal's
# server, helm) runs every test. Tests that run the binary (worker and
# Temporal processes) share this build, and the rehearsal test build.
test: lint test-unit-race test-tools build build-rehearsal ## lint (gofmt, golangci-lint with go vet), the unit tier under -race, then every test (fuzz seed corpora included)
	HYPERFLEET_BINARY=$(BIN)/hyperfleet HYPERFLEET_REHEARSAL_BINARY=$(BIN)/hyperfleet-rehearsal $(GO) test -tags integration -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)
	$(GO) test -tags rehearsal -count=1 ./cmd/hyperfleet/

test-unit: ## the unit tier: every test that needs no server, bin/ or ../shared (what `go test ./...` runs)
	$(GO) test -count=1 $(PKGS)

test-unit-race:
	CGO_ENABLED=1 $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) $(PKGS)

test-tools: $(TEST_TOOLS) ## build kube-apiserver, kube-controller-manager, etcd, helm, maestro, temporal-server and temporal-sql-tool into bin/ (cached)

$(BIN)/kube-apiserver $(BIN)/kube-controller-manager &: tools/kubernetes/go.mod tools/kubernetes/go.sum
	@mkdir -p $(BIN)
	@echo "building kube-apiserver and kube-controller-manager $(KUBE_VERSION) (cold: ~15 minutes)"
	cd tools/kubernetes && $(GO) build -trimpath -ldflags "$(KUBE_LDFLAGS)" -o $(BIN)/ \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
	@touch $(BIN)/kube-apiserver $(BIN)/kube-controller-manager

$(BIN)/etcd: tools/etcd/go.mod tools/etcd/go.sum
	@mkdir -p $(BIN)
	cd tools/etcd && $(GO) build -trimpath -ldflags "-s -w" -o $@ go.etcd.io/etcd/server/v3

# One binary holds the Maestro server and agent (`maestro server`,
# `maestro agent`) the Maestro transport's tests run against.
$(BIN)/maestro: tools/maestro/go.mod tools/maestro/go.sum
	@mkdir -p $(BIN)
	@echo "building maestro (server and agent; cold: several minutes)"
	cd tools/maestro && $(GO) build -trimpath -ldflags "-s -w" -o $@ github.com/openshift-online/maestro/cmd/maestro

# Temporal's own server and its SQL schema tool, at the version go.mod pins:
# the production topology (`make run-ha`, tests/topology) runs its four
# services as separate processes on PostgreSQL. The schemas are embedded in
# the tool (`--schema-name postgresql/v12/temporal`). No -trimpath: the
# packages it shares with bin/hyperfleet (the embedded server) then come
# from the build cache.
$(BIN)/temporal-server $(BIN)/temporal-sql-tool &: tools/temporal/go.mod tools/temporal/go.sum
	@mkdir -p $(BIN)
	@echo "building temporal-server and temporal-sql-tool (cold: several minutes)"
	cd tools/temporal && $(GO) build -ldflags "-s -w" -o $(BIN)/temporal-server go.temporal.io/server/cmd/server
	cd tools/temporal && $(GO) build -ldflags "-s -w" -o $(BIN)/temporal-sql-tool go.temporal.io/server/cmd/tools/sql
	@touch $(BIN)/temporal-server $(BIN)/temporal-sql-tool

$(BIN)/helm:
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install helm.sh/helm/v3/cmd/helm@$(HELM_VERSION)

lint: fmt-check $(BIN)/golangci-lint ## gofmt, and golangci-lint (govet, staticcheck, errcheck, revive, gocritic, depguard import rules)
	$(BIN)/golangci-lint run $(PKGS)

$(BIN)/golangci-lint:
	@mkdir -p $(BIN)
	GOBIN=$(BIN) $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './bin/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# The dependent-chain workload runs upstream HyperFleet's end-to-end adapters
# (cl-namespace, cl-job, cl-deployment) from CHAIN_DIR.
HYPERFLEET_COMPAT_DIR ?= ../shared/compat
CHAIN_DIR ?= $(HYPERFLEET_COMPAT_DIR)/upstream-e2e-adapters
# The 100,000-cluster API table of docs/benchmarks.md (300,000 node pools).
API_100K_SCENARIOS ?= get-bare,get,first-page,deep-page,deep-offset,list,search,search3,put-status-500
bench: test-tools build ## Go benchmarks, the API load driver, and reconcile latency, cost, idle load and restart against the poller (figures go in docs/benchmarks.md)
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./apiserver/... ./adapter/...
	$(GO) run ./cmd/hyperfleet-load --db postgres --clusters 10000 --duration 20s
	$(GO) run ./cmd/hyperfleet-load --db sqlite --clusters 10000 --duration 20s
	$(GO) run ./cmd/hyperfleet-load --db sqlite --clusters 100000 --nodepools 3 --duration 10s --scenarios $(API_100K_SCENARIOS)
	$(GO) run ./cmd/hyperfleet-load --db postgres --clusters 100000 --nodepools 3 --duration 10s --scenarios $(API_100K_SCENARIOS)
	$(GO) build -o $(BIN)/hyperfleet-reconcile-load ./cmd/hyperfleet-reconcile-load
	$(BIN)/hyperfleet-reconcile-load --workload chain --chain-dir $(CHAIN_DIR) --clusters 1 --modes temporal,poll
	$(BIN)/hyperfleet-reconcile-load --workload chain --chain-dir $(CHAIN_DIR) --clusters 20 --modes temporal,poll
	$(BIN)/hyperfleet-reconcile-load --workload chain --chain-dir $(CHAIN_DIR) --clusters 10 --scenario changes
	$(BIN)/hyperfleet-reconcile-load --workload maestro --chain-dir $(CHAIN_DIR) --clusters 1 --modes temporal
	$(BIN)/hyperfleet-reconcile-load --workload maestro --chain-dir $(CHAIN_DIR) --clusters 50 --modes temporal
	$(BIN)/hyperfleet-reconcile-load --workload namespace --chain-dir $(CHAIN_DIR) --clusters 1 --modes temporal
	$(BIN)/hyperfleet-reconcile-load --workload namespace --chain-dir $(CHAIN_DIR) --clusters 50 --modes temporal
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 10 --scenario changes
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 200 --modes temporal,poll
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 1000 --modes temporal,poll --timeout 30m
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 200 --scenario idle --stability-window 30s --idle 2m
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 200 --scenario idle --stability-window 30s --watched-stability-window 10m --idle 12m
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 5 --scenario drift
	$(BIN)/hyperfleet-reconcile-load --workload maestro --chain-dir $(CHAIN_DIR) --clusters 5 --scenario drift
	$(BIN)/hyperfleet-reconcile-load --clusters 20000 --scenario restart --concurrency 40 --timeout 30m
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 100 --modes temporal,production --workers 2 --watchers 1000 --timeout 10m
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 1000 --modes production --workers 2 --reconciliation-readers 100 --timeout 25m
	$(BIN)/hyperfleet-reconcile-load --workload status --scenario single --clusters 40 --modes temporal,production
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 5000 --modes temporal,production --workers 2 --timeout 40m
	$(BIN)/hyperfleet-reconcile-load --workload shipped --clusters 10000 --modes temporal,production --workers 2 --timeout 70m

# The race detector needs cgo. `make test` runs the unit tier under it;
# this also runs the end-to-end reconcile tests under it.
race: test-tools build ## unit, workflow and end-to-end reconcile tests under the race detector
	HYPERFLEET_BINARY=$(BIN)/hyperfleet CGO_ENABLED=1 $(GO) test -race -tags integration -count=1 -timeout $(TEST_TIMEOUT) \
		./adapter/... ./activities/ ./workflows/... ./apiserver/... ./internal/... ./tests/reconcile

FUZZTIME ?= 60s
fuzz: ## run each fuzz target for FUZZTIME (new findings land in testdata/fuzz)
	$(GO) test -run '^$$' -fuzz FuzzTranslate -fuzztime $(FUZZTIME) ./apiserver/search/
	$(GO) test -run '^$$' -fuzz FuzzDecodeBodies -fuzztime $(FUZZTIME) ./apiserver/request/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME) ./adapter/taskconfig/
	$(GO) test -run '^$$' -fuzz FuzzEval -fuzztime $(FUZZTIME) ./adapter/expr/
	$(GO) test -run '^$$' -fuzz FuzzRender -fuzztime $(FUZZTIME) ./adapter/template/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) ./apiserver/pagetoken/
	$(GO) test -run '^$$' -fuzz FuzzScanStoredDocuments -fuzztime $(FUZZTIME) ./apiserver/store/
	$(GO) test -run '^$$' -fuzz FuzzAppendJSON -fuzztime $(FUZZTIME) ./resource/
	$(GO) test -run '^$$' -fuzz FuzzEqual -fuzztime $(FUZZTIME) ./internal/jsonnum/
	$(GO) test -run '^$$' -fuzz FuzzResolve -fuzztime $(FUZZTIME) ./apiserver/tenancy/
	$(GO) test -run '^$$' -fuzz FuzzProject -fuzztime $(FUZZTIME) ./apiserver/projection/

clean: ## remove built binaries and local state
	rm -rf $(BIN) .hyperfleet .hyperfleet-ha out

FORCE:
