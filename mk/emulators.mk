# Emulators for the provider conformance tests (included from the Makefile; also usable alone:
# `make -f mk/emulators.mk emulators`). Each install runs only when its binary is missing.
# fake-gcs-server needs no install: the tests run it in-process as a Go library.
VERSITYGW_VERSION ?= v1.8.0
AZURITE_VERSION   ?= 3.37.0
VERSITYGW := $(CURDIR)/bin/versitygw
AZURITE   := $(CURDIR)/.tools/node_modules/.bin/azurite-blob

.PHONY: emulators

emulators: $(VERSITYGW) $(AZURITE)

$(VERSITYGW):
	GOBIN=$(CURDIR)/bin $(or $(GO),go) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

$(AZURITE):
	npm install --prefix $(CURDIR)/.tools --no-audit --no-fund azurite@$(AZURITE_VERSION)
