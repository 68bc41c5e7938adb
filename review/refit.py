"""`transnli judge fit RUN [RUN...] --out PATH`: the judge's calibration refitted on the user's own
reviewed judgements, so that its probability (and the card's estimated precision) holds on the
user's genre.

The runs must have been judged by one judge (the same digest on each run's config.json), still
where the runs found it: a judge file (`--acceptability judge`) or a pair judge folder
(`--acceptability pair-judge`, the default preset's). Each triple the user judged
(transnli.review.integrity: the judgements that count; several annotators: good only when all
said good) gives a pair (p_good, good). The judge's probability is p = sigmoid(a z + b) of its
score z (a judge file's linear score; a lone pair judge's head score, its folder's `calibration`;
a stacked folder's log-odds of the mean of its two probabilities, `stack.calibration`);
Platt scaling on s = logit(p) (scikit-learn's logistic regression, unpenalised) gives
p' = sigmoid(alpha s + beta), which folds in as a' = alpha a, b' = alpha b + beta: the language
model is not read again. A judge file's refit is a judge file; a pair judge's is a copy of its
folder; either is written under a temporary name renamed into place, never over an existing one. Any
order of review serves (the verdict given p does not depend on why the triple was shown), but
only accepted triples are reviewed, so the new calibration is fitted above the threshold and
extrapolated below it.

Validation: stratified 5-fold cross-validation on the judgements (seeded): the old and the new
probability's log-loss, Brier score, calibration error, and the error of the mean probability as an
estimate of the share judged good, on the held-out folds. The file written records the runs (with
their triples' sha256), the number of judgements, the figures, and states its estimate method as
the plain mean (the calibration now fits the user's genre), its error as the 95% Wilson half-width
of the judged share (the calibration cannot be surer than the judgements it was fitted on).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from transnli.common.digest import sha256_file
from transnli.generator.judge import JUDGE_FORMAT, JudgeError, default_judge_path, load_judge
from transnli.generator.pair_judge import default_pair_judge_path
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
    kind: str  # the run's acceptability backend: "judge" or "pair-judge"


def _run_judge(run_dir: Path) -> tuple[str, Path, str]:
    """The kind of judge a run used ("judge" or "pair-judge"), its file or folder and the digest
    its config.json records."""
    try:
        config = json.loads((run_dir / CONFIG).read_text(encoding="utf-8"))
        cfg = config.get("config") or {}
    except (OSError, ValueError, AttributeError) as e:
        raise ReviewError(f"{run_dir / CONFIG}: cannot be read as a run's settings ({e})") from e
    kind = cfg.get("acceptability")
    if kind not in ("judge", "pair-judge"):
        raise ReviewError(
            f"{run_dir} was not made with a trained judge (--acceptability judge or pair-judge)"
        )
    entry = ((config.get("resources") or {}).get("checks") or {}).get("acceptability") or {}
    words = str(entry.get("version", "")).split()  # "judge <sha256[:16]> ..." / "pair-judge ..."
    digest = words[1] if len(words) > 1 and words[0] == kind else ""
    if cfg.get("judge_model"):
        return kind, Path(cfg["judge_model"]), digest
    return kind, default_judge_path() if kind == "judge" else default_pair_judge_path(), digest


def read_judged(run_dirs: list[Path]) -> Judged:
    """Every judged triple of the runs with its p_good; refuses runs of different judges."""
    ps, goods, runs, judge_path, digest, kind = [], [], [], None, None, ""
    for run_dir in run_dirs:
        try:
            open_finished_run(run_dir)
        except ExportError as e:
            raise ReviewError(str(e)) from e
        run_kind, path, run_digest = _run_judge(run_dir)
        if judge_path is None:
            kind, judge_path, digest = run_kind, path, run_digest
        elif (run_kind, run_digest) != (kind, digest):
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
    return Judged(np.array(ps), np.array(goods), runs, judge_path, kind)


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


def refit_accepts(n: int, good: int) -> bool:
    """Whether n judged triples, `good` of them good, are enough to refit on: the two
    parameters need MIN_JUDGEMENTS, and the cross-validation FOLDS of each verdict."""
    return n >= MIN_JUDGEMENTS and min(good, n - good) >= FOLDS


def fit_judge(run_dirs: list[Path], out: Path) -> dict[str, Any]:
    """Refit, validate and write the judge file (or pair judge folder) `out`; returns its record
    of the fit."""
    judged = read_judged(run_dirs)
    n, good = len(judged.p), int(judged.good.sum())
    if not refit_accepts(n, good):
        raise ReviewError(
            f"{n} judged triples ({good} good) in these runs; refitting needs at least "
            f"{MIN_JUDGEMENTS}, with {FOLDS} good and {FOLDS} bad ones at least (its "
            f"{FOLDS}-fold cross-validation): judge more with `transnli review`"
        )
    if out.exists():
        raise ReviewError(f"{out}: already exists; a judge is never written over one")
    alpha, beta = platt(_logit(judged.p), judged.good)
    if alpha <= 0:
        raise ReviewError(
            "on these judgements the judge's probability does not rise with the share good "
            f"(slope {alpha:.3f}); a refit would turn it upside down: nothing written"
        )
    lo, hi = wilson_interval(good, n)
    record = {
        "runs": judged.runs,
        "judgements": n,
        "good": good,
        "base_judge": {"file": judged.judge_path.name, "sha256": sha256_file(judged.judge_path)},
        "platt_on_logit": {"alpha": round(alpha, 6), "beta": round(beta, 6)},
        "cv": cross_validate(judged.p, judged.good),
    }
    refitted = {
        "fitted_on": f"{n} reviewed judgements of {len(judged.runs)} run(s), `transnli judge fit`",
        "refit": record,
        "precision_estimate": {
            "method": "mean",
            "max_abs_error": round(max(hi - good / n, good / n - lo), 4),
            "validation": "95% Wilson half-width of the share judged good in the reviewed runs",
        },
    }
    write = write_pair_judge if judged.kind == "pair-judge" else write_judge_file
    write(judged.judge_path, out, alpha, beta, refitted)
    return record


def folded(calibration: dict[str, float], alpha: float, beta: float) -> dict[str, float]:
    """p = sigmoid(a x + b) refitted as sigmoid(alpha logit(p) + beta), as one map of x."""
    a, b = calibration["a"], calibration["b"]
    return {"a": round(alpha * a, 8), "b": round(alpha * b + beta, 8)}


def write_judge_file(base: Path, out: Path, alpha: float, beta: float, refitted: dict) -> None:
    """The judge file with its calibration refitted; the language model is not read again."""
    try:
        judge = load_judge(str(base))
    except JudgeError as e:
        raise ReviewError(str(e)) from e
    doc = json.loads(base.read_text(encoding="utf-8"))
    if doc.get("format") != JUDGE_FORMAT:
        raise ReviewError(f"{base}: not a judge file")
    a, b = judge.calibration
    n = refitted["refit"]["judgements"]
    doc["calibration"] = {
        **folded({"a": a, "b": b}, alpha, beta),
        "method": f"Platt, refitted on {n} reviewed judgements (transnli judge fit)",
    }
    doc.update(refitted)
    doc.pop("training_prior", None)  # the calibration's base rate is now the user's runs'
    partial = out.with_name(out.name + ".partial")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    try:
        load_judge(str(partial))  # what was written reads back as a judge
    except JudgeError as e:
        partial.unlink()
        raise ReviewError(str(e)) from e
    os.replace(partial, out)


def write_pair_judge(base: Path, out: Path, alpha: float, beta: float, refitted: dict) -> None:
    """A copy of the pair judge folder whose final calibration takes the refit (a stacked
    folder's stack calibration, a lone folder's own); what it measured on the project's genres
    describes the old calibration, so it is not carried over."""
    from transnli.generator.pair_judge import META_FILE, PairJudgeError, read_pair_judge_meta

    try:
        meta = read_pair_judge_meta(base)
    except PairJudgeError as e:
        raise ReviewError(str(e)) from e
    if "stack" in meta:
        record = meta["stack"]
        record["calibration"] = folded(
            record.get("calibration") or {"a": 1.0, "b": 0.0}, alpha, beta
        )
    else:
        # p = sigmoid(a raw + b), so its logit is a raw + b: the refit folds into (a, b)
        meta["calibration"] = folded(meta["calibration"], alpha, beta)
        record = meta.setdefault("release", {})
    for measured in ("validation", "calibration_fit", "threshold_rows"):
        record.pop(measured, None)
    record.update(refitted)
    partial = out.with_name(out.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(base, partial)
    (partial / META_FILE).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    try:
        read_pair_judge_meta(partial)  # what was written reads back as a pair judge
    except PairJudgeError as e:
        shutil.rmtree(partial, ignore_errors=True)
        raise ReviewError(str(e)) from e
    os.replace(partial, out)


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
