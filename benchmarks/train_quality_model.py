"""Train the quality scorer (generator/filters/quality_model.py) on the judged dev candidates, and
measure it honestly with grouped cross-validation.

    .venv/bin/python benchmarks/train_quality_model.py [--out resources/models/quality_model.json]
        [--seeds 5] [--folds 5] [--cv-out benchmarks/data/quality_model_cv.json] [--no-cv]

Data: benchmarks/data/quality_dev.jsonl (hand-judged candidates) rebuilt into feature rows by
benchmarks/quality_dataset.py with the generator's own feature code.

Model: standardised features, L2 logistic regression (scikit-learn, lbfgs), trained on every
judged candidate (the filters' and checks' rejections too: more data, and the rows the default
preset accepts are a subset of them). The file written holds the standardisation, coefficients,
feature names, the training data's sha256, the scikit-learn version and the CV figures; it is
written with sorted keys and rounded numbers, so the same data gives a byte-identical file.

Cross-validation (the only figures to quote): GroupKFold over source sentences (no sentence in
both train and test), `--folds` folds, repeated with `--seeds` shuffles. Each fold trains on the
training sentences' candidates and scores the held-out sentences' candidates; precision and recall
are computed on the held-out candidates the default preset accepts (the population the scorer
filters), per threshold, and averaged over seeds. recall = share of the good accepted triples that
the threshold keeps.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from quality_dataset import SENTENCES, Dataset, build_dataset  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "resources" / "models" / "quality_model.json"
THRESHOLDS = (0.0, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85)
C = 0.1  # L2 strength: chosen by grouped CV among 0.03, 0.1, 1 (docs/quality-model.md)
DIGITS = 10  # significant digits written: hides last-bit BLAS differences between machines


def make_model():
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=5000))


def fit(X: np.ndarray, y: np.ndarray):
    model = make_model()
    model.fit(X, y)
    return model


def out_of_fold(ds: Dataset, folds: int, seed: int) -> np.ndarray:
    """Held-out P(good) for every row: each from a model that never saw its sentence."""
    from sklearn.model_selection import GroupKFold

    oof = np.full(len(ds.y), np.nan)
    for train, test in GroupKFold(folds, shuffle=True, random_state=seed).split(
        ds.X, ds.y, ds.groups
    ):
        oof[test] = fit(ds.X[train], ds.y[train]).predict_proba(ds.X[test])[:, 1]
    return oof


def curve(scores: np.ndarray, good: np.ndarray, n_sentences: int) -> list[dict]:
    """Precision, recall and coverage of `scores >= t` among the given (accepted) candidates."""
    total_good = int(good.sum())
    rows = []
    for t in THRESHOLDS:
        keep = scores >= t
        kept, kept_good = int(keep.sum()), int((keep & (good == 1)).sum())
        rows.append(
            {
                "threshold": t,
                "kept": kept,
                "good_kept": kept_good,
                "precision": kept_good / kept if kept else None,
                "recall": kept_good / total_good if total_good else None,
                "triples_per_sentence": kept / n_sentences,
                "good_per_sentence": kept_good / n_sentences,
            }
        )
    return rows


def threshold_for(scores: np.ndarray, good: np.ndarray, target: float) -> float | None:
    """The lowest score threshold whose kept candidates reach `target` precision (None: never,
    with at least 20 kept, so a handful of lucky top scores does not count)."""
    order = np.argsort(-scores, kind="stable")
    hits = np.cumsum(good[order])
    n = np.arange(1, len(order) + 1)
    ok = np.where((hits / n >= target) & (n >= 20))[0]
    return float(scores[order][ok.max()]) if len(ok) else None


def cross_validate(ds: Dataset, folds: int, seeds: int) -> dict:
    from sklearn.metrics import roc_auc_score

    n_sentences = sum(
        1 for line in SENTENCES.read_text(encoding="utf-8").splitlines() if line.strip()
    )
    acc = ds.default_accepted
    good = ds.y[acc]
    per_seed, aucs, t90 = [], [], []
    for seed in range(seeds):
        s = out_of_fold(ds, folds, seed)[acc]
        aucs.append(roc_auc_score(good, s))
        per_seed.append(curve(s, good, n_sentences))
        t90.append(threshold_for(s, good, 0.90))
    table = []
    for i, t in enumerate(THRESHOLDS):
        rows = [p[i] for p in per_seed]
        entry = {"threshold": t}
        for k in (
            "precision",
            "recall",
            "triples_per_sentence",
            "good_per_sentence",
            "kept",
            "good_kept",
        ):
            vals = [r[k] for r in rows if r[k] is not None]
            entry[k] = round(float(np.mean(vals)), 4) if vals else None
            if k in ("precision", "recall") and vals:
                entry[k + "_sd"] = round(float(np.std(vals)), 4)
        table.append(entry)
    reached = [t for t in t90 if t is not None]
    return {
        "protocol": f"GroupKFold by source sentence, {folds} folds x {seeds} shuffles; trained on "
        "every judged candidate of the training sentences; scored on the held-out candidates the "
        "default preset accepts",
        "population": {
            "accepted": int(acc.sum()),
            "good": int(good.sum()),
            "sentences": n_sentences,
            "precision_without_scorer": round(float(good.mean()), 4),
        },
        "auc": round(float(np.mean(aucs)), 4),
        "auc_sd": round(float(np.std(aucs)), 4),
        "threshold_for_precision_0.90": {
            "seeds_reaching": len(reached),
            "seeds": seeds,
            "thresholds": [round(t, 4) for t in reached],
        },
        "curve": table,
    }


def _round(x: float) -> float:
    return float(f"{x:.{DIGITS}g}")


def model_dict(ds: Dataset, model, cv: dict | None) -> dict:
    import sklearn

    scaler, logreg = model.steps[0][1], model.steps[1][1]
    return {
        "format": "transnli-quality-logreg-1",
        "feature_names": list(ds.names),
        "mean": [_round(v) for v in scaler.mean_],
        "scale": [_round(v) if v > 0 else 1.0 for v in scaler.scale_],
        "coef": [_round(v) for v in logreg.coef_[0]],
        "intercept": _round(float(logreg.intercept_[0])),
        "training": {
            "data": "benchmarks/data/quality_dev.jsonl + quality_dev_sentences.jsonl",
            "data_sha256": ds.data_sha256,
            "rows": int(len(ds.y)),
            "good": int(ds.y.sum()),
            "sentences": int(len(set(ds.groups.tolist()))),
            "judged_not_rebuilt": ds.missing,
            "model": f"StandardScaler + LogisticRegression(C={C}, lbfgs)",
            "sklearn_version": sklearn.__version__,
        },
        "cv": cv,
    }


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument(
        "--no-cv", action="store_true", help="Skip cross-validation (the file then has cv: null)."
    )
    args = ap.parse_args(argv)
    try:
        import sklearn  # noqa: F401
    except ImportError:
        sys.exit(
            "train_quality_model.py needs scikit-learn: .venv/bin/pip install scikit-learn (or "
            ".[train])"
        )

    ds = build_dataset()
    cv = None if args.no_cv else cross_validate(ds, args.folds, args.seeds)
    model = fit(ds.X, ds.y)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(model_dict(ds, model, cv), indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )
    print(json.dumps({"written": str(args.out), "rows": int(len(ds.y)), "cv": cv}, indent=1))


if __name__ == "__main__":
    main()
