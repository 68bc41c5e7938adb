"""`transnli judge fit RUN [RUN...] --out FILE`: the judge's calibration refitted on the user's own
reviewed judgements, so that its probability (and the card's estimated precision) holds on the
user's genre.

The runs must have been judged by one judge file (the same digest on each run's config.json), which
must still be where the runs found it. Each triple the user judged (transnli.review.integrity: the
judgements that count; several annotators: good only when all said good) gives a pair (p_good,
good). The judge's probability is p = sigmoid(a z + b) of its linear score z; Platt scaling on
s = logit(p) (scikit-learn's logistic regression, unpenalised) gives p' = sigmoid(alpha s + beta),
which folds into the file as a' = alpha a, b' = alpha b + beta: the language model is not read
again. Any order of review serves (the verdict given p does not depend on why the triple was
shown), but only accepted triples are reviewed, so the new calibration is fitted above the
threshold and extrapolated below it.

Validation: stratified 5-fold cross-validation on the judgements (seeded): the old and the new
probability's log-loss, Brier score, calibration error, and the error of the mean probability as an
estimate of the share judged good, on the held-out folds. The file written records the runs (with
their triples' sha256), the number of judgements, the figures, and states its estimate method as
the plain mean (the calibration now fits the user's genre), its error as the 95% Wilson half-width
of the judged share (the calibration cannot be surer than the judgements it was fitted on).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from transnli.common.digest import sha256_file
from transnli.generator.judge import JUDGE_FORMAT, JudgeError, default_judge_path, load_judge
from transnli.generator.precision import calibration_error, wilson_interval
from transnli.generator.publish import ExportError, open_finished_run
from transnli.generator.run_folder import CONFIG, TRIPLES
from transnli.generator.schema import read_records
from transnli.review.agreement import item_verdicts
from transnli.review.errors import ReviewError
from transnli.review.integrity import load_checked

MIN_JUDGEMENTS = 30  # fewer: the two parameters of the calibration are not determined
FOLDS = 5
_EDGE = 1e-4  # p_good is rounded to 4 digits: 0 and 1 stand for this close to them


@dataclass(frozen=True)
class Judged:
    """The reviewed triples of some runs: the judge's probability and the verdict of each."""

    p: np.ndarray
    good: np.ndarray
    runs: list[dict[str, Any]]
    judge_path: Path


def _run_judge(run_dir: Path) -> tuple[Path, str]:
    """The judge file a run used and the digest its config.json records."""
    try:
        config = json.loads((run_dir / CONFIG).read_text(encoding="utf-8"))
        cfg = config.get("config") or {}
    except (OSError, ValueError, AttributeError) as e:
        raise ReviewError(f"{run_dir / CONFIG}: cannot be read as a run's settings ({e})") from e
    if cfg.get("acceptability") != "judge":
        raise ReviewError(f"{run_dir} was not made with the judge (--acceptability judge)")
    entry = ((config.get("resources") or {}).get("checks") or {}).get("acceptability") or {}
    words = str(entry.get("version", "")).split()  # "judge <sha256[:16]> (layer L) on <model>"
    digest = words[1] if len(words) > 1 and words[0] == "judge" else ""
    path = Path(cfg["judge_model"]) if cfg.get("judge_model") else default_judge_path()
    return path, digest


def read_judged(run_dirs: list[Path]) -> Judged:
    """Every judged triple of the runs with its p_good; refuses runs of different judges."""
    ps, goods, runs, judge_path, digest = [], [], [], None, None
    for run_dir in run_dirs:
        try:
            open_finished_run(run_dir)
        except ExportError as e:
            raise ReviewError(str(e)) from e
        path, run_digest = _run_judge(run_dir)
        if judge_path is None:
            judge_path, digest = path, run_digest
        elif run_digest != digest:
            raise ReviewError(f"{run_dir} was judged by another judge file than {run_dirs[0]}")
        verdicts = item_verdicts(load_checked(run_dir, required=True).counted)
        n = 0
        for row in read_records(run_dir / TRIPLES):
            verdict = verdicts.get(row["id"])
            p = ((row.get("checks") or {}).get("acceptability") or {}).get("p_good")
            if verdict is None or not isinstance(p, (int, float)) or not 0 <= p <= 1:
                continue
            ps.append(float(p))
            goods.append(int(verdict == "good"))
            n += 1
        runs.append(
            {"run": str(run_dir), "triples_sha256": sha256_file(run_dir / TRIPLES), "judged": n}
        )
    if judge_path is None:
        raise ReviewError("give at least one run folder")
    if digest and sha256_file(judge_path)[:16] != digest:
        raise ReviewError(
            f"{judge_path} changed since the runs were judged by it; refit with the file they used"
        )
    return Judged(np.array(ps), np.array(goods), runs, judge_path)


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, _EDGE, 1 - _EDGE)
    return np.log(p / (1 - p))


def platt(s: np.ndarray, good: np.ndarray) -> tuple[float, float]:
    """(alpha, beta) of p' = sigmoid(alpha s + beta), by maximum likelihood."""
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=np.inf, max_iter=1000).fit(s.reshape(-1, 1), good)
    return float(lr.coef_[0][0]), float(lr.intercept_[0])


def figures(p: np.ndarray, good: np.ndarray) -> dict[str, float]:
    q = np.clip(p, _EDGE, 1 - _EDGE)
    return {
        "log_loss": round(float(-(good * np.log(q) + (1 - good) * np.log(1 - q)).mean()), 4),
        "brier": round(float(((p - good) ** 2).mean()), 4),
        "ece": round(calibration_error(p, good), 4),
        "mean_p": round(float(p.mean()), 4),
        "estimate_error": round(float(p.mean() - good.mean()), 4),
    }


def cross_validate(p: np.ndarray, good: np.ndarray, seed: int = 0) -> dict[str, Any]:
    """Held-out figures of the old probability and of the refitted one (stratified k-fold)."""
    from sklearn.model_selection import StratifiedKFold

    s = _logit(p)
    new = np.zeros(len(p))
    folds = StratifiedKFold(n_splits=FOLDS, shuffle=True, random_state=seed)
    for train, held in folds.split(s.reshape(-1, 1), good):
        alpha, beta = platt(s[train], good[train])
        new[held] = 1 / (1 + np.exp(-(alpha * s[held] + beta)))
    return {"folds": FOLDS, "before": figures(p, good), "after": figures(new, good)}


def fit_judge(run_dirs: list[Path], out: Path) -> dict[str, Any]:
    """Refit, validate and write the judge file `out`; returns its record of the fit."""
    judged = read_judged(run_dirs)
    n, good = len(judged.p), int(judged.good.sum())
    if n < MIN_JUDGEMENTS or good in (0, n):
        raise ReviewError(
            f"{n} judged triples ({good} good) in these runs; refitting needs at least "
            f"{MIN_JUDGEMENTS}, good and bad ones: judge more with `transnli review`"
        )
    try:
        base = load_judge(str(judged.judge_path))
    except JudgeError as e:
        raise ReviewError(str(e)) from e
    doc = json.loads(judged.judge_path.read_text(encoding="utf-8"))
    alpha, beta = platt(_logit(judged.p), judged.good)
    if alpha <= 0:
        raise ReviewError(
            "on these judgements the judge's probability does not rise with the share good "
            f"(slope {alpha:.3f}); a refit would turn it upside down: nothing written"
        )
    a, b = base.calibration
    lo, hi = wilson_interval(good, n)
    record = {
        "runs": judged.runs,
        "judgements": n,
        "good": good,
        "base_judge": {"file": judged.judge_path.name, "sha256": sha256_file(judged.judge_path)},
        "platt_on_logit": {"alpha": round(alpha, 6), "beta": round(beta, 6)},
        "cv": cross_validate(judged.p, judged.good),
    }
    doc["calibration"] = {
        "a": round(alpha * a, 8),
        "b": round(alpha * b + beta, 8),
        "method": f"Platt, refitted on {n} reviewed judgements (transnli judge fit)",
    }
    doc["fitted_on"] = f"{n} reviewed judgements of {len(judged.runs)} run(s), `transnli judge fit`"
    doc["refit"] = record
    doc.pop("training_prior", None)  # the calibration's base rate is now the user's runs'
    doc["precision_estimate"] = {
        "method": "mean",
        "max_abs_error": round(max(hi - good / n, good / n - lo), 4),
        "validation": "95% Wilson half-width of the share judged good in the reviewed runs",
    }
    if doc.get("format") != JUDGE_FORMAT:
        raise ReviewError(f"{judged.judge_path}: not a judge file")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    load_judge(str(out))  # what was written reads back as a judge
    return record


def summary_lines(record: dict[str, Any], out: Path) -> list[str]:
    """What `transnli judge fit` prints."""
    cv = record["cv"]
    before, after = cv["before"], cv["after"]

    def line(name: str, f: dict) -> str:
        return (
            f"  {name}: log-loss {f['log_loss']:.4f}, Brier {f['brier']:.4f}, calibration "
            f"error {f['ece']:.4f}, mean p {f['mean_p']:.3f} (error {f['estimate_error']:+.3f})"
        )

    return [
        f"refitted the calibration on {record['judgements']} judged triples "
        f"({record['good']} good) of {len(record['runs'])} run(s)",
        f"{cv['folds']}-fold cross-validation on those judgements (held-out figures):",
        line("before", before),
        line("after ", after),
        f"wrote {out}; use it with `transnli generate ... --judge-model {out}`",
    ]
