# Prometheus for the stop-condition tests (included from the Makefile; also usable alone:
# `make -f mk/prometheus.mk prometheus`): the Debian package, installed only when missing. The
# tests run it on loopback (internal/emulators.StartPrometheus), never as a service.
SUDO ?= $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: prometheus

prometheus:
	@command -v prometheus >/dev/null 2>&1 || test -x /usr/bin/prometheus || \
	  { $(SUDO) apt-get install -y --no-install-recommends prometheus || { $(SUDO) apt-get update && $(SUDO) apt-get install -y --no-install-recommends prometheus; }; }
