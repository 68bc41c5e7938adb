"""The files of a run folder, by name, and the error for a folder that cannot be used.

Both the writer of a run (transnli.generator.output) and its readers after the fact
(transnli.generator.publish) name these files; output.py says what each one means.
"""

from __future__ import annotations

from pathlib import Path

TRIPLES, REJECTED, STATS, CONFIG, PROGRESS = (
    "triples.jsonl",
    "rejected.jsonl",
    "stats.json",
    "config.json",
    "progress.json",
)
FINISHED, LOCK = "finished.json", "run.lock"
EXPORT_PATHS = ("triples.parquet", "rejected.parquet", "hf_dataset", "hub")
OUTPUTS = (TRIPLES, REJECTED)
# What `transnli review` keeps in a run folder (transnli.review names them from here, since the
# generator imports nothing from it): the judgements, which outlive a regeneration (each names the
# content digest of the triple it judges, so one whose triple changed is reported, never
# counted), and files derived from triples.jsonl, which a regeneration removes: the page's line
# offsets and margins caches, and the reviewed exports (written beside the run's own, never over
# them).
REVIEW_LOG = "review.jsonl"
REVIEWED_PARQUET, REVIEWED_HUB = "triples.reviewed.parquet", "hub-reviewed"
# The uncertain order's cache; `.margins` is an earlier version's, removed with the others.
UNCERTAINTY_CACHE = TRIPLES + ".uncertainty"
REVIEW_DERIVED = (
    TRIPLES + ".offsets",
    UNCERTAINTY_CACHE,
    TRIPLES + ".margins",
    REVIEWED_PARQUET,
    REVIEWED_HUB,
)
# Every name a run writes at the top of its folder; NAME.tmp is NAME being replaced atomically.
RUN_NAMES = (
    TRIPLES,
    REJECTED,
    STATS,
    CONFIG,
    PROGRESS,
    FINISHED,
    LOCK,
    *EXPORT_PATHS,
    REVIEW_LOG,
    *REVIEW_DERIVED,
)
TEMPORARY_SUFFIX = ".tmp"


class OutputError(RuntimeError):
    """A run folder that cannot be written, resumed or read as a finished run."""


def foreign_entries(directory: Path) -> list[str]:
    """The names in `directory` that no generation run writes, sorted (none when it is missing or
    empty). Hidden names (.gitkeep, .DS_Store) are not counted: a file manager or git puts them
    in any folder."""
    if not directory.is_dir():
        return []
    known = set(RUN_NAMES) | {name + TEMPORARY_SUFFIX for name in RUN_NAMES}
    return sorted(
        entry.name
        for entry in directory.iterdir()
        if entry.name not in known and not entry.name.startswith(".")
    )
