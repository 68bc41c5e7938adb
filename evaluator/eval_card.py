"""The evaluation card: the README.md of a Hub repository holding an evaluation's results
(`transnli publish EVAL`), made from the evaluation's summary.json and run_info.json only.

It says which models were judged (linked to the Hub when they came from it, with the commit), on
which triples (the Hub dataset they were published as, when given, and each file's digest), what
the four transitive rules are, and each model's violation rates and mutual entailment and
contradiction rates. The same inputs give the same text.
"""

from __future__ import annotations

import re
from typing import Any

from transnli.common.citation import PAPER_BIBTEX, PAPER_TITLE, tool_bibtex

from .formatting import DASH, count_rate, markdown_table, rate_with_ci
from .report import rules_table
from .rules import EXTRA_KEYS, RULES

CARD = "README.md"
HUB = "https://huggingface.co"
# What each uploaded file is, for the card's file list.
FILE_DOCS = {
    "summary.json": "every number of this card and more, per model and dataset (docs/outputs.md)",
    "report.md": "the full report: the paper's Tables 1-4, the extras, violating examples",
    "run_info.json": "the command line, date, machine and library versions of the run",
    "samples.jsonl": "one row per triple and model: sentences, the four labels, rule outcomes",
}
# A hub model's identity is "hf|REPO@COMMIT|labels=...": the repo and commit it was loaded at.
_HUB_MODEL = re.compile(r"^hf\|([A-Za-z0-9][\w.-]*/[\w.-]+)@([0-9a-f]{7,40})\|")


def _table(rows: list[tuple[Any, ...]], header: tuple[str, ...]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in rows:
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def _cell(value: Any) -> str:
    return DASH if value is None else str(value).replace("|", "\\|").replace("\n", " ")


def model_source(described: dict[str, Any]) -> str:
    """Where a model came from, as the card shows it: a link to its Hub repo at the commit used,
    or the local folder's or label file's digest."""
    identity = str(described.get("identity", ""))
    found = _HUB_MODEL.match(identity)
    if found:
        repo, commit = found.groups()
        return f"[{repo}]({HUB}/{repo}) at commit `{commit[:12]}`"
    backend = described.get("backend")
    digest = re.search(r"sha256:([0-9a-f]{12})", identity)
    short = f" (sha256 `{digest.group(1)}…`)" if digest else ""
    if backend == "hf":
        return f"local model folder{short}"
    if backend == "precomputed":
        return f"labels made elsewhere, file `{described.get('path', '?')}`{short}"
    return f"`{identity}`"


def _models_section(summary: dict[str, Any]) -> list[str]:
    described = summary["provenance"].get("models") or []
    rows = [
        (
            m.get("name", m.get("spec")),
            f"`{m.get('spec')}`",
            m.get("backend"),
            model_source(m),
            ", ".join(f"{i}={lab}" for i, lab in sorted((m.get("labels") or {}).items())) or None,
            m.get("pairs_labelled"),
        )
        for m in described
    ]
    return [
        "## Models\n",
        _table(rows, ("model", "spec", "backend", "source", "label order", "pairs labelled"))
        + "\n",
    ]


def _triples_section(summary: dict[str, Any], triples_repo_id: str | None) -> list[str]:
    prov = summary["provenance"]
    if triples_repo_id:
        link = (
            f"The triples are the dataset [{triples_repo_id}]({HUB}/datasets/{triples_repo_id}) "
            "(made with `transnli generate`; its card says how)."
        )
    else:
        link = (
            "The triples are not linked to a dataset on the Hub. Publish them with "
            "`transnli publish RUN --repo-id USER/NAME` and publish this evaluation again with "
            "`--triples-repo-id USER/NAME` to link them; the digests below identify the files."
        )
    files = [
        (f"`{f.get('path')}`", f"`{f.get('sha256')}`", f.get("n_triples"))
        for f in prov.get("triples_files") or []
    ]
    config = prov.get("config") or {}
    pairs = (
        "for every triple (`--all-pairs`)"
        if config.get("all_pairs")
        else "only where (H,H') is mutual entailment or mutual contradiction"
    )
    return [
        "## Triples\n",
        f"{prov.get('n_triples')} triples (P, H, H'), H' being H with one word replaced by its "
        f"antonym; datasets: {', '.join(summary.get('datasets') or []) or 'none'}. {link}\n",
        _table(files, ("file", "sha256", "triples")) + "\n",
        f"Each model labelled (P,H), (H,H') and (H',H) for every triple, and (P,H') {pairs}.\n",
    ]


def _rules_section(summary: dict[str, Any]) -> list[str]:
    rules = summary["rules"]
    models = summary["models"]
    overall = [
        (m["model"], *(rate_with_ci(m["overall"]["rules"][r.key]) for r in RULES)) for m in models
    ]
    per_dataset = markdown_table(rules_table(summary)) if len(summary["datasets"]) > 1 else None
    return [
        "## The four transitive rules\n",
        "A model M is transitively self-consistent when its own labels obey the rules below "
        f"(Wu & Last, 2025, *{PAPER_TITLE}*). A rule applies to a triple when its antecedent "
        "holds: M(P,H) is the first label, and (H,H') is *mutual* E (M(H,H') = M(H',H) = "
        "entailment) or mutual C (both contradiction). The rule is violated when M(P,H') breaks "
        "its consequent. No gold label is needed.\n",
        "\n".join(
            f"- **{key}** `{rule.get('name')}`: {rule.get('definition')}"
            for key, rule in rules.items()
        )
        + "\n",
        "### Violation rates\n",
        "Violations / cases (triples whose antecedent holds), over all datasets, with a Wilson "
        "95% interval; lower is better, – where the rule never applied.\n",
        _table(overall, ("model", *(f"{r.key} `{r.name}`" for r in RULES))) + "\n",
        *(["Per dataset:\n", per_dataset + "\n"] if per_dataset else []),
    ]


def _mutual_section(summary: dict[str, Any]) -> list[str]:
    rows = []
    for m in summary["models"]:
        for entry in [*m["datasets"], {"dataset": "all", **m["overall"]}]:
            if entry["dataset"] == "all" and len(m["datasets"]) == 1:
                continue
            right = (
                round(entry["accuracy"] * entry["accuracy_pairs"])
                if entry.get("accuracy") is not None
                else None
            )
            rows.append(
                (
                    m["model"],
                    entry["dataset"],
                    count_rate(
                        entry["mutual_entailment_rate"],
                        entry["mutual_entailment"],
                        entry["n_triples"],
                    ),
                    count_rate(
                        entry["mutual_contradiction_rate"],
                        entry["mutual_contradiction"],
                        entry["n_triples"],
                    ),
                    DASH
                    if right is None
                    else count_rate(entry["accuracy"], right, entry["accuracy_pairs"]),
                )
            )
    return [
        "## Mutual entailment and contradiction\n",
        "The share of triples whose (H,H') the model labels mutual entailment or mutual "
        "contradiction (an antonym swap should mostly give contradiction), and, where the source "
        "pairs have gold labels, the accuracy of M(P,H) over the distinct (P,H) pairs.\n",
        _table(
            rows,
            ("model", "dataset", "mutual entailment", "mutual contradiction", "accuracy (gold)"),
        )
        + "\n",
    ]


def _extras_section(summary: dict[str, Any]) -> list[str]:
    rows = [
        (m["model"], *(rate_with_ci(m["overall"]["extras"][k]) for k in EXTRA_KEYS))
        for m in summary["models"]
    ]
    return [
        "## Beyond the paper\n",
        str(summary.get("extras_note", "")).removeprefix("Beyond the paper: ") + "\n",
        _table(rows, ("model", *EXTRA_KEYS)) + "\n",
    ]


def _files_section(names: list[str]) -> list[str]:
    lines = [f"- `{n}`: {FILE_DOCS[n]}" for n in names if n in FILE_DOCS]
    figures = [n for n in names if n.startswith("plots/")]
    if figures:
        lines.append(f"- `plots/`: the figures ({len(figures)} files: PNG, SVG and PDF)")
    parts = ["## Files\n", "\n".join(lines) + "\n"]
    for png in (n for n in figures if n.endswith(".png")):
        name = png.rsplit("/", 1)[-1][: -len(".png")].replace("_", " ")
        parts.append(f"![{name}]({png})\n")
    return parts


def _reproduce_section(summary: dict[str, Any], run_info: dict[str, Any]) -> list[str]:
    version = summary["provenance"].get("transnli_version", "")
    rows = [("transnli", version)]
    rows += sorted((k, v) for k, v in (run_info.get("versions") or {}).items() if k != "transnli")
    command = run_info.get("command_line")
    return [
        "## Reproduce\n",
        (f"The run (on {run_info.get('date_utc', '?')}):\n\n```bash\n{command}\n```\n")
        if command
        else "run_info.json was not there: the command line is not known.\n",
        _table(rows, ("package", "version")) + "\n",
    ]


def card_metadata(
    summary: dict[str, Any], names: list[str], title: str, license: str | None
) -> dict[str, Any]:
    """The YAML front matter: the Hub shows samples.jsonl in its viewer (the `samples` config)."""
    meta: dict[str, Any] = {"pretty_name": title}
    if license:
        meta["license"] = license
    meta.update(
        {
            "language": ["en"],
            "tags": ["transnli", "nli", "evaluation", "transitive-consistency"],
            "task_categories": ["text-classification"],
            "task_ids": ["natural-language-inference"],
        }
    )
    if "samples.jsonl" in names:
        meta["configs"] = [
            {
                "config_name": "samples",
                "data_files": [{"split": "test", "path": "samples.jsonl"}],
                "default": True,
            }
        ]
    return meta


def render_eval_card(
    summary: dict[str, Any],
    run_info: dict[str, Any],
    names: list[str],
    *,
    repo_id: str | None = None,
    triples_repo_id: str | None = None,
    title: str | None = None,
    license: str | None = None,
) -> str:
    """The card's text: YAML front matter, then what was evaluated, on what, and the results."""
    import yaml

    models = [m["model"] for m in summary["models"]]
    n = summary["provenance"].get("n_triples")
    title = title or f"transnli evaluation of {', '.join(models)} on {n} triples"
    meta = card_metadata(summary, names, title, license)
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    version = summary["provenance"].get("transnli_version", "")
    load = (
        "```python\nimport datasets\n"
        f'samples = datasets.load_dataset("{repo_id or "USER/NAME"}", "samples", split="test")\n'
        "```\n"
    )
    parts = [
        f"---\n{front}---\n",
        f"# {title}\n",
        f"Results of [transnli](https://pypi.org/project/transnli/) {version}: "
        f"{len(models)} NLI model(s) judged for *transitive self-consistency* on {n} adversarial "
        "triples, without gold labels for H'. The numbers below come from `summary.json`; "
        "`report.md` has every table.\n",
        *([load] if "samples.jsonl" in names else []),
        *_models_section(summary),
        *_triples_section(summary, triples_repo_id),
        *_rules_section(summary),
        *_mutual_section(summary),
        *_extras_section(summary),
        *_files_section(names),
        *_reproduce_section(summary, run_info),
        "## Citation\n",
        "```bibtex\n" + tool_bibtex({"transnli_version": version}) + "\n\n" + PAPER_BIBTEX,
        "```\n",
    ]
    return "\n".join(parts)
