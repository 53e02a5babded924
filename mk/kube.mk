# The Kubernetes control plane for the launcher and Gateway API tests (included from the
# Makefile; also usable alone: `make -f mk/kube.mk kube`). Each install runs only when what it
# installs is missing, so a cached ./bin costs nothing:
#   kube-apiserver, kube-controller-manager, kube-scheduler v1.37.2: ONE go build of the module
#     mk/kube (it pins k8s.io/kubernetes' staging modules, which `go install` refuses), so the three
#     share their compilation. On this 2-core machine, sharing it with three other builds, the cold
#     build took ~30 min (00:14 -> 00:44); keep ./bin cached in CI.
#   etcd: Debian's etcd-server (3.4), /usr/bin/etcd.
#   kwok v0.8.0 (fake nodes, pod stages, port-forward and logs without a kubelet): go install; cold,
#     niced under the same load, ~30 min (most of it shared k8s.io packages; alone it is minutes).
#   traefik v3.6.12 (Gateway API provider, the data plane of the HTTPRoute tests): built in a
#     temporary module with Traefik's own three replace lines (`go install` refuses them); the
#     largest: ~2500 packages. Here, niced under three other engineers' builds, go mod tidy took
#     ~5 min and the build 67 min (4021 s); on an idle 2-core runner expect well under half that.
#   The Gateway API CRDs v1.6.3, the Inference Extension's v1.6.2 (InferencePool,
#     InferencePoolImport), the MCS API's v0.5.2 (ServiceImport) and kwok's CRDs are read from
#     the Go module cache at test time (`go mod download`, seconds), never copied into the
#     repository.
KUBE_BIN        := $(CURDIR)/bin
KUBE_VERSION    ?= v1.37.2
KWOK_VERSION    ?= v0.8.0
TRAEFIK_VERSION ?= v3.6.12
GATEWAY_API_VERSION ?= v1.6.3
# InferencePool / InferencePoolImport and ServiceImport CRDs (emulators.GatewayAPIInferenceExtensionVersion,
# emulators.MCSAPIVersion): the gateway-api router driver's other backend kinds.
GIE_VERSION     ?= v1.6.2
MCS_API_VERSION ?= v0.5.2
KUBE_CMDS := $(KUBE_BIN)/kube-apiserver $(KUBE_BIN)/kube-controller-manager $(KUBE_BIN)/kube-scheduler
SUDO ?= $(if $(filter 0,$(shell id -u)),,sudo)
KUBE_GO := $(or $(GO),go)

.PHONY: kube etcd kube-crds

kube: $(KUBE_CMDS) etcd $(KUBE_BIN)/kwok $(KUBE_BIN)/traefik kube-crds

$(KUBE_CMDS) &:
	cd mk/kube && CGO_ENABLED=0 $(KUBE_GO) build -trimpath -o $(KUBE_BIN)/ \
	  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler

etcd:
	@test -x /usr/bin/etcd || \
	  { $(SUDO) apt-get install -y --no-install-recommends etcd-server || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends etcd-server; }; }

$(KUBE_BIN)/kwok:
	GOBIN=$(KUBE_BIN) CGO_ENABLED=0 $(KUBE_GO) install sigs.k8s.io/kwok/cmd/kwok@$(KWOK_VERSION)

$(KUBE_BIN)/traefik:
	@set -e; d=$$(mktemp -d); trap 'rm -rf $$d' EXIT; cd $$d; \
	printf '%s\n' 'module lifeboat.local/traefik' '' 'go 1.26.0' '' \
	  'require github.com/traefik/traefik/v3 $(TRAEFIK_VERSION)' '' 'replace (' \
	  '	github.com/abbot/go-http-auth => github.com/containous/go-http-auth v0.4.1-0.20200324110947-a37a7636d23e' \
	  '	github.com/gorilla/mux => github.com/containous/mux v0.0.0-20250523120546-41b6ec3aed59' \
	  '	github.com/mailgun/minheap => github.com/containous/minheap v0.0.0-20190809180810-6e71eb837595' \
	  ')' > go.mod; \
	printf '%s\n' '//go:build tools' '' 'package tools' '' 'import _ "github.com/traefik/traefik/v3/cmd/traefik"' > tools.go; \
	GOFLAGS=-mod=mod $(KUBE_GO) mod tidy; \
	CGO_ENABLED=0 $(KUBE_GO) build -trimpath -ldflags "-X github.com/traefik/traefik/v3/pkg/version.Version=$(TRAEFIK_VERSION)" \
	  -o $(KUBE_BIN)/traefik github.com/traefik/traefik/v3/cmd/traefik

# The CRDs' modules in the module cache (the tests find them with `go mod download -json`).
kube-crds:
	@cd $(CURDIR) && $(KUBE_GO) mod download sigs.k8s.io/gateway-api@$(GATEWAY_API_VERSION) sigs.k8s.io/kwok@$(KWOK_VERSION) \
	  sigs.k8s.io/gateway-api-inference-extension@$(GIE_VERSION) sigs.k8s.io/mcs-api@$(MCS_API_VERSION)
