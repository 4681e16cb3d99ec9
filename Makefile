# memoryadmin: `make run` for a local instance, `make test` for the whole suite.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: install run test lint format bench migrate redoc clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

migrate: install
	MEMORYADMIN_DEBUG=true $(BIN)/python manage.py migrate --noinput

# Web on http://127.0.0.1:8000, a Celery worker and the beat scheduler; Ctrl-C stops all three.
run: install
	MEMORYADMIN_DEBUG=true $(BIN)/python manage.py migrate --noinput
	MEMORYADMIN_DEBUG=true $(BIN)/python manage.py seed_demo
	MEMORYADMIN_DEBUG=true $(BIN)/honcho --no-prefix start -f Procfile.dev

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

test: install lint
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: install
	$(BIN)/python -m bench $(BENCH_ARGS)

# After upgrading drf-spectacular-sidecar: our copy of Redoc without its CDN-hosted logo.
redoc: install
	$(BIN)/python -m memoryadmin.redoc

clean:
	rm -rf $(VENV) var staticfiles
