# The linter of the CI templates in examples/ (included from the Makefile; also usable alone:
# `make -f mk/ci.mk ci-tools`): actionlint, which checks examples/github-actions/ as GitHub would
# read it (workflow syntax, expressions, contexts, job and step keys). Built from the Go module
# proxy into ./bin; installed again only when ./bin/actionlint is missing or another version.
ACTIONLINT_VERSION ?= v1.7.12
ACTIONLINT := $(CURDIR)/bin/actionlint

.PHONY: ci-tools actionlint

ci-tools: actionlint

actionlint:
	@test "$$($(ACTIONLINT) -version 2>/dev/null | head -1)" = "$(ACTIONLINT_VERSION)" || \
	  GOBIN=$(CURDIR)/bin $(or $(GO),go) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)
