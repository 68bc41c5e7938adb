#!/usr/bin/env bash
# Set up (idempotent) and run the test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# One pytest-xdist worker per core (at most 4: each loads spaCy, the vectors and the models), a
# test file to a worker: a file's module-scoped fixtures are built once. The slowest files are
# handed out first (tests/conftest.py, "the order"; --no-loadscope-reorder keeps that order), and
# the 25 slowest tests are listed at the end. `-n 0` runs in one process.
exec .venv/bin/python -m pytest -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder \
  --durations=25 "$@"
