#!/usr/bin/env bash
# The test suite, with its set-up: installs what the tests need (scripts/setup_env.sh), then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
source scripts/cpu_env.sh
python3 -m ruff check .            # lint (rules in pyproject.toml)
python3 -m ruff format --check .   # formatting
# Two phases. Everything but the engines on two workers (pytest-xdist); then the engine runs one at a time, alone:
# vLLM's CPU build spins both cores' OpenMP threads, and beside other work its throughput collapses.
phase() { python3 -m pytest -q "$@" || [ $? -eq 5 ]; }   # a selection without tests of one phase is no failure
phase -n 2 -m "not engine" tests "$@"
phase -m engine tests "$@"
