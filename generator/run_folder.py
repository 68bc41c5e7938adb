"""The files of a run folder, by name, and the error for a folder that cannot be used.

Both the writer of a run (transnli.generator.output) and its readers after the fact
(transnli.generator.publish) name these files; output.py says what each one means.
"""

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


class OutputError(RuntimeError):
    """A run folder that cannot be written, resumed or read as a finished run."""
