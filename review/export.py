"""`transnli export RUN --reviewed good-only|column`: exports of the run with the human review
applied, written beside the run's own exports (never over them), and a dataset card that states
the measured quality.

- good-only: the triples split keeps only the triples judged good (by every annotator who judged
  them, transnli.review.agreement.item_verdicts);
- column: every triple, with a `human_judgement` column: "good", "bad:<error type>", "disputed"
  (annotators differ) or null (not judged). The rejected split of the card's folder gets the
  column too (all null), so the splits of a config share one schema.
Only the judgements that count (transnli.review.integrity: of this run's triples as they are,
and of the sample they declare) are applied; the others are reported. A log with none that counts
is refused before anything is written (or uploaded).

Files: --to parquet writes RUN/triples.reviewed.parquet; --to card writes RUN/hub-reviewed/ (the
data per source dataset, the card with its "Human review" section, and the judging guideline it
links), which `publish --reviewed` uploads. RUN/triples.parquet and RUN/hub/ stay as `export`
wrote them.
"""

from __future__ import annotations

import html
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from transnli.generator.card_quality import widths_sentence
from transnli.generator.precision import wilson_widths
from transnli.generator.publish import (
    CARD,
    ExportError,
    FinishedRun,
    open_finished_run,
    render_card,
    write_hub_data,
    write_parquet,
)
from transnli.generator.run_folder import REJECTED, REVIEWED_HUB, REVIEWED_PARQUET, TRIPLES
from transnli.generator.schema import read_records, triple_features
from transnli.review.agreement import ReviewSummary, item_verdicts, summarise
from transnli.review.errors import ReviewError
from transnli.review.integrity import CheckedReview, load_checked
from transnli.review.log import GUIDELINE

MODES = ("good-only", "column")
COLUMN = "human_judgement"
REVIEWED_KINDS = ("parquet", "card")
SHOWN_PROBLEMS = 10  # reports printed one by one; the rest are counted


def _features(mode: str):
    from datasets import Features, Value

    base = triple_features()
    return base if mode == "good-only" else Features({**base, COLUMN: Value("string")})


def reviewed_rows(
    rows: list[dict[str, Any]], verdicts: dict[str, str], mode: str, judged: bool = True
) -> list[dict[str, Any]]:
    """The rows the export keeps: judged good only, or all with the judgement as a column
    (`judged=False` for the rejected split: the column, all null)."""
    if mode == "good-only":
        return [r for r in rows if verdicts.get(r["id"]) == "good"] if judged else rows
    return [{**r, COLUMN: verdicts.get(r["id"]) if judged else None} for r in rows]


def _table(rows: list[dict[str, Any]], mode: str):
    """Rows as an Arrow table of the (extended) declared schema."""
    import pyarrow as pa

    return pa.Table.from_pylist(rows, schema=_features(mode).arrow_schema)


def _fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def md_text(text: str | None) -> str:
    """Text as it must appear in Markdown (and the HTML the Hub renders it to): one line,
    Markdown's punctuation backslash-escaped, then <, > and & as HTML entities; so a name is
    shown, never obeyed."""
    if not text:
        return "(unnamed)"
    one_line = " ".join(text.split())
    escaped = re.sub(r"([\\`*_{}\[\]()#+\-.!|~])", r"\\\1", one_line)
    return html.escape(escaped, quote=False)


def review_section(
    summary: ReviewSummary,
    mode: str,
    kept: int | None,
    *,
    total: int | None = None,
    not_counted: int = 0,
    samples: list[tuple[int, int]] | None = None,
    guideline: str | None = None,
) -> str:
    """The card's "Human review" section. `guideline`: the relative link of the judging
    guideline shipped beside the card (None: named only)."""
    people = [md_text(a) for a in summary.annotators]
    rule = (
        f"the [judging guideline]({guideline})"
        if guideline
        else "transnli's judging guideline (docs/judging.md)"
    )
    lines = [
        "## Human review\n",
        f"{summary.judged} triples were judged by {len(people)} "
        f"{'person' if len(people) == 1 else 'people'} ({', '.join(people)}) with "
        f"`transnli review`, following {rule}: a triple is good when H' is "
        "coherent English and its meaning differs from H's; a triple several people judged "
        "counts as good only when all of them called it good.\n",
    ]
    if summary.precision is None:
        lines.append("No random sample was judged, so the precision is not measured.\n")
    else:
        lo, hi = summary.interval
        drawn = "; ".join(f"seed {seed}, size {size}" for seed, size in samples or [])
        of_total = f" (of the {total} triples of the run)" if total is not None else ""
        lines.append(
            f"**Measured precision: {summary.precision:.3f}** (95% Wilson interval "
            f"{lo:.3f}-{hi:.3f}, {hi - lo:.3f} wide): {summary.sample_good} of the "
            f"{summary.sample_judged} triples of a seeded random sample"
            f"{f' ({drawn})' if drawn else ''}{of_total} were judged good. "
            + widths_sentence()
            + "\n"
        )
    if not_counted:
        lines.append(
            f"{not_counted} judgement{'s' if not_counted != 1 else ''} of the review log "
            f"{'were' if not_counted != 1 else 'was'} not counted: the triple changed or is "
            "gone, or the judgement is not of the sample it declares.\n"
        )
    rows = [
        f"| {md_text(p.first)} / {md_text(p.second)} | {p.items} | {_fmt(p.raw_good)}"
        f" | {_fmt(p.kappa_good)} | {_fmt(p.raw_type)} | {_fmt(p.kappa_type)} |"
        for p in summary.pairs
    ]
    if rows:
        lines.append(
            "Agreement between annotators on the triples both judged (Cohen's kappa; '-' when "
            "undefined):\n\n| annotators | triples | raw (good/bad) | kappa (good/bad) | raw "
            "(error type) | kappa (error type) |\n|---|---|---|---|---|---|\n"
            + "\n".join(rows)
            + "\n"
        )
    else:
        lines.append("No triple was judged by two people, so agreement is not measured.\n")
    if mode == "good-only":
        unjudged = "" if total is None else f"; it leaves out {total - summary.judged} triples "
        lines.append(
            f"This export keeps only the {kept} triples judged good"
            + (f"{unjudged}nobody judged" if unjudged else "")
            + ".\n"
        )
    else:
        lines.append(
            f"Every triple is kept; the `{COLUMN}` column holds `good`, `bad:<error type>`, "
            "`disputed` (the annotators differ) or null (not judged).\n"
        )
    return "\n".join(lines)


def export_reviewed_card(
    run: FinishedRun, review: CheckedReview, mode: str, **card: Any
) -> Path | None:
    """RUN/hub-reviewed: as `export --to card` writes RUN/hub, from the reviewed rows, with the
    review section and the guideline it links."""
    verdicts = item_verdicts(review.counted)
    triples = read_records(run.dir / TRIPLES)
    kept = sum(verdicts.get(r["id"]) == "good" for r in triples)
    hub = run.dir / REVIEWED_HUB
    splits = {
        split: reviewed_rows(read_records(run.dir / name), verdicts, mode, judged=split == "test")
        for name, split in ((TRIPLES, "test"), (REJECTED, "rejected"))
    }
    data = write_hub_data(hub, splits, lambda rows: _table(rows, mode))
    if data is None:
        return None
    guideline = None
    if GUIDELINE.is_file():
        shutil.copyfile(GUIDELINE, hub / GUIDELINE.name)
        guideline = GUIDELINE.name
    section = review_section(
        summarise(review.counted),
        mode,
        kept,
        total=len(triples),
        not_counted=len(review.problems),
        samples=review.samples(),
        guideline=guideline,
    )
    files, counts = data
    # the human_judgement column needs no declaration: each Parquet file's schema carries it
    text = render_card(run, files, counts, **card)
    head, sep, tail = text.partition("## Limitations\n")
    (hub / CARD).write_text(head + section + "\n" + sep + tail, encoding="utf-8")
    return hub


def _export_parquet(run: FinishedRun, review: CheckedReview, mode: str) -> Path:
    """RUN/triples.reviewed.parquet: the triples split, reviewed."""
    rows = reviewed_rows(read_records(run.dir / TRIPLES), item_verdicts(review.counted), mode)
    return write_parquet(_table(rows, mode), run.dir / REVIEWED_PARQUET)


def report_problems(review: CheckedReview, echo: Callable[[str], None]) -> None:
    """The judgements that do not count, one line each (the first few), then how many."""
    for line in review.problems[:SHOWN_PROBLEMS]:
        echo(line)
    more = len(review.problems) - SHOWN_PROBLEMS
    if more > 0:
        echo(f"... and {more} more judgements not counted")


# A reviewed export warns below this many randomly sampled judgements (a run under 1,000 triples:
# below a tenth of it): the measured precision's interval is then wider than about 0.15.
ENOUGH_JUDGED = 100


def enough_judged(total: int) -> int:
    return min(ENOUGH_JUDGED, max(1, math.ceil(total / 10)))


def review_notices(run: FinishedRun, review: CheckedReview, mode: str) -> list[str]:
    """What a reviewed export says before writing: too small a sample, and (good-only) how many
    triples nobody judged it leaves out."""
    summary = summarise(review.counted)
    total = sum(1 for _ in read_records(run.dir / TRIPLES))
    out = []
    n = summary.sample_judged
    if n < enough_judged(total):
        width = f"{summary.interval[1] - summary.interval[0]:.2f}" if summary.interval else "-"
        out.append(
            f"warning: only {n} of the {total} triples were judged in the random sample; the "
            f"measured precision's 95% interval is {width} wide (100 judged give about "
            f"{dict(wilson_widths(0.8))[100]:.2f}): judge more with `transnli review` first"
        )
    if mode == "good-only":
        out.append(
            f"good-only: keeping the triples judged good; leaving out {total - summary.judged} "
            f"of the {total} triples that nobody judged"
        )
    return out


def reviewed_card_maker(mode: str, echo: Callable[[str], None] | None = None):
    """A `make_card` for `publish`: RUN/hub-reviewed, from RUN/review.jsonl; a log with nothing
    of this run is refused before anything is uploaded."""
    check_mode(mode)

    def make_card(run: FinishedRun, **card: Any) -> list[Path]:
        review = load_checked(run.dir, required=True)
        say = echo or (lambda line: None)
        report_problems(review, say)
        for line in review_notices(run, review, mode):
            say(line)
        hub = export_reviewed_card(run, review, mode, **card)
        return [hub] if hub else []

    return make_card


def check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ReviewError(f"--reviewed {mode!r} is not one of {', '.join(MODES)}")


def export_reviewed(
    out_dir: str | Path,
    kinds: list[str],
    mode: str,
    *,
    title: str | None = None,
    license: str | None = None,
    echo: Callable[[str], None] | None = None,
) -> list[Path]:
    """`transnli export RUN --reviewed MODE`: the reviewed exports `kinds` asks for, beside the
    run's own. `echo` gets the reports of judgements that do not count."""
    check_mode(mode)
    unsupported = [k for k in kinds if k not in REVIEWED_KINDS]
    if unsupported:
        raise ReviewError(
            f"--reviewed works with --to {' and '.join(REVIEWED_KINDS)}; not with "
            f"{', '.join(unsupported)}"
        )
    run = open_finished_run(out_dir)
    review = load_checked(run.dir, required=True)
    say = echo or (lambda line: None)
    report_problems(review, say)
    for line in review_notices(run, review, mode):
        say(line)
    written: list[Path] = []
    try:
        if "parquet" in kinds:
            written.append(_export_parquet(run, review, mode))
        if "card" in kinds:
            hub = export_reviewed_card(run, review, mode, title=title, license=license)
            written += [hub] if hub else []
    except OSError as e:
        raise ExportError(f"cannot write under {run.dir}: {e.strerror or e}") from e
    return written
