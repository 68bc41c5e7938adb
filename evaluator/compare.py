"""Paired comparison of models on the same triples (`transnli compare EVAL`, and report.md's
"Paired comparison of models" section when an evaluation has two or more models).

Every model judges the same triples, so per rule and pair of models (A, B) the comparison is
paired, triple by triple:

- the difference in violation rate, rate(A) - rate(B), each rate over that model's own cases
  (the triples where its antecedent holds: the rates of Table 4, all datasets pooled);
- a paired bootstrap interval for that difference: the triples are resampled with replacement
  (the same triples for both models), `resamples` times from a fixed seed, percentile interval;
- McNemar's exact test on the per-triple violation flags over the triples where BOTH models'
  antecedents hold (the only triples where both flags exist; each model's antecedent depends on
  its own labels, so the two sets of cases differ): the discordant pairs (A violated and B held,
  or the reverse) against a fair coin;
- Holm's correction over every rule x pair that has a McNemar test;
- a row with fewer than MIN_DISCORDANT discordant triples (or none) is flagged not informative: its
  test cannot tell the models apart, whatever its interval says; and per pair of models one line
  of conclusion (`conclusions`).

The statistics are pure functions of per-triple outcome codes (NOT_APPLICABLE, HELD, VIOLATED);
the reading of samples.jsonl and the writing of comparison.json and tables/comparison.csv sit at
the edges (`read_flags`, `write_comparison`).
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np
from transnli.generator.jsonl import jsonl_objects

from .errors import EvaluatorError
from .formatting import DASH, json_text, markdown_table, pct
from .metrics import CONFIDENT_LEVEL, EXTRA_NAMES
from .outdir import unfinished_move
from .plots import short_names
from .rules import EXTRA_KEYS, RULES, RULES_BY_KEY
from .samples import SAMPLES_NAME

COMPARISON_NAME = "comparison.json"
TABLE_NAME = "comparison.csv"  # under tables/
NOT_APPLICABLE, HELD, VIOLATED = -1, 0, 1
MIN_DISCORDANT = 10  # fewer discordant triples: the row is flagged not informative
RULE_KEYS = tuple(r.key for r in RULES)
CHECK_KEYS = (*RULE_KEYS, *EXTRA_KEYS)  # what is compared, in this order
CHECK_NAMES = {**{key: rule.name for key, rule in RULES_BY_KEY.items()}, **EXTRA_NAMES}
DENOMINATOR_NOTE = (
    "McNemar's exact test counts only the triples where both models' antecedents hold (each "
    "model's antecedent depends on its own labels; elsewhere one of the two flags does not "
    "exist); both_cases (report.md: `both`) says how many. The rates and their difference are "
    "each over the model's own cases, as in Table 4, and the bootstrap resamples all triples."
)


class CompareError(EvaluatorError):
    """A folder that cannot be compared; one line, no traceback."""


@dataclass(frozen=True)
class CompareSettings:
    """How the comparison is computed; the defaults are what `transnli evaluate` uses."""

    resamples: int = 10_000  # bootstrap resamples
    seed: int = 0  # the bootstrap's seed: the same seed gives the same interval
    confidence: float = 0.95
    alpha: float = 0.05  # family-wise error rate for Holm's "significant"
    # p_good at or above which a triple counts as one the judge is confident in (the
    # conclusions are checked on those triples too); the evaluation's own level by default
    confident_level: float = CONFIDENT_LEVEL

    def validate(self) -> None:
        if self.resamples < 100:
            raise CompareError(f"resamples must be at least 100, got {self.resamples}")
        if not 0 < self.confidence < 1:
            raise CompareError(f"confidence must be between 0 and 1, got {self.confidence}")
        if not 0 < self.alpha < 1:
            raise CompareError(f"alpha must be between 0 and 1, got {self.alpha}")
        if not 0 < self.confident_level <= 1:
            raise CompareError(
                f"confident level must be above 0 and at most 1, got {self.confident_level}"
            )

    def describe(self) -> dict[str, Any]:
        return {
            "difference": "rate(model_a) - rate(model_b), each over its own cases",
            "interval": f"paired bootstrap over triples, percentile, {self.resamples} resamples, "
            f"seed {self.seed}",
            "confidence": self.confidence,
            "test": "McNemar exact (binomial on the discordant pairs), two-sided",
            "denominator": DENOMINATOR_NOTE,
            "correction": "Holm over every rule x pair with a test",
            "alpha": self.alpha,
            "informative": f"only_a_violated + only_b_violated >= {MIN_DISCORDANT} (the "
            "discordant triples McNemar's test reads); fewer, or none: not informative",
            "confident": f"the same over the triples with p_good >= {self.confident_level:g} "
            "(where the triples carry the judge's p_good), Holm over those rows alone",
        }


# --------------------------------------------------------------------------- statistics
def paired_counts(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3x3 counts of (A's outcome, B's outcome) over the triples; index 0 not applicable, 1 held,
    2 violated (code + 1)."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    if a.shape != b.shape:
        raise ValueError(f"the two models' flags differ in length ({a.size} and {b.size})")
    return np.bincount((a + 1) * 3 + (b + 1), minlength=9).reshape(3, 3)


def _rates(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(cases A, violations A, cases B, violations B) of counts shaped (..., 3, 3)."""
    cases_a = counts[..., 1:, :].sum(axis=(-2, -1))
    viol_a = counts[..., 2, :].sum(axis=-1)
    cases_b = counts[..., :, 1:].sum(axis=(-2, -1))
    viol_b = counts[..., :, 2].sum(axis=-1)
    return cases_a, viol_a, cases_b, viol_b


def rate_difference(counts: np.ndarray) -> tuple[float | None, float | None, float | None]:
    """(rate A, rate B, rate A - rate B); None where a model has no case."""
    cases_a, viol_a, cases_b, viol_b = (int(x) for x in _rates(counts))
    rate_a = viol_a / cases_a if cases_a else None
    rate_b = viol_b / cases_b if cases_b else None
    diff = rate_a - rate_b if rate_a is not None and rate_b is not None else None
    return rate_a, rate_b, diff


def bootstrap_interval(
    counts: np.ndarray, resamples: int, seed: int, confidence: float = 0.95
) -> list[float] | None:
    """Paired bootstrap percentile interval for rate A - rate B; None where a model has no case.

    Resampling the N triples with replacement and counting each (A outcome, B outcome) category
    draws the nine category counts from Multinomial(N, observed shares), and the statistic
    depends on those counts only; so the counts are drawn directly (the same distribution as
    resampling triple indices, in time independent of N; tests/test_compare.py checks it against
    scipy.stats.bootstrap(paired=True)). Resamples where a model has no case have no difference
    and are left out."""
    if rate_difference(counts)[2] is None:
        return None
    n = int(counts.sum())
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(n, counts.ravel() / n, size=resamples).reshape(resamples, 3, 3)
    cases_a, viol_a, cases_b, viol_b = _rates(draws)
    valid = (cases_a > 0) & (cases_b > 0)
    diffs = viol_a[valid] / cases_a[valid] - viol_b[valid] / cases_b[valid]
    if not diffs.size:
        return None
    tail = (1 - confidence) / 2
    lo, hi = np.quantile(diffs, [tail, 1 - tail])
    return [float(lo), float(hi)]


def mcnemar_exact(counts: np.ndarray) -> float | None:
    """McNemar's exact two-sided p-value over the triples where both models' antecedents hold;
    None when there is no such triple."""
    both = counts[1:, 1:]  # rows: A held, violated; columns: B held, violated
    if not both.sum():
        return None
    from statsmodels.stats.contingency_tables import mcnemar  # only with two or more models

    # statsmodels reads the discordant cells at [0, 1] and [1, 0]
    return float(mcnemar(both, exact=True).pvalue)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-adjusted p-values over the ones that exist (None stays None)."""
    present = [p for p in pvalues if p is not None]
    if not present:
        return [None] * len(pvalues)
    from statsmodels.stats.multitest import multipletests

    adjusted = iter(multipletests(present, method="holm")[1])
    return [None if p is None else float(next(adjusted)) for p in pvalues]


def compare_pair(
    check: str, model_a: str, model_b: str, counts: np.ndarray, settings: CompareSettings
) -> dict[str, Any]:
    """One row of the comparison (without the Holm columns)."""
    cases_a, viol_a, cases_b, viol_b = (int(x) for x in _rates(counts))
    rate_a, rate_b, diff = rate_difference(counts)
    return {
        "rule": check,
        "name": CHECK_NAMES[check],
        "model_a": model_a,
        "model_b": model_b,
        "cases_a": cases_a,
        "violations_a": viol_a,
        "rate_a": rate_a,
        "cases_b": cases_b,
        "violations_b": viol_b,
        "rate_b": rate_b,
        "difference": diff,
        "ci95": bootstrap_interval(counts, settings.resamples, settings.seed, settings.confidence),
        "both_cases": int(counts[1:, 1:].sum()),
        "both_violated": int(counts[2, 2]),
        "only_a_violated": int(counts[2, 1]),
        "only_b_violated": int(counts[1, 2]),
        "p_mcnemar": mcnemar_exact(counts),
    }


def compare_models(
    flags: Mapping[str, Mapping[str, np.ndarray]], settings: CompareSettings | None = None
) -> list[dict[str, Any]]:
    """Every check x pair of models (in check, then model order), with Holm's correction over all
    of them. `flags`: per model (in order), per check, the outcome codes of the same triples."""
    settings = settings or CompareSettings()
    settings.validate()
    rows = [
        compare_pair(check, a, b, paired_counts(flags[a][check], flags[b][check]), settings)
        for check in CHECK_KEYS
        for a, b in combinations(flags, 2)
    ]
    for row, adjusted in zip(rows, holm([r["p_mcnemar"] for r in rows]), strict=True):
        row["p_holm"] = adjusted
        row["significant"] = None if adjusted is None else adjusted < settings.alpha
        row["informative"] = discordant(row) >= MIN_DISCORDANT
    return rows


def discordant(row: Mapping[str, Any]) -> int:
    """The triples where one model violated and the other held: all McNemar's test reads."""
    return row["only_a_violated"] + row["only_b_violated"]


def pair_conclusion(
    rows: Sequence[Mapping[str, Any]], name_a: str, name_b: str, alpha: float
) -> str:
    """One line for one pair of models over its rows (one per check): on how many checks each
    violates significantly less than the other after Holm (the direction of the discordant
    triples, which is what the test compares), and how many rows are not informative. Every count
    is out of the same number, all the pair's checks (a check with no triple under both models'
    antecedents has no test: it counts as not significant, and not informative)."""
    tested = [r for r in rows if r["p_holm"] is not None]
    if not tested:
        return (
            f"{name_a} and {name_b}: no check has a triple where both models' antecedents hold; "
            "nothing can be concluded"
        )
    wins = {
        name_a: sum(bool(r["significant"]) and r["only_a_violated"] < r["only_b_violated"]
                    for r in tested),
        name_b: sum(bool(r["significant"]) and r["only_b_violated"] < r["only_a_violated"]
                    for r in tested),
    }  # fmt: skip
    first, second = (name_a, name_b) if wins[name_a] >= wins[name_b] else (name_b, name_a)
    n = len(rows)
    if wins[first]:
        line = (
            f"{first} violates less than {second} on {wins[first]} of {n} checks "
            f"after Holm at {alpha:g}"
        )
    else:
        line = (
            f"{name_a} and {name_b} differ significantly on none of {n} checks after "
            f"Holm at {alpha:g}"
        )
    if wins[second]:
        line += f", {second} less than {first} on {wins[second]}"
    weak = sum(not r["informative"] for r in rows)
    if weak:
        line += (
            f"; {weak} of the {n} not informative (fewer than {MIN_DISCORDANT} discordant triples)"
        )
    return line


def conclusions(
    rows: Sequence[Mapping[str, Any]], names: Mapping[str, str], alpha: float
) -> list[str]:
    """One conclusion per pair of models, in the rows' pair order; `names`: how to call each
    model (its short name)."""
    pairs = list(dict.fromkeys((r["model_a"], r["model_b"]) for r in rows))
    return [
        pair_conclusion(
            [r for r in rows if (r["model_a"], r["model_b"]) == (a, b)], names[a], names[b], alpha
        )
        for a, b in pairs
    ]


# --------------------------------------------------------------------------- reading
class FlagTable:
    """Per model, per check, the outcome code of every triple, from samples.jsonl's rows (model
    by model, each in input order), kept as one byte per triple and check; checks that every model
    judged the same triples in the same order: the same (dataset, id) and the same P, H and H'.
    Fed by `read_flags` from the file, or by the evaluation's RowsWriter as it writes the rows
    (then the file is not read again)."""

    def __init__(self) -> None:
        # a hash of (dataset, id) and one of (P, H, H') per triple of the first model: the others
        # must match them (tuples of strings per triple would cost far more memory on a large run)
        self._keys = array("q")
        self._sentences = array("q")
        self._p_good = array("d")  # per triple (first model's rows), NaN where none
        self._codes: dict[str, list[array]] = {}  # per model, one array per check
        self._model: str | None = None
        self._current: list[array] = []

    def _switch(self, model: str) -> None:
        codes = self._codes.get(model)
        if codes is None:
            codes = self._codes[model] = [array("b") for _ in CHECK_KEYS]
        self._model, self._current = model, codes

    def add(self, row: Mapping[str, Any], where: str = "") -> None:
        """One samples row; `where` ("FILE:LINE") names it in an error."""
        if row["model"] != self._model:
            self._switch(row["model"])
        codes, keys = self._current, self._keys
        position = len(codes[0])
        key = hash((row["dataset"], row["id"]))
        sentences = hash((row["premise"], row["hypothesis"], row["modified_hypothesis"]))
        if len(self._codes) == 1:
            keys.append(key)
            self._sentences.append(sentences)
            p_good = row.get("p_good")
            self._p_good.append(math.nan if p_good is None else float(p_good))
        elif position >= len(keys) or keys[position] != key:
            first = next(iter(self._codes))
            raise CompareError(
                f"{where + ': ' if where else ''}model {self._model}'s triple {position + 1} is "
                f"{row['dataset']}/{row['id']}, not the same as {first}'s; the models were not "
                "evaluated on the same triples"
            )
        elif self._sentences[position] != sentences:
            first = next(iter(self._codes))
            raise CompareError(
                f"{where + ': ' if where else ''}model {self._model}'s triple {position + 1} "
                f"({row['dataset']}/{row['id']}) has another P, H or H' than {first}'s triple "
                "of that id; the models did not judge the same sentences (samples merged from "
                "different evaluations?)"
            )
        # samples.violates, unrolled (this runs once per row of a large run)
        rule, violated = row["rule"], row["violated"]
        code = NOT_APPLICABLE if rule is None or violated is None else int(bool(violated))
        for i, check in enumerate(RULE_KEYS):
            codes[i].append(code if rule == check else NOT_APPLICABLE)
        extras = row.get("extras") or {}
        for i, check in enumerate(EXTRA_KEYS, start=len(RULE_KEYS)):
            value = extras.get(check)
            codes[i].append(NOT_APPLICABLE if value is None else int(bool(value)))

    @property
    def n_triples(self) -> int:
        return len(self._keys)

    @property
    def n_models(self) -> int:
        return len(self._codes)

    def p_good(self) -> np.ndarray:
        """The judge's p_good of each triple (NaN where its row carries none)."""
        return np.frombuffer(self._p_good, dtype=np.float64)

    def arrays(self) -> dict[str, dict[str, np.ndarray]]:
        """Per model, per check, the codes as int8 arrays."""
        for model, codes in self._codes.items():
            if len(codes[0]) != len(self._keys):
                raise CompareError(
                    f"model {model} has {len(codes[0])} triples, the first model "
                    f"{len(self._keys)}; the models were not evaluated on the same triples"
                )
        return {
            model: dict(
                zip(CHECK_KEYS, (np.frombuffer(v, dtype=np.int8) for v in codes), strict=True)
            )
            for model, codes in self._codes.items()
        }


SAMPLE_KEYS = ("id", "dataset", "model", "premise", "hypothesis", "modified_hypothesis", "rule",
               "violated")  # fmt: skip


def _sample_problem(row: Mapping[str, Any]) -> str | None:
    """What makes `row` unreadable as a samples row, or None."""
    missing = [k for k in SAMPLE_KEYS if k not in row]
    if missing:
        return f"not a samples row (no {', '.join(missing)})"
    for key in ("id", "dataset", "model", "premise", "hypothesis", "modified_hypothesis"):
        if not isinstance(row[key], str):
            return f"field {key!r} must be a string, got {row[key]!r}"
    if row["rule"] is not None and row["rule"] not in RULES_BY_KEY:
        return f"field 'rule' must be one of {', '.join(RULE_KEYS)} or null, got {row['rule']!r}"
    extras = row.get("extras")
    flags = [("violated", row["violated"])]
    if isinstance(extras, dict):
        flags += [(f"extras.{k}", extras.get(k)) for k in EXTRA_KEYS]
    elif extras is not None:
        return f"field 'extras' must be an object, got {extras!r}"
    for name, value in flags:
        if value is not None and not isinstance(value, bool):
            return f"field {name!r} must be true, false or null, got {value!r}"
    p_good = row.get("p_good")
    if p_good is not None and (
        isinstance(p_good, bool) or not isinstance(p_good, int | float) or not 0 <= p_good <= 1
    ):
        return f"field 'p_good' must be a probability (0 to 1) or absent, got {p_good!r}"
    return None


def read_flags(eval_dir: Path) -> FlagTable:
    """Every model's outcome codes from EVAL/samples.jsonl (streamed)."""
    path = eval_dir / SAMPLES_NAME
    moving = unfinished_move(eval_dir)
    if moving:
        raise CompareError(
            f"{eval_dir} holds the outputs of an evaluation stopped while it moved them into place "
            f"({moving}): its {SAMPLES_NAME} may be the one that evaluation replaces; run the "
            "same `transnli evaluate` command again to finish it, then compare"
        )
    if not path.is_file():
        raise CompareError(
            f"{eval_dir} holds no {SAMPLES_NAME}: is it the --out folder of `transnli evaluate`?"
        )
    table = FlagTable()
    try:
        for line, row in jsonl_objects(path, CompareError):
            problem = _sample_problem(row)
            if problem:
                raise CompareError(f"{path}:{line}: {problem}")
            table.add(row, f"{path}:{line}")
    except (OSError, UnicodeDecodeError) as e:
        raise CompareError(f"{path}: cannot be read ({e})") from e
    return table


# --------------------------------------------------------------------------- outputs
def comparison_result(table: FlagTable, settings: CompareSettings) -> dict[str, Any]:
    """comparison.json's content."""
    flags = table.arrays()
    rows = compare_models(flags, settings)
    names = dict(zip(flags, short_names(list(flags)), strict=True))
    result = {
        "models": list(flags),
        "n_triples": table.n_triples,
        "pooled": "all datasets",
        "method": settings.describe(),
        "comparisons": rows,
        "conclusions": conclusions(rows, names, settings.alpha),
    }
    p_good = table.p_good()
    if not np.isnan(p_good).all():
        result["confident"] = confident_comparison(flags, p_good, rows, names, settings)
    return result


def confident_comparison(
    flags: Mapping[str, Mapping[str, np.ndarray]],
    p_good: np.ndarray,
    rows: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
    settings: CompareSettings,
) -> dict[str, Any]:
    """The comparison again over the triples the judge is confident in (p_good >= the level;
    Holm's correction over these rows alone), and per pair of models whether each significant
    difference of `rows` (all triples) holds there."""
    level = settings.confident_level
    keep = ~np.isnan(p_good) & (p_good >= level)
    subset = {m: {c: codes[keep] for c, codes in checks.items()} for m, checks in flags.items()}
    confident_rows = compare_models(subset, settings)
    pairs = list(dict.fromkeys((r["model_a"], r["model_b"]) for r in rows))
    return {
        "level": level,
        "n_triples": int(keep.sum()),
        "comparisons": confident_rows,
        "conclusions": conclusions(confident_rows, names, settings.alpha),
        "holds": [
            holds_line(
                [r for r in rows if (r["model_a"], r["model_b"]) == pair],
                [r for r in confident_rows if (r["model_a"], r["model_b"]) == pair],
                names,
                level,
                int(keep.sum()),
            )
            for pair in pairs
        ],
    }


def direction(row: Mapping[str, Any]) -> int:
    """+1 when the row says A violates significantly less than B, -1 the reverse, 0 neither."""
    if not row["significant"] or row["only_a_violated"] == row["only_b_violated"]:
        return 0
    return 1 if row["only_a_violated"] < row["only_b_violated"] else -1


def holds_line(
    everywhere: Sequence[Mapping[str, Any]],
    confident: Sequence[Mapping[str, Any]],
    names: Mapping[str, str],
    level: float,
    n: int,
) -> str:
    """Whether one pair's significant differences (rows over all triples) hold on the confident
    triples (the same checks' rows there): significant in the same direction. The rows of both
    lists are in the same check order."""
    a, b = names[everywhere[0]["model_a"]], names[everywhere[0]["model_b"]]
    found = [
        (r["rule"], direction(r), direction(c)) for r, c in zip(everywhere, confident, strict=True)
    ]
    significant = [(rule, d, dc) for rule, d, dc in found if d]
    held = [rule for rule, d, dc in significant if dc == d]
    reversed_ = [rule for rule, d, dc in significant if dc == -d]
    lost = [rule for rule, d, dc in significant if dc == 0]
    new = [rule for rule, d, dc in found if not d and dc]
    where = f"on the {n} triples the judge is confident in (p_good >= {level:g})"
    if not significant:
        line = f"{a} vs {b}: no significant difference on all triples"
    else:
        line = f"{a} vs {b}: {len(held)} of {len(significant)} significant differences hold {where}"
        where = "there"
    if lost:
        line += f"; not significant {where}: {', '.join(lost)}"
    if reversed_:
        line += f"; reversed {where}: {', '.join(reversed_)}"
    if new:
        line += f"; significant only {where}: {', '.join(new)}"
    elif not significant:
        line += f", nor {where}"
    return line


CSV_COLUMNS = (
    "rule",
    "name",
    "model_a",
    "model_b",
    "cases_a",
    "violations_a",
    "rate_a",
    "cases_b",
    "violations_b",
    "rate_b",
    "difference",
    "ci95_low",
    "ci95_high",
    "both_cases",
    "both_violated",
    "only_a_violated",
    "only_b_violated",
    "p_mcnemar",
    "p_holm",
    "significant",
    "informative",
)


def comparison_csv(result: Mapping[str, Any]) -> str:
    """tables/comparison.csv: one row per rule x pair; rates with 6 decimals, p-values with 6
    significant digits (a small p-value must not print as 0); empty cells where there is none."""

    def cell(value: Any) -> str:
        if value is None:
            return ""
        if isinstance(value, bool):
            return str(value).lower()
        return f"{value:.6g}" if isinstance(value, float) else str(value)

    lines = [",".join(CSV_COLUMNS)]
    for r in result["comparisons"]:
        lo, hi = r["ci95"] or (None, None)
        values = {**r, "ci95_low": lo, "ci95_high": hi}
        for k in ("rate_a", "rate_b", "difference", "ci95_low", "ci95_high"):
            values[k] = None if values[k] is None else f"{values[k]:.6f}"
        lines.append(",".join(_csv_field(cell(values[k])) for k in CSV_COLUMNS))
    return "\n".join(lines) + "\n"


def _csv_field(text: str) -> str:
    return f'"{text.replace(chr(34), chr(34) * 2)}"' if any(c in text for c in ',"\n') else text


def write_comparison(eval_dir: Path, result: Mapping[str, Any]) -> list[Path]:
    """comparison.json and tables/comparison.csv in EVAL; returns their paths. A failed write is
    the OSError (an evaluation reports it by the output's final name, `compare_folder` as a
    CompareError)."""
    json_path = eval_dir / COMPARISON_NAME
    csv_path = eval_dir / "tables" / TABLE_NAME
    json_path.write_text(json_text(json_path, result, indent=2) + "\n", encoding="utf-8")
    csv_path.parent.mkdir(exist_ok=True)
    csv_path.write_text(comparison_csv(result), encoding="utf-8", newline="\n")
    return [json_path, csv_path]


def _p(value: float | None) -> str:
    if value is None:
        return DASH
    return "<0.0001" if value < 1e-4 else f"{value:.4f}"


def _difference(r: Mapping[str, Any]) -> str:
    if r["difference"] is None:
        return DASH
    lo, hi = r["ci95"]
    return f"{100 * r['difference']:+.1f} pp [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def comparison_table(result: Mapping[str, Any]):
    """The comparison as a DataFrame of text cells (report.md and `transnli compare`); models by
    their short names, as the figures name them."""
    import pandas as pd

    short = dict(zip(result["models"], short_names(result["models"]), strict=True))
    rows = []
    for r in result["comparisons"]:
        rows.append(
            {
                "rule": f"{r['rule']} {r['name']}" if r["rule"] in RULES_BY_KEY else r["rule"],
                "A": short[r["model_a"]],
                "B": short[r["model_b"]],
                "rate A": f"{pct(r['rate_a'])} ({r['violations_a']}/{r['cases_a']})",
                "rate B": f"{pct(r['rate_b'])} ({r['violations_b']}/{r['cases_b']})",
                "A - B [95% CI]": _difference(r),
                "both": str(r["both_cases"]),
                "A only / B only": f"{r['only_a_violated']} / {r['only_b_violated']}",
                "McNemar p": _p(r["p_mcnemar"]),
                "Holm p": _p(r["p_holm"]) + (" *" if r["significant"] else ""),
                "informative": "yes" if r["informative"] else f"no ({discordant(r)} discordant)",
            }
        )
    return pd.DataFrame(rows)


def report_lines(result: Mapping[str, Any] | None) -> list[str]:
    """report.md's "Paired comparison of models" section (nothing with fewer than two models)."""
    if not result:
        return []
    method = result["method"]
    return [
        "## Paired comparison of models",
        "",
        "Per rule and pair of models, on the same triples (all datasets pooled): each model's "
        "violation rate over its own cases, the difference A - B in percentage points with a "
        f"{100 * method['confidence']:.0f}% interval ({method['interval']}), and McNemar's "
        "exact test on the per-triple violation flags. " + DENOMINATOR_NOTE + " 'A only / B "
        "only': the triples of `both` that only A (only B) violated. Holm's correction "
        f"runs over every rule x pair with a test; * marks Holm p < {method['alpha']}. A row "
        f"with fewer than {MIN_DISCORDANT} discordant triples (A only + B only), or none, is "
        "not informative: its test cannot tell the models apart, whatever the interval says. "
        f"The same numbers: `{COMPARISON_NAME}`, `tables/{TABLE_NAME}`; `transnli compare "
        "EVAL_DIR`.",
        "",
        markdown_table(comparison_table(result)),
        "",
        *(
            part
            for line in result.get("conclusions", [])
            for part in (f"**Conclusion:** {line}.", "")
        ),
        *confident_lines(result),
    ]


def confident_holds(result: Mapping[str, Any]) -> list[str]:
    """Per pair of models, whether its conclusion holds on the confident triples (none where the
    triples carry no p_good)."""
    return list((result.get("confident") or {}).get("holds") or [])


def confident_lines(result: Mapping[str, Any]) -> list[str]:
    """Whether each pair's conclusion holds on the triples the judge is confident in (nothing
    where the triples carry no p_good: report.md's Table 4b says so once)."""
    confident = result.get("confident")
    if not confident:
        return []
    return [
        f"The same comparison over the {confident['n_triples']} triples whose p_good is at least "
        f"{confident['level']:g} (Holm over those rows alone; `{COMPARISON_NAME}`: "
        "`confident`): a difference that holds there is not made by triples the judge doubts.",
        "",
        *(
            part
            for line in confident["holds"]
            for part in (f"**On confident triples:** {line}.", "")
        ),
    ]


def evaluation_level(eval_dir: Path) -> float:
    """The confident level the evaluation in EVAL used (summary.json's triple_quality), so that
    `transnli compare` checks the conclusions on the same triples as report.md; the default where
    the summary says none."""
    try:
        summary = json.loads((eval_dir / "summary.json").read_text(encoding="utf-8"))
        level = summary["triple_quality"]["level"]
    except (OSError, ValueError, KeyError, TypeError):
        return CONFIDENT_LEVEL
    valid = isinstance(level, int | float) and not isinstance(level, bool) and 0 < level <= 1
    return float(level) if valid else CONFIDENT_LEVEL


def compare_folder(
    eval_dir: Path, settings: CompareSettings | None = None, write: bool = True
) -> dict[str, Any]:
    """Read EVAL's samples.jsonl, compare its models and (with `write`) write comparison.json and
    tables/comparison.csv; returns the comparison."""
    settings = settings or CompareSettings()
    settings.validate()
    table = read_flags(eval_dir)
    if table.n_models < 2:
        raise CompareError(
            f"{eval_dir} holds {table.n_models} model; a comparison needs two or more models "
            "evaluated on the same triples (`transnli evaluate ... --model A --model B`)"
        )
    result = comparison_result(table, settings)
    if write:
        try:
            write_comparison(eval_dir, result)
        except OSError as e:
            raise CompareError(f"cannot write the comparison into {eval_dir} ({e})") from e
    return result
