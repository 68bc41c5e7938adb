"""The judge benchmarks' bookkeeping that later runs rely on (benchmarks/train_pair_judge.py,
benchmarks/bench_precision_estimate.py)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

import bench_precision_estimate  # noqa: E402
import train_pair_judge  # noqa: E402


def test_a_saved_judge_is_read_on_the_sets_it_was_trained_on_not_todays(tmp_path, monkeypatch):
    """A folder trained before a judged set became a training set must not be refused on that set
    (nor allowed on one it did see): its own record says, or, for an older folder, the sets whose
    files give its recorded data digest."""
    files = {}
    for name in ("dev", "genres", "genres2"):
        files[name] = tmp_path / f"{name}.jsonl"
        files[name].write_text(f'{{"set": "{name}"}}\n')
    monkeypatch.setattr(train_pair_judge, "SETS", files)
    digest = train_pair_judge.data_digest(("dev", "genres"))

    assert train_pair_judge.folder_training_sets({"training_data_sha256": digest}) == (
        "dev",
        "genres",
    )
    recorded = {"training": {"sets": ["dev"]}, "training_data_sha256": digest}
    assert train_pair_judge.folder_training_sets(recorded) == ("dev",)
    with pytest.raises(SystemExit, match="changed since it was trained"):
        train_pair_judge.folder_training_sets({"training_data_sha256": "0" * 64})


def test_a_simulated_review_reads_only_halves_the_refit_command_would_accept():
    """A small genre whose kept triples are all good cannot be refitted by `transnli judge fit`
    (it refuses one class); the simulation says so instead of failing or inventing figures."""
    rng = np.random.default_rng(0)
    p = rng.uniform(0.5, 0.95, 40)
    skipped = bench_precision_estimate.user_review(p, np.ones(40, dtype=int), splits=5)
    assert skipped["splits"] == 0 and "40 kept triples (40 good)" in skipped["skipped"]
    good = (rng.uniform(size=200) < p.repeat(5)).astype(int)
    read = bench_precision_estimate.user_review(p.repeat(5), good, splits=5)
    assert read["splits"] == 5 and read["fitted_on"] == 100
