"""`--window` cannot change an evaluation: labels, probabilities and every count are the same for
any window, 0 (the run held whole) included. A triple's record shows its own pairs only (its
(P,H') where the rules need it, however often another triple had that pair labelled), and the
pairs labelled together (hence batches and probabilities) are those of fixed labelling blocks,
whatever the window (docs/outputs.md, "Which pairs get a label")."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_evaluate_cli import write_jsonl
from transnli.evaluator import schedule

from transnli.cli.evaluate import evaluate

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from output_snapshot import VOLATILE_KEYS  # noqa: E402 - clock fields any two runs differ in

WINDOWS = (1, 2, 7, 0)
SENTENCES = (
    "the man is sleeping .",
    "the man is running .",
    "the man is eating .",
    "a woman is happy .",
    "a woman is sad .",
    "the dog is big .",
    "the dog is small .",
    "the cat is old .",
    "the cat is young .",
    "people are inside .",
    "people are outside .",
    "the child is up .",
)
PREMISES = (
    "a man and a dog are outside .",
    "the old woman is not sleeping .",
    "the people are running in the small dog .",
    "a child is eating , the cat is happy .",
)


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


@pytest.fixture(autouse=True)
def _small_blocks(monkeypatch):
    """Labelling blocks of 3 triples (20,000 in a real run), so that these few triples span many
    blocks and windows: --window 1 and 2 read 3 triples at a time, 7 reads 9, 0 holds the run."""
    monkeypatch.setattr(schedule, "LABEL_BLOCK", 3)


def chained_triples() -> list[dict]:
    """Chains: t (P, S_i, S_i+1) then t' (P, S_i+1, S_i+2), so a triple's (P,H') is the next
    one's (P,H); the issue's soup pair first; premises shared far apart; some H' repeated."""
    rows = [
        {
            "premise": "P",
            "hypothesis": "The soup is hot.",
            "modified_hypothesis": "The soup is cold.",
        },
        {
            "premise": "P",
            "hypothesis": "The soup is cold.",
            "modified_hypothesis": "The soup is warm.",
        },
    ]
    for k, premise in enumerate(PREMISES):
        step = k + 1
        for i in range(0, len(SENTENCES) - step, step):
            rows.append(
                {
                    "premise": premise,
                    "hypothesis": SENTENCES[i],
                    "modified_hypothesis": SENTENCES[i + step],
                }
            )
    # H' = H: (H,H') and (H',H) are one pair, mutual wherever its label is E or C, so some
    # triples need their (P,H') (which the chains above share as a (P,H))
    for premise, sentence in zip(PREMISES, SENTENCES[1::2], strict=False):
        rows.append({"premise": premise, "hypothesis": sentence, "modified_hypothesis": sentence})
    for i, row in enumerate(rows):
        row["id"] = f"t{i}"
        row["dataset"] = "alpha" if i % 3 else "beta"
        if i % 4 == 0:
            row["gold_label"] = "entailment"
    return rows


def run(*args):
    return CliRunner().invoke(evaluate, [str(a) for a in args])


def comparable(folder: Path) -> dict[str, bytes]:
    """Every file the run wrote, by path; JSON files without their clock fields (as
    benchmarks/output_snapshot.py compares them) and run_info.json without its command line."""

    def strip(value):
        if isinstance(value, dict):
            return {
                k: strip(v)
                for k, v in value.items()
                if k not in VOLATILE_KEYS and k != "command_line"
            }
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    out = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        if path.name == "run_info.json":
            data = json.dumps(strip(json.loads(data)), sort_keys=True).encode()
        out[str(path.relative_to(folder))] = data
    return out


def varied_model(folder: Path, builder, seed: int, sharpen: float = 1.0) -> Path:
    """The tests' tiny random BERT with weights of std 0.5 (as initialised it calls everything
    neutral), so that its labels vary with the input, and its head `sharpen` times sharper:
    logits far apart, so that float noise in the encoder shows in the probabilities."""
    import torch
    from transformers import AutoModelForSequenceClassification

    if not folder.exists():
        builder(folder, seed=seed)
        model = AutoModelForSequenceClassification.from_pretrained(folder)
        torch.manual_seed(seed)
        with torch.no_grad():
            for param in model.parameters():
                if param.dim() == 2:
                    param.normal_(0.0, 0.5)
            model.classifier.weight.mul_(sharpen)
        model.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def models(tmp_path_factory, tiny_nli_model_builder):
    """Two varied models (so the alarms run too), one of them sharp."""
    root = tmp_path_factory.mktemp("window-models")
    return (
        varied_model(root / "varied", tiny_nli_model_builder, seed=7),
        varied_model(root / "sharp", tiny_nli_model_builder, seed=11, sharpen=10.0),
    )


@pytest.mark.parametrize("all_pairs", [False, True], ids=["lazy", "all-pairs"])
def test_every_window_writes_the_same_bytes(tmp_path, models, all_pairs):
    tfile = write_jsonl(tmp_path / "chained.jsonl", chained_triples())
    varied, sharp = models
    specs = ["--model", f"varied=hf:{varied}", "--model", f"sharp=hf:{sharp}"]
    flags = ["--no-plots", "-q", "--no-cache", *(["--all-pairs"] if all_pairs else [])]
    got = {}
    windows = (1, 0) if all_pairs else WINDOWS
    for window in windows:
        res = run(tfile, *specs, "--out", tmp_path / f"w{window}", "--window", window, *flags)
        assert res.exit_code == 0, res.output
        got[window] = comparable(tmp_path / f"w{window}")
    whole = got[0]
    assert {"summary.json", "predictions.jsonl", "samples.jsonl", "run_info.json"} <= set(whole)
    for window in windows[:-1]:
        assert set(got[window]) == set(whole)
        for name, data in whole.items():
            assert got[window][name] == data, f"{name} differs between --window {window} and 0"
    rows = [json.loads(line) for line in (tmp_path / "w0" / "predictions.jsonl").open()]
    shown = [r["labels"]["p_h2"] is not None for r in rows]
    if all_pairs:
        assert all(shown)
    else:  # the chains ask for (P,H') labels that other triples do not show
        assert any(shown) and not all(shown)


def test_a_pair_labelled_for_another_triple_is_not_shown(tmp_path):
    """The issue's two triples with a label file: t1's (H,H') is not mutual, so its (P,H') is not
    asked for t1; t2 needs the same pair as its (P,H). t1 shows no (P,H') label in any window."""
    hot, cold, warm = "The soup is hot.", "The soup is cold.", "The soup is warm."
    triples = [
        {"id": "t1", "premise": "P", "hypothesis": hot, "modified_hypothesis": cold},
        {"id": "t2", "premise": "P", "hypothesis": cold, "modified_hypothesis": warm},
    ]
    labels = {
        ("P", hot): "entailment",
        (hot, cold): "contradiction",
        (cold, hot): "neutral",  # not mutual: t1 needs no (P,H')
        ("P", cold): "neutral",  # t2's (P,H), and t1's (P,H')
        (cold, warm): "contradiction",
        (warm, cold): "contradiction",  # mutual C: t2 needs its (P,H')
        ("P", warm): "entailment",
    }
    tfile = write_jsonl(tmp_path / "t.jsonl", triples)
    lfile = write_jsonl(
        tmp_path / "labels.jsonl",
        [{"premise": p, "hypothesis": h, "label": lab} for (p, h), lab in labels.items()],
    )
    summaries, flags = {}, ["--model", f"precomputed:{lfile}", "-q", "--no-plots"]
    for window in WINDOWS:
        out = tmp_path / f"w{window}"
        res = run(tfile, *flags, "--out", out, "--window", window)
        assert res.exit_code == 0, res.output
        t1, t2 = [json.loads(line) for line in (out / "predictions.jsonl").open()]
        assert t1["labels"]["p_h2"] is None and t1["probs"]["p_h2"] is None
        assert t2["labels"] == {
            "p_h": "neutral",
            "h_h2": "contradiction",
            "h2_h": "contradiction",
            "p_h2": "entailment",
        }
        summaries[window] = json.loads((out / "summary.json").read_text())
        counts = summaries[window]["models"][0]["overall"]["label_counts"]["p_h2"]
        assert counts == {"entailment": 1, "neutral": 0, "contradiction": 0}
    assert all(s == summaries[0] for s in summaries.values())
