"""`transnli export RUN --reviewed good-only|column`: the run's exports with the human review
applied, and a dataset card that states the measured quality.

- good-only: the triples split keeps only the triples judged good (by every annotator who judged
  them, transnli.review.agreement.item_verdicts);
- column: every triple, with a `human_judgement` column: "good", "bad:<error type>", "disputed"
  (annotators differ) or null (not judged). The rejected split gets the column too (all null), so
  the splits of a config share one schema.
The card gains a "Human review" section: how many triples were judged, by how many people, the
precision measured on the random sample with its 95% Wilson interval, and the agreement.
Works with --to parquet and card (the saved `datasets` folder keeps the declared schema only).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from transnli.generator.publish import (
    CARD,
    HUB_DIR,
    ExportError,
    FinishedRun,
    export,
    open_finished_run,
    render_card,
    write_hub_data,
    write_parquet,
)
from transnli.generator.run_folder import REJECTED, TRIPLES
from transnli.generator.schema import read_records, triple_features
from transnli.review.agreement import ReviewSummary, item_verdicts, summarise
from transnli.review.errors import ReviewError
from transnli.review.log import LOG, read_judgements

MODES = ("good-only", "column")
COLUMN = "human_judgement"
REVIEWED_KINDS = ("parquet", "card")


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


def review_section(summary: ReviewSummary, mode: str, kept: int | None) -> str:
    """The card's "Human review" section."""
    people = [a or "(unnamed)" for a in summary.annotators]
    lines = [
        "## Human review\n",
        f"{summary.judged} triples were judged by {len(people)} "
        f"{'person' if len(people) == 1 else 'people'} ({', '.join(people)}) with "
        "`transnli review`, following transnli's quality guideline: a triple is good when H' is "
        "coherent English and its meaning differs from H's; a triple several people judged "
        "counts as good only when all of them called it good.\n",
    ]
    if summary.precision is None:
        lines.append("No random sample was judged, so the precision is not measured.\n")
    else:
        lo, hi = summary.interval
        lines.append(
            f"**Measured precision: {summary.precision:.3f}** (95% Wilson interval "
            f"{lo:.3f}-{hi:.3f}): {summary.sample_good} of the {summary.sample_judged} triples "
            "of a seeded random sample were judged good.\n"
        )
    rows = [
        f"| {p.first or '(unnamed)'} / {p.second or '(unnamed)'} | {p.items} | {_fmt(p.raw_good)}"
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
        lines.append(f"This export keeps only the {kept} triples judged good.\n")
    else:
        lines.append(
            f"Every triple is kept; the `{COLUMN}` column holds `good`, `bad:<error type>`, "
            "`disputed` (the annotators differ) or null (not judged).\n"
        )
    return "\n".join(lines)


def _card_front(text: str, mode: str) -> str:
    """Add the column to the card's declared features (column mode)."""
    import yaml

    if mode == "good-only":
        return text
    _, front, body = text.split("---\n", 2)
    meta = yaml.safe_load(front)
    infos = meta.get("dataset_info")
    for info in infos if isinstance(infos, list) else [infos]:
        info["features"].append({"name": COLUMN, "dtype": "string"})
    dumped = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{dumped}---\n{body}"


def export_reviewed_card(
    run: FinishedRun, judgements: list[dict[str, Any]], mode: str, **card: Any
) -> Path | None:
    """OUT/hub as `export --to card` writes it, from the reviewed rows, with the review section."""
    verdicts = item_verdicts(judgements)
    kept = sum(verdicts.get(r["id"]) == "good" for r in read_records(run.dir / TRIPLES))
    section = review_section(summarise(judgements), mode, kept)

    splits = {
        split: reviewed_rows(read_records(run.dir / name), verdicts, mode, judged=split == "test")
        for name, split in ((TRIPLES, "test"), (REJECTED, "rejected"))
    }
    hub = run.dir / HUB_DIR
    data = write_hub_data(hub, splits, lambda rows: _table(rows, mode))
    if data is None:
        return None
    files, counts, nbytes = data
    text = _card_front(render_card(run, files, counts, nbytes=nbytes, **card), mode)
    head, sep, tail = text.partition("## Limitations\n")
    (hub / CARD).write_text(head + section + "\n" + sep + tail, encoding="utf-8")
    return hub


def _export_parquet(run: FinishedRun, verdicts: dict[str, str], mode: str) -> list[Path]:
    """OUT/triples.parquet reviewed; OUT/rejected.parquet as `export --to parquet` writes it,
    with the (null) column in column mode so that the two files share a schema."""
    written = export(run.dir, ["parquet"], run=run)
    for name in (TRIPLES, REJECTED):
        target = run.dir / name.replace(".jsonl", ".parquet")
        if name == REJECTED and (mode == "good-only" or not target.exists()):
            continue
        rows = read_records(run.dir / name)
        write_parquet(
            _table(reviewed_rows(rows, verdicts, mode, judged=name == TRIPLES), mode), target
        )
        if target not in written:
            written.append(target)
    return written


def reviewed_card_maker(mode: str):
    """A `make_card` for `publish`: OUT/hub reviewed, from RUN/review.jsonl."""
    check_mode(mode)

    def make_card(run: FinishedRun, **card: Any) -> list[Path]:
        judgements = read_judgements(run.dir / LOG)
        hub = export_reviewed_card(run, judgements, mode, **card)
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
) -> list[Path]:
    """`transnli export RUN --reviewed MODE`: the exports `kinds` asks for, reviewed."""
    check_mode(mode)
    unsupported = [k for k in kinds if k not in REVIEWED_KINDS]
    if unsupported:
        raise ReviewError(
            f"--reviewed works with --to {' and '.join(REVIEWED_KINDS)}; not with "
            f"{', '.join(unsupported)}"
        )
    run = open_finished_run(out_dir)
    judgements = read_judgements(run.dir / LOG)
    verdicts = item_verdicts(judgements)
    written: list[Path] = []
    try:
        if "parquet" in kinds:
            written += _export_parquet(run, verdicts, mode)
        if "card" in kinds:
            hub = export_reviewed_card(run, judgements, mode, title=title, license=license)
            written += [hub] if hub else []
    except OSError as e:
        raise ExportError(f"cannot write under {run.dir}: {e.strerror or e}") from e
    return written
