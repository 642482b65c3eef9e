# `make demo` and `make test` each set up .venv on a fresh machine first.
PYTHON ?= python3
# The CPU wheel this workplace serves locally; `make TORCH=torch` takes whatever pip picks (e.g. a CUDA build).
TORCH  ?= torch==2.13.0
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test bench clean

setup: $(STAMP)

$(STAMP): setup.cfg pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q "$(TORCH)"
	$(BIN)/python -m pip install -q -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(BIN)/rescorer task=evaluate data=demo

test: setup
	$(BIN)/python -m pytest -q

bench: setup
	$(BIN)/python benchmarks/read_speed.py

clean:
	rm -rf $(VENV) exp .pytest_cache .hypothesis *.egg-info
