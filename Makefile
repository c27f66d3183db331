# waldur-gitops — run `make help` for the targets.
GO       ?= go
BIN      := bin/waldur-gitops
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -s -w -X github.com/waldur/waldur-gitops/internal/version.Version=$(VERSION) -X github.com/waldur/waldur-gitops/internal/version.Commit=$(COMMIT)
PKGS     := ./...

.PHONY: help build image test test-short e2e-argocd lint fmt bench fuzz golden example demo clean validate-examples

help: ## list the targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F ':.*## ' '{printf "  %-18s %s\n", $$1, $$2}'

build: ## build bin/waldur-gitops
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/waldur-gitops

# The container image, built without a Docker daemon (docs/image.md). GOARCH=arm64
# builds for arm64; IMAGE_ARCHES="amd64 arm64" writes a multi-platform index.
IMAGE        ?= ghcr.io/waldur/waldur-gitops:$(VERSION)
IMAGE_ARCHES ?= $(or $(GOARCH),amd64)
image: ## build the container image without Docker: bin/image/ (OCI layout) and bin/waldur-gitops-image.tar
	for a in $(IMAGE_ARCHES); do \
	  CGO_ENABLED=0 GOOS=linux GOARCH=$$a $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/linux_$$a/waldur-gitops ./cmd/waldur-gitops || exit 1; \
	done
	GOOS= GOARCH= $(GO) run ./cmd/waldur-gitops-image -version '$(VERSION)' -revision '$(shell git rev-parse HEAD 2>/dev/null)' \
	  -image '$(IMAGE)' $(foreach a,$(IMAGE_ARCHES),-binary linux/$(a)=bin/linux_$(a)/waldur-gitops)

test: ## run the whole test suite (what CI runs; the first run builds etcd and kube-apiserver, ~5 min, the Flux controllers, ~10 min, and fetches Keycloak, ~1 min)
	@echo "make test: the test control plane (etcd, kube-apiserver, kube-controller-manager, built from the Go module proxy into a cache: the first time about 5-6 minutes on 2 cores, then found at once)"
	$(GO) run ./internal/testenv/kubetest/kubeup -build -kcm
	@echo "make test: Keycloak for the Keycloak tests (downloaded once, about 1 minute)"
	$(GO) run ./internal/testenv/keycloaktest/prepare
	@echo "make test: Flux source-controller and kustomize-controller for e2e/flux (built from the Go module proxy into a cache: the first time about 10 CPU-minutes and 1.8 GB of memory, then found at once)"
	$(GO) run ./internal/testenv/fluxtest/prepare
	@echo "make test: RabbitMQ for the event tests (Debian's rabbitmq-server, installed with apt-get once when missing; each test binary starts its own on loopback)"
	$(GO) run ./internal/testenv/rabbittest/prepare
	@echo "make test: headless Chromium for the status page test (Debian's chromium, installed with apt-get once when missing)"
	$(GO) run ./internal/testenv/chromiumtest/prepare
	@echo "make test: promtool for the example alert rules' unit tests (Debian's prometheus, installed with apt-get once when missing)"
	$(GO) run ./internal/testenv/promtest/prepare
	@echo "make test: go test -race over every package (a few minutes once compiled; the first run compiles everything with the race detector, about 10-15 minutes on 2 cores)"
	$(GO) test -race -count=1 -timeout 45m $(PKGS)

test-short: ## run the fast tests: no race detector, no real kube-apiserver
	$(GO) test -short -count=1 $(PKGS)

# Argo CD end to end (e2e/argocd, docs/gitops.md#argo-cd): not part of make
# test. The first run builds Argo CD v3.2.11 and kustomize from the Go module
# proxy and fetches Redis from Debian into ~/.cache/waldur-gitops/argocd
# (about 7-8 minutes and 2 GB of memory on 2 free cores); afterwards the
# target takes about 1-2 minutes. .ci/run calls it when the run so far leaves
# time (CI_ARGOCD=auto, the default), always with CI_ARGOCD=1, never with 0
# (BENCHMARKS.md).
E2E_ARGOCD_TENANTS ?= 100
e2e-argocd: ## Argo CD end to end over examples/argocd, 100 tenants (first run builds Argo CD, ~8 min; then ~1-2 min); not in make test
	$(GO) run ./internal/testenv/kubetest/kubeup -build -kcm
	$(GO) run ./internal/testenv/argotest/prepare
	WALDUR_GITOPS_E2E_ARGOCD=1 WALDUR_GITOPS_E2E_ARGOCD_TENANTS=$(E2E_ARGOCD_TENANTS) $(GO) test -count=1 -v -timeout 30m ./e2e/argocd

STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint: ## go vet, staticcheck (pinned) and a gofmt check
	$(GO) vet $(PKGS)
	$(GO) run $(STATICCHECK) $(PKGS)
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

# ./bench includes BenchmarkCLISync: the peak RSS of the real `sync` per
# profile at 10,000 tenants (BENCHMARKS.md, "Memory of a sync"), and
# BenchmarkSideBySide: apply, keycloak and report beside the site agent's
# three passes at 100 and 1,000 tenants, against a real kube-apiserver
# (BENCHMARKS.md, "Beside the site agent").
# BenchmarkKeycloak runs against the in-repo fake, BenchmarkKeycloakReal
# against a real Keycloak that internal/testenv/keycloaktest starts (BENCHMARKS.md,
# "Keycloak against a real server").
bench: ## run every benchmark (see BENCHMARKS.md; takes a while)
	$(GO) test ./bench -run '^$$' -bench . -benchtime 3x -count 1 -timeout 30m
	$(GO) test ./gitsync -run '^$$' -bench . -benchtime 3x -count 1 -timeout 60m
	$(GO) test ./engine -run '^$$' -bench Sync10k -benchtime 3x -count 2 -timeout 30m
	$(GO) test ./apply -run '^$$' -bench Apply1000 -benchtime 3x -count 1 -benchmem -timeout 30m
	$(GO) test ./keycloak -run '^$$' -bench 'BenchmarkKeycloak$$' -benchtime 1x -timeout 30m
	$(GO) test ./keycloak -run '^$$' -bench 'BenchmarkKeycloakReal$$' -benchtime 1x -timeout 60m
	$(GO) test ./keycloak -run '^$$' -bench 'BenchmarkKeycloakDefaultStore$$' -benchtime 1x -timeout 30m
	$(GO) test ./e2e/flux -run '^$$' -bench 'FluxOneTenantChange(OCI)?$$' -benchtime 3x -count 1 -timeout 30m
	WALDUR_GITOPS_FLUX_BENCH=1000/16 $(GO) test ./e2e/flux -run '^$$' -bench 'FluxOneTenantChangeOCI$$' -benchtime 3x -count 1 -timeout 30m
	WALDUR_GITOPS_FLUX_BENCH=10000/16 $(GO) test ./e2e/flux -run '^$$' -bench 'FluxOneTenantChangeOCI$$' -benchtime 3x -count 1 -timeout 60m
	$(GO) test ./ociship -run '^$$' -bench ShardArtifacts10k -benchtime 3x -count 1
	$(GO) test ./review -run '^$$' -bench Classify10k -benchtime 3x -count 1
	$(GO) test ./render -run '^$$' -bench BenchmarkRenderRemembered -benchtime 5x -count 1 -benchmem
	$(GO) run ./internal/testenv/rabbittest/prepare
	$(GO) test ./cli -run '^$$' -bench BenchmarkEventToCommit -benchtime 1x -timeout 30m
	$(GO) test ./cli -run '^$$' -bench 'BenchmarkOffboarding(EventToDeleted|Apply|FluxEventToDeleted)$$' -benchtime 1x -timeout 40m

fuzz: ## fuzz the renderer and the YAML encoder for a minute each
	$(GO) test ./render -run '^$$' -fuzz FuzzRender -fuzztime 60s
	$(GO) test ./manifest -run '^$$' -fuzz FuzzEncode -fuzztime 60s

golden: ## rewrite golden files after checking the change is intended
	$(GO) test ./render ./manifest -update

validate-examples: ## build every kustomization in examples/ and server-side dry-run every manifest; promtool-test the alert rules
	$(GO) run ./internal/testenv/promtest/prepare
	$(GO) test ./examples -run '^TestExample' -v -count=1

example: build ## render the bundled example into out/
	$(BIN) render --config examples/config.yaml --snapshot examples/snapshot.json --out out

# The whole loop offline: Waldur and Keycloak test servers, a local bare Git
# repository, two syncs (docs/README.md#try-it). DEMO_FLAGS=-keep leaves the
# servers running and prints how to use them by hand.
demo: ## run the whole loop on the bundled example, offline (DEMO_FLAGS=-keep keeps the servers up)
	$(GO) run ./cmd/waldur-gitops-demo $(DEMO_FLAGS)

clean: ## remove build output
	rm -rf bin out
