"""Language-model features for the learned quality scorer: do they beat the LM's d alone?

    .venv/bin/python benchmarks/bench_quality_lm.py [--lm gemma3-270m] [--seeds 5] [--folds 5]
        [--context] [--out benchmarks/data/quality_lm_features.json]

Both judged sets are rebuilt into feature rows with the generator's own stages
(benchmarks/quality_dataset.py); the LM features (generator/filters/lm_features.py) are added from
the language model (its score cache makes a rerun cheap). Scorers compared:
- `rules`: the shipped scorer's features (today's model, refitted on dev the same way);
- `d`: d = log p(H') - log p(H) alone, no training;
- `lm`: a logistic regression over the LM features only;
- `rules+lm`: the shipped features and the LM features;
- with --context, `d_context` (d with the premise before H and H': log p(P H') - log p(P H)) and
  `lm+context` (the LM features and d_context).

The population is what the default preset accepts (its filters and checks on). A scorer keeps the
candidates whose score reaches a cut; for each set, the figure to quote is the best precision at
a cut that keeps at least 80% of the default's good triples, and the curve of precision against
the share of the default's good triples kept. Dev: grouped cross-validation (GroupKFold over
source sentences, `--folds` folds x `--seeds` shuffles; mean and sd over shuffles), every model
trained on every judged candidate of the training sentences. Test: each model trained on all of
dev and applied to test, which no choice here has seen.

Prints one JSON object (and writes it with --out). Not a test: nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_lm_curve import SETS  # noqa: E402
from pair_judge_curve import print_result  # noqa: E402 - one JSON output
from quality_dataset import Dataset, build_dataset  # noqa: E402

KEEP_SHARE = 0.80  # the constraint: keep at least 80% of the default's good triples
SHARES = (1.0, 0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5, 0.4, 0.3)
C_GRID = (0.03, 0.1, 0.3, 1.0)
SCORERS = ("rules", "d", "lm", "rules+lm")
CONTEXT_SCORERS = ("d_context", "lm+context")  # with --context
UNTRAINED = ("d", "d_context")  # a score used as it is
# rules: the shipped model's L2 strength (train_quality_model.C); the others are chosen on dev CV
FIXED_C = {"rules": 0.1, "d": None, "d_context": None}


def lm_dataset(ds: Dataset, scorer) -> Dataset:
    from lm_features import LM_FEATURE_NAMES, LMFeatures

    rows = LMFeatures(scorer).rows(ds.pairs())
    X = np.array([[r[n] for n in LM_FEATURE_NAMES] for r in rows], dtype=np.float64)
    return ds.with_columns(LM_FEATURE_NAMES, X)


def context_dataset(ds: Dataset, scorer, sentences: Path) -> Dataset:
    """Adds `lm_context_d`: d with the premise before each sentence (log p(P H') - log p(P H))."""
    premise: dict[str, str] = {}
    for line in sentences.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            premise.setdefault(row["hypothesis"], row["premise"])
    pairs = [(f"{premise[h]} {h}", f"{premise[h]} {m}") for h, m in ds.pairs()]
    d = [s.delta for s in scorer.compare_many(pairs)]
    return ds.with_columns(("lm_context_d",), np.array(d, dtype=np.float64)[:, None])


def columns(ds: Dataset, scorer: str) -> np.ndarray:
    """The feature columns a scorer uses: the rule features have no `lm_` prefix."""
    from lm_features import LM_FEATURE_NAMES

    wanted = {
        "rules": [n for n in ds.names if not n.startswith("lm_")],
        "d": ["lm_d"],
        "lm": list(LM_FEATURE_NAMES),
        "rules+lm": [n for n in ds.names if n != "lm_context_d"],
        "d_context": ["lm_context_d"],
        "lm+context": [*LM_FEATURE_NAMES, "lm_context_d"],
    }[scorer]
    return ds.X[:, [ds.names.index(n) for n in wanted]]


def make_model(C: float):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=5000))


def train_and_score(X_train, y_train, X_test, C: float) -> np.ndarray:
    return make_model(C).fit(X_train, y_train).predict_proba(X_test)[:, 1]


def out_of_fold(X: np.ndarray, ds: Dataset, folds: int, seed: int, C: float) -> np.ndarray:
    from sklearn.model_selection import GroupKFold

    oof = np.full(len(ds.y), np.nan)
    for train, test in GroupKFold(folds, shuffle=True, random_state=seed).split(X, ds.y, ds.groups):
        oof[test] = train_and_score(X[train], ds.y[train], X[test], C)
    return oof


def keep_curve(scores: np.ndarray, good: np.ndarray, baseline_good: int) -> dict:
    """Precision at the smallest cut (scores >= cut) that keeps each share of the baseline's good
    triples, and the best precision keeping at least KEEP_SHARE of them."""
    order = np.argsort(-scores, kind="stable")
    s, g = scores[order], good[order]
    # a cut keeps every candidate scoring at least the cut: only the last index of a tie counts
    last = np.r_[s[1:] != s[:-1], True]
    hits = np.cumsum(g)[last]
    kept = np.arange(1, len(s) + 1)[last]
    precision, share = hits / kept, hits / baseline_good
    curve = []
    for target in SHARES:
        ok = np.where(share >= target - 1e-12)[0]
        if len(ok):
            i = ok[0]
            curve.append(
                {
                    "share_of_good_kept": round(float(share[i]), 4),
                    "kept": int(kept[i]),
                    "good_kept": int(hits[i]),
                    "precision": round(float(precision[i]), 4),
                }
            )
    ok = np.where(share >= KEEP_SHARE)[0]
    best = ok[np.argmax(precision[ok])]
    return {
        "precision_at_80": round(float(precision[best]), 4),
        "kept_at_80": int(kept[best]),
        "good_kept_at_80": int(hits[best]),
        "curve": curve,
    }


def auc(scores: np.ndarray, good: np.ndarray) -> float:
    from sklearn.metrics import roc_auc_score

    return round(float(roc_auc_score(good, scores)), 4)


def population(ds: Dataset) -> tuple[np.ndarray, np.ndarray, int]:
    acc = ds.default_accepted
    good = ds.y[acc]
    return acc, good, int(good.sum())


def summarise(runs: list[dict]) -> dict:
    """Mean and sd over shuffles of the headline figures; the first shuffle's curve."""
    p80 = [r["precision_at_80"] for r in runs]
    aucs = [r["auc"] for r in runs]
    return {
        "precision_at_80": round(float(np.mean(p80)), 4),
        "precision_at_80_sd": round(float(np.std(p80)), 4),
        "auc_among_accepted": round(float(np.mean(aucs)), 4),
        "auc_sd": round(float(np.std(aucs)), 4),
        "kept_at_80": runs[0]["kept_at_80"],
        "curve_first_shuffle": runs[0]["curve"],
    }


def evaluate_dev(ds: Dataset, scorer: str, C: float, folds: int, seeds: int) -> dict:
    acc, good, baseline = population(ds)
    X = columns(ds, scorer)
    runs = []
    for seed in range(1 if scorer in UNTRAINED else seeds):
        s = X[:, 0] if scorer in UNTRAINED else out_of_fold(X, ds, folds, seed, C)
        runs.append({**keep_curve(s[acc], good, baseline), "auc": auc(s[acc], good)})
    return summarise(runs)


def evaluate_test(dev: Dataset, test: Dataset, scorer: str, C: float) -> dict:
    acc, good, baseline = population(test)
    Xd, Xt = columns(dev, scorer), columns(test, scorer)
    s = Xt[:, 0] if scorer in UNTRAINED else train_and_score(Xd, dev.y, Xt, C)
    return {**keep_curve(s[acc], good, baseline), "auc_among_accepted": auc(s[acc], good)}


def choose_c(ds: Dataset, scorer: str, folds: int, seeds: int) -> tuple[float, dict]:
    """The L2 strength with the best dev CV precision at 80% kept (dev only)."""
    tried = {C: evaluate_dev(ds, scorer, C, folds, seeds) for C in C_GRID}
    best = max(C_GRID, key=lambda C: tried[C]["precision_at_80"])
    return best, {str(C): tried[C]["precision_at_80"] for C in C_GRID}


def describe(ds: Dataset) -> dict:
    acc, good, baseline = population(ds)
    return {
        "judged_rebuilt": int(len(ds.y)),
        "judged_not_rebuilt": ds.missing,
        "default_accepted": int(acc.sum()),
        "default_accepted_not_rebuilt": ds.accepted_not_rebuilt,
        "default_good": baseline,
        "default_precision": round(float(good.mean()), 4),
    }


def report(
    dev: Dataset, test: Dataset, scorers: tuple[str, ...], lm: dict, folds: int, seeds: int
) -> dict:
    """Every scorer's figures on both sets (the JSON this script prints)."""
    result = {
        "benchmark": "quality_lm_features",
        "lm": lm,
        "protocol": f"dev: GroupKFold by source sentence, {folds} folds x {seeds} "
        "shuffles, trained on every judged candidate of the training sentences; test: trained "
        "on all of dev. Population: what the default preset accepts; figure: best precision "
        f"keeping >= {KEEP_SHARE:.0%} of the default's good triples",
        "dev": describe(dev),
        "test": describe(test),
        "scorers": {},
    }
    for name in scorers:
        if name in FIXED_C:
            C, grid = FIXED_C[name], None
        else:
            C, grid = choose_c(dev, name, folds, seeds)
        result["scorers"][name] = {
            "C": C,
            "dev_cv_precision_at_80_by_C": grid,
            "dev": evaluate_dev(dev, name, C, folds, seeds),
            "test": evaluate_test(dev, test, name, C),
        }
    return result


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lm", default="gemma3-270m")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument(
        "--context",
        action="store_true",
        help="Also score each pair after its premise (lm_context_d; about 10x the LM time).",
    )
    ap.add_argument("--out", type=Path, help="Also write the JSON here.")
    args = ap.parse_args(argv)

    from transnli.common.lm.scorer import CausalLMScorer
    from transnli.common.lm.settings import LMSettings

    scorer = CausalLMScorer.load(LMSettings(spec=args.lm))
    dev = lm_dataset(build_dataset(*SETS["dev"]), scorer)
    test = lm_dataset(build_dataset(*SETS["test"]), scorer)
    scorers = SCORERS
    if args.context:
        dev = context_dataset(dev, scorer, SETS["dev"][0])
        test = context_dataset(test, scorer, SETS["test"][0])
        scorers += CONTEXT_SCORERS
    result = report(dev, test, scorers, scorer.identity, args.folds, args.seeds)
    print_result(result, args.out)


if __name__ == "__main__":
    main()
