#!/usr/bin/env bash
# The test suite, with its set-up: installs what the tests need (scripts/setup_env.sh), then runs pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_env.sh
source scripts/cpu_env.sh
python3 -m ruff check .            # lint (rules in pyproject.toml)
python3 -m ruff format --check .   # formatting
# two workers (pytest-xdist): the engine tests run one at a time on one of them (tests/conftest.py), the rest on both
python3 -m pytest -q -n 2 --dist loadgroup tests "$@"
