# Lifeboat — every target installs what it needs, idempotently.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
LIFEBOAT := $(BIN)/lifeboat
DEMO  := $(CURDIR)/.demo
FUZZTIME ?= 20s
export PATH := $(BIN):$(PATH)
# One build for the CLI and the image (Dockerfile): static (no cgo), no local paths, the version
# stamped in. The image's build context may have no usable .git (a worktree's .git is a file
# pointing outside it), so the version goes in with -ldflags; `make build` also keeps the VCS
# revision (-buildvcs).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The go command records the commit itself (-buildvcs) only where .git is a directory, not in a
# git worktree or a source export, so the commit goes in with -ldflags too (`lifeboat version`
# prefers what the go command recorded). No build date: the same commit builds the same bytes.
COMMIT      ?= $(shell git rev-parse HEAD 2>/dev/null)
COMMIT_TIME ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
DIRTY       ?= $(shell test -n "$$(git status --porcelain 2>/dev/null)" && echo true || echo false)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.commitTime=$(COMMIT_TIME) -X main.dirty=$(DIRTY)
# disable_grpc_modules: cloud.google.com/go/storage's documented opt-out of the gRPC DirectPath
# modules (xDS, RLS and the Envoy protos they register), which Lifeboat never uses — it talks to
# GCS over JSON/HTTP. Their package initialisation was over half of every command's start-up
# (init 14.6 → 6.3 ms) and about 20 MB of the binary (measured at aa9fd7f with -trimpath: 107 MB
# without the tag, 87 MB with it; `ls -l bin/lifeboat` gives today's size).
TAGS := disable_grpc_modules
# TEST_TAGS adds `integration`: the _test.go files that start servers (the emulators, the engine
# simulator, fault proxies, the test bed) carry //go:build integration, so `go test ./manifest`
# compiles and runs the unit tests alone; `make test`, vet, cross-vet and staticcheck take them too.
TEST_TAGS := $(TAGS),integration

.PHONY: all build test vet cross-build lint fmt-check fuzz bench demo demo-stop release image pin-image clean docs

# `emulators`: versitygw (S3), the OCI registry and oras into ./bin, Azurite into ./.tools; each
# only when missing.
include mk/emulators.mk
# `routers`: haproxy (Debian package) and caddy into ./bin; each only when missing.
include mk/routers.mk
# `prometheus`: Debian's prometheus for the stop-condition tests; only when missing.
include mk/prometheus.mk
# `chromium`: Debian's chromium for the drill report's browser test; only when missing.
include mk/browser.mk
# `oracles`: the npm reference implementations of the differential tokenizer / template tests.
include mk/oracles.mk
# `kube`: etcd, kube-apiserver/controller-manager/scheduler, kwok and traefik for the Kubernetes
# tests; each only when missing.
include mk/kube.mk
# `ci-tools`: actionlint for the CI templates in examples/; only when missing or another version.
include mk/ci.mk
# `cosign`: cosign into ./bin, the independent verifier of Lifeboat's signatures; only when missing.
include mk/signing.mk
# `staticcheck`: staticcheck (pinned) into ./bin when missing or another version, then run over
# every package with the build's tags.
include mk/lint.mk

all: build

# GOBUILD is the one build of the CLI: `make build`, every `make release` binary and every
# `make image` binary run exactly this (with GOOS/GOARCH set for the others).
GOBUILD = CGO_ENABLED=0 $(GO) build -trimpath -buildvcs=true -tags $(TAGS) -ldflags "$(LDFLAGS)"

build:
	$(GOBUILD) -o $(LIFEBOAT) ./cmd/lifeboat

## test: everything CI runs: formatting, vet, staticcheck, unit, property, fuzz-seed and
## integration tests against real S3 (versitygw), GCS (fake-gcs-server) and Azure (Azurite)
## servers on loopback, and the differential tests against Hugging Face's JavaScript tokenizers
## and Jinja (npm, ./.tools).
## The race detector is on: callbacks such as Progress and OnFile run on many goroutines, and a
## race there is a bug (RACE=0 turns it off for a quick local run).
##
## NORACE names the tests that run once more without the race detector instead of with it: the
## family × failure-class table parses every family's real-size tokenizer for each of its ~110
## cases on one goroutine, where instrumentation makes it ten times slower (30–40 s a case) and
## has nothing to find. They still run in every `make test`, only without -race.
RACE ?= 1
NORACE ?= ^TestFamilyBrokenVariants$$
test: fmt-check vet cross-build staticcheck emulators oracles routers prometheus chromium kube ci-tools cosign
	$(GO) test -tags $(TEST_TAGS) $(if $(filter 1,$(RACE)),-race -skip '$(NORACE)') -timeout 30m -count=1 ./...
	$(if $(filter 1,$(RACE)),$(GO) test -tags $(TEST_TAGS) -run '$(NORACE)' -timeout 30m -count=1 ./manifest/lint)

## docs: regenerate the CLI reference (docs/cli/, one page per command) from the commands' own
## help, as cobra's doc generator renders it. TestCLIReferenceIsCurrent fails when it is stale.
docs:
	LIFEBOAT_WRITE_DOCS=1 $(GO) test -count=1 -run '^TestCLIReferenceIsCurrent$$' ./cmd/lifeboat

vet:
	$(GO) vet -tags $(TEST_TAGS) ./...

## cross-build: build the CLI for each of RELEASE_PLATFORMS, and vet every package with its tests
## (type-checked, nothing run) for CROSS_VET, so that a Linux-only call in shared code fails
## `make test`, not `make release`. One vet per other OS is enough (OS-only code differs by GOOS,
## not by arch) and each extra platform's vet costs minutes of a cold CI run.
CROSS_VET ?= darwin/arm64
cross-build:
	set -e; for p in $(RELEASE_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
	  echo "cross-build $$os/$$arch"; \
	  GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build -tags $(TAGS) -o /dev/null ./cmd/lifeboat; done
	set -e; for p in $(CROSS_VET); do os=$${p%/*}; arch=$${p#*/}; \
	  echo "cross-vet $$os/$$arch"; \
	  GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) vet -tags $(TEST_TAGS) ./...; done

lint: fmt-check vet staticcheck

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## fuzz: run every fuzzer for FUZZTIME each (seeds alone already run in `make test`).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -tags $(TEST_TAGS) -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -tags $(TEST_TAGS) -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

## bench: in one run, side by side: manifest build vs sha256sum/openssl/md5sum; quick verify of
## 3 replicas × 200 files vs `rclone check`; deep verify of a ≥ 1 GB replica vs `rclone check
## --download` and sha256sum; peak memory; manifest push + restore vs oras push + pull on a local registry. The emulators start and stop inside the bench. rclone is
## for the comparison only: when ./bin/rclone is missing the bench runs
## `GOBIN=… go install github.com/rclone/rclone@$(RCLONE_VERSION)` in the background first thing
## (minutes), during its untimed set-up, and times nothing before that build is done.
RCLONE_VERSION ?= v1.71.2
bench: build emulators
	$(GO) run ./cmd/bench -lifeboat $(LIFEBOAT) -dir $(CURDIR)/.bench -go $(GO) \
	  -rclone $(BIN)/rclone -rclone-pkg github.com/rclone/rclone@$(RCLONE_VERSION)

## demo: the main job on an embedded sample — no cloud account needed. It installs what it shows
## first, each only when missing (the S3 and Azure emulators and the OCI registry: Go and npm
## builds, minutes the first time; HAProxy with apt as root). `make demo DEMO_INSTALL=0` installs
## nothing and `HAPROXY=` does without HAProxy: local directories then stand in for the missing
## clouds and the registry step is skipped, and the demo's last lines say what stood in for what.
## `make demo KEEP=1` leaves the clouds running to explore (docs/demo.md); `make demo-stop` stops them.
DEMO_INSTALL ?= 1
HAPROXY ?= $(shell command -v haproxy 2>/dev/null || { test -x /usr/sbin/haproxy && echo /usr/sbin/haproxy; })
# demo-haproxy installs HAProxy where it can (Debian's apt, as root or with password-less sudo);
# anywhere else (macOS, another Linux, no root) the demo goes on without it and says so. With
# HAPROXY= on the command line nothing is installed.
.PHONY: demo-haproxy
demo-haproxy:
	@command -v haproxy >/dev/null 2>&1 || test -x /usr/sbin/haproxy || \
	  { command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; } && $(MAKE) --no-print-directory haproxy; } || \
	  echo "HAProxy is not installed and cannot be installed here (no apt-get, or no root): the demo's HAProxy steps are skipped"
# demo-emulators: a failed install (no npm, no network) is said, and the demo goes on with
# stand-ins; its summary says which.
.PHONY: demo-emulators
demo-emulators:
	@$(MAKE) --no-print-directory emulators || \
	  echo "could not install every emulator (above): the demo goes on, and its last lines say what stood in for what"
demo: build $(if $(filter 0,$(DEMO_INSTALL)),,demo-emulators $(if $(filter command line,$(origin HAPROXY)),,demo-haproxy))
	@$(MAKE) --no-print-directory demo-stop >/dev/null
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	@echo "== 1. generate a sample model repository (real formats, tiny weights)"
	$(LIFEBOAT) demo init $(DEMO)/sample
	@echo; echo "== 2. build its DR manifest"
	$(LIFEBOAT) manifest build --model $(DEMO)/sample/model --engine $(DEMO)/sample/engine/engine.yaml \
	  --deploy $(DEMO)/sample/deploy --name llama-demo --out $(DEMO)/manifest.json
	$(LIFEBOAT) manifest show $(DEMO)/manifest.json
	@echo; echo "== 3. lint it (expect PASS)"
	$(LIFEBOAT) manifest lint $(DEMO)/manifest.json --model $(DEMO)/sample/model
	@echo; echo "== 4. break a copy the way real DR copies break, rebuild, lint (expect FAIL)"
	cp -r $(DEMO)/sample $(DEMO)/broken
	rm $(DEMO)/broken/model/tokenizer.json                      # backed up weights, not the tokenizer
	rm $(DEMO)/broken/model/generation_config.json              # stop tokens silently change
	rm $(DEMO)/broken/model/loras/sql-lora/adapter_model.safetensors   # LoRA adapter lost
	truncate -s -4096 $(DEMO)/broken/model/model-00002-of-00002.safetensors   # interrupted upload
	sed -i -e '/"rope_scaling"/,/}/d' -e 's/"max_position_embeddings": 131072/"max_position_embeddings": 8192/' \
	  $(DEMO)/broken/model/config.json                         # a re-export dropped the RoPE scaling
	sed -i 's/^max-model-len: .*/max-model-len: 32768/' $(DEMO)/broken/engine/engine.yaml
	$(LIFEBOAT) manifest build --model $(DEMO)/broken/model --engine $(DEMO)/broken/engine/engine.yaml \
	  --deploy $(DEMO)/broken/deploy --name llama-demo --out $(DEMO)/broken-manifest.json
	$(LIFEBOAT) manifest lint $(DEMO)/broken-manifest.json --model $(DEMO)/broken/model; \
	  rc=$$?; echo "lint exit code: $$rc (1 = problems found)"; test $$rc -eq 1
	@echo; echo "== 5. what changed between the good and the broken manifest"
	$(LIFEBOAT) manifest diff $(DEMO)/manifest.json $(DEMO)/broken-manifest.json
	@echo; echo "== 6. three local \"clouds\" for DR replicas: versitygw (S3) and Azurite when installed"
	@echo "   (make -f mk/emulators.mk emulators), else local directories stand in; fake-gcs-server in-process"
	$(GO) build -o $(BIN)/democlouds ./cmd/democlouds
	@$(BIN)/democlouds -dir $(DEMO)/clouds -env $(DEMO)/clouds.env $(if $(KEEP),,-watch-pid $$PPID) > $(DEMO)/clouds.log 2>&1 & \
	  pid=$$!; echo $$pid > $(DEMO)/clouds.pid; \
	  for i in $$(seq 900); do [ -s $(DEMO)/clouds.env ] && break; kill -0 $$pid 2>/dev/null || break; sleep 0.2; done; \
	  cat $(DEMO)/clouds.log; [ -s $(DEMO)/clouds.env ] || { echo "the demo clouds did not start"; exit 1; }
	@echo; echo "== 7. replicate the sample bundle into all three (streamed, every byte checked against the manifest)"
	set -o pipefail; . $(DEMO)/clouds.env && for to in "$$CLOUD_S3" "$$CLOUD_GCS" "$$CLOUD_AZURE"; do \
	  $(LIFEBOAT) replicate --manifest $(DEMO)/manifest.json --from $(DEMO)/sample --to "$$to" | grep -E '^(Replicating|OK|FAILED|target after|  \()' || exit 1; done
	@echo; echo "== 8. break one replica behind Lifeboat's back: lose the tokenizer, rot a byte of a shard on disk"
	. $(DEMO)/clouds.env && rm "$$BROKEN_DIR/model/tokenizer.json" && \
	  printf 'ROT!' | dd of="$$BROKEN_DIR/model/model-00002-of-00002.safetensors" bs=1 seek=70000 conv=notrunc status=none
	@echo; echo "== 9. verify all three (quick: metadata only; expect exit 1), then the broken one deeply"
	. $(DEMO)/clouds.env && $(LIFEBOAT) verify --manifest $(DEMO)/manifest.json "$$CLOUD_S3" "$$CLOUD_GCS" "$$CLOUD_AZURE"; \
	  rc=$$?; echo "verify exit code: $$rc (1 = a replica is broken)"; test $$rc -eq 1
	. $(DEMO)/clouds.env && $(LIFEBOAT) verify --deep --manifest $(DEMO)/manifest.json "$$BROKEN"; \
	  rc=$$?; echo "verify --deep exit code: $$rc (1 = corrupt bytes found)"; test $$rc -eq 1
	@echo; echo "== 10. repair it from another cloud: only what is missing or wrong is copied (plan, then run)"
	. $(DEMO)/clouds.env && $(LIFEBOAT) replicate --deep --dry-run --manifest $(DEMO)/manifest.json --from "$$CLOUD_GCS" --to "$$BROKEN"
	. $(DEMO)/clouds.env && $(LIFEBOAT) replicate --deep --manifest $(DEMO)/manifest.json --from "$$CLOUD_GCS" --to "$$BROKEN"
	@echo; echo "== 11. verify again: all three clean (expect exit 0)"
	. $(DEMO)/clouds.env && $(LIFEBOAT) verify --manifest $(DEMO)/manifest.json "$$CLOUD_S3" "$$CLOUD_GCS" "$$CLOUD_AZURE" && \
	  $(LIFEBOAT) verify --deep --manifest $(DEMO)/manifest.json "$$BROKEN"
	@echo; echo "== 12. restore the repaired S3 replica to local disk (every byte checked as it streams)"
	. $(DEMO)/clouds.env && $(LIFEBOAT) restore --manifest $(DEMO)/manifest.json --from "$$CLOUD_S3" --to $(DEMO)/restored
	@echo; echo "== 13. boot it in the vLLM-compatible engine simulator and prove it warm (not just /health 200)"
	. $(DEMO)/clouds.env && printf '%s\n' \
	  'model: {name: llama-demo, manifest: $(DEMO)/manifest.json}' \
	  'regions:' \
	  '  us-east-1:' \
	  "    replica: \"$$CLOUD_S3\"" \
	  '    launcher: {kind: exec, command: "lifeboat engine-sim {{.ModelDir}} --config {{.EngineConfig}} --port {{.Port}}"}' \
	  > $(DEMO)/fleet.yaml
	. $(DEMO)/clouds.env && $(LIFEBOAT) boot --fleet $(DEMO)/fleet.yaml --region us-east-1 --workdir $(DEMO)/boot
	@echo; echo "== 14. failover: evacuate eu-west-1 from a sample fleet (an EU-only and a global class), file router"
	@rm -rf $(DEMO)/failover && cp -r internal/sample/failover $(DEMO)/failover
	@echo "-- what if eu-central-1 is still restoring? The EU-only class has nowhere to go: refused, exit 3"
	$(LIFEBOAT) failover plan --fleet $(DEMO)/failover/fleet.yaml --region eu-west-1 --signals $(DEMO)/failover/signals-eu-cold.json; \
	  rc=$$?; echo "plan exit code: $$rc (3 = refused for safety)"; test $$rc -eq 3
	@echo "-- the plan with both EU regions warm"
	$(LIFEBOAT) failover plan --fleet $(DEMO)/failover/fleet.yaml --region eu-west-1 --signals $(DEMO)/failover/signals.json
	@echo "-- run it: lock, journal, every step applied and read back"
	$(LIFEBOAT) failover run --fleet $(DEMO)/failover/fleet.yaml --region eu-west-1 --signals $(DEMO)/failover/signals.json \
	  --yes --reason "make demo: eu-west-1 drill"
	$(LIFEBOAT) failover status --fleet $(DEMO)/failover/fleet.yaml
	@echo; echo "== 15. the same evacuation through a real HAProxy (Runtime API), when it is installed"
	@if [ -n "$(HAPROXY)" ]; then \
	  set -e; H=$(HAPROXY); cd $(DEMO)/failover && $$H -D -p haproxy.pid -f haproxy.cfg && \
	  for i in $$(seq 100); do test -S admin.sock && break; sleep 0.1; done; \
	  trap 'kill $$(cat haproxy.pid) 2>/dev/null' EXIT; \
	  $(LIFEBOAT) failover run --fleet fleet-haproxy.yaml --region eu-west-1 --signals signals.json --yes --reason "make demo: HAProxy drill"; \
	  $(LIFEBOAT) failover status --fleet fleet-haproxy.yaml; \
	else echo "HAProxy is not installed (make haproxy), or HAPROXY= was given: skipped"; fi
	@echo; echo "== 16. the same evacuation on Route 53 weighted records: route53-fake serves Route 53's API on loopback"
	@echo "   (no AWS account), driven through the real AWS SDK; each step is one DELETE+CREATE batch (a compare-and-swap),"
	@echo "   waited on until INSYNC; eu-west-1's records are drained to weight 0, then deleted; abort recreates them"
	@echo "   from the journal, exactly"
	$(GO) build -o $(BIN)/route53-fake ./internal/emulators/route53fake/cmd/route53-fake
	@set -e; cd $(DEMO)/failover && rm -f route53.url && \
	  { $(BIN)/route53-fake -seed route53-zone.json -pending-polls 2 > route53.url 2> route53.log & echo $$! > route53.pid; } && \
	  trap 'kill $$(cat route53.pid) 2>/dev/null' EXIT; \
	  for i in $$(seq 100); do test -s route53.url && break; sleep 0.1; done; test -s route53.url; \
	  sed -i "s#@ENDPOINT@#$$(cat route53.url)#" fleet-route53.yaml; \
	  export AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo AWS_REGION=us-east-1 AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null; \
	  echo "$$ lifeboat failover run --fleet fleet-route53.yaml --region eu-west-1 --signals signals.json --yes"; \
	  $(LIFEBOAT) failover run --fleet fleet-route53.yaml --region eu-west-1 --signals signals.json --yes --reason "make demo: Route 53 drill"; \
	  echo "$$ lifeboat failover status --fleet fleet-route53.yaml"; \
	  $(LIFEBOAT) failover status --fleet fleet-route53.yaml; \
	  echo "$$ lifeboat failover abort --fleet fleet-route53.yaml --signals signals.json --yes"; \
	  $(LIFEBOAT) failover abort --fleet fleet-route53.yaml --signals signals.json --yes --reason "make demo: back"
	@echo; echo "== 17. the drill: lose eu-west-1 on purpose (an EU-only and a global class) in the three clouds, through"
	@echo "   HAProxy when it is installed (else the file router), with"
	@echo "   game-day faults (a lost tokenizer, the router down for a second, the orchestrator killed mid-ramp),"
	@echo "   measured against the SLA: verify -> restore+boot -> evacuate -> traffic -> hold -> fail back -> verify -> tear down"
	@rm -rf $(DEMO)/drill && mkdir -p $(DEMO)/drill/state && cp internal/sample/drill/drill.yaml internal/sample/drill/weights.json $(DEMO)/drill/
	@HAPROXY="$(HAPROXY)" bash mk/demo-drill.sh $(LIFEBOAT) $(DEMO)/drill $(DEMO)/clouds.env
	@echo; echo "Open $(DEMO)/drill/report/report.html (self-contained) or paste $(DEMO)/drill/report/report.md into a ticket."
	@echo; echo "== 18. the model in a registry: push the sample to a local OCI registry (distribution), sign it,"
	@echo "   verify the signature, boot from the registry replica with a fleet whose trust: requires it"
	@KEEP="$(KEEP)" bash mk/demo-registry.sh $(LIFEBOAT) $(BIN)/registry $(DEMO)/manifest.json $(DEMO)/sample $(DEMO)/registry
	@echo; echo "== What ran here (and what stood in)"; \
	  awk '$$1=="S3"||$$1=="GCS"||$$1=="Azure" { n=$$1; $$1=""; $$2=""; sub(/^ +/, ""); printf "  %-10s %s\n", n":", $$0 }' $(DEMO)/clouds.log; \
	  h="$(HAPROXY)"; if [ -n "$$h" ]; then echo "  HAProxy:   $$h (real; steps 15 and 17)"; else echo "  HAProxy:   not installed: steps 15 skipped, 17 used the file router"; fi; \
	  if [ -x $(BIN)/registry ]; then echo "  registry:  distribution's registry on loopback (step 18)"; else echo "  registry:  not installed: step 18 skipped"; fi; \
	  echo "  Route 53:  route53-fake, the documented API on loopback, through the real AWS SDK (no AWS account)"; \
	  echo "  vLLM:      lifeboat engine-sim, the vLLM-compatible simulator (no GPU; tiny weights)"; \
	  if grep -q 'stand-in' $(DEMO)/clouds.log || [ -z "$$h" ] || [ ! -x $(BIN)/registry ]; then \
	    echo "  Not the full version: 'make emulators' (and HAProxy: 'make haproxy', Debian as root), then make demo again."; fi
ifeq ($(KEEP),)
	@kill $$(cat $(DEMO)/clouds.pid) 2>/dev/null || true
	@echo "The demo's clouds are stopped. make demo KEEP=1 keeps them up to explore (docs/demo.md)."
else
	@echo; echo "The demo's clouds are still up (KEEP=1; docs/demo.md). Point a shell at them and explore:"
	@echo "  . $(DEMO)/clouds.env"
	@echo "  $(LIFEBOAT) check --fleet $(DEMO)/drill/fleet.yaml --deep"
	@echo "  $(LIFEBOAT) verify --manifest $(DEMO)/manifest.json \"\$$CLOUD_S3\" \"\$$CLOUD_GCS\" \"\$$CLOUD_AZURE\""
	@echo "  $(LIFEBOAT) drill history --fleet $(DEMO)/drill/fleet.yaml"
	@test -s $(DEMO)/registry/registry.env && echo "  . $(DEMO)/registry/registry.env && $(LIFEBOAT) manifest verify-sig \"\$$REF\" --key $(DEMO)/registry/demo.pub" || true
	@echo "Stop them with: make demo-stop"
endif

## demo-stop: stop the clouds `make demo KEEP=1` left running.
demo-stop:
	@pid=$$(cat $(DEMO)/clouds.pid 2>/dev/null); \
	  if [ -n "$$pid" ] && grep -qa democlouds /proc/$$pid/cmdline 2>/dev/null && kill $$pid; then echo "the demo's clouds are stopped"; \
	  else echo "the demo's clouds were not running"; fi
	@pid=$$(cat $(DEMO)/registry/registry.pid 2>/dev/null); \
	  if [ -n "$$pid" ] && grep -qa registry /proc/$$pid/cmdline 2>/dev/null && kill $$pid; then echo "the demo's registry is stopped"; fi

## release: the binaries for RELEASE_PLATFORMS (GOBUILD, as `make build`) in DIST, named
## lifeboat_OS_ARCH, their SHA256SUMS (sha256sum's format) and its signature
## SHA256SUMS.sigstore.json by SIGN_KEY (a Sigstore bundle: `cosign verify-blob` checks it too).
## An encrypted key's password comes from LIFEBOAT_KEY_PASSWORD or COSIGN_PASSWORD. See
## docs/release.md.
DIST ?= $(CURDIR)/dist
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
SIGN_KEY ?=
RELEASE_TOOL = $(GO) run ./cmd/release
need-sign-key = @test -n "$(SIGN_KEY)" || { echo "make $@: SIGN_KEY=PATH (the private key that signs it) is needed: nothing is released unsigned (docs/release.md)" >&2; exit 2; }
# A release is built from a clean commit: a binary of a dirty tree says dirty=true for ever, and
# its source cannot be named. The usual cause is the signing key itself, made in the checkout
# (docs/release.md keeps it outside). ALLOW_DIRTY=1 builds anyway (the tests do, in a checkout
# under work).
ALLOW_DIRTY ?=
need-clean-tree = @test "$(DIRTY)" != true || test -n "$(ALLOW_DIRTY)" || { \
	echo "make $@: the checkout has uncommitted or untracked files, so every binary would be stamped dirty=true:"; \
	git status --porcelain 2>/dev/null | sed 's/^/    /'; \
	echo "commit them or move them out of the checkout (a signing key belongs outside it; docs/release.md); ALLOW_DIRTY=1 builds anyway"; \
	exit 2; } >&2
# RELEASE_PUB: the release public key published in the repository (once the first release is cut).
# When it exists, a SIGN_KEY that is not its pair is refused before anything is built: users
# verify against the published key.
RELEASE_PUB ?= $(CURDIR)/lifeboat.pub
release:
	$(need-sign-key)
	$(need-clean-tree)
	mkdir -p $(DIST) && rm -f $(DIST)/lifeboat_* $(DIST)/SHA256SUMS $(DIST)/SHA256SUMS.sigstore.json $(DIST)/lifeboat.pub
	$(RELEASE_TOOL) pubkey -key $(SIGN_KEY) $(if $(wildcard $(RELEASE_PUB)),-check $(RELEASE_PUB)) > $(DIST)/lifeboat.pub.tmp && \
	  mv $(DIST)/lifeboat.pub.tmp $(DIST)/lifeboat.pub
	set -e; for p in $(RELEASE_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
	  echo "building lifeboat_$${os}_$${arch}"; \
	  GOOS=$$os GOARCH=$$arch $(GOBUILD) -o $(DIST)/lifeboat_$${os}_$${arch} ./cmd/lifeboat; done
	cd $(DIST) && sha256sum lifeboat_* > SHA256SUMS
	$(RELEASE_TOOL) sign -key $(SIGN_KEY) $(DIST)/SHA256SUMS
	@echo "release $(VERSION) in $(DIST): verify with: cd $(DIST) && sha256sum -c SHA256SUMS"; \
	  echo "publish $(DIST)/lifeboat.pub with it$(if $(wildcard $(RELEASE_PUB)),, and commit it as lifeboat.pub: this is the first release, and users verify against it)"

## image: the container image, built without a Docker daemon by cmd/release: FROM scratch,
## the GOBUILD binary for each of IMAGE_PLATFORMS, the CA bundle CA_CERTS, user 65532; every
## time in it the commit time, so one commit gives one digest. Pushed to IMAGE_REPO (the Docker
## credentials in DOCKER_CONFIG or ~/.docker/config.json) with the tag IMAGE_TAG, signed by
## SIGN_KEY, a CycloneDX SBOM per platform attached (OCI referrers). The pushed reference by digest
## (REPO@sha256:…) is written to DIST/image.ref; `make pin-image` puts it in examples/kubernetes.
IMAGE_REGISTRY ?= localhost:5000
IMAGE_REPO ?= $(IMAGE_REGISTRY)/lifeboat
IMAGE_TAG ?= $(VERSION)
IMAGE_PLATFORMS ?= linux/amd64 linux/arm64
CA_CERTS ?= /etc/ssl/certs/ca-certificates.crt
SOURCE_URL ?=
image:
	$(need-sign-key)
	$(need-clean-tree)
	mkdir -p $(DIST)/image
	set -e; for p in $(IMAGE_PLATFORMS); do os=$${p%/*}; arch=$${p#*/}; \
	  GOOS=$$os GOARCH=$$arch $(GOBUILD) -o $(DIST)/image/lifeboat_$${os}_$${arch} ./cmd/lifeboat; done
	$(RELEASE_TOOL) image -repo $(IMAGE_REPO) -tag '$(IMAGE_TAG)' -key $(SIGN_KEY) \
	  $(foreach p,$(IMAGE_PLATFORMS),-platform $(p)=$(DIST)/image/lifeboat_$(subst /,_,$(p))) \
	  -version '$(VERSION)' -revision '$(COMMIT)' -created '$(COMMIT_TIME)' -source '$(SOURCE_URL)' \
	  -ca-certs '$(CA_CERTS)' -digest-file $(DIST)/image.ref

## pin-image: write the image reference by digest (IMAGE_REF, default DIST/image.ref from `make
## image`) into KUSTOMIZATION's images: entry (newName and digest): every container of
## examples/kubernetes then runs that image by digest (kubectl apply -k).
IMAGE_REF ?= $(shell cat $(DIST)/image.ref 2>/dev/null)
KUSTOMIZATION ?= examples/kubernetes/kustomization.yaml
pin-image:
	@printf '%s' '$(IMAGE_REF)' | grep -Eq '^[a-z0-9.:/_-]+@sha256:[0-9a-f]{64}$$' || { echo "make pin-image: IMAGE_REF=REGISTRY/REPO@sha256:<64 hex> is needed (make image writes $(DIST)/image.ref), got '$(IMAGE_REF)'" >&2; exit 2; }
	ref='$(IMAGE_REF)'; sed -i -e "s|^    newName: .*|    newName: $${ref%@*}|" -e "s|^    digest: .*|    digest: $${ref#*@}|" $(KUSTOMIZATION)
	@grep -A3 '^images:' $(KUSTOMIZATION)

clean:
	rm -rf $(BIN) $(DEMO) .bench dist
