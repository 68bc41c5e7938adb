"""`transnli augment`: training pairs whose label follows logically from a gold label, the
generated sentences (H', H¬) and, optionally, a model's labels; plus REPAIR rows (the fewest
changes that make a model's labels of a family consistent).

The rules (docs/families.md explains each). Read C(a,b) as "a implies not b" and H¬ = not H:

| rule           | from                                   | row            |
|----------------|----------------------------------------|----------------|
| gold           | gold ℓ(P,H)                            | ℓ(P,H)         |
| neg_e_c        | gold E(P,H), H¬                        | C(P,H¬)        |
| neg_c_e        | gold C(P,H), H¬                        | E(P,H¬)        |
| neg_n_n        | gold N(P,H), H¬                        | N(P,H¬)        |
| neg_mutual_c   | H¬                                     | C(H,H¬), C(H¬,H) |
| rule1          | gold E(P,H), mutual E(H,H') (model)    | E(P,H')        |
| rule2          | gold E(P,H), mutual C(H,H') (model)    | C(P,H')        |
| substitution   | gold C or N (P,H), mutual E(H,H')      | same label (P,H') |
| neg_equivalent | mutual E(H,H'), H¬                     | C(H',H¬), C(H¬,H') |
| neg_contrary   | mutual C(H,H'), H¬                     | E(H',H¬)       |
| repair         | a model's labels of the family         | the minimal consistent relabelling |

rule3 (N&E->¬C) and rule4 (N&C->¬E) only exclude a label, so they give no row of their own
(rule3's case is covered by substitution: mutual E makes H and H' equivalent).

Pure functions build the rows; `read_model_labels` and `write_rows` are the I/O edges.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from transnli.generator.jsonl import jsonl_objects

from .errors import EvaluatorError
from .families import H2_ROLE, NEG_ROLE, Family
from .labels import FLIP, C, E, N, parse_label
from .repair import MAX_REPAIR_MEMBERS, RepairLimitError, repair
from .rules import mutual

log = logging.getLogger("transnli")
COLUMNS = (
    "premise",
    "hypothesis",
    "label",
    "rule",
    "source_id",
    "source_pair",
    "dataset",
    "model_label",
)
AUG_RULES = (
    "gold",
    "neg_e_c",
    "neg_c_e",
    "neg_n_n",
    "neg_mutual_c",
    "rule1",
    "rule2",
    "substitution",
    "neg_equivalent",
    "neg_contrary",
    "repair",
)
# Which rows win when two give one pair different labels: gold, then what follows from gold and
# the sentences, then the repaired model labels.
_TIER = {rule: (0 if rule == "gold" else 2 if rule == "repair" else 1) for rule in AUG_RULES}
_NEG_FROM_GOLD = {E: "neg_e_c", C: "neg_c_e", N: "neg_n_n"}

Label = Mapping[tuple[str, str], str | None]


@dataclass(frozen=True)
class Row:
    premise: str
    hypothesis: str
    label: str
    rule: str
    source_id: str
    source_pair: tuple[str, str]
    dataset: str
    model_label: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in COLUMNS}
        d["source_pair"] = {"premise": self.source_pair[0], "hypothesis": self.source_pair[1]}
        return d


def logic_rows(fam: Family, model: Label | None = None, gold: bool = True) -> list[Row]:
    """The rows that follow from the family's gold label, its sentences and (for H') the model's
    labels of (H,H') and (H',H); `model` None gives only what needs no model."""
    P, H = fam.premise, fam.hypothesis
    out: list[Row] = []

    def row(a: str, b: str, label: str, rule: str) -> None:
        out.append(Row(a, b, label, rule, fam.source_id, (P, H), fam.dataset))

    g = fam.gold_label
    negs = [m.text for m in fam.members if m.role == NEG_ROLE]
    alts = [m.text for m in fam.members if m.role == H2_ROLE]
    if g is not None and gold:
        row(P, H, g, "gold")
    for neg in negs:
        if g is not None:
            row(P, neg, FLIP[g], _NEG_FROM_GOLD[g])
        row(H, neg, C, "neg_mutual_c")
        row(neg, H, C, "neg_mutual_c")
    if model is None:
        return out
    for alt in alts:
        hh2, h2h = model.get((H, alt)), model.get((alt, H))
        relation = mutual(hh2, h2h)
        if relation is None:
            continue
        if g == E:
            row(P, alt, relation, "rule1" if relation == E else "rule2")
        elif g is not None and relation == E:
            row(P, alt, g, "substitution")
        for neg in negs:
            if relation == E:  # H' equivalent to H, so it contradicts not-H both ways
                row(alt, neg, C, "neg_equivalent")
                row(neg, alt, C, "neg_equivalent")
            else:  # H' implies not-H = H¬
                row(alt, neg, E, "neg_contrary")
    return out


def repair_rows(
    fam: Family,
    graph: Sequence[Sequence[str | None]],
    pinned_rows: Iterable[Row] = (),
    max_members: int = MAX_REPAIR_MEMBERS,
) -> list[Row]:
    """The family's model-labelled pairs with their repaired labels (rule "repair"; model_label
    keeps the model's own). `pinned_rows` (the gold row and the rows that follow from it) stay
    fixed, so the repaired labels agree with them and the whole training file is consistent."""
    texts = fam.texts()
    at = {t: i for i, t in enumerate(texts)}
    pinned = {
        (at[r.premise], at[r.hypothesis]): r.label
        for r in pinned_rows
        if r.premise in at and r.hypothesis in at
    }
    fixed = repair(graph, negations=fam.index(NEG_ROLE), pinned=pinned, max_members=max_members)
    return [
        Row(
            texts[a],
            texts[b],
            fixed.graph[a][b],
            "repair",
            fam.source_id,
            (fam.premise, fam.hypothesis),
            fam.dataset,
            graph[a][b],
        )
        for a in range(len(texts))
        for b in range(len(texts))
        if a != b and graph[a][b] is not None
    ]


@dataclass
class AugmentStats:
    rows: int = 0
    by_rule: dict[str, int] | None = None
    duplicates: int = 0
    conflicts: int = 0  # pairs dropped because rules of one tier gave them different labels
    overridden: int = 0  # rows dropped because a higher tier gave the pair another label
    repaired_families: int = 0
    changed_labels: int = 0
    too_large: int = 0
    unrepairable: int = 0


def merge_rows(rows: Iterable[Row], stats: AugmentStats) -> list[Row]:
    """One row per (premise, hypothesis): the first of the highest tier; a pair whose tier gives
    two labels is dropped (a training file must not teach both)."""
    best: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        key = (r.premise, r.hypothesis)
        kept = best.get(key)
        if kept is None or _TIER[r.rule] < _TIER[kept[0].rule]:
            for k in kept or ():
                stats.overridden += k.label != r.label
                stats.duplicates += k.label == r.label
            best[key] = [r]
        elif _TIER[r.rule] == _TIER[kept[0].rule]:
            if all(k.label == r.label for k in kept):
                stats.duplicates += 1
            else:
                kept.append(r)
        else:
            # a lower tier: dropped; only a different label is worth reporting
            stats.overridden += any(k.label != r.label for k in kept)
            stats.duplicates += all(k.label == r.label for k in kept)
    out = []
    for rows_of in best.values():
        if len({r.label for r in rows_of}) > 1:
            stats.conflicts += 1
            continue
        out.append(rows_of[0])
    return out


def augment(
    families: Sequence[Family],
    model: Label | None,
    *,
    gold: bool = True,
    do_repair: bool = False,
    pin: bool = True,
    max_members: int = MAX_REPAIR_MEMBERS,
) -> tuple[list[Row], AugmentStats]:
    """All rows for the families, merged, in family order. With `do_repair`, each family's model
    labels are repaired too, keeping the gold and logic rows fixed when `pin`."""
    stats = AugmentStats()
    rows: list[Row] = []
    for fam in families:
        logic = logic_rows(fam, model, gold=True)
        rows += [r for r in logic if gold or r.rule != "gold"]
        if do_repair and model is not None:
            graph = fam.graph(lambda pair: model.get(pair))
            try:
                fixed = repair_rows(fam, graph, logic if pin else (), max_members=max_members)
            except RepairLimitError as e:
                stats.too_large += 1
                log.warning(
                    "family %s (%s): %s; not repaired", fam.id, fam.source_id or fam.premise, e
                )
                continue
            except ValueError as e:  # pinned rows that admit no consistent labelling
                stats.unrepairable += 1
                log.warning(
                    "family %s (%s): %s; not repaired", fam.id, fam.source_id or fam.premise, e
                )
                continue
            stats.repaired_families += 1
            stats.changed_labels += sum(r.label != r.model_label for r in fixed)
            rows += fixed
    merged = merge_rows(rows, stats)
    stats.rows = len(merged)
    counts = {rule: 0 for rule in AUG_RULES}
    for r in merged:
        counts[r.rule] += 1
    stats.by_rule = counts
    return merged, stats


# --------------------------------------------------------------------------- I/O edges
def read_model_labels(evaluation: Path, model: str | None, triples: Sequence) -> tuple[str, dict]:
    """A model's labels {(a, b): label} from an evaluation folder: families.jsonl (every pair of
    every family, from `evaluate --families`) or else predictions.jsonl (the triples' (H,H') and
    (H',H), joined to `triples` by id). Returns (model spec, labels)."""
    fam_file, pred_file = evaluation / "families.jsonl", evaluation / "predictions.jsonl"
    path = fam_file if fam_file.is_file() else pred_file
    if not path.is_file():
        raise EvaluatorError(
            f"{evaluation} holds neither families.jsonl nor predictions.jsonl "
            "(give the --out folder of `transnli evaluate`)"
        )
    rows = []
    for lineno, row in jsonl_objects(path, EvaluatorError):
        if not isinstance(row.get("model"), str):
            raise EvaluatorError(f"{path}:{lineno}: field 'model': missing")
        rows.append((lineno, row))
    specs = list(dict.fromkeys(r["model"] for _, r in rows))
    if model is None:
        if len(specs) != 1:
            raise EvaluatorError(
                f"{path} holds {len(specs)} models ({', '.join(specs) or 'none'}); "
                "choose one with --model"
            )
        model = specs[0]
    elif model not in specs:
        raise EvaluatorError(f"{path} has no model {model!r} (it has {', '.join(specs) or 'none'})")
    labels: dict[tuple[str, str], str | None] = {}

    def put(a: str, b: str, value: Any, where: str) -> None:
        label = None if value is None else parse_label(value, where=where)
        labels.setdefault((a, b), label)

    by_id = {t.id: t for t in triples}
    for lineno, row in rows:
        if row["model"] != model:
            continue
        where = f"{path}:{lineno}"
        try:
            if path == fam_file:
                texts = [m["text"] for m in row["members"]]
                matrix = row["labels"]
                for i, a in enumerate(texts):
                    for j, b in enumerate(texts):
                        if i != j:
                            put(a, b, matrix[i][j], f"{where}: field 'labels'")
            else:
                t = by_id.get(row.get("id"))
                if t is None:
                    continue  # a triple of another file: not ours to augment
                put(t.hypothesis, t.modified, row["labels"]["h_h2"], f"{where}: field 'labels'")
                put(t.modified, t.hypothesis, row["labels"]["h2_h"], f"{where}: field 'labels'")
        except (KeyError, IndexError, TypeError) as e:
            raise EvaluatorError(f"{where}: malformed row ({e.__class__.__name__}: {e})") from e
    return model, labels


def _arrow_table(dicts: list[dict[str, Any]]):
    import pyarrow as pa

    fields = [pa.field(c, pa.string()) for c in COLUMNS]
    fields[COLUMNS.index("source_pair")] = pa.field(
        "source_pair", pa.struct([("premise", pa.string()), ("hypothesis", pa.string())])
    )
    schema = pa.schema(fields)
    return pa.Table.from_pylist(dicts, schema=schema)


def write_rows(
    rows: Sequence[Row], out: Path, parquet: bool = False, hf: bool = False
) -> list[Path]:
    """JSONL at `out`; with `parquet` the same rows as OUT.parquet, with `hf` as a Hugging Face
    `datasets` folder OUT_hf (split "train"), the generator's export forms. The JSONL and Parquet
    files are byte-identical for the same rows."""
    out.parent.mkdir(parents=True, exist_ok=True)
    dicts = [r.to_dict() for r in rows]
    with open(out, "w", encoding="utf-8", newline="\n") as fh:
        for d in dicts:
            fh.write(json.dumps(d, ensure_ascii=False) + "\n")
    written = [out]
    if parquet or hf:
        table = _arrow_table(dicts)
    if parquet:
        import pyarrow.parquet as pq

        target = out.with_suffix(".parquet")
        pq.write_table(table, target)
        written.append(target)
    if hf:
        import datasets

        target = out.with_name(out.stem + "_hf")
        datasets.DatasetDict({"train": datasets.Dataset(table)}).save_to_disk(str(target))
        written.append(target)
    return written
