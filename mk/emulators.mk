# Emulators for the provider conformance tests (included from the Makefile; also usable alone:
# `make -f mk/emulators.mk emulators`). Each install runs only when its binary is missing.
# fake-gcs-server needs no install: the tests run it in-process as a Go library.
VERSITYGW_VERSION ?= v1.8.0
AZURITE_VERSION   ?= 3.37.0
# The OCI registry tests: distribution's registry (the reference implementation; v3.1.2 builds with
# Go 1.26) and the oras CLI as the independent client that pulls what Lifeboat pushes.
REGISTRY_VERSION  ?= v3.1.2
ORAS_VERSION      ?= v1.3.6
REGISTRY := $(CURDIR)/bin/registry
ORAS     := $(CURDIR)/bin/oras
VERSITYGW := $(CURDIR)/bin/versitygw
AZURITE   := $(CURDIR)/.tools/node_modules/.bin/azurite-blob

.PHONY: emulators

emulators: $(VERSITYGW) $(AZURITE) $(REGISTRY) $(ORAS)

$(VERSITYGW):
	GOBIN=$(CURDIR)/bin $(or $(GO),go) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

$(AZURITE):
	npm install --prefix $(CURDIR)/.tools --no-audit --no-fund azurite@$(AZURITE_VERSION)

$(REGISTRY):
	GOBIN=$(CURDIR)/bin $(or $(GO),go) install github.com/distribution/distribution/v3/cmd/registry@$(REGISTRY_VERSION)

$(ORAS):
	GOBIN=$(CURDIR)/bin $(or $(GO),go) install oras.land/oras/cmd/oras@$(ORAS_VERSION)
