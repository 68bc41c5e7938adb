#!/usr/bin/env bash
# What the two device calls carry (docs/development.md, "Training a judge on a lent GPU"), built
# here in .devrun/, which .git/info/exclude ignores: the model pack in two parts, the gguf wheel
# for the device's Python 3.12, the base model's config for the probe, and the judged sets with
# the population files and the CPU's saved scores of the shipped judge as one tar.xz.
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.devrun/' .git/info/exclude || echo '/.devrun/' >> .git/info/exclude
rm -rf .devrun && mkdir -p .devrun/config
.venv/bin/python benchmarks/gpu_pack.py pack --out .devrun/gemma --part-mb 45
folder=$(.venv/bin/python -c 'from transnli.common.lm.conversion import resolve_model_folder
from transnli.common.lm.settings import LMSettings
print(resolve_model_folder(LMSettings())[0])')
cp "$folder/config.json" .devrun/config/
version=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("gguf"))')
.venv/bin/python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 -d .devrun "gguf==$version"
tar -cJf .devrun/data.tar.xz benchmarks/data/quality_{dev,test,genres,genres2,genres3,genres4,genres5,genres6}.jsonl \
    benchmarks/.judge-cache/population_*.json \
    benchmarks/data/pair_judge_compact_all_sets_read_test_scores.jsonl \
    benchmarks/data/pair_judge_compact_all_sets_read_genres5_genres6_scores.jsonl
du -b .devrun/* .devrun/config/*
