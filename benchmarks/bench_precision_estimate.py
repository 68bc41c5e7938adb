"""Leave-one-genre-out validation of the card's estimated precision (transnli.generator.precision)
and of the calibrations that could carry it to a genre the judge never saw: for each genre left
out in turn, the judge is trained and calibrated on the others only, and each method estimates the
precision of what it accepts in the left-out genre, against the precision people measured there.

    .venv/bin/python benchmarks/judge_data.py --set dev      # (genres, genres2, test) once each
    .venv/bin/python benchmarks/bench_precision_estimate.py [--write-judge] \
        > benchmarks/data/precision_estimate_logo.json

Genres: judge_logo.py's (one definition): the dev set's WordNet examples, each genre of the two
genre sets and the test set (never trained on). For a left-out genre G the judge's head (the
shipped configuration) is fitted on every judged candidate of the other genres, and its Platt
calibration on their out-of-fold scores (5 folds grouped by sentence) over the gate candidates
(what the filters and grammar check pass: what the judge decides in the default preset). On G's
gate candidates: accepted = p >= the shipped threshold; measured = their good share (Wilson
interval). Each method sees G's probabilities (or features) only, never its labels:
- mean: the mean p over the accepted (the card's method);
- em: the prior re-estimated by EM over G's gate candidates (Saerens et al. 2002), the accepted's
  posteriors moved to it; bbse: black-box shift estimation (Lipton et al. 2018) at the threshold;
- platt_balanced: Platt refitted with each training genre weighing the same;
- platt_genre_oof: Platt refitted on genre-out-of-fold scores (each training genre scored by a
  head fitted without it: the scores a new genre gets); isotonic_balanced: isotonic regression on
  them, genres weighing the same;
- random_intercept: a shared slope and one intercept a genre on the genre-out-of-fold scores, G's
  intercept predicted from its accepted share (a straight line over the training genres');
- importance_weighted: a domain classifier (training gate candidates against G's unlabelled ones,
  on the scalars and 16 principal components of the span state) gives density ratios; Platt
  refitted with them as weights; iw_direct: the weighted precision of the training genres'
  accepted (genre-out-of-fold);
- training_precision: the training genres' measured precision at the threshold (genre-out-of-
  fold), ignoring G; offset: the mean plus the training genres' mean (measured - mean);
  average: the mean of "mean" and "training_precision";
- selected: for each G, the method with the smallest largest error in a leave-one-genre-out over
  G's training genres alone (nested: G's labels play no part in the choice).
ECE (10 bins) of each method's probabilities over G's gate candidates. The card can compute the
methods of transnli.generator.precision.METHODS; the one of them with the smallest largest error
is "chosen", and --write-judge records it with its largest error in the shipped judge file.
Each card interval (the estimate +- its sampling spread + the judge file's recorded error) is
checked against the measured precision.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_quality import default_run_errors, load_judgements  # noqa: E402
from judge_data import CACHE, SETS  # noqa: E402
from judge_logo import MODELS, all_sets, subset  # noqa: E402 - one definition of the genres
from train_judge import (  # noqa: E402
    OUT,
    collapse,
    fit,
    linear_scores,
    out_of_fold,
    platt,
    population_keys,
    sigmoid,
)
from transnli.generator.judge import SCALARS  # noqa: E402
from transnli.generator.precision import (  # noqa: E402
    METHODS,
    calibration_error,
    em_prior,
    sampling_half_width,
    shift_posteriors,
    wilson_interval,
)

CONFIG = MODELS["shipped"]  # the shipped judge's configuration (its training.model)
FOLDS = 5
COMPONENTS = 16  # the domain classifier's principal components of the span state
SPAN = f"L{CONFIG.layer}_span_modified"
WIDE = len(SCALARS)  # the scalars' columns, before the span state's, in Fold.x


@dataclass(frozen=True)
class Fold:
    """What a method may use: the training genres' gate candidates (sentence- and genre-out-of-
    fold scores, labels, genres, features) and the left-out genre's, without its labels."""

    z_oof: np.ndarray  # out-of-fold by sentence: what the judge's own calibration is fitted on
    z_genre: np.ndarray  # each genre scored by a head fitted without it
    y: np.ndarray
    genre: np.ndarray
    x: np.ndarray  # [scalars | span state]
    z: np.ndarray  # the left-out genre's scores
    x_target: np.ndarray
    threshold: float

    def calibration(self) -> tuple[float, float]:
        return platt(self.z_oof, self.y)

    def accepted(self, z: np.ndarray) -> np.ndarray:
        a, b = self.calibration()
        return sigmoid(a * z + b) >= self.threshold

    def without(self, genre: str) -> tuple[Fold, np.ndarray]:
        """The inner fold leaving `genre` out (its genre-out-of-fold scores as the target), and
        its labels."""
        keep = self.genre != genre
        inner = replace(
            self,
            **{k: getattr(self, k)[keep] for k in ("z_oof", "z_genre", "y", "genre", "x")},
            z=self.z_genre[~keep],
            x_target=self.x[~keep],
        )
        return inner, self.y[~keep]


def fold_for(data: dict, train_rows: np.ndarray, held_rows: np.ndarray, threshold: float):
    """The judge refitted on `train_rows`, its scores, and the fold the methods read."""
    train = subset(data, train_rows)
    z_oof = out_of_fold(train, CONFIG, FOLDS, seed=0)
    z_genre = np.zeros(len(train_rows))
    for genre in sorted(set(train["genre"])):
        rows = train["genre"] == genre
        model = collapse(*fit(train, np.where(~rows)[0], CONFIG), CONFIG, WIDE)
        z_genre[rows] = linear_scores(model, train, np.where(rows)[0], CONFIG)
    model = collapse(*fit(train, np.arange(len(train_rows)), CONFIG), CONFIG, WIDE)
    gate = train["gate"]

    def features(rows):
        return np.hstack([data["scalars"][rows], data[SPAN][rows].astype(np.float64)])

    return Fold(
        z_oof=z_oof[gate],
        z_genre=z_genre[gate],
        y=train["y"][gate],
        genre=train["genre"][gate],
        x=features(train_rows[gate]),
        z=linear_scores(model, data, held_rows, CONFIG),
        x_target=features(held_rows),
        threshold=threshold,
    )


def balanced(genre: np.ndarray) -> np.ndarray:
    """Weights under which each genre weighs the same (mean 1)."""
    _, index, counts = np.unique(genre, return_inverse=True, return_counts=True)
    w = 1.0 / counts[index]
    return w * len(w) / w.sum()


def weighted_platt(z, y, w, target) -> np.ndarray:
    from sklearn.linear_model import LogisticRegression

    model = LogisticRegression(C=1e6, max_iter=1000).fit(z.reshape(-1, 1), y, sample_weight=w)
    return model.predict_proba(target.reshape(-1, 1))[:, 1]


def density_ratios(f: Fold) -> np.ndarray:
    """p(target | x) / p(training | x) for each training candidate, from a logistic domain
    classifier on the scalars and the span state's principal components (clipped at the 99th
    percentile: a few huge weights would make one candidate the whole calibration)."""
    from sklearn.decomposition import PCA
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    both = np.vstack([f.x, f.x_target])
    pca = PCA(n_components=COMPONENTS, random_state=0).fit(both[:, WIDE:])
    X = np.hstack([both[:, :WIDE], pca.transform(both[:, WIDE:])])
    X = StandardScaler().fit_transform(X)
    side = np.r_[np.zeros(len(f.x)), np.ones(len(f.x_target))]
    q = LogisticRegression(C=0.1, max_iter=3000).fit(X, side).predict_proba(X[: len(f.x)])[:, 1]
    w = q / (1 - q)
    w = np.minimum(w, np.quantile(w, 0.99))
    return w / w.mean()


def per_genre_accepted(f: Fold) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each training genre, on its genre-out-of-fold scores: mean p of the accepted, their
    measured precision and their number."""
    a, b = f.calibration()
    rows = []
    for genre in sorted(set(f.genre)):
        m = f.genre == genre
        p = sigmoid(a * f.z_genre[m] + b)
        kept = p >= f.threshold
        rows.append((p[kept].mean(), f.y[m][kept].mean(), kept.sum()))
    table = np.array(rows)
    return table[:, 0], table[:, 1], table[:, 2]


def random_intercept(f: Fold) -> np.ndarray:
    """A shared slope and one intercept per training genre on the genre-out-of-fold scores; the
    new genre's intercept from the line through (accepted share, intercept) of the training
    genres, read at its own accepted share (unlabelled)."""
    from sklearn.linear_model import LogisticRegression

    genres = sorted(set(f.genre))
    dummies = np.stack([f.genre == g for g in genres], 1).astype(float)
    X = np.hstack([f.z_genre[:, None], dummies])
    coef = LogisticRegression(C=1e6, max_iter=5000, fit_intercept=False).fit(X, f.y).coef_[0]
    slope, intercepts = coef[0], coef[1:]
    shares = np.array([f.accepted(f.z_genre[f.genre == g]).mean() for g in genres])
    line = np.polyfit(shares, intercepts, 1)
    return sigmoid(slope * f.z + np.polyval(line, f.accepted(f.z).mean()))


def isotonic_balanced(f: Fold) -> np.ndarray:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(out_of_bounds="clip", y_min=1e-3, y_max=1 - 1e-3)
    return iso.fit(f.z_genre, f.y, sample_weight=balanced(f.genre)).predict(f.z)


def judge_p(f: Fold) -> np.ndarray:
    a, b = f.calibration()
    return sigmoid(a * f.z + b)


def em(f: Fold) -> np.ndarray:
    t = float(f.y.mean())
    p = judge_p(f)
    return shift_posteriors(p, t, em_prior(p, t))


def bbse(f: Fold) -> float:
    """Black-box shift estimation's precision: prior x TPR / accepted share."""
    kept = f.accepted(f.z_oof)
    tpr, fpr = kept[f.y == 1].mean(), kept[f.y == 0].mean()
    share = f.accepted(f.z).mean()
    prior = float(np.clip((share - fpr) / (tpr - fpr), 1e-3, 1 - 1e-3))
    return float(min(1.0, prior * tpr / share))


def iw_direct(f: Fold) -> float:
    w, kept = density_ratios(f), f.accepted(f.z_genre)
    return float(np.sum(w * f.y * kept) / np.sum(w * kept))


def training_precision(f: Fold) -> float:
    _, measured, n = per_genre_accepted(f)
    return float(np.average(measured, weights=n))


def offset(f: Fold) -> float:
    mean_p, measured, n = per_genre_accepted(f)
    return float(judge_p(f)[f.accepted(f.z)].mean() + np.average(measured - mean_p, weights=n))


# Each method: the left-out genre's probabilities (an array: its ECE is read too) or the estimate
# alone (a number). "selected" is made from these by nested validation (selected()).
ESTIMATORS = {
    "mean": judge_p,
    "em": em,
    "bbse": bbse,
    "platt_balanced": lambda f: weighted_platt(f.z_oof, f.y, balanced(f.genre), f.z),
    "platt_genre_oof": lambda f: weighted_platt(f.z_genre, f.y, None, f.z),
    "isotonic_balanced": isotonic_balanced,
    "random_intercept": random_intercept,
    "importance_weighted": lambda f: weighted_platt(f.z_oof, f.y, density_ratios(f), f.z),
    "iw_direct": iw_direct,
    "training_precision": training_precision,
    "offset": offset,
    "average": lambda f: (judge_p(f)[f.accepted(f.z)].mean() + training_precision(f)) / 2,
}


def run_methods(f: Fold) -> tuple[dict, dict]:
    """Each method's estimate over what the judge accepts, and its probabilities where it has
    some."""
    kept = f.accepted(f.z)
    est, probs = {}, {}
    for name, method in ESTIMATORS.items():
        out = method(f)
        if isinstance(out, np.ndarray):
            probs[name] = out
            out = out[kept].mean()
        est[name] = float(out)
    return est, probs


def selected(f: Fold) -> tuple[str, dict]:
    """The method with the smallest largest error over a leave-one-genre-out of the fold's own
    training genres (their genre-out-of-fold scores as the left-out genre's)."""
    errors = {name: [] for name in ESTIMATORS}
    for genre in sorted(set(f.genre)):
        inner, y = f.without(genre)
        kept = inner.accepted(inner.z)
        est, _ = run_methods(inner)
        for name, value in est.items():
            errors[name].append(abs(value - y[kept].mean()))
    largest = {name: round(float(max(e)), 4) for name, e in errors.items()}
    return min(largest, key=largest.get), largest


def read_genre(f: Fold, y: np.ndarray, recorded_error: float) -> dict:
    """Each method against the measured precision of the accepted, ECE before and after, and
    whether the card's interval (with the judge file's recorded error) holds the measured."""
    est, probs = run_methods(f)
    choice, inner = selected(f)
    est["selected"] = est[choice]
    kept = f.accepted(f.z)
    good, n = int(y[kept].sum()), int(kept.sum())
    measured = good / n
    lo, hi = wilson_interval(good, n)
    p = judge_p(f)[kept]
    half = sampling_half_width(p) + recorded_error
    return {
        "gate_candidates": len(y),
        "accepted": n,
        "measured": round(measured, 4),
        "measured_interval": [round(lo, 4), round(hi, 4)],
        "good_share_of_gate": round(float(y.mean()), 4),
        "training_prior": round(float(f.y.mean()), 4),
        "estimate": {k: round(v, 4) for k, v in est.items()},
        "error": {k: round(v - measured, 4) for k, v in est.items()},
        "ece": {k: round(calibration_error(v, y), 4) for k, v in probs.items()},
        "selected": {"method": choice, "inner_largest_error": inner},
        "card_interval": [round(p.mean() - half, 4), round(p.mean() + half, 4)],
        "card_interval_holds_measured": bool(p.mean() - half <= measured <= p.mean() + half),
    }


def summary(per_genre: dict) -> dict:
    methods = next(iter(per_genre.values()))["error"]
    out = {}
    for m in methods:
        errors = np.array([g["error"][m] for g in per_genre.values()])
        out[m] = {
            "max_abs_error": round(float(np.abs(errors).max()), 4),
            "worst_genre": list(per_genre)[int(np.abs(errors).argmax())],
            "mean_abs_error": round(float(np.abs(errors).mean()), 4),
            "rmse": round(float(np.sqrt((errors**2).mean())), 4),
            "within_0.03": int((np.abs(errors) <= 0.03).sum()),
        }
        eces = [g["ece"][m] for g in per_genre.values() if m in g["ece"]]
        if eces:
            out[m] |= {
                "ece_max": max(eces),
                "ece_mean": round(float(np.mean(eces)), 4),
                "ece_within_0.05": int(sum(e <= 0.05 for e in eces)),
            }
    return out


def sampling_floor(per_genre: dict, tolerance: float = 0.03) -> dict:
    """What sampling alone allows: with each genre's true precision equal to the measured one,
    the chance that a perfect estimator's error (the measured share's own binomial spread) is
    within `tolerance` on every genre, and its expected mean absolute error."""
    from scipy.stats import binom

    chance, mae = 1.0, []
    for g in per_genre.values():
        n, q = g["accepted"], g["measured"]
        k = np.arange(n + 1)
        pmf = binom.pmf(k, n, q)
        chance *= float(pmf[np.abs(k / n - q) <= tolerance + 1e-12].sum())
        mae.append(float((pmf * np.abs(k / n - q)).sum()))
    return {
        "tolerance": tolerance,
        "chance_every_genre_within": round(chance, 4),
        "expected_mean_abs_error": round(float(np.mean(mae)), 4),
    }


def estimates(p: np.ndarray, y: np.ndarray, judge: dict, threshold: float) -> dict:
    """Each method's estimate of the accepted's precision against the measured one."""
    accepted = p >= threshold
    share = float(accepted.mean())
    t = judge["prior"]
    em = em_prior(p, t)
    tpr, fpr = judge["tpr"], judge["fpr"]
    bbse = float(np.clip((share - fpr) / (tpr - fpr), 1e-3, 1 - 1e-3))
    est = {
        "mean": float(p[accepted].mean()),
        "em": float(shift_posteriors(p[accepted], t, em).mean()),
        "bbse": float(min(1.0, bbse * tpr / share)),
        "bbse_posterior": float(shift_posteriors(p[accepted], t, bbse).mean()),
    }
    good = int(y[accepted].sum())
    measured = good / int(accepted.sum())
    lo, hi = wilson_interval(good, int(accepted.sum()))
    return {
        "gate_candidates": len(p),
        "accepted": int(accepted.sum()),
        "measured": round(measured, 4),
        "measured_interval": [round(lo, 4), round(hi, 4)],
        "good_share_of_gate": round(float(y.mean()), 4),
        "training_prior": round(t, 4),
        "em_prior": round(em, 4),
        "bbse_prior": round(bbse, 4),
        "estimate": {k: round(v, 4) for k, v in est.items()},
        "error": {k: round(v - measured, 4) for k, v in est.items()},
        "ece_raw": round(calibration_error(p, y), 4),
        "ece_em": round(calibration_error(shift_posteriors(p, t, em), y), 4),
        "ece_bbse": round(calibration_error(shift_posteriors(p, t, bbse), y), 4),
    }


def training_population() -> dict:
    """From the judgements and the pipeline's populations alone (no language model): the good
    share of the training genres' gate candidates (the shipped calibration's base rate) and the
    number of good and bad ones, for the shipped judge's out-of-fold TPR and FPR."""
    good = bad = 0
    for name in ("dev", "genres"):
        judged = load_judgements(SETS[name])
        gate = population_keys(name)["gate"]
        verdicts = [bool(judged[k]["good"]) for k in gate if k in judged]
        good += sum(verdicts)
        bad += len(verdicts) - sum(verdicts)
    return {"good": good, "bad": bad, "prior": good / (good + bad)}


def shipped_on(name: str, shipped: dict) -> dict:
    """The shipped judge (trained on dev + genres, never on `name`) on the set `name`'s features
    (a judge_data.py file, or a sample of it): each method's estimate against the measured
    precision. TPR and FPR at the threshold are the shipped file's out-of-fold figures."""
    from transnli.generator.judge import Judge

    judge = Judge.from_dict(shipped, str(OUT))
    parts = []
    for stem in name.split(","):  # several files: samples of one set, read apart
        with np.load(CACHE / f"{stem}_L{judge.layer}.npz") as f:
            parts.append(
                {k: f[k] for k in ("keys", "y", "scalars", f"L{judge.layer}_span_modified")}
            )
    data = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    if len(set(data["keys"])) != len(data["keys"]):
        sys.exit(f"{name}: the files overlap")
    z = ((data["scalars"] - judge.scalar_mean) / judge.scalar_scale) @ judge.scalar_coef
    z = z + judge.intercept
    for block, coef in judge.vector_coef.items():
        z = z + data[f"L{judge.layer}_{block}"].astype(np.float64) @ coef
    p = np.round(judge.calibrate(z), 4)
    pop = training_population()
    cv = shipped["validation"]["cv_at_threshold"]
    stats = {
        "prior": pop["prior"],
        "tpr": cv["good"] / pop["good"],
        "fpr": (cv["kept"] - cv["good"]) / pop["bad"],
    }
    out = estimates(p, data["y"], stats, judge.threshold)
    accepted = p >= judge.threshold
    set_name = name.split(",")[0].split("-sample")[0]
    judged = load_judgements(SETS[set_name])
    genres = np.array([judged[k].get("genre") or set_name for k in data["keys"]])
    out["by_genre"] = {
        g: estimates(p[genres == g], data["y"][genres == g], stats, judge.threshold)
        for g in sorted(set(genres))
        if len(set(genres)) > 1
    }
    return {
        "set": name,
        "candidates": len(p),
        "training": pop | stats,
        **out,
        "user_review": user_review(p[accepted], data["y"][accepted]),
    }


def outside_interval(estimate: float, k: int, n: int) -> bool:
    lo, hi = wilson_interval(k, n)
    return not lo <= estimate <= hi


#: rules a user might follow to refit only some of the time: each says, from the reviewed half
#: (the card's estimate, its mean p, and the judged: k good of n), whether to refit
SKIP_RULES = {
    "outside_95_interval": outside_interval,
    "gap_over_0.03": lambda estimate, k, n: abs(estimate - k / n) > 0.03,
    "gap_over_0.07": lambda estimate, k, n: abs(estimate - k / n) > 0.07,
}


def user_review(p: np.ndarray, good: np.ndarray, splits: int = 50) -> dict:
    """`transnli judge fit` measured: the accepted triples of a genre the judge never saw, as a
    user's review; the calibration refitted (review.refit.platt) on a random half of them, the
    figures read on the other half, before and after; averaged over `splits` seeded halvings
    (one halving of ~150 items is too noisy to read). A halving whose review half the command
    would refuse (fewer than MIN_JUDGEMENTS, or under FOLDS good or bad) is not read; a genre
    with none left says so instead of giving figures. `refit_only_when`: the estimate's mean
    absolute error under each rule of SKIP_RULES for when to keep the calibration as it is
    instead (read on the review half: the mean p against the share judged good)."""
    from transnli.review.refit import FOLDS, MIN_JUDGEMENTS, figures, platt, refit_accepts

    q = np.clip(p, 1e-4, 1 - 1e-4)
    s = np.log(q / (1 - q))
    rows = {"before": [], "after": []}
    skip_errors = {rule: [] for rule in SKIP_RULES}
    for seed in range(splits):
        order = np.random.default_rng(seed).permutation(len(p))
        fit_rows, held = order[: len(p) // 2], order[len(p) // 2 :]
        if not refit_accepts(len(fit_rows), int(good[fit_rows].sum())):
            continue
        alpha, beta = platt(s[fit_rows], good[fit_rows])
        new = 1 / (1 + np.exp(-(alpha * s[held] + beta)))
        rows["before"].append(figures(p[held], good[held]))
        rows["after"].append(figures(new, good[held]))
        n, k, estimate = len(fit_rows), int(good[fit_rows].sum()), float(p[fit_rows].mean())
        share, kept_as_is, refitted = float(good[held].mean()), float(p[held].mean()), new.mean()
        for rule, refits in SKIP_RULES.items():
            chosen = refitted if refits(estimate, k, n) else kept_as_is
            skip_errors[rule].append(abs(float(chosen) - share))

    def mean(side: str, key: str, f=lambda x: x) -> float:
        return round(float(np.mean([f(r[key]) for r in rows[side]])), 4)

    keys = ("log_loss", "brier", "ece", "estimate_error")
    if not rows["after"]:
        return {
            "splits": 0,
            "skipped": f"{len(p)} kept triples ({int(good.sum())} good): no half of them is a "
            f"review `transnli judge fit` accepts ({MIN_JUDGEMENTS} judgements, {FOLDS} good "
            f"and {FOLDS} bad at least)",
        }
    return {
        "splits": len(rows["after"]),
        "fitted_on": len(p) // 2,
        "measured_on": len(p) - len(p) // 2,
        **{side: {k: mean(side, k) for k in keys} for side in rows},
        "mean_abs_estimate_error": {side: mean(side, "estimate_error", abs) for side in rows},
        "refit_only_when": {
            rule: round(float(np.mean(errors)), 4) for rule, errors in skip_errors.items()
        },
    }


def unlabelled_signals(per_genre: dict) -> dict:
    """Spearman's correlation, over the left-out genres, of the measured precision with what a
    run knows without labels: the mean p of the accepted (the card's estimate) and the share of
    the gate candidates accepted. Near zero: nothing to correct a genre's estimate with."""
    from scipy.stats import spearmanr

    measured = [g["measured"] for g in per_genre.values()]
    signals = {
        "mean_p_accepted": [g["estimate"]["mean"] for g in per_genre.values()],
        "accepted_share": [g["accepted"] / g["gate_candidates"] for g in per_genre.values()],
    }
    out = {}
    for name, values in signals.items():
        rho, p = spearmanr(measured, values)
        out[name] = {"spearman": round(float(rho), 3), "p_value": round(float(p), 3)}
    return out


def logo(data: dict, threshold: float, recorded_error: float) -> dict:
    trainable = data["set"] != "test"  # the test set is never trained on
    per_genre = {}
    for genre in sorted(set(data["genre"])):
        held = data["genre"] == genre
        rows = np.where(held & data["gate"])[0]
        fold = fold_for(data, np.where(trainable & ~held)[0], rows, threshold)
        per_genre[genre] = read_genre(fold, data["y"][rows], recorded_error)
        print(f"{genre}: {json.dumps(per_genre[genre]['error'])}", file=sys.stderr, flush=True)
    return per_genre


END_TO_END_MIN_KEPT = 50  # below it a genre's error is mostly its own sampling (notes: 22 kept)


def end_to_end_errors(files: list[Path], shipped: dict) -> dict[str, dict]:
    """The shipped judge's estimate error, genre by genre, in end-to-end runs of the default
    preset (bench_quality.py --preset default --judged-only) on judged sets it was never trained
    on: the card's mean p of what the preset kept, against people's verdicts. Genres with fewer
    than END_TO_END_MIN_KEPT judged triples are listed but do not count."""
    trained_on = {Path(d).name for d in shipped["training"]["data"]}
    out = {}
    for path in files:
        run, genres = default_run_errors(path, "judge")
        if run.get("judgements_file") in trained_on:
            sys.exit(f"{path}: the judge was trained on {run['judgements_file']}")
        for genre, g in genres.items():
            out[genre] = {
                "file": path.name,
                "judged": g["judged"],
                "error": g["error"],
                "counts": g["judged"] >= END_TO_END_MIN_KEPT,
            }
    return out


def record_end_to_end(files: list[Path], shipped: dict, write: bool) -> dict:
    """The largest end-to-end error beside the recorded one: the judge file's max_abs_error must
    cover both, or the card's interval is narrower than what the judge has done on new text."""
    errors = end_to_end_errors(files, shipped)
    counted = {g: e for g, e in errors.items() if e["counts"]}
    if not counted:
        sys.exit(f"no genre of {len(errors)} has {END_TO_END_MIN_KEPT} judged triples")
    worst = max(counted, key=lambda g: abs(counted[g]["error"]))
    estimate = shipped["precision_estimate"]
    recorded = float(estimate["max_abs_error"])
    needed = max(recorded, abs(counted[worst]["error"]))
    result = {
        "recorded_error": recorded,
        "end_to_end": errors,
        "worst": {"genre": worst, **counted[worst]},
        "within_recorded": sum(abs(e["error"]) <= recorded for e in counted.values()),
        "genres_counted": len(counted),
        "needed_error": needed,
    }
    if write and needed > recorded:
        estimate["max_abs_error"] = needed
        estimate["end_to_end"] = {
            "files": sorted({e["file"] for e in errors.values()}),
            "min_judged": END_TO_END_MIN_KEPT,
            "errors": {g: e["error"] for g, e in sorted(counted.items())},
        }
        estimate["validation"] = (
            f"{estimate['validation'].split(' The largest end-to-end')[0].rstrip('.')}. "
            "The largest end-to-end "
            f"error of the default preset on genres the judge never saw, over "
            f"{len(counted)} genres with {END_TO_END_MIN_KEPT} judged triples or more: {worst} "
            f"{counted[worst]['error']:+.3f} ({counted[worst]['file']}; benchmarks/"
            "bench_precision_estimate.py --record-end-to-end)."
        )
        OUT.write_text(json.dumps(shipped, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        result["written"] = str(OUT.relative_to(OUT.parents[2]))
    return result


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--write-judge", action="store_true", help=f"Record the choice in {OUT}.")
    ap.add_argument(
        "--shipped-on",
        default=None,
        help="Only the shipped judge on these judge_data.py file stems, comma-separated (e.g. "
        "test, or samples of it): no leave-one-genre-out, no retraining.",
    )
    ap.add_argument(
        "--record-end-to-end",
        nargs="+",
        type=Path,
        default=None,
        metavar="BENCH_QUALITY_JSON",
        help="End-to-end runs of the default preset's settings with the linear judge (--set "
        "acceptability=judge) on judged sets it never saw: their "
        "largest per-genre estimate error, against the recorded one (with --write-judge: "
        "recorded when larger). No retraining.",
    )
    args = ap.parse_args(argv)
    shipped = json.loads(OUT.read_text(encoding="utf-8"))
    threshold = float(shipped["threshold"])
    if args.record_end_to_end:
        print(json.dumps(record_end_to_end(args.record_end_to_end, shipped, args.write_judge)))
        return
    if args.shipped_on:
        print(json.dumps(shipped_on(args.shipped_on, shipped), indent=1))
        return
    recorded = float(shipped["precision_estimate"]["max_abs_error"])
    per_genre = logo(all_sets(), threshold, recorded)
    table = summary(per_genre)
    candidates = [m for m in METHODS if m in table]  # what the card can compute
    chosen = min(candidates, key=lambda m: table[m]["max_abs_error"])
    result = {
        "protocol": "leave one genre out (judge_logo.py's genres); the judge (head and Platt "
        "calibration) refitted on the other genres except test; estimates over the left-out "
        "genre's judged gate candidates",
        "threshold": threshold,
        "config": CONFIG.as_dict(),
        "genres": per_genre,
        "summary": table,
        "sampling_floor": sampling_floor(per_genre),
        "unlabelled_signals": unlabelled_signals(per_genre),
        "chosen": {"method": chosen, "max_abs_error": table[chosen]["max_abs_error"]},
        "recorded_error": recorded,
        "recorded_error_covers_logo": recorded >= table[chosen]["max_abs_error"],
    }
    if args.write_judge:
        shipped["precision_estimate"] = {
            "method": chosen,
            "max_abs_error": table[chosen]["max_abs_error"],
            "validation": f"leave-one-genre-out on {', '.join(per_genre)} "
            "(benchmarks/bench_precision_estimate.py)",
            "genres": {g: r["error"][chosen] for g, r in per_genre.items()},
        }
        OUT.write_text(json.dumps(shipped, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        result["written"] = str(OUT.relative_to(OUT.parents[2]))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
