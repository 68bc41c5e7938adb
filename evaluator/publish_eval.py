"""`transnli publish EVAL`: an evaluation folder (the --out of `transnli evaluate`) uploaded to a
Hugging Face Hub dataset repository as results, with an evaluation card (README.md).

What is uploaded is fixed (`upload_names`): README.md (the card, evaluator/eval_card.py),
summary.json, report.md, run_info.json, samples.jsonl, comparison.json (two or more models) and
the figures (plots/*). The card states the reviewed precision of the triples when a
`review_of` function (the command line passes one built on transnli.review) knows it for an
evaluated file that is still the one evaluated (same sha256). The files are
copied into a staging folder, so nothing is written into the evaluation folder, and sent with the
shared transport of `transnli.common.hub`. Files of earlier uploads that this evaluation no
longer has (a figure it did not draw) are deleted from the repo; files the repo holds that
transnli did not put there are left alone. `transnli export EVAL --to card` writes the same
content into EVAL/hub/ instead, to read offline (`export_evaluation_card`).
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transnli.common.digest import sha256_file
from transnli.common.hub import HubError, check_repo_id, hub_token, upload_folder

from .compare import COMPARISON_NAME
from .errors import EvaluatorError
from .eval_card import CARD, ReviewedPrecision, render_eval_card

SUMMARY, REPORT, RUN_INFO, SAMPLES, COMPARISON, PLOTS = (
    "summary.json",
    "report.md",
    "run_info.json",
    "samples.jsonl",
    COMPARISON_NAME,
    "plots",
)
HUB = "hub"  # where `transnli export EVAL --to card` writes what a publish would upload
# The files (and folder) a publish owns in the repo: it uploads those the evaluation has and
# deletes the rest of them there.
MANAGED = (CARD, SUMMARY, REPORT, RUN_INFO, SAMPLES, COMPARISON, f"{PLOTS}/*")
# What the card asks about each evaluated triples file: the precision people measured on it, or
# None (not a generation run's file, or not reviewed).
ReviewOf = Callable[[Path], ReviewedPrecision | None]


class PublishEvaluationError(EvaluatorError):
    """An evaluation folder that cannot be published, or a publish the Hub refused."""


@dataclass(frozen=True)
class FinishedEvaluation:
    dir: Path
    summary: dict[str, Any]
    run_info: dict[str, Any]
    comparison: dict[str, Any] | None = None


def _json_object(path: Path, required: bool) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        if not required:
            return {}
        raise PublishEvaluationError(
            f"{path} is missing: the evaluation in {path.parent} has not finished; run the same "
            "`transnli evaluate` command again to finish it, then publish"
        ) from None
    except (OSError, ValueError) as e:
        raise PublishEvaluationError(f"{path} cannot be read as JSON ({e})") from e
    if not isinstance(doc, dict):
        raise PublishEvaluationError(f"{path} is not a JSON object")
    return doc


def open_evaluation(folder: str | Path) -> FinishedEvaluation:
    """The finished evaluation in `folder`: summary.json (with its models and provenance) and
    report.md are required; run_info.json is read when present."""
    out = Path(folder)
    summary = _json_object(out / SUMMARY, required=True)
    for key, kind in (("models", list), ("provenance", dict), ("rules", dict)):
        if not isinstance(summary.get(key), kind):
            raise PublishEvaluationError(
                f"{out / SUMMARY}: field {key} is missing or not a {kind.__name__}; this is not "
                "the summary.json of a `transnli evaluate` run"
            )
    if not (out / REPORT).is_file():
        raise PublishEvaluationError(
            f"{out / REPORT} is missing; the evaluation folder is incomplete (run the same "
            "`transnli evaluate` command again)"
        )
    comparison = _json_object(out / COMPARISON, required=False) or None
    return FinishedEvaluation(
        out, summary, _json_object(out / RUN_INFO, required=False), comparison
    )


def reviewed_precisions(
    evaluation: FinishedEvaluation, review_of: ReviewOf | None
) -> list[ReviewedPrecision]:
    """The reviewed precision of each evaluated triples file that `review_of` knows, for files
    whose content is still the one evaluated (a review of other triples is not theirs)."""
    if review_of is None:
        return []
    found = []
    for info in evaluation.summary["provenance"].get("triples_files") or []:
        path = Path(str(info.get("path", "")))
        try:
            same = path.is_file() and sha256_file(path) == info.get("sha256")
        except OSError:
            same = False
        review = review_of(path) if same else None
        if review is not None and review.judged:
            found.append(review)
    return found


def upload_names(evaluation: FinishedEvaluation) -> list[str]:
    """The evaluation's files that a publish uploads (paths relative to the folder, sorted),
    README.md aside."""
    out = evaluation.dir
    names = [n for n in (SUMMARY, REPORT, RUN_INFO, SAMPLES, COMPARISON) if (out / n).is_file()]
    plots = out / PLOTS
    if plots.is_dir():
        names += [
            p.relative_to(out).as_posix()
            for p in plots.iterdir()
            if p.is_file() and not p.name.startswith(".")
        ]
    return sorted(names)


def stage(
    evaluation: FinishedEvaluation,
    target: Path,
    *,
    repo_id: str | None,
    triples_repo_id: str | None = None,
    title: str | None = None,
    license: str | None = None,
    reviews: list[ReviewedPrecision] | None = None,
) -> list[str]:
    """Write the repo's content under `target`: the card and a copy of each file to upload.
    Returns the paths written (relative, sorted)."""
    names = upload_names(evaluation)
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        dest = target / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(evaluation.dir / name, dest)
    card = render_eval_card(
        evaluation.summary,
        evaluation.run_info,
        names,
        repo_id=repo_id,
        triples_repo_id=triples_repo_id,
        title=title,
        license=license,
        comparison=evaluation.comparison,
        reviews=reviews or [],
    )
    (target / CARD).write_text(card, encoding="utf-8")
    return sorted([CARD, *names])


def export_evaluation_card(
    folder: str | Path,
    *,
    title: str | None = None,
    license: str | None = None,
    review_of: ReviewOf | None = None,
) -> Path:
    """`transnli export EVAL --to card`: what `publish` would upload (the card, README.md, and the
    files it describes), written into EVAL/hub/ to be read offline before publishing. The folder
    is replaced whole: written beside it, then renamed into place."""
    evaluation = open_evaluation(folder)
    reviews = reviewed_precisions(evaluation, review_of)
    target = evaluation.dir / HUB
    partial = evaluation.dir / f".{HUB}.partial"
    try:
        shutil.rmtree(partial, ignore_errors=True)
        stage(evaluation, partial, repo_id=None, title=title, license=license, reviews=reviews)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    except OSError as e:
        shutil.rmtree(partial, ignore_errors=True)
        raise PublishEvaluationError(f"cannot write {target}: {e.strerror or e}") from e
    return target


def publish_evaluation(
    folder: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    token_env: str | None = None,
    triples_repo_id: str | None = None,
    title: str | None = None,
    license: str | None = None,
    api=None,
    review_of: ReviewOf | None = None,
) -> str:
    """Upload the evaluation in `folder` to the dataset repo `repo_id` with its card; returns the
    repo's URL. Publishing the same evaluation again makes no new commit (unchanged files are
    not sent). `review_of`: the reviewed precision of an evaluated triples file, or None."""
    try:
        check_repo_id(repo_id)
        if triples_repo_id is not None:
            check_repo_id(triples_repo_id, "--triples-repo-id")
        evaluation = open_evaluation(folder)
        reviews = reviewed_precisions(evaluation, review_of)
        token = hub_token(token_env)
    except HubError as e:
        raise PublishEvaluationError(str(e)) from e
    try:
        with tempfile.TemporaryDirectory(prefix="transnli-publish-") as tmp:
            stage(
                evaluation,
                Path(tmp),
                repo_id=repo_id,
                triples_repo_id=triples_repo_id,
                title=title,
                license=license,
                reviews=reviews,
            )
            return upload_folder(
                Path(tmp),
                repo_id,
                token=token,
                private=private,
                commit_message=f"Upload transnli evaluation from {evaluation.dir.name}",
                delete_patterns=MANAGED,
                retry_hint=f"publish {evaluation.dir} again later",
                api=api,
            )
    except HubError as e:
        raise PublishEvaluationError(str(e)) from e
    except OSError as e:
        raise PublishEvaluationError(
            f"cannot stage {evaluation.dir} for upload: {e.strerror or e}"
        ) from e
