# The linters of the CI templates in examples/ (included from the Makefile; also usable alone:
# `make -f mk/ci.mk ci-tools`): actionlint, which checks examples/github-actions/ as GitHub would
# read it (workflow syntax, expressions, contexts, job and step keys), built from the Go module
# proxy into ./bin and installed again only when ./bin/actionlint is missing or another version;
# and shellcheck (the Debian package, when missing), through which actionlint checks every
# `run:` script.
ACTIONLINT_VERSION ?= v1.7.12
ACTIONLINT := $(CURDIR)/bin/actionlint
CI_SUDO    := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: ci-tools actionlint shellcheck

ci-tools: actionlint shellcheck

actionlint:
	@test "$$($(ACTIONLINT) -version 2>/dev/null | head -1)" = "$(ACTIONLINT_VERSION)" || \
	  GOBIN=$(CURDIR)/bin $(or $(GO),go) install github.com/rhysd/actionlint/cmd/actionlint@$(ACTIONLINT_VERSION)

shellcheck:
	@command -v shellcheck >/dev/null 2>&1 || \
	  { $(CI_SUDO) apt-get install -y shellcheck || { $(CI_SUDO) apt-get update && $(CI_SUDO) apt-get install -y shellcheck; }; }
