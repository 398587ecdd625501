# The README's commands. `make demo` and `make test` each set up .venv first (idempotent);
# `make test` also installs the system packages its tests drive.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.fgrpo-installed

.PHONY: setup system-deps demo test lint clean

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# CPU torch first, pinned: anything that lets pip choose pulls a multi-GB CUDA build.
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e ".[test]"
	touch $(STAMP)

# Debian's prometheus + promtool for the telemetry tests (apt: needs root); the demo does not need them.
system-deps:
	bash scripts/install_system_deps.sh

setup: $(STAMP) system-deps

# The main job: the paper's categorical policy simulation, reduced sweep (< 5 min on 2 CPU cores),
# writing a table, outputs/simulate/simulation.json and PNGs. `--full` is the paper's sweep.
demo: $(STAMP)
	$(BIN)/fgrpo-verl simulate --output-dir outputs/simulate

test: setup
	$(BIN)/ruff check .
	$(BIN)/python -m pytest

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info
