"""The dataset card's quality section: how good the triples are, as far as the run can say.

- A run judged by the trained judge: the estimated precision of its triples
  (transnli.generator.precision) with the method the judge file names (chosen by
  leave-one-genre-out validation, docs/quality-model.md), its 95% interval (the sampling spread
  plus the method's largest validation error) and the judge file it came from. Records whose
  probability is missing (another backend, no entry) or broken (NaN, out of [0, 1], not a number)
  are counted and said, never averaged.
- A run judged by a pair judge whose folder records a validated estimate (a stack's
  stack.precision_estimate, a lone folder's release.precision_estimate; the shipped folder is
  lone): the same estimate, over its p_good, with that error; with none recorded, its
  probabilities and no estimate. Either way, at the folder's own threshold, what people measured
  for it on genres it never saw.
- A run of a preset without a judge (`fast`): the precision people measured on the project's
  judged sets for that preset (resources/models/preset_precision.json), named as such and marked
  as not estimated for this run.
- Either way, a precision measured by people on a sample of the run (`transnli review`, then
  `export --reviewed`) is the strong figure, and the card says how many judgements buy what
  interval width.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from transnli.generator.precision import (
    METHOD_NAMES,
    estimate_precision,
    read_probabilities,
    wilson_interval,
    wilson_widths,
)

# where docs/quality-model.md says how each judge's estimate was validated
ESTIMATE_SECTION = "The estimate on genres the judge never saw"
STACK_ESTIMATE_SECTION = "The stack's calibration and the card's estimate"
PAIR_ESTIMATE_SECTION = "The pair judge's estimate on genres it never saw"

# The settings a preset's measured precision depends on: a run that changes one is not the
# preset that was measured.
QUALITY_SETTINGS = ("pipeline", "antonyms", "pos", "include_aux", "filters", "grammar")
QUALITY_SETTINGS += ("acceptability", "max_chars", "max_per_sentence")


def widths_sentence() -> str:
    """How many judgements buy what interval width (95% Wilson, at a measured share near 0.8)."""
    parts = ", ".join(f"{n}: {w:.2f}" for n, w in wilson_widths(0.8) if n <= 400)
    return (
        "How many judged triples buy what width of the 95% interval (Wilson, at a precision "
        f"near 0.8): {parts}."
    )


def _acceptability(rows: list[dict[str, Any]]) -> list[object]:
    return [(row.get("checks") or {}).get("acceptability") for row in rows]


def _judged_by_judge(entries: list[object], backend: str = "judge") -> list[object]:
    """The rejected records' entries the judge decided (those another stage stopped have none)."""
    return [e for e in entries if isinstance(e, dict) and e.get("backend") == backend]


def _load_judge(path: str | None):
    from transnli.generator.judge import JudgeError, load_judge

    try:
        return load_judge(path), None
    except JudgeError as exc:
        return None, str(exc)


def judge_estimate(splits: dict[str, list[dict[str, Any]]], cfg: dict[str, Any]) -> dict:
    """The estimate of a run judged by the judge, with everything the card says about it."""
    accepted = read_probabilities(_acceptability(splits.get("test", [])))
    rejected = read_probabilities(_judged_by_judge(_acceptability(splits.get("rejected", []))))
    judge, problem = _load_judge(cfg.get("judge_model"))
    method, prior, error = "mean", None, None
    if judge is not None:
        method, prior, error = judge.estimate_method, judge.training_prior, judge.estimate_error
    estimate = estimate_precision(
        accepted.values,
        accepted.values + rejected.values,
        method=method,
        training_prior=prior,
        estimator_error=error or 0.0,
    )
    return {
        "kind": "estimated",
        "estimate": estimate,
        "accepted": accepted,
        "rejected_invalid": rejected.invalid,
        "judge": "the trained judge",
        "judge_kind": "Judge file",
        "judge_file": Path(cfg.get("judge_model") or "judge_gemma3_270m.json").name,
        "judge_problem": problem,
        "validated": error is not None,
        "training_prior": prior,
        "provenance": (judge.meta.get("fitted_on") if judge is not None else None),
        "refit": judge is not None and "refit" in judge.meta,
        "error_section": ESTIMATE_SECTION,
        "validation": (judge.meta.get("validation") if judge is not None else None) or {},
    }


def preset_measured(cfg: dict[str, Any]) -> dict | None:
    """What people measured for the run's preset on the judged sets, when the run kept the
    preset's settings; None for a preset never measured."""
    from transnli.resources import resource_path

    preset = cfg.get("preset")
    try:
        doc = json.loads(resource_path("models", "preset_precision.json").read_text("utf-8"))
        sets = doc["presets"].get(preset)
    except (OSError, ValueError, KeyError, AttributeError):
        return None
    if not isinstance(sets, list) or not sets:
        return None
    return {"kind": "measured", "preset": preset, "sets": sets, "changed": _changed(preset, cfg)}


def _changed(preset: str, cfg: dict[str, Any]) -> list[str]:
    """The quality settings in which the run differs from its preset."""
    from transnli.generator.config import ConfigError, resolve_config

    try:
        base = resolve_config(preset).fingerprint_dict()
    except (ConfigError, OSError):
        return []
    return [k for k in QUALITY_SETTINGS if k in base and k in cfg and base[k] != cfg[k]]


def card_quality(splits: dict[str, list[dict[str, Any]]], cfg: dict[str, Any]) -> dict | None:
    """What the card's quality section says, or None when it has nothing to say."""
    if cfg.get("acceptability") == "judge":
        return judge_estimate(splits, cfg)
    if cfg.get("acceptability") == "pair-judge":
        return pair_judge_quality(splits, cfg)
    return preset_measured(cfg)


def pair_judge_quality(splits: dict[str, list[dict[str, Any]]], cfg: dict[str, Any]) -> dict:
    """A pair judge's run: the estimate its folder validated for it (`measured_record`), else its
    probabilities without an estimate; and what people measured for the folder on genres it never
    saw, at its own threshold."""
    from transnli.generator.pair_judge import (
        PairJudgeError,
        default_pair_judge_path,
        measured_record,
        read_pair_judge_meta,
    )

    folder = Path(cfg.get("judge_model") or default_pair_judge_path())
    problem = None
    try:
        meta = read_pair_judge_meta(folder)
    except PairJudgeError as exc:
        meta, problem = {}, str(exc)
    record = measured_record(meta)
    stacked = "stack" in meta
    validation = record.get("validation") or {}
    own_threshold = cfg.get("judge_threshold") in (None, meta.get("threshold"))
    pooled = validation.get("pooled_at_threshold") if own_threshold else None
    per_genre = {
        name: g["at_threshold"]["precision"]
        for name, g in sorted((validation.get("genres") or {}).items())
        if isinstance(g.get("at_threshold"), dict) and g["at_threshold"].get("precision")
    }
    out_of_genre = (
        {
            **pooled,
            "genres": list(per_genre),
            "low": min(per_genre.values()),
            "high": max(per_genre.values()),
        }
        if pooled and per_genre
        else None
    )
    accepted = read_probabilities(_acceptability(splits.get("test", [])), "pair-judge")
    validated = record.get("precision_estimate")
    if not validated:
        return {
            "kind": "unvalidated",
            "accepted": accepted,
            "judge": folder.name,
            "out_of_genre": out_of_genre,
        }
    rejected = read_probabilities(
        _judged_by_judge(_acceptability(splits.get("rejected", [])), "pair-judge"), "pair-judge"
    )
    return {
        "kind": "estimated",
        "estimate": estimate_precision(
            accepted.values,
            accepted.values + rejected.values,
            method=validated["method"],
            training_prior=None,
            estimator_error=float(validated["max_abs_error"]),
        ),
        "accepted": accepted,
        "rejected_invalid": rejected.invalid,
        "judge": "the stacked pair judge" if stacked else "the pair judge",
        "judge_kind": "Judge folder",
        "judge_file": folder.name,
        "judge_problem": problem,
        "validated": True,
        "training_prior": None,
        "provenance": record.get("fitted_on"),
        "refit": "refit" in record,
        "error_section": STACK_ESTIMATE_SECTION if stacked else PAIR_ESTIMATE_SECTION,
        "validation": {},
        "out_of_genre": out_of_genre,
    }


def quality_text(quality: dict | None) -> list[str]:
    """The card's section, Markdown."""
    if quality is None:
        return []
    if quality["kind"] == "measured":
        return ["## Quality (measured on the project's judged sets)\n", _measured_text(quality)]
    if quality["kind"] == "unvalidated":
        return ["## Quality\n", _unvalidated_text(quality)]
    return ["## Estimated precision\n", _estimated_text(quality)]


def _measured_text(q: dict) -> str:
    rows = []
    for s in q["sets"]:
        lo, hi = wilson_interval(s["good"], s["judged"])
        rows.append(
            f"| {s['set']} ({s['text']}) | {s['judged']} | {s['good'] / s['judged']:.3f} "
            f"| {lo:.3f}-{hi:.3f} |"
        )
    changed = (
        f" This run changes the preset's {', '.join(f'`{k}`' for k in q['changed'])}, so these "
        "figures describe it less well."
        if q["changed"]
        else ""
    )
    return (
        f"This run was made with the `{q['preset']}` preset, which has no trained judge: **no "
        "precision is estimated for this run**. What people measured on the project's "
        f"hand-judged sets for the same preset (the share of its accepted triples judged good, "
        f"with a 95% Wilson interval):{changed}\n\n"
        "| judged set | triples judged | precision | 95% interval |\n|---|---|---|---|\n"
        + "\n".join(rows)
        + "\n\nThe precision on this run's text may differ. Measure it by judging a random sample "
        "(`transnli review`, then `transnli export --reviewed`). " + widths_sentence() + "\n"
    )


def _unvalidated_text(q: dict) -> str:
    """A pair judge's run: its probabilities are stated, but no estimate has been validated for
    it on genres it never saw, so none is claimed."""
    values = q["accepted"].values
    mean = f"{sum(values) / len(values):.3f} over {len(values)} triples" if values else "none"
    return (
        f"This run's triples were kept by a pair judge (`{Path(str(q['judge'])).name}`). The "
        f"mean of its probabilities that H' is good is {mean}, but no estimate of a run's "
        "precision from them has been validated for this judge, so **no precision is estimated "
        "for this run**. "
        + _out_of_genre_sentence(q.get("out_of_genre"))
        + "Measure it by judging a random sample (`transnli review`, then "
        "`transnli export --reviewed`). " + widths_sentence() + "\n"
    )


def _out_of_genre_sentence(measured: dict | None) -> str:
    if not measured:
        return ""
    genres = measured["genres"]
    where, spread = (
        (f"on a genre it was never trained on ({genres[0]})", "")
        if len(genres) == 1
        else (
            f"on {len(genres)} genres it was never trained on",
            f"; {measured['low']:.3f}-{measured['high']:.3f} by genre",
        )
    )
    return (
        f"What people measured for this judge at its threshold, {where}: {measured['good']} of "
        f"the {measured['kept']} triples it kept were good ({measured['precision']:.3f}{spread}; "
        'docs/quality-model.md, "The pair judge"); on other text it may differ. '
    )


def _carry(n: int) -> str:
    return "carries" if n == 1 else "carry"


def _count_line(q: dict) -> str:
    acc = q["accepted"]
    notes = []
    if acc.missing:
        notes.append(
            f"{acc.missing} of the {acc.records} triples {_carry(acc.missing)} no judge "
            "probability (another acceptability backend, or none)"
        )
    if acc.invalid:
        notes.append(
            f"{acc.invalid} of the {acc.records} triples {_carry(acc.invalid)} a probability "
            "that is not a number between 0 and 1 (left out)"
        )
    if q["rejected_invalid"]:
        notes.append(
            f"{q['rejected_invalid']} rejected candidates {_carry(q['rejected_invalid'])} a broken "
            "probability (left out)"
        )
    return (" **Warning:** " + "; ".join(notes) + ".") if notes else ""


def _estimated_text(q: dict) -> str:
    est, acc = q["estimate"], q["accepted"]
    if est is None:
        return (
            f"**No estimated precision:** none of the {acc.records} triples carries a usable "
            "probability of the judge." + _count_line(q) + "\n"
        )
    lo, hi = est.interval
    over = f"the {est.triples} triples" + (
        f" that carry one (of {acc.records})" if est.triples != acc.records else ""
    )
    text = (
        f"**Estimated precision: {est.precision:.3f}** (95% interval {lo:.3f}-{hi:.3f}), "
        f"over {over}. Method: {METHOD_NAMES[est.method]}"
    )
    if est.method == "em":
        text += (
            f"; over the {est.decided} candidates the judge decided on, the share of good ones "
            f"is re-estimated at {est.prior:.3f} (the judge's training genres: "
            f"{q['training_prior']:.3f}), and the uncorrected mean is {est.raw_mean:.3f}"
        )
    text += (
        f". The probability is {q['judge']}'s that H' is good, i.e. coherent English whose "
        "meaning differs from H (transnli's judging guideline, docs/judging.md); each triple's is "
        f"its `checks.acceptability.p_good`. {q['judge_kind']}: `{q['judge_file']}`"
    )
    if q["provenance"]:
        text += f" (fitted on {q['provenance']})"
    text += "."
    if q["validated"] and q.get("refit"):
        text += (
            " The interval adds to the sampling spread the 95% Wilson half-width of the share "
            "judged good in the reviews the calibration was refitted on "
            f'({est.estimator_error:.3f}; docs/review.md, "Teaching the judge your genre").'
        )
    elif q["validated"]:
        text += (
            f" The interval adds to the sampling spread the largest error this method made on "
            f"text the judge was never trained on ({est.estimator_error:.3f}; "
            f'docs/quality-model.md, "{q["error_section"]}").'
        )
    else:
        why = q["judge_problem"] or "the judge file records no validation of the estimate"
        text += (
            f" The interval is the sampling spread alone, without the judge's own error ({why})."
        )
    text += _count_line(q) + _validation_text(q["validation"])
    if q.get("out_of_genre"):
        text += " " + _out_of_genre_sentence(q["out_of_genre"]).rstrip()
    text += (
        " A precision measured by people on a random sample of this benchmark (`transnli review`,"
        " then `transnli export --reviewed`) is the stronger figure where it exists. "
        + widths_sentence()
    )
    return text + "\n"


def _validation_text(validation: dict) -> str:
    test = validation.get("test") or {}
    at = test.get("at_threshold") or {}
    if at.get("precision") is None:
        return ""
    return (
        f" How the judge was validated: on held-out hand-judged text it was never trained or "
        f"tuned on (academic prose and man pages), it kept {at.get('kept')} candidates at its "
        f"threshold {at.get('threshold')}, of which {at.get('precision'):.3f} were judged good "
        f"by people; its expected calibration error there was {test.get('ece')}."
    )
