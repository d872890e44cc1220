# o2ims-operator. `make run-local` shows it working; `make test` runs everything CI runs.
SHELL    := bash
BIN      := bin/o2ims-operator
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 8s
# make chaos: the model-based day-2 run (handlers/model_test.go), 10 000 steps
MODEL_SEQUENCES ?= 250
MODEL_STEPS     ?= 40
# Model sequences run at once (each mostly sleeps between steps, so more than the CPUs).
MODEL_PARALLEL  ?= 8
IMAGE    ?= o2ims-operator:$(VERSION)
# The real kube-apiserver, kubectl and etcd, built from the Go module proxy once and cached.
ASSETS    = $(shell ./hack/tools.sh)
# ORY Hydra, the OAuth 2.0 server the NBI's OAuth tests run against, built the same way (hack/hydra.sh).
HYDRA     = $(shell ./hack/hydra.sh)
# When make started, so run-local can say how long the whole thing took.
STARTED  := $(shell date +%s%N)

.PHONY: all help build tools test lint fuzz run-local bench chaos image clean

all: build ## the binary (as build)

# Every target with its "## " line, one line each.
help: ## this list
	@awk -F':.*## ' '/^[a-z][a-z-]*:.*## / {printf "  %-10s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

build: ## bin/o2ims-operator, static, VERSION from git describe
	./hack/build.sh $(BIN) $(VERSION)

# Built the first time (~5 min), then reused.
tools: ## the real kube-apiserver, kubectl and etcd the tests run, built once
	@echo "[$$(date +%T)] tools: kube-apiserver, kubectl, etcd"
	@./hack/tools.sh >/dev/null
	@echo "[$$(date +%T)] tools: ORY Hydra"
	@./hack/hydra.sh >/dev/null

test: lint tools ## everything CI runs: lint, every test on a real API server (-race), short fuzzing
	@echo "[$$(date +%T)] go test -race ./..."
	O2IMS_KUBE_ASSETS="$(ASSETS)" O2IMS_HYDRA="$(HYDRA)" go test -race -count=1 -timeout 25m ./...
	@echo "[$$(date +%T)] fuzzing, $(FUZZTIME) per target"
	./hack/fuzz.sh $(FUZZTIME)
	@echo "[$$(date +%T)] done"

# staticcheck, pinned: built from the Go module proxy on first use, then cached.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: ## gofmt, go vet, staticcheck, a doc comment on every package
	@echo "[$$(date +%T)] lint: gofmt, go vet, staticcheck, package doc comments"
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	go run $(STATICCHECK) ./...
	go test -count=1 -run TestEveryPackageHasADocComment ./tests/policy/

fuzz: ## every fuzz target for FUZZTIME (8s)
	./hack/fuzz.sh $(FUZZTIME)

# ARGS=--until-fulfilled stops everything and exits 0 once the request is FULFILLED (non-zero otherwise).
run-local: tools build ## the whole system on this machine, a request through the NBI to FULFILLED
	O2IMS_KUBE_ASSETS="$(ASSETS)" O2IMS_HYDRA="$(HYDRA)" O2IMS_RUN_LOCAL_START=$(STARTED) go run ./tests/localrun --operator $(BIN) $(ARGS)

bench: tools build ## the benchmarks, written to docs/benchmarks.md
	O2IMS_KUBE_ASSETS="$(ASSETS)" O2IMS_HYDRA="$(HYDRA)" go run ./tests/bench --operator $(BIN) --out docs/benchmarks.md

chaos: tools build ## fault injection and the model-based day-2 run, written to docs/chaos.md
	O2IMS_KUBE_ASSETS="$(ASSETS)" go test -count=1 -timeout 20m -run . ./tests/chaos/ -args -operator=$(CURDIR)/$(BIN) -report=$(CURDIR)/docs/chaos.md
	O2IMS_KUBE_ASSETS="$(ASSETS)" O2IMS_MODEL_SEQUENCES=$(MODEL_SEQUENCES) O2IMS_MODEL_STEPS=$(MODEL_STEPS) O2IMS_MODEL_REPORT=$(CURDIR)/docs/chaos.md \
		go test -count=1 -timeout 40m -parallel $(MODEL_PARALLEL) -run TestModelDay2Sequences ./handlers/

# With Debian's podman, no registry (hack/image.sh); `docker build .` for registries.
image: ## the OCI image IMAGE (o2ims-operator:VERSION)
	./hack/image.sh $(IMAGE) $(VERSION)

clean: ## remove bin/
	rm -rf bin
