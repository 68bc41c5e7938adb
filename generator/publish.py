"""Exports of a generation run folder: Parquet, a saved Hugging Face dataset, and a Hub-ready folder
with a dataset card; and publishing that folder to the Hugging Face Hub.

Every export reads only triples.jsonl, rejected.jsonl, stats.json and config.json, so it can be made
from a finished run at any time without generating again (`transnli export`). Every table is written
with the declared schema of `transnli.generator.schema`, so exports of different runs load together.
Outputs are deterministic: the same run folder gives byte-identical files.

Layout written under a run folder OUT:
- ``--to parquet``: OUT/triples.parquet, OUT/rejected.parquet (each only when it has rows);
- ``--to hf``: OUT/hf_dataset/ (`datasets.DatasetDict.save_to_disk`, splits triples and rejected);
- ``--to card``: OUT/hub/ — README.md (the dataset card) and data/<dataset>/{test,rejected}.parquet,
  one folder per source dataset, which the card's `configs` point at. This folder is what
  `transnli publish` uploads.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transnli.common.citation import PAPER_BIBTEX, PAPER_TITLE, tool_bibtex
from transnli.common.hub import HubError, check_repo_id, hub_token, upload_folder
from transnli.generator.card_quality import card_quality, quality_text
from transnli.generator.filters.registry import filter_summary
from transnli.generator.lm_choice import CHOICE, PER_SENTENCE
from transnli.generator.run_folder import (
    CONFIG,
    FINISHED,
    PROGRESS,
    REJECTED,
    STATS,
    TRIPLES,
    OutputError,
)
from transnli.generator.schema import (
    FIELD_DOCS,
    SchemaError,
    arrow_table,
    read_records,
    triple_features,
)

KINDS = ("parquet", "hf", "card")
HUB_DIR = "hub"
CARD = "README.md"

# The licences of the source datasets as their own cards state them; the triples copy their
# sentences, so a card inherits the source's licence. Anything else is "other" (see the card).
SOURCE_LICENSES = {"snli": "cc-by-sa-4.0", "anli": "cc-by-nc-4.0", "wanli": "cc-by-4.0"}


class ExportError(OutputError):
    """A run folder that cannot be exported or published; the message says why and what to do.
    (An OutputError, so that `generate --export` reports it as it reports a failed write.)"""


# -- the run folder --------------------------------------------------------------------------------
@dataclass(frozen=True)
class FinishedRun:
    dir: Path
    stats: dict[str, Any]
    config: dict[str, Any]


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ExportError(
            f"{path} is missing; the run folder is incomplete (generate it again with --overwrite)"
        ) from None
    except (OSError, ValueError) as e:
        raise ExportError(f"{path} cannot be read as JSON ({e})") from e


def open_finished_run(out_dir: str | Path) -> FinishedRun:
    """The finished generation run in `out_dir`; refuses an unfinished or foreign folder."""
    out = Path(out_dir)
    if not out.is_dir():
        raise ExportError(
            f"{out} is not a folder; give the --out folder of a `transnli generate` run"
        )
    if (out / PROGRESS).exists():
        raise ExportError(
            f"{out} holds an unfinished run ({PROGRESS} is there); run the same "
            "`transnli generate` command again to finish it, then export"
        )
    if not (out / FINISHED).exists():
        raise ExportError(
            f"{out} is not a finished transnli run (no {FINISHED}); give the --out folder "
            "of a `transnli generate` run that has finished"
        )
    for name in (TRIPLES, REJECTED):
        if not (out / name).is_file():
            raise ExportError(f"{out / name} is missing; the run folder is incomplete")
    stats, config = _read_json(out / STATS), _read_json(out / CONFIG)
    for path, doc in ((out / STATS, stats), (out / CONFIG, config)):
        if not isinstance(doc, dict):
            raise ExportError(f"{path} is not a JSON object")
    return FinishedRun(out, stats, config)


def parse_kinds(values: tuple[str, ...] | list[str]) -> list[str]:
    """`--to parquet --to hf` or `--to parquet,hf` as a list in canonical order."""
    asked = {v.strip().lower() for value in values for v in value.split(",") if v.strip()}
    unknown = sorted(asked - set(KINDS))
    if unknown:
        raise ExportError(
            f"unknown export kind(s) {', '.join(unknown)}; choose from {', '.join(KINDS)}"
        )
    if not asked:
        raise ExportError(f"nothing to export; give --to with one or more of {', '.join(KINDS)}")
    return [k for k in KINDS if k in asked]


_READ: dict[tuple[str, int, int, int, int], list[dict[str, Any]]] = {}


def _rows(path: Path) -> list[dict[str, Any]]:
    """The normalised records of a JSONL file, read once for all the exports of one `export` call
    (which clears them; keyed by size, mtime, inode and ctime too, in case a file is rewritten or
    replaced meanwhile within the mtime's resolution)."""
    try:
        st = path.stat()
        key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns)
        if key not in _READ:
            while len(_READ) >= 2:
                _READ.pop(next(iter(_READ)))
            _READ[key] = read_records(path)
        return _READ[key]
    except SchemaError as e:
        raise ExportError(str(e)) from e
    except UnicodeDecodeError as e:
        raise ExportError(f"{path} is not UTF-8 text: {e}") from e


def write_parquet(rows: list[dict[str, Any]] | Any, target: Path) -> Path:
    """Rows (or a table of the declared schema) to a Parquet file, replaced whole."""
    import pyarrow.parquet as pq

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".tmp")
    pq.write_table(arrow_table(rows) if isinstance(rows, list) else rows, tmp)
    os.replace(tmp, target)
    return target


# -- the three exports -----------------------------------------------------------------------------
def export_parquet(out: Path) -> list[Path]:
    written = []
    for name in (TRIPLES, REJECTED):
        rows = _rows(out / name)
        target = out / name.replace(".jsonl", ".parquet")
        if rows:
            written.append(write_parquet(rows, target))
        else:  # an empty run writes no file, and no stale one from an earlier export stays
            target.unlink(missing_ok=True)
    return written


def dataset_info(
    config: dict[str, Any] | None = None,
    stats: dict[str, Any] | None = None,
    sources: list[str] | None = None,
):
    """The `datasets.DatasetInfo` of an export: declared features, description, citation,
    licence."""
    import datasets

    cfg = (config or {}).get("config", {})
    preset = cfg.get("preset", "?")
    accepted = (stats or {}).get("triples_accepted")
    description = (
        "Adversarial NLI triples (premise P, hypothesis H, modified hypothesis H') made by "
        "transnli: one word of H replaced by its antonym, following Wu & Last (2025), "
        f'"{PAPER_TITLE}". Preset {preset}'
        + (f"; {accepted} triples accepted." if accepted is not None else ".")
    )
    return datasets.DatasetInfo(
        description=description,
        citation=f"{tool_bibtex(config)}\n\n{PAPER_BIBTEX}",
        license=card_license(sources),
        features=triple_features(),
    )


def export_hf(
    out: Path, config: dict[str, Any] | None = None, stats: dict[str, Any] | None = None
) -> list[Path]:
    import datasets

    tables = {
        split: _rows(out / name) for name, split in ((TRIPLES, "triples"), (REJECTED, "rejected"))
    }
    info = dataset_info(
        config, stats, sorted({r["dataset"] for rows in tables.values() for r in rows})
    )
    splits = {}
    for name, split in ((TRIPLES, "triples"), (REJECTED, "rejected")):
        rows = tables[split]
        if rows:
            # A fingerprint from the file's bytes (datasets draws a random one otherwise), so that
            # state.json, and with it the whole folder, is the same for the same run.
            digest = hashlib.sha256((out / name).read_bytes()).hexdigest()[:16]
            splits[split] = datasets.Dataset(
                arrow_table(rows), info=info.copy(), split=split, fingerprint=digest
            )
    target = out / "hf_dataset"
    if target.exists():
        shutil.rmtree(target)
    if not splits:
        return []
    quiet = not datasets.are_progress_bars_disabled()
    if quiet:  # one bar per split is noise beside the one line `exported ...`
        datasets.disable_progress_bars()
    try:
        datasets.DatasetDict(splits).save_to_disk(str(target))
    finally:
        if quiet:
            datasets.enable_progress_bars()
    return [target]


def config_name(dataset: str) -> str:
    """A Hub config name (and folder name) for a source dataset's name."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", dataset).strip("._-")
    return name or "unnamed"


def write_hub_data(
    hub: Path,
    splits: dict[str, list[dict[str, Any]]],
    to_table: Callable[[list[dict[str, Any]]], Any] = arrow_table,
) -> tuple[dict, dict] | None:
    """The data half of OUT/hub, made anew: each split's rows ("test", "rejected") split by source
    dataset into data/CONFIG/SPLIT.parquet, tables made by `to_table`. Returns the card's
    (files, counts) per config and split, or None when there are no rows at all."""
    if hub.exists():
        shutil.rmtree(hub)  # what an earlier export wrote, e.g. a dataset this run no longer has
    by_config: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for split, rows in splits.items():
        for row in rows:
            config = by_config.setdefault(config_name(row["dataset"]), {s: [] for s in splits})
            config[split].append(row)
    files: dict[str, dict[str, str]] = {}
    for cfg in sorted(by_config):
        for split, rows in by_config[cfg].items():
            if rows:
                rel = f"data/{cfg}/{split}.parquet"
                write_parquet(to_table(rows), hub / rel)
                files.setdefault(cfg, {})[split] = rel
    if not files:
        return None
    counts = {c: {split: len(rows) for split, rows in s.items()} for c, s in by_config.items()}
    return files, counts


def export_card(
    run: FinishedRun,
    *,
    title: str | None = None,
    license: str | None = None,
    repo_id: str | None = None,
) -> list[Path]:
    """OUT/hub: the data split by source dataset and the dataset card that describes it."""
    splits = {"test": _rows(run.dir / TRIPLES), "rejected": _rows(run.dir / REJECTED)}
    hub = run.dir / HUB_DIR
    data = write_hub_data(hub, splits)
    if data is None:  # no triples and no rejects: nothing a card could describe
        return []
    files, counts = data
    text = render_card(
        run,
        files,
        counts,
        title=title,
        license=license,
        repo_id=repo_id,
        estimate=card_quality(splits, run.config.get("config") or {}),
    )
    hub.mkdir(parents=True, exist_ok=True)
    (hub / CARD).write_text(text, encoding="utf-8")
    return [hub]


def export(
    out_dir: str | Path,
    kinds: list[str],
    *,
    run: FinishedRun | None = None,
    title: str | None = None,
    license: str | None = None,
) -> list[Path]:
    """The exports `kinds` asks for; `run` (read from the folder when not given) for hf and card."""
    try:
        return _export(Path(out_dir), kinds, run, title, license)
    finally:
        _READ.clear()  # the records are kept for the exports of this call only


def _export(
    out: Path, kinds: list[str], run: FinishedRun | None, title: str | None, license: str | None
) -> list[Path]:
    written: list[Path] = []
    if "parquet" in kinds:
        written += export_parquet(out)
    if "hf" in kinds:
        written += export_hf(
            out,
            run.config if run else _json_or_none(out / CONFIG),
            run.stats if run else _json_or_none(out / STATS),
        )
    if "card" in kinds:
        if run is None:
            run = FinishedRun(
                out, _json_or_none(out / STATS) or {}, _json_or_none(out / CONFIG) or {}
            )
        written += export_card(run, title=title, license=license)
    return written


def _json_or_none(path: Path) -> dict | None:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def export_finished(
    out_dir: str | Path, kinds: list[str], *, title: str | None = None, license: str | None = None
) -> list[Path]:
    """`transnli export`: the exports of a finished run, without generating again."""
    run = open_finished_run(out_dir)
    try:
        return export(run.dir, kinds, run=run, title=title, license=license)
    except OSError as e:
        raise ExportError(f"cannot write under {run.dir}: {e.strerror or e}") from e


# -- the dataset card ------------------------------------------------------------------------------
def size_category(n: int) -> str:
    for limit, name in (
        (1_000, "n<1K"),
        (10_000, "1K<n<10K"),
        (100_000, "10K<n<100K"),
        (1_000_000, "100K<n<1M"),
        (10_000_000, "1M<n<10M"),
    ):
        if n < limit:
            return name
    return "10M<n<100M"


def card_license(datasets_: list[str] | None, chosen: str | None = None) -> str:
    """The licence id for the card: the one asked for, else the common licence of the source
    datasets when they share a known one, else "other"."""
    if chosen:
        return chosen
    found = {SOURCE_LICENSES.get(d.lower().split("_")[0]) for d in datasets_ or []}
    return found.pop() if len(found) == 1 and None not in found else "other"


def card_metadata(
    run: FinishedRun,
    files: dict[str, dict[str, str]],
    counts: dict[str, dict[str, int]],
    license: str | None = None,
) -> dict[str, Any]:
    """The YAML front matter of the card (the Hub's dataset card metadata): what the Hub needs to
    find and read the files (configs and their data files) and to list the dataset. No
    `dataset_info`: every Parquet file carries the `datasets` features in its own schema metadata
    (generator/schema.py, arrow_table), so the Hub and `load_dataset` read the ClassLabel and the
    nested `checks` struct from the files; declared in YAML they took over a thousand lines."""
    configs = []
    many = len(files) > 1
    if many:
        splits = sorted({s for f in files.values() for s in f}, key=("test", "rejected").index)
        configs.append(
            {
                "config_name": "all",
                "data_files": [{"split": s, "path": f"data/*/{s}.parquet"} for s in splits],
                "default": True,
            }
        )
    for cfg in sorted(files):
        entry: dict[str, Any] = {
            "config_name": cfg,
            "data_files": [{"split": s, "path": p} for s, p in files[cfg].items()],
        }
        if not many:
            entry["default"] = True
        configs.append(entry)
    total = sum(c.get("test", 0) for c in counts.values())
    return {
        "license": card_license(sorted(files), license),
        "language": ["en"],
        "task_categories": ["text-classification"],
        "task_ids": ["natural-language-inference"],
        "pretty_name": None,  # filled by render_card
        "size_categories": [size_category(total)],
        "source_datasets": sorted(files),
        "tags": ["nli", "adversarial", "antonym", "consistency", "transnli"],
        "configs": configs,
    }


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "-"
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".")
    return str(value).replace("|", "\\|")


def _table(rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_fmt(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


SETTING_KEYS = (
    "preset",
    "description",
    "pipeline",
    "antonyms",
    "pos",
    "include_aux",
    "grammar",
    "acceptability",
    "max_chars",
    "seed",
    "limit",
)


# The language model's choices count with the filters' rejections in stats.json; not filters.
LM_CHOICE_ROWS = {
    CHOICE: "not chosen among a word's antonyms by the language model (lm_antonyms)",
    PER_SENTENCE: "over the per-sentence limit, by the language model's score (max_per_sentence)",
}


def effective_config(config: dict[str, Any]) -> dict[str, Any]:
    """The run's settings with what a check resolved itself filled in where the config says None
    (config.json's resources.checks.NAME.settings: the judge's file and threshold)."""
    cfg = dict(config.get("config") or {})
    for check in ((config.get("resources") or {}).get("checks") or {}).values():
        for key, value in ((check or {}).get("settings") or {}).items():
            if cfg.get(key) is None:
                cfg[key] = value
    return cfg


def _settings_rows(cfg: dict[str, Any]) -> list[tuple[str, Any]]:
    rows = [(k, cfg.get(k)) for k in SETTING_KEYS if k in cfg]
    if cfg.get("acceptability") == "lm":
        rows += [
            (k, cfg.get(k))
            for k in ("lm", "lm_threshold", "lm_antonyms", "max_per_sentence")
            if k in cfg
        ]
    if cfg.get("acceptability") in ("judge", "pair-judge"):
        rows += [
            (k, cfg.get(k))
            for k in ("lm", "judge_model", "judge_threshold", "lm_antonyms", "max_per_sentence")
            if k in cfg
        ]
    if cfg.get("acceptability") == "cola":
        rows += [
            ("cola_model", cfg.get("cola_model")),
            ("cola_threshold", cfg.get("cola_threshold")),
        ]
    if cfg.get("pipeline", "wordnet") != "wordnet":
        rows += [
            (k, cfg.get(k)) for k in ("llm_backend", "llm_model", "llm_temperature") if k in cfg
        ]
    return rows


def _stats_rows(stats: dict[str, Any]) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = []
    for key in (
        "sentences_read",
        "duplicate_pairs",
        "words_considered",
        "skipped_no_antonym",
        "skipped_no_pos_match",
        "skipped_fixed_expression",
        "skipped_unrealisable",
        "rejected_llm_answer",
        "candidates_built",
    ):
        if key in stats:
            rows.append((key.replace("_", " "), stats[key]))
    for name, n in sorted((stats.get("sentences_skipped") or {}).items()):
        rows.append((f"sentences skipped: {name}", n))
    for name, n in sorted((stats.get("rejected_filters") or {}).items()):
        rows.append((LM_CHOICE_ROWS.get(name, f"rejected by filter {name}"), n))
    for key in (
        "rejected_grammar",
        "rejected_acceptability",
        "triples_accepted",
        "acceptance_rate",
        "acceptability_pass_rate",
    ):
        if key in stats:
            rows.append((key.replace("_", " "), stats[key]))
    return rows


def _provenance_rows(config: dict[str, Any]) -> list[tuple[str, Any]]:
    rows: list[tuple[str, Any]] = [("transnli", config.get("transnli_version"))]
    inp = config.get("input") or {}
    for key in ("source", "format", "sha256", "dataset"):
        if inp.get(key) is not None:
            rows.append((f"input {key}", inp[key]))
    res = config.get("resources") or {}
    for key in ("wordnet", "spacy_model", "spacy", "vectors", "lemminflect", "python"):
        if res.get(key) is not None:
            rows.append((key, res[key]))
    for name, check in sorted((res.get("checks") or {}).items()):
        rows.append((f"check {name}", f"{check.get('backend')}: {check.get('version')}"))
    if res.get("llm"):
        rows.append(("llm", json.dumps(res["llm"], sort_keys=True)))
    if config.get("run_fingerprint"):
        rows.append(("run fingerprint", config["run_fingerprint"]))
    return rows


def _method_text(pipeline: str) -> str:
    """The card's method paragraph."""
    return (
        "Antonym replacement after Wu & Last (2025), *"
        + PAPER_TITLE
        + "* (Algorithm 1): for each content word of H whose part of speech is selected, collect "
        "its WordNet antonyms of the same part of speech, rank them by word-vector similarity to "
        "the rest of the sentence, put the best one in the word's place (inflection and "
        "capitalisation matched), and keep the new sentence only if the candidate filters and the "
        "grammar and acceptability checks pass. Each word gives at most one H'."
        + (
            " Pipeline `"
            + pipeline
            + "`: an LLM proposes the antonym, and its answer is verified (one "
            "word changed, no negation added) before the same checks."
            if pipeline != "wordnet"
            else ""
        )
        + "\n"
    )


def _closing_sections(names: list[str], license: str | None, config: dict) -> list[str]:
    """The card's limitations, license and citation sections."""
    return [
        "## Limitations\n",
        "H' is made automatically and carries no gold label: its relation to P is what a model's "
        "own labels are tested against, not a human judgement. The checks lower, but do not "
        "remove, ungrammatical or odd sentences. `gold_label` is the source dataset's label of "
        "(P, H).\n",
        "## License\n",
        f"`{card_license(names, license)}`. The sentences come from "
        f"{', '.join(names) or 'the source data'}; "
        "their licence applies to this derived data. transnli itself is MIT-licensed.\n",
        "## Citation\n",
        "```bibtex\n" + tool_bibtex(config) + "\n\n" + PAPER_BIBTEX + "\n```\n",
    ]


def render_card(
    run: FinishedRun,
    files: dict[str, dict[str, str]],
    counts: dict[str, dict[str, int]],
    *,
    title: str | None = None,
    license: str | None = None,
    repo_id: str | None = None,
    estimate: dict | None = None,
) -> str:
    """The dataset card: YAML front matter and a Markdown body, from the run's own files."""
    import yaml

    cfg = run.config.get("config") or {}
    names = sorted(files)
    title = title or f"transnli antonym-replacement triples ({', '.join(names) or 'empty'})"
    meta = card_metadata(run, files, counts, license)
    meta["pretty_name"] = title
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    total = sum(c.get("test", 0) for c in counts.values())
    rejected = sum(c.get("rejected", 0) for c in counts.values())
    filters = cfg.get("filters") or []
    pipeline = cfg.get("pipeline", "wordnet")
    parts = [
        f"---\n{front}---\n",
        f"# {title}\n",
        f"{total} adversarial NLI triples (P, H, H') made with "
        f"[transnli](https://pypi.org/project/transnli/) {run.config.get('transnli_version', '')} "
        f"from {', '.join(names) or 'no data'}: H' is the hypothesis H with one word replaced by "
        "its antonym. The triples are for measuring whether an NLI model is *transitively "
        "self-consistent* (its own labels of (P,H), (H,H'), (H',H) and (P,H') obey the four "
        f"transitive rules), which needs no gold label for H'. {rejected} candidates that a check "
        "or filter rejected are kept in the `rejected` split for study.\n",
        "## Contents\n",
        _table(
            [
                (
                    c,
                    files[c].get("test", "-"),
                    counts[c].get("test", 0),
                    counts[c].get("rejected", 0),
                )
                for c in names
            ],
            ("config (source dataset)", "file", "triples", "rejected"),
        )
        + "\n",
        "```python\nimport datasets\n"
        f'ds = datasets.load_dataset("{repo_id or "USER/NAME"}", '
        f'"{names[0] if names else "default"}", split="test")\n```\n',
        *quality_text(estimate),
        "## Method\n",
        _method_text(pipeline),
        "## Preset and settings\n",
        _table(_settings_rows(effective_config(run.config)), ("setting", "value")) + "\n",
        "## Filters\n",
        (
            "\n".join(f"- `{f}`: {filter_summary(f)}" for f in filters)
            if filters
            else "No candidate filters."
        )
        + "\n",
        "## Acceptance statistics\n",
        "From the run's stats.json (counts over the whole run).\n",
        _table(_stats_rows(run.stats), ("quantity", "value")) + "\n",
        "## Provenance\n",
        "From the run's config.json: the tool and the resources it used.\n",
        _table(_provenance_rows(run.config), ("item", "version / value")) + "\n",
        "## Fields\n",
        _table(list(FIELD_DOCS), ("field", "type", "meaning")) + "\n",
        "`checks` has one entry per check and filter ("
        + ", ".join(f"`{c}`" for c in triple_features()["checks"])
        + "); an entry is null when that stage did not run on the candidate, and each has the same "
        "fields (`backend`, `passed`, `reason` and the evidence of each backend, null where a "
        "backend gives none; other evidence as a JSON object in `extra`). A missing gold label is "
        "-1.\n",
        *_closing_sections(names, license, run.config),
    ]
    return "\n".join(parts)


# -- publishing ------------------------------------------------------------------------------------
def publish(
    out_dir: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    token_env: str | None = None,
    title: str | None = None,
    license: str | None = None,
    api=None,
    make_card: Callable[..., list[Path]] | None = None,
) -> str:
    """Upload OUT/hub (made now from the finished run) to the dataset repo `repo_id`; returns its
    URL. The token comes from the variable `token_env` only, or huggingface_hub's own lookup when
    none is named (`transnli.common.hub.hub_token`). `make_card` (default `export_card`, same
    arguments) writes OUT/hub; the human review passes its own (transnli.review.export), which
    the generator does not import."""
    try:
        check_repo_id(repo_id)
        run = open_finished_run(out_dir)
        token = hub_token(token_env)
    except HubError as e:
        raise ExportError(str(e)) from e
    try:
        written = (make_card or export_card)(run, title=title, license=license, repo_id=repo_id)
    finally:
        _READ.clear()
    if not written:
        raise ExportError(f"{run.dir} holds no triples; there is nothing to publish")
    hub = written[0]
    try:
        return upload_folder(
            hub,
            repo_id,
            token=token,
            private=private,
            commit_message=f"Upload transnli triples from {run.dir.name}",
            retry_hint=f"upload {hub} later with `transnli publish`",
            api=api,
        )
    except HubError as e:
        raise ExportError(str(e)) from e
