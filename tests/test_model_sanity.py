"""Broken model folders are refused before any labelling (issue 27, defect 3): each gets one line
naming the folder and the fix, from the Python API and from `transnli evaluate`, with no
traceback. Every broken folder is made here from a tiny working checkpoint."""

from __future__ import annotations

import json
import shutil

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from click.testing import CliRunner  # noqa: E402
from transnli.evaluator.backends import BackendOptions, create_backend  # noqa: E402
from transnli.evaluator.backends.hf import loading_problem, vocabulary_problem  # noqa: E402
from transnli.evaluator.doctor import check_model  # noqa: E402
from transnli.evaluator.errors import BackendError  # noqa: E402
from transnli.evaluator.model_checks import (  # noqa: E402
    MIN_GOLD_PAIRS,
    MIN_LABELS,
    below_chance_warning,
    one_label_warning,
)

from transnli.cli.evaluate import evaluate  # noqa: E402


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def no_tokenizer(good, folder):
    """config.json and the weights only (a folder saved with model.save_pretrained alone)."""
    folder.mkdir()
    for name in ("config.json", "model.safetensors"):
        shutil.copy(good / name, folder / name)


def no_head(good, folder):
    """A bare encoder (BertModel) saved with its tokenizer: no classifier weights."""
    from transformers import AutoTokenizer, BertConfig, BertModel

    BertModel(BertConfig.from_pretrained(good)).save_pretrained(folder)
    AutoTokenizer.from_pretrained(good).save_pretrained(folder)
    config = json.loads((good / "config.json").read_text())  # keep the NLI labels
    saved = json.loads((folder / "config.json").read_text())
    saved.update(id2label=config["id2label"], label2id=config["label2id"])
    (folder / "config.json").write_text(json.dumps(saved))


def distilbert_config(good, folder):
    """A DistilBERT config.json over BERT weights."""
    from transformers import DistilBertConfig

    shutil.copytree(good, folder)
    config = json.loads((good / "config.json").read_text())
    DistilBertConfig(
        vocab_size=config["vocab_size"],
        dim=32,
        n_layers=2,
        n_heads=2,
        hidden_dim=48,
        max_position_embeddings=64,
        id2label=config["id2label"],
        label2id=config["label2id"],
    ).save_pretrained(folder)


def wrong_shape(good, folder):
    """config.json says a larger vocabulary than the weights' embedding has."""
    shutil.copytree(good, folder)
    config = json.loads((folder / "config.json").read_text())
    config["vocab_size"] += 7
    (folder / "config.json").write_text(json.dumps(config))


def tokenizer_too_large(good, folder):
    """A tokenizer with two more words than the model has embedding rows for."""
    shutil.copytree(good, folder)
    tok = json.loads((folder / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    for word in ("zebra", "quokka"):
        vocab[word] = len(vocab)
    (folder / "tokenizer.json").write_text(json.dumps(tok))


BROKEN = {
    "no_tokenizer": (no_tokenizer, "has no tokenizer files"),
    "no_head": (no_head, "has no classification head"),
    "distilbert_config": (distilbert_config, "do not fit the distilbert architecture"),
    "wrong_shape": (wrong_shape, "weights of the wrong shape"),
    "tokenizer_too_large": (tokenizer_too_large, "tokenizer has 38 tokens but the model's"),
}


@pytest.fixture(scope="module")
def broken_models(tmp_path_factory):
    from conftest import build_tiny_nli_model

    root = tmp_path_factory.mktemp("broken")
    good = build_tiny_nli_model(root / "good", force=2)
    for name, (make, _) in BROKEN.items():
        make(good, root / name)
    return root


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_folder_refused_by_the_api(broken_models, name):
    folder = broken_models / name
    with pytest.raises(BackendError) as e:
        create_backend(f"hf:{folder}", BackendOptions())
    message = str(e.value)
    assert BROKEN[name][1] in message and str(folder) in message
    assert "\n" not in message


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_folder_refused_by_evaluate_in_one_line(broken_models, tmp_path, name):
    folder = broken_models / name
    triples = tmp_path / "t.jsonl"
    triples.write_text(
        json.dumps({"premise": "a man is happy", "hypothesis": "a man is sad",
                    "modified_hypothesis": "a man is happy"}) + "\n",
        encoding="utf-8",
    )  # fmt: skip
    out = tmp_path / "out"
    res = CliRunner().invoke(
        evaluate, [str(triples), "--model", f"hf:{folder}", "--out", str(out), "--no-progress"]
    )
    assert res.exit_code == 1, res.output
    assert res.exception is None or isinstance(res.exception, SystemExit)
    assert "Traceback" not in res.output and "LOAD REPORT" not in res.output
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert len(lines) == 1 and BROKEN[name][1] in lines[0] and str(folder) in lines[0], lines
    assert not (out / "summary.json").exists()


def test_doctor_and_evaluate_share_the_tokenizer_check(broken_models):
    folder = broken_models / "no_tokenizer"
    status = check_model(f"hf:{folder}")
    assert not status.usable and "has no tokenizer files" in status.detail
    assert check_model(f"hf:{broken_models / 'good'}").usable


def test_good_folder_still_loads(broken_models):
    backend = create_backend(f"hf:{broken_models / 'good'}", BackendOptions())
    assert {p.label for p in backend.predict([("a man is happy", "a man is sad")])} == {
        "entailment"
    }


# ------------------------------------------------------------------ the pure rules
def test_unexpected_keys_alone_are_harmless():
    # roberta-large-mnli ships a pooler that RobertaForSequenceClassification does not use
    info = {"missing_keys": set(), "unexpected_keys": {"roberta.pooler.dense.weight"}}
    assert loading_problem(info, "roberta", "roberta", "m") is None
    assert loading_problem({}, "roberta", "roberta", "m") is None


def test_missing_head_and_missing_encoder_are_told_apart():
    head = {"missing_keys": {"classifier.out_proj.weight", "classifier.dense.weight"}}
    assert "no classification head" in loading_problem(head, "roberta", "roberta", "m")
    body = {"missing_keys": {"roberta.embeddings.word_embeddings.weight", "classifier.weight"}}
    assert "do not fit the roberta architecture" in loading_problem(body, "roberta", "roberta", "m")


def test_vocabulary_rule():
    assert vocabulary_problem(50265, 50265, "m") is None
    assert vocabulary_problem(50280, 50368, "m") is None  # embeddings padded to a multiple of 64
    assert "50266 tokens" in vocabulary_problem(50266, 50265, "m")


# ------------------------------------------------------------------ after labelling
GOLD = ["entailment"] * 14 + ["neutral"] * 13 + ["contradiction"] * 13
SWAP = {"entailment": "contradiction", "contradiction": "entailment", "neutral": "neutral"}


def labelled_run(tmp_path, ph, hh2):
    """40 gold-labelled triples and a labels file: (P,H) labelled ph(gold), (H,H') and (H',H)
    labelled hh2, (P,H') as (P,H)."""
    triples, labels = [], []
    for i, gold in enumerate(GOLD):
        p, h, m = f"premise {i}", f"hypothesis {i}", f"modified {i}"
        triples.append({"id": f"t{i}", "premise": p, "hypothesis": h, "modified_hypothesis": m,
                        "gold_label": gold})  # fmt: skip
        for a, b, label in ((p, h, ph(gold)), (h, m, hh2), (m, h, hh2), (p, m, ph(gold))):
            labels.append({"premise": a, "hypothesis": b, "label": label})
    tfile, lfile = tmp_path / "t.jsonl", tmp_path / "labels.jsonl"
    tfile.write_text("".join(json.dumps(t) + "\n" for t in triples), encoding="utf-8")
    lfile.write_text("".join(json.dumps(r) + "\n" for r in labels), encoding="utf-8")
    out = tmp_path / "out"
    args = [str(tfile), "--model", f"judge=precomputed:{lfile}", "--out", str(out)]
    res = CliRunner().invoke(evaluate, [*args, "--no-cache", "--no-plots", "--no-progress"])
    assert res.exit_code == 0, res.output
    return res, (out / "report.md").read_text(encoding="utf-8")


def test_one_label_for_every_pair_is_warned(tmp_path):
    res, report = labelled_run(tmp_path, lambda gold: "entailment", "entailment")
    warning = "judge labelled 100.0% of 160 pairs entailment"
    assert warning in res.stderr and res.stderr.count("warning: judge labelled") == 1
    assert "## Warnings" in report and warning in report
    assert "below chance" not in res.stderr  # 14 of 40 right: 35%


def test_below_chance_on_gold_is_warned(tmp_path):
    res, report = labelled_run(tmp_path, SWAP.get, "neutral")  # E and C swapped: 13 of 40 right
    warning = "judge is right on 32.5% of 40 gold-labelled (P,H) pairs, below chance"
    assert warning in res.stderr and "## Warnings" in report and warning in report
    assert "labelled 100.0%" not in res.stderr


def test_a_sound_model_gets_no_warning(tmp_path):
    res, report = labelled_run(tmp_path, lambda gold: gold, "neutral")
    assert "warning" not in res.stderr.lower() and "## Warnings" not in report


def test_below_chance_suggests_the_label_map_option():
    text = below_chance_warning("m", 0.2, 100, "0=contradiction,1=neutral,2=entailment")
    assert "label_map" in text and "'m=SPEC?label_map=0=contradiction" in text
    assert below_chance_warning("m", 0.2, MIN_GOLD_PAIRS - 1, None) is None  # too few to tell
    assert below_chance_warning("m", 0.4, 100, None) is None
    assert below_chance_warning("m", None, 0, None) is None


def test_one_label_needs_enough_labels():
    few = {"p_h": {"entailment": MIN_LABELS - 1}}
    assert one_label_warning("m", few) is None
    assert one_label_warning("m", {"p_h": {"entailment": 98, "neutral": 2}}) is None  # 98%: not >
    assert one_label_warning("m", {"p_h": {"entailment": 99, "neutral": 1}}) is not None


def test_max_length_beyond_the_positions_is_refused(broken_models):
    folder = broken_models / "good"
    with pytest.raises(BackendError, match="longer than the 64 positions the model has"):
        create_backend(f"hf:{folder}", BackendOptions(max_length=200))


def test_a_failing_forward_pass_is_one_line_not_a_traceback(broken_models):
    """Whatever the checks at loading miss (here a length set past them) fails as a BackendError
    naming the batch, not as torch's RuntimeError."""
    backend = create_backend(f"hf:{broken_models / 'good'}", BackendOptions())
    backend.max_length = 200
    long = " ".join(["the man is happy"] * 30)
    with pytest.raises(BackendError, match="the model failed on a batch of 1 pairs of up to"):
        backend.predict([(long, long)])


def test_doctor_sees_a_tokenizer_larger_than_the_embedding(broken_models):
    status = check_model(f"hf:{broken_models / 'tokenizer_too_large'}")
    assert not status.usable and "tokenizer has 38 tokens" in status.detail
