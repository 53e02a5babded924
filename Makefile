# Lifeboat — every target installs what it needs, idempotently.
SHELL := /bin/bash
GO    ?= go
BIN   := $(CURDIR)/bin
LIFEBOAT := $(BIN)/lifeboat
DEMO  := $(CURDIR)/.demo
FUZZTIME ?= 20s
export PATH := $(BIN):$(PATH)

.PHONY: all build test vet lint fmt-check fuzz bench demo clean

# `emulators`: versitygw (S3) into ./bin, Azurite into ./.tools; each only when missing.
include mk/emulators.mk

all: build

build:
	$(GO) build -o $(LIFEBOAT) ./cmd/lifeboat

## test: everything CI runs: formatting, vet, unit, property, fuzz-seed and integration tests
## against real S3 (versitygw), GCS (fake-gcs-server) and Azure (Azurite) servers on loopback.
test: fmt-check vet emulators
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

lint: fmt-check vet

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

## fuzz: run every fuzzer for FUZZTIME each (seeds alone already run in `make test`).
fuzz:
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

## bench: throughput figures next to sha256sum and openssl on the same files, same run.
bench: build
	$(GO) run ./internal/bench -lifeboat $(LIFEBOAT) -dir $(CURDIR)/.bench

## demo: the main job on an embedded sample — no cloud account needed.
demo: build
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

clean:
	rm -rf $(BIN) $(DEMO) .bench
