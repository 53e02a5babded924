# Routers for the failover tests and the demo (included from the Makefile; also usable alone:
# `make -f mk/routers.mk routers`). Each install runs only when the router is missing:
# HAProxy from the Debian package (its Runtime API), Caddy v2.11 built into ./bin (the Debian
# package is 2.6, without weighted round robin; the build takes minutes on 2 cores, once).
CADDY_VERSION ?= v2.11.9
CADDY := $(CURDIR)/bin/caddy
SUDO  := $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: routers haproxy

routers: haproxy $(CADDY)

haproxy:
	@command -v haproxy >/dev/null 2>&1 || test -x /usr/sbin/haproxy || \
	  { $(SUDO) apt-get install -y haproxy || { $(SUDO) apt-get update && $(SUDO) apt-get install -y haproxy; }; }

$(CADDY):
	GOBIN=$(CURDIR)/bin $(or $(GO),go) install github.com/caddyserver/caddy/v2/cmd/caddy@$(CADDY_VERSION)
