# The few commands a contributor needs. Everything installs into .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The runtime alone (dependencies and the local models, no test tools), installed afresh
# from the lock: what the SBOM and the licence check describe.
RUNTIME := build/runtime-venv
SBOM := artifacts/sbom/llmeu.cdx.json
# The Node clients whose snippets in docs/clients.md the tests run.
NODE_CLIENTS := tests/clients/node
LLAMAINDEX := build/llamaindex-venv

.PHONY: serve install test check docs lint typecheck fmt bench lock runtime sbom licences audit \
	supply-chain image-test deploy-check

# Every install checks each downloaded file against the SHA-256 in requirements/*.txt
# (exported from uv.lock), so a file changed on the index fails the install instead of
# running. Build isolation is off: an sdist (llama-cpp-python) builds with the locked
# tools of requirements/build.txt, never with whatever the index serves that day.
# llama.cpp (in llama-cpp-python) is compiled for x86-64-v3 (AVX2, FMA, F16C), not for the
# build machine's own CPU: a virtual machine may report AMX or AVX-512 that its kernel does
# not let a process use (llama.cpp's AMX kernels then fault on their first matrix), and the
# wheel pip caches, like an image, may run on another machine than the one that built it.
# Set CMAKE_ARGS to build otherwise (docs/supply-chain.md).
CMAKE_ARGS ?= -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
export CMAKE_ARGS

# pip's shared wheel cache hands back a llama-cpp-python wheel of the same version whatever
# CMAKE_ARGS say, so a wheel built with other flags (or for another CPU) would be installed.
# It is built instead into a wheel directory of the project's own, keyed by its version and
# CMAKE_ARGS (from the hash-checked sdist, never from a cache), reused by the next install
# with the same flags, and installed from there before the lock, which it then satisfies.
LLAMA_VERSION := $(shell sed -n 's/^llama-cpp-python==\([^ ]*\) .*/\1/p' requirements/local.txt)
LLAMA_FLAGS := $(shell printf '%s' '$(CMAKE_ARGS)' | sha256sum | cut -c1-12)
LLAMA_WHEELS := build/wheels/llama-cpp-python-$(LLAMA_VERSION)-$(LLAMA_FLAGS)

# Keyed by version and flags, the directory needs no other prerequisite: a new version or
# other flags name another directory, and this one is kept for the next install.
$(LLAMA_WHEELS)/.built: | $(BIN)/python
	mkdir -p $(LLAMA_WHEELS)
	sed -n '/^llama-cpp-python==/,/--hash/p' requirements/local.txt > $(LLAMA_WHEELS)/requirement.txt
	$(BIN)/python -m pip install --require-hashes --no-deps --no-build-isolation -r requirements/build.txt
	$(BIN)/python -m pip wheel --no-cache-dir --require-hashes --no-deps --no-build-isolation \
		-r $(LLAMA_WHEELS)/requirement.txt -w $(LLAMA_WHEELS)
	printf '%s\n' '$(CMAKE_ARGS)' > $(LLAMA_WHEELS)/CMAKE_ARGS
	@touch $@

# $(call install-llama,VENV): the project's own llama-cpp-python wheel, and the flags it has.
define install-llama
	$(1)/bin/python -m pip install --no-deps --no-index --find-links $(LLAMA_WHEELS) \
		llama-cpp-python==$(LLAMA_VERSION)
	@echo "llama-cpp-python $(LLAMA_VERSION) built with CMAKE_ARGS=$$(cat $(LLAMA_WHEELS)/CMAKE_ARGS)"
endef

# $(call install-locked,VENV,LOCK,PROJECT) where PROJECT is `-e .` or `.`
define install-locked
	$(1)/bin/python -m pip install --require-hashes --no-deps --no-build-isolation -r requirements/build.txt
	$(1)/bin/python -m pip install --require-hashes --no-deps --no-build-isolation -r requirements/$(2).txt
	$(1)/bin/python -m pip install --no-deps --no-build-isolation $(3)
	@$(1)/bin/python -m pip check || { echo "The environment misses a dependency pyproject.toml asks for: run 'make lock' (docs/supply-chain.md)." >&2; exit 1; }
endef

$(BIN)/python:
	$(PY) -m venv $(VENV)

# Each install leaves a stamp; it runs again only when the lock or the project's metadata
# changed since (the package itself is installed editable: code changes need no install).
INSTALL_INPUTS := requirements/build.txt pyproject.toml setup.py

$(VENV)/.installed-%: requirements/%.txt $(INSTALL_INPUTS) | $(BIN)/python
	$(if $(filter local test,$*),$(call install-llama,$(VENV)))
	$(call install-locked,$(VENV),$*,-e .)
	@touch $@

$(VENV)/.installed-local $(VENV)/.installed-test: $(LLAMA_WHEELS)/.built

# Install the gateway with the bundled local models and start the embedded default.
serve: $(VENV)/.installed-local
	$(BIN)/llmeu serve

install: $(VENV)/.installed-test tests/evidence/jose/node_modules/.package-lock.json \
	tests/node/node_modules/.package-lock.json $(NODE_CLIENTS)/node_modules/.installed \
	$(LLAMAINDEX)/.installed

# An independent JOSE implementation (Node's `jose`) checks receipts in tests/evidence.
tests/evidence/jose/node_modules/.package-lock.json: tests/evidence/jose/package-lock.json
	cd tests/evidence/jose && npm ci --no-audit --no-fund

# The TypeScript SDK the end-to-end tests drive with Node, exactly as locked.
tests/node/node_modules/.package-lock.json: tests/node/package-lock.json
	cd tests/node && npm ci --no-audit --no-fund

# The Node clients from their lock (`npm ci` checks every integrity hash); without npm,
# a note says their snippets will not run.
$(NODE_CLIENTS)/node_modules/.installed: $(NODE_CLIENTS)/package-lock.json
	@if command -v npm >/dev/null; then \
		cd $(NODE_CLIENTS) && npm ci --no-audit --no-fund && touch node_modules/.installed; \
	else echo "npm not found: the Node snippets of docs/clients.md will not run" >&2; fi

# LlamaIndex's OpenAI integration requires openai<3 while the test extra has openai 3:
# its snippet in docs/clients.md runs from an environment of its own, hash-locked
# (tests/clients/llamaindex-requirements.txt, made with `uv pip compile --generate-hashes`).
$(LLAMAINDEX)/.installed: tests/clients/llamaindex-requirements.txt
	rm -rf $(LLAMAINDEX)
	$(PY) -m venv $(LLAMAINDEX)
	$(LLAMAINDEX)/bin/python -m pip install --require-hashes --no-deps -r $<
	@touch $@

# Lint, types, import layers, the documentation site, then the whole test suite.
test: install check docs
	$(BIN)/pytest -q

# The documentation site (mkdocs.yml) from docs/ into build/docs; --strict fails on a broken
# link or anchor and on a page left out of the nav.
docs: $(VENV)/.installed-test
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir build/docs

check:
	$(BIN)/ruff check llmeu tests bench tools setup.py
	$(BIN)/ruff format --check llmeu tests bench tools setup.py
	$(BIN)/mypy
	$(BIN)/mypy --strict -p tools
	$(BIN)/lint-imports
	$(BIN)/python -m tools.lock --check

fmt:
	$(BIN)/ruff format llmeu tests bench tools setup.py
	$(BIN)/ruff check --fix llmeu tests bench tools setup.py

bench: $(BIN)/python
	$(BIN)/python bench/compare.py
# Re-resolve after a dependency changed in pyproject.toml (other pins stay);
# `make lock UPGRADE=1` moves every pin to the newest release pyproject.toml allows.
lock: install
	$(BIN)/python -m tools.lock $(if $(UPGRADE),--upgrade)

runtime: $(LLAMA_WHEELS)/.built
	rm -rf $(RUNTIME)
	$(PY) -m venv $(RUNTIME)
	$(call install-llama,$(RUNTIME))
	$(call install-locked,$(RUNTIME),local,.)

# CycloneDX JSON of the runtime, every component with the SHA-256 of the file installed.
sbom: install runtime
	$(BIN)/python -m tools.sbom --python $(RUNTIME)/bin/python --output $(SBOM)

# Every runtime dependency's licence against the allow-list tools/licences.toml.
licences: install
	@test -x $(RUNTIME)/bin/python || $(MAKE) runtime
	$(BIN)/python -m tools.licences --python $(RUNTIME)/bin/python

# Known vulnerabilities of every pin in the lock, where an advisory database answers.
audit: install
	$(BIN)/python -m tools.audit $(AUDIT_FLAGS)

supply-chain: sbom licences audit

# Build both images of the Containerfile on a debootstrapped Debian base and run them
# (tools/image_test.py): root, podman and debootstrap; slow, so not part of `make test`.
image-test: install
	@command -v podman >/dev/null && command -v debootstrap >/dev/null \
		|| { apt-get update -qq && apt-get install -y -qq podman debootstrap; }
	$(BIN)/python -m tools.image_test

# checkov over deploy/, from its own hash-locked environment (its dependencies conflict
# with the project's), then the manifests through the Kubernetes client's typed models.
CHECKOV := build/checkov-venv
$(CHECKOV)/.installed: deploy/checkov-requirements.txt
	rm -rf $(CHECKOV)
	$(PY) -m venv $(CHECKOV)
	$(CHECKOV)/bin/python -m pip install --require-hashes --no-deps -r deploy/checkov-requirements.txt
	@touch $@

deploy-check: install $(CHECKOV)/.installed
	$(CHECKOV)/bin/checkov --quiet --compact --skip-download --framework kubernetes --directory deploy/kubernetes
	@# checkov knows a Dockerfile by its name
	mkdir -p build/checkov && cp Containerfile build/checkov/Dockerfile
	$(CHECKOV)/bin/checkov --quiet --compact --skip-download --framework dockerfile --file build/checkov/Dockerfile
	$(BIN)/pytest -q tests/deploy
