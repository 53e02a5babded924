# cosign, the independent verifier of what Lifeboat signs (cmd/lifeboat/cosign_test.go): built
# from the module proxy, pinned, only when missing (included from the Makefile; also usable
# alone: `make -f mk/signing.mk cosign`). It is a large build (~10 minutes on 2 cores), so it runs
# nice'd. v3.1.3 is the newest that builds with this repository's Go.
COSIGN_VERSION ?= v3.1.3
COSIGN := $(CURDIR)/bin/cosign

.PHONY: cosign

cosign: $(COSIGN)

$(COSIGN):
	GOBIN=$(CURDIR)/bin nice $(or $(GO),go) install github.com/sigstore/cosign/v3/cmd/cosign@$(COSIGN_VERSION)
