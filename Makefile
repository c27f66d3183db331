# waldur-gitops — run `make help` for the targets.
GO       ?= go
BIN      := bin/waldur-gitops
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS  := -s -w -X github.com/waldur/waldur-gitops/internal/version.Version=$(VERSION)
PKGS     := ./...

.PHONY: help build test test-short lint fmt bench fuzz golden example clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/waldur-gitops
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/waldur-gitops

test: ## run the whole test suite (what CI runs; the first run builds etcd and kube-apiserver, ~5 min)
	$(GO) test -race -count=1 -timeout 45m $(PKGS)

test-short: ## run the fast tests: no race detector, no real kube-apiserver
	$(GO) test -short -count=1 $(PKGS)

lint: ## go vet and a gofmt check
	$(GO) vet $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

bench: ## run every benchmark (see BENCHMARKS.md; takes a while)
	$(GO) test ./bench -run '^$$' -bench . -benchtime 3x -count 1 -timeout 30m
	$(GO) test ./gitsync -run '^$$' -bench . -benchtime 3x -count 1 -timeout 60m
	$(GO) test ./apply -run '^$$' -bench Apply1000 -benchtime 3x -count 1 -benchmem -timeout 30m
	$(GO) test ./keycloak -run '^$$' -bench BenchmarkKeycloak -benchtime 1x -timeout 30m

fuzz: ## fuzz the renderer and the YAML encoder for a minute each
	$(GO) test ./render -run '^$$' -fuzz FuzzRender -fuzztime 60s
	$(GO) test ./manifest -run '^$$' -fuzz FuzzEncode -fuzztime 60s

golden: ## rewrite golden files after checking the change is intended
	$(GO) test ./render ./manifest -update

example: build ## render the bundled example into out/
	$(BIN) render --config examples/config.yaml --snapshot examples/snapshot.json --out out

clean: ## remove build output
	rm -rf bin out
