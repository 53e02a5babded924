# A real browser for the report tests (included from the Makefile; also usable alone:
# `make -f mk/browser.mk chromium`): Debian's chromium, installed only when missing. The drill
# tests load report.html in it headless; they may skip without it only when
# LIFEBOAT_REQUIRE_BROWSER is unset (.ci/run sets it).
SUDO ?= $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: chromium

chromium:
	@command -v chromium >/dev/null 2>&1 || \
	  { $(SUDO) apt-get install -y --no-install-recommends chromium || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends chromium; }; }
