"""The evaluation card: the README.md of a Hub repository holding an evaluation's results
(`transnli publish EVAL`), made from the evaluation's summary.json, run_info.json and (two or
more models) comparison.json, and from the reviewed precision of the triples when it is known.

It says which models were judged (linked to the Hub when they came from it, with the commit), on
which triples (the Hub dataset they were published as, when given, each file's digest, and the
precision people measured on them), what the four transitive rules are, each model's violation
rates and mutual entailment and contradiction rates, and what report.md warns about: the
Warnings (a model that looks broken), the paired comparison of the models with its conclusion,
and the no-knowledge alarm's verdict. The same inputs give the same text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from transnli.common.citation import PAPER_BIBTEX, PAPER_TITLE, tool_bibtex

from .compare import MIN_DISCORDANT, comparison_table, confident_holds
from .formatting import DASH, count_rate, markdown_table, noise_cells, pct, rate_with_ci
from .model_checks import model_warnings
from .report import rules_table
from .rules import EXTRA_KEYS, RULES
from .schedule import KIND_TITLES

CARD = "README.md"
HUB = "https://huggingface.co"
# What each uploaded file is, for the card's file list.
FILE_DOCS = {
    "summary.json": "every number of this card and more, per model and dataset (docs/outputs.md)",
    "report.md": "the full report: the paper's Tables 1-4, the extras, violating examples",
    "run_info.json": "the command line, date, machine and library versions of the run",
    "samples.jsonl": "one row per triple and model: sentences, the four labels, rule outcomes",
    "comparison.json": "the paired comparison of the models, per rule and pair (docs/compare.md)",
}
# A hub model's identity is "hf|REPO@COMMIT|labels=...": the repo and commit it was loaded at.
_HUB_MODEL = re.compile(r"^hf\|([A-Za-z0-9][\w.-]*/[\w.-]+)@([0-9a-f]{7,40})\|")


@dataclass(frozen=True)
class ReviewedPrecision:
    """What people measured on the evaluated triples (`transnli review` of their generation run):
    `good` of `judged` triples of a seeded random sample judged good, with a 95% interval."""

    triples_file: str  # the evaluated file the review is of
    good: int
    judged: int
    interval: tuple[float, float] | None
    annotators: int

    @property
    def precision(self) -> float:
        return self.good / self.judged


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
        *_noise_section(summary),
    ]


def _noise_section(summary: dict[str, Any]) -> list[str]:
    """The violation rates over the triples the judge trusts (all datasets pooled), or one
    paragraph saying the triples carry no p_good."""
    quality = summary.get("triple_quality")
    if quality is None:  # an evaluation made before this section existed
        return []
    title = "### On the triples the judge trusts\n"
    if not quality["p_good_triples"]:
        return [
            title,
            "These triples carry no p_good (the trained judge's probability that H' is good: "
            "the `fast` preset, an older run, or another generator), so the rates above cannot "
            "be split by how likely each triple is to be good; a violation on a bad triple counts "
            "as the model's.\n",
        ]
    level = quality["level"]
    rows = []
    for m in summary["models"]:
        for r in RULES:
            confident, weighted = noise_cells(m["overall"]["rules"][r.key])
            rows.append((m["model"], f"{r.key} `{r.name}`", confident, weighted))
    return [
        title,
        f"{quality['p_good_triples']} of {quality['n_triples']} triples carry the judge's p_good "
        f"(mean {quality['mean_p_good']:.3f}), {quality['confident_triples']} at or above "
        f"{level:g}. Each rule's rate over those confident triples (Wilson 95% interval) and "
        "weighted by p_good (Wilson 95% interval on the effective sample size): a rate that "
        "falls there rested on triples the judge doubts.\n",
        _table(rows, ("model", "rule", f"p_good >= {level:g}", "p_good-weighted")) + "\n",
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


def _warnings_section(summary: dict[str, Any]) -> list[str]:
    """report.md's Warnings: signs that a model, not the test set, is broken."""
    warnings = model_warnings(summary)
    if not warnings:
        return []
    return [
        "## Warnings\n",
        "The evaluation found signs that a model is broken; read its numbers below with that in "
        "mind (report.md says the same):\n",
        "\n".join(f"- {w}" for w in warnings) + "\n",
    ]


def _review_section(reviews: Sequence[ReviewedPrecision]) -> list[str]:
    if not reviews:
        return []
    lines = []
    for r in reviews:
        interval = (
            f" (95% Wilson interval {r.interval[0]:.3f}-{r.interval[1]:.3f})" if r.interval else ""
        )
        people = f"{r.annotators} {'person' if r.annotators == 1 else 'people'}"
        lines.append(
            f"- `{r.triples_file}`: **precision {r.precision:.3f}**{interval}: {r.good} of "
            f"{r.judged} triples of a seeded random sample judged good by {people} "
            "(`transnli review` of its generation run)"
        )
    return [
        "## Quality of the triples (human review)\n",
        "Not every triple is a good test: people judged a random sample of the generated "
        "triples (good = H' is coherent English and says something different from H). A "
        "violation on a bad triple says nothing about the model.\n",
        "\n".join(lines) + "\n",
    ]


def _comparison_section(comparison: dict[str, Any] | None) -> list[str]:
    """The paired comparison of the models (comparison.json), its conclusions first."""
    if not comparison or not comparison.get("comparisons"):
        return []
    method = comparison.get("method") or {}
    alpha = method.get("alpha", 0.05)
    return [
        "## Paired comparison of the models\n",
        *(f"**{line}.**\n" for line in comparison.get("conclusions") or []),
        "Per rule and pair of models, on the same triples (all datasets pooled): the difference "
        "in violation rate A - B with a paired bootstrap 95% interval, and McNemar's exact test "
        "on the triples where both models' antecedents hold, Holm-corrected over the table (* "
        f"marks Holm p < {alpha}). A row with fewer than {MIN_DISCORDANT} discordant triples "
        "is not informative. `comparison.json` holds every number.\n",
        markdown_table(comparison_table(comparison)) + "\n",
        *(f"On the confident triples: {line}.\n" for line in confident_holds(comparison)),
    ]


def _alarm_section(summary: dict[str, Any]) -> list[str]:
    """The no-knowledge alarm's verdict per dataset and kind of pair: the proven bound."""
    section = summary.get("alarms")
    if not section:
        return []
    rows, proven = [], []
    for e in section.get("results") or []:
        title = KIND_TITLES.get(e.get("pairs"), e.get("pairs"))
        if "skipped" in e:
            rows.append((e.get("dataset"), title, None, None, f"not computed: {e['skipped']}"))
            continue
        bound = (e.get("m2_pairs") or {}).get("theta_star", e.get("theta_star"))
        if bound is None or bound >= 1:
            verdict = "nothing proven: the counts fit perfect models"
        else:
            verdict = f"some model is at most {pct(bound)} accurate on some label"
            proven.append((bound, e.get("dataset"), title))
        rows.append((e.get("dataset"), title, e.get("items"), pct(bound), verdict))
    if proven:
        bound, dataset, title = min(proven)
        head = (
            "Proven from the label counts alone, without gold labels: at least one model is at "
            f"most {pct(bound)} accurate on at least one label of the {title} pairs of "
            f"{dataset}, whatever the true labels are; an alarm set at any accuracy above that "
            "fires."
        )
    else:
        head = "The label counts prove no model inaccurate: no alarm fires at any threshold."
    return [
        "## No-knowledge alarm\n",
        head + " theta* is the bound of report.md's alarm table (M = 2: the lower of the "
        "label counts' bound and the bound from each pair of models' joint counts).\n",
        _table(rows, ("dataset", "pairs", "items", "theta*", "verdict")) + "\n",
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
    comparison: dict[str, Any] | None = None,
    reviews: Sequence[ReviewedPrecision] = (),
) -> str:
    """The card's text: YAML front matter, then what was evaluated, on what, and the results.
    `comparison`: comparison.json's content (two or more models); `reviews`: the reviewed
    precision of the triples files, where known."""
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
        *_warnings_section(summary),
        *_models_section(summary),
        *_triples_section(summary, triples_repo_id),
        *_review_section(reviews),
        *_rules_section(summary),
        *_comparison_section(comparison),
        *_alarm_section(summary),
        *_mutual_section(summary),
        *_extras_section(summary),
        *_files_section(names),
        *_reproduce_section(summary, run_info),
        "## Citation\n",
        "```bibtex\n" + tool_bibtex({"transnli_version": version}) + "\n\n" + PAPER_BIBTEX,
        "```\n",
    ]
    return "\n".join(parts)
