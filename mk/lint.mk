# staticcheck, the linter `make test` runs after vet (included from the Makefile; also usable
# alone: `make -f mk/lint.mk staticcheck`): dead code, unused assignments, misused APIs and
# error-string style, which vet does not look for. Built from the Go module proxy into ./bin,
# pinned, and installed again only when ./bin/staticcheck is missing or another version: the
# version recorded in the binary's build information, so another release in its place is
# noticed (and removed first, as go install overwrites only a Go binary). It runs with
# staticcheck's default checks; a finding that is wrong for one line is silenced there with
# `//lint:ignore CHECK reason`, never project-wide without a staticcheck.conf that says why.
# It takes the test tags (TEST_TAGS), so the integration test files are checked too.
STATICCHECK_VERSION ?= v0.8.2
STATICCHECK := $(CURDIR)/bin/staticcheck
STATICCHECK_TAGS ?= $(or $(TEST_TAGS),disable_grpc_modules$(comma)integration)
comma := ,

.PHONY: staticcheck staticcheck-tool

staticcheck: staticcheck-tool
	$(STATICCHECK) -tags $(STATICCHECK_TAGS) ./...

staticcheck-tool:
	@test "$$($(or $(GO),go) version -m $(STATICCHECK) 2>/dev/null | awk '$$1 == "mod" && $$2 == "honnef.co/go/tools" { print $$3 }')" = "$(STATICCHECK_VERSION)" || \
	  { rm -f $(STATICCHECK) && GOBIN=$(CURDIR)/bin $(or $(GO),go) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); }
