"""tables/per_model.csv and tables/per_dataset.csv: every number of summary.json in one row per
model (all datasets pooled) or per model x dataset, for pandas or a spreadsheet.

The paper's tables (table1..4, extras) split the metrics over files with models as columns; these
two put one model (or model x dataset) per row with every metric as a column, including the
pooled numbers that otherwise only summary.json holds.
"""

from __future__ import annotations

from typing import Any

from .metrics import wilson_interval
from .rules import EXTRA_KEYS, RULES


def _interval(k: int, n: int) -> tuple[float | None, float | None]:
    ci = wilson_interval(k, n)
    return (ci[0], ci[1]) if ci else (None, None)


# The confident-triple and p_good-weighted rate beside each rule's (empty where the triples
# carry no p_good), in this order.
NOISE_COLUMNS = (
    "confident_cases",
    "confident_violations",
    "confident_rate",
    "confident_ci95_low",
    "confident_ci95_high",
    "weighted_effective_cases",
    "weighted_rate",
    "weighted_ci95_low",
    "weighted_ci95_high",
)


def noise_columns(cell: dict[str, Any]) -> dict[str, Any]:
    """A rule cell's NOISE_COLUMNS (None where it has no confident or weighted rate)."""
    confident, weighted = cell.get("confident") or {}, cell.get("weighted") or {}
    c_lo, c_hi = confident.get("ci95") or (None, None)
    w_lo, w_hi = weighted.get("ci95") or (None, None)
    values = (
        confident.get("cases"),
        confident.get("violations"),
        confident.get("rate"),
        c_lo,
        c_hi,
        weighted.get("effective_cases"),
        weighted.get("rate"),
        w_lo,
        w_hi,
    )
    return dict(zip(NOISE_COLUMNS, values, strict=True))


def metrics_columns(entry: dict[str, Any]) -> dict[str, Any]:
    """One flat row of columns from a metrics entry (a dataset entry or a model's "overall")."""
    n = entry["n_triples"]
    row: dict[str, Any] = {
        "n_triples": n,
        "accuracy": entry["accuracy"],
        "accuracy_pairs": entry["accuracy_pairs"],
        # the judge's p_good: how many triples carry it, how many reach the confident level
        "p_good_triples": (entry.get("p_good") or {}).get("triples", 0),
        "confident_triples": (entry.get("p_good") or {}).get("confident", 0),
        "mean_p_good": (entry.get("p_good") or {}).get("mean_p_good"),
    }
    for which in ("entailment", "contradiction"):
        k = entry[f"mutual_{which}"]
        lo, hi = _interval(k, n)
        row.update(
            {
                f"mutual_{which}": k,
                f"mutual_{which}_rate": entry[f"mutual_{which}_rate"],
                f"mutual_{which}_ci95_low": lo,
                f"mutual_{which}_ci95_high": hi,
            }
        )
    cells = [(r.key, entry["rules"][r.key]) for r in RULES]
    cells += [(key, entry["extras"][key]) for key in EXTRA_KEYS]
    for key, cell in cells:
        lo, hi = cell["ci95"] if cell["ci95"] else (None, None)
        row.update(
            {
                f"{key}_cases": cell["cases"],
                f"{key}_violations": cell["violations"],
                f"{key}_rate": cell["rate"],
                f"{key}_ci95_low": lo,
                f"{key}_ci95_high": hi,
                **{f"{key}_{k}": v for k, v in noise_columns(cell).items()},
            }
        )
    return row


def per_model_table(summary: dict[str, Any]):
    """One row per model over all its datasets (summary.json's "overall")."""
    import pandas as pd

    rows = [{"model": m["model"], **metrics_columns(m["overall"])} for m in summary["models"]]
    return pd.DataFrame(rows)


def per_dataset_table(summary: dict[str, Any]):
    """One row per model x dataset, models in their order, datasets in the summary's order."""
    import pandas as pd

    rows = []
    for m in summary["models"]:
        by_ds = {e["dataset"]: e for e in m["datasets"]}
        for d in summary["datasets"]:
            if d in by_ds:
                rows.append({"model": m["model"], "dataset": d, **metrics_columns(by_ds[d])})
    return pd.DataFrame(rows)
