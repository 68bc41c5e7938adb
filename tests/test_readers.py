"""Readers: every format from small files written here, detection, errors, skipping, streaming."""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from transnli.generator.readers import (
    FORMATS,
    InputError,
    NLIPair,
    detect_format,
    pairs_from_hf_rows,
    parse_gold_label,
    read_pairs,
)

SAMPLE = Path(__file__).resolve().parents[1] / "resources" / "samples" / "snli_sample.jsonl"


def write_jsonl(path: Path, records: list[dict | str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [r if isinstance(r, str) else json.dumps(r) for r in records]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def snli_record(i: int, gold: str, s1: str = "A man sleeps.", s2: str = "A man rests.") -> dict:
    return {
        "annotator_labels": [gold], "captionID": f"c{i}", "gold_label": gold,
        "pairID": f"p{i}", "sentence1": s1, "sentence1_binary_parse": "( A man )",
        "sentence1_parse": "(ROOT)", "sentence2": s2, "sentence2_binary_parse": "",
        "sentence2_parse": "",
    }  # fmt: skip


# --- formats ---------------------------------------------------------------------------------


def test_snli_jsonl_with_dash_gold(tmp_path):
    path = write_jsonl(
        tmp_path / "snli_1.0_dev.jsonl",
        [snli_record(1, "entailment"), snli_record(2, "-"), snli_record(3, "contradiction")],
    )
    assert detect_format(path) == "snli"
    pairs = list(read_pairs(path))
    assert pairs[0] == NLIPair(
        "p1", "A man sleeps.", "A man rests.", "entailment", "snli", "dev", 1
    )
    assert [p.gold_label for p in pairs] == ["entailment", None, "contradiction"]
    assert [p.line for p in pairs] == [1, 2, 3]


def test_snli_txt_tsv_keeps_unbalanced_quotes(tmp_path):
    header = "gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
    header += "sentence2_parse\tsentence1\tsentence2\tcaptionID\tpairID\tlabel1\tlabel2"
    rows = [
        'neutral\t( A )\t( B )\t(ROOT)\t(ROOT)\t"Hi," says a girl.\tA girl '
        "talks.\tc1\tp1\tneutral\t",
        "-\t( A )\t( B )\t(ROOT)\t(ROOT)\tTwo dogs run.\tDogs sleep.\tc2\tp2\tneutral\tentailment",
    ]
    path = tmp_path / "snli_1.0_test.txt"
    path.write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    assert detect_format(path) == "snli"
    pairs = list(read_pairs(path))
    assert pairs[0].premise == '"Hi," says a girl.'  # SNLI's .txt does not quote fields
    assert (pairs[0].source_id, pairs[0].gold_label, pairs[0].line) == ("p1", "neutral", 2)
    assert (pairs[1].gold_label, pairs[1].split, pairs[1].dataset) == (None, "test", "snli")


def test_mnli_jsonl_detected_by_genre(tmp_path):
    record = {
        "genre": "fiction", "gold_label": "neutral", "pairID": "31193n", "promptID": "31193",
        "sentence1": "The door stayed open.", "sentence2": "Someone forgot the door.",
    }  # fmt: skip
    path = write_jsonl(tmp_path / "dev_matched.jsonl", [record])
    assert detect_format(path) == "mnli"
    (pair,) = read_pairs(path)
    assert (pair.dataset, pair.split, pair.source_id) == ("mnli", "dev_matched", "31193n")


def test_mnli_detected_by_filename(tmp_path):
    path = write_jsonl(tmp_path / "multinli_1.0_dev_mismatched.jsonl", [snli_record(1, "neutral")])
    assert detect_format(path) == "mnli"
    assert next(read_pairs(path)).split == "dev_mismatched"


def test_anli_round_from_folder(tmp_path):
    records = [
        {"uid": "u1", "context": "The shop opens early.", "hypothesis": "The shop is closed.",
         "label": "c", "model_label": "e", "reason": "", "tag": ""},
        {"uid": "u2", "context": "It rained.", "hypothesis": "It was wet.", "label": "e"},
        {"uid": "u3", "context": "It rained.", "hypothesis": "He was sad.", "label": "n"},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "anli_v1.0" / "R1" / "test.jsonl", records)
    assert detect_format(path) == "anli"
    pairs = list(read_pairs(path))
    assert [p.gold_label for p in pairs] == ["contradiction", "entailment", "neutral"]
    assert {(p.dataset, p.split) for p in pairs} == {("anli", "test_r1")}
    assert pairs[0].premise == "The shop opens early." and pairs[0].source_id == "u1"


def test_wanli_jsonl(tmp_path):
    record = {"id": 225295, "premise": "Prices rose.", "hypothesis": "Prices fell.",
              "gold": "contradiction", "genre": "generated", "pairID": "171408"}  # fmt: skip
    path = write_jsonl(tmp_path / "wanli" / "test.jsonl", [record])
    assert detect_format(path) == "wanli"
    (pair,) = read_pairs(path)
    assert pair == NLIPair("225295", "Prices rose.", "Prices fell.", "contradiction", "wanli",
                           "test", 1)  # fmt: skip


def test_generic_jsonl_ids_labels_and_fallback_id(tmp_path):
    records = [
        {"id": "a", "premise": "P1.", "hypothesis": "H1.", "label": "Entailment"},
        {"premise": "P2.", "hypothesis": "H2.", "gold_label": "N"},
        {"premise": "P3.", "hypothesis": "H3."},
    ]
    path = write_jsonl(tmp_path / "mine.jsonl", [records[0], "", records[1], records[2]])
    assert detect_format(path) == "jsonl"
    pairs = list(read_pairs(path))
    assert [p.source_id for p in pairs] == ["a", "mine:3", "mine:4"]  # blank line 2 skipped
    assert [p.gold_label for p in pairs] == ["entailment", "neutral", None]
    assert {(p.dataset, p.split) for p in pairs} == {("mine", "")}


def test_generic_csv_with_quoted_fields(tmp_path):
    path = tmp_path / "pairs.csv"
    path.write_text(
        'id,premise,hypothesis,label\n1,"A man, tall, waits.","He said ""no"".",c\n'
        "2,Kids play.,Kids sleep.,\n",
        encoding="utf-8",
    )
    assert detect_format(path) == "csv"
    pairs = list(read_pairs(path))
    assert pairs[0] == NLIPair("1", "A man, tall, waits.", 'He said "no".', "contradiction",
                               "pairs", "", 2)  # fmt: skip
    assert (pairs[1].gold_label, pairs[1].line) == (None, 3)


def test_generic_tsv_without_label_column(tmp_path):
    path = tmp_path / "train_pairs.tsv"
    path.write_text("premise\thypothesis\nA cat sits.\tA cat stands.\n", encoding="utf-8")
    assert detect_format(path) == "tsv"
    (pair,) = read_pairs(path)
    assert (pair.premise, pair.gold_label, pair.source_id) == ("A cat sits.", None, "train_pairs:2")
    assert (pair.dataset, pair.split) == ("train_pairs", "train")


def test_gzipped_jsonl(tmp_path):
    path = tmp_path / "snli_1.0_train.jsonl.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(json.dumps(snli_record(7, "neutral")) + "\n")
    assert detect_format(path) == "snli"
    (pair,) = read_pairs(path)
    assert (pair.source_id, pair.split) == ("p7", "train")


def test_format_override(tmp_path):
    # An SNLI-shaped file named like nothing in particular, read as MNLI; and a file whose
    # extension says nothing, read as generic jsonl.
    path = write_jsonl(tmp_path / "x.jsonl", [snli_record(1, "entailment")])
    assert next(read_pairs(path, format="mnli")).dataset == "mnli"
    other = write_jsonl(tmp_path / "data.dat", [{"premise": "P.", "hypothesis": "H."}])
    assert detect_format(other) == "jsonl"
    assert next(read_pairs(other, format="jsonl")).premise == "P."
    # Read as a generic file, it takes the native keys and is named after the file.
    assert next(read_pairs(path, format="jsonl")).dataset == "x"
    # Overriding with a format the file does not have names the missing field.
    foreign = write_jsonl(tmp_path / "z.jsonl", [{"text": "P.", "other": "H."}])
    with pytest.raises(InputError, match=r"z\.jsonl:1: field 'premise'"):
        next(read_pairs(foreign, format="jsonl"))
    with pytest.raises(InputError, match="field 'premise': no such column"):
        p = tmp_path / "y.tsv"
        p.write_text("text1\ttext2\nA.\tB.\n", encoding="utf-8")
        next(read_pairs(p, format="tsv"))


def test_formats_constant_and_unknown_format(tmp_path):
    assert set(FORMATS) == {"jsonl", "csv", "tsv", "snli", "mnli", "anli", "wanli", "hf"}
    path = write_jsonl(tmp_path / "a.jsonl", [{"premise": "P.", "hypothesis": "H."}])
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        read_pairs(path, format="xml")


def test_undetectable_keys(tmp_path):
    path = write_jsonl(tmp_path / "a.jsonl", [{"text": "P.", "other": "H."}])
    with pytest.raises(InputError, match="cannot tell the format"):
        detect_format(path)


# --- labels ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [("e", "entailment"), ("N", "neutral"), ("CONTRADICTION", "contradiction"),
     (" neutral ", "neutral"), ("-", None), ("", None), (None, None)],
)  # fmt: skip
def test_normalize_label(value, expected):
    assert parse_gold_label(value) == expected


def test_integer_labels_only_for_hub_inputs():
    assert parse_gold_label(2, int_names={0: "entailment", 2: "contradiction"}) == "contradiction"
    with pytest.raises(ValueError, match="integer labels are read only from hf"):
        parse_gold_label(0)
    with pytest.raises(ValueError, match="unknown label 'maybe'"):
        parse_gold_label("maybe")


# --- Hugging Face rows -----------------------------------------------------------------------


def test_hf_rows_int_labels_incl_minus_one():
    datasets = pytest.importorskip("datasets")
    rows = datasets.Dataset.from_list(
        [
            {"premise": "A boy runs.", "hypothesis": "A boy moves.", "label": 0},
            {"premise": "A boy runs.", "hypothesis": "A boy is fast.", "label": 1},
            {"premise": "A boy runs.", "hypothesis": "A boy sits.", "label": 2},
            {"premise": "A boy runs.", "hypothesis": "A girl runs.", "label": -1},
        ]
    )
    pairs = list(pairs_from_hf_rows(rows, "snli", "validation"))
    assert [p.gold_label for p in pairs] == ["entailment", "neutral", "contradiction", None]
    assert pairs[3] == NLIPair("snli:validation:3", "A boy runs.", "A girl runs.", None, "snli",
                               "validation", 0)  # fmt: skip


def test_hf_rows_classlabel_names_win_over_convention():
    datasets = pytest.importorskip("datasets")
    features = datasets.Features(
        {
            "uid": datasets.Value("string"),
            "premise": datasets.Value("string"),
            "hypothesis": datasets.Value("string"),
            "label": datasets.ClassLabel(names=["contradiction", "neutral", "entailment"]),
        }
    )
    rows = datasets.Dataset.from_list(
        [{"uid": "x1", "premise": "P.", "hypothesis": "H.", "label": 0}], features=features
    )
    (pair,) = pairs_from_hf_rows(rows, "facebook/anli", "test_r1")
    assert (pair.gold_label, pair.dataset, pair.source_id) == ("contradiction", "anli", "x1")


def test_hf_rows_wanli_string_gold_and_mnli_ids():
    wanli = [{"id": 5, "premise": "P.", "hypothesis": "H.", "gold": "entailment", "genre": "g"}]
    (pair,) = pairs_from_hf_rows(wanli, "alisawuffles/WANLI", "test")
    assert (pair.dataset, pair.gold_label, pair.source_id) == ("wanli", "entailment", "5")
    mnli = [{"promptID": 1, "pairID": "1e", "premise": "P.", "hypothesis": "H.", "label": 1}]
    (pair,) = pairs_from_hf_rows(mnli, "nyu-mll/multi_nli", "validation_matched")
    assert (pair.dataset, pair.gold_label, pair.source_id) == ("mnli", "neutral", "1e")


def test_hf_rows_errors_and_skip():
    rows = [
        {"premise": "P.", "hypothesis": None, "label": 0},
        {"premise": "P.", "hypothesis": "H."},
    ]
    with pytest.raises(InputError, match=r"hf:snli:test\[0\]: field 'hypothesis'"):
        list(pairs_from_hf_rows(rows, "snli", "test"))
    bad = Counter()
    assert len(list(pairs_from_hf_rows(rows, "snli", "test", skip_bad=True, bad_counter=bad))) == 1
    assert bad == Counter(malformed=1)


def test_hub_load_failure_gives_advice(monkeypatch):
    datasets = pytest.importorskip("datasets")
    calls = []

    def offline(name, config=None, split=None):
        calls.append((name, config, split))
        raise ConnectionError("no network")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(InputError, match="download the dataset's files .* pass the file path"):
        read_pairs("hf:facebook/anli:test_r1")
    with pytest.raises(InputError):
        read_pairs("glue:mnli:validation_matched", format="hf")
    assert calls == [("facebook/anli", None, "test_r1"), ("glue", "mnli", "validation_matched")]
    with pytest.raises(InputError, match="expected hf:NAME:SPLIT"):
        read_pairs("hf:snli")


def test_hub_rows_from_load_dataset_are_converted(monkeypatch):
    datasets = pytest.importorskip("datasets")
    rows = datasets.Dataset.from_list([{"premise": "P.", "hypothesis": "H.", "label": 2}])
    monkeypatch.setattr(datasets, "load_dataset", lambda name, config=None, split=None: rows)
    (pair,) = read_pairs("hf:snli:validation")
    assert (pair.dataset, pair.split, pair.gold_label, pair.line) == (
        "snli", "validation", "contradiction", 0,
    )  # fmt: skip


# --- errors, skipping, streaming -------------------------------------------------------------


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match=r"nope\.jsonl: no such file"):
        read_pairs(tmp_path / "nope.jsonl")


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ({"premise": "P.", "hypothesis": 3}, r"x\.jsonl:2: field 'hypothesis': missing or not a "
                                             r"string"),
        ({"premise": "P."}, r"x\.jsonl:2: field 'hypothesis': missing or not a string"),
        ({"premise": "P.", "hypothesis": "H.", "label": "yes"}, r"x\.jsonl:2: field 'label': "
                                                                r"unknown label 'yes'"),
        ({"premise": "P.", "hypothesis": "H.", "label": 1}, r"x\.jsonl:2: field 'label': "
                                                            r".*integer"),
        ('{"premise": "P.", "hyp', r"x\.jsonl:2: invalid JSON"),
        ("[1, 2]", r"x\.jsonl:2: not a JSON object"),
    ],
)  # fmt: skip
def test_malformed_line_names_file_line_and_field(tmp_path, line, message):
    path = write_jsonl(tmp_path / "x.jsonl", [{"premise": "P.", "hypothesis": "H."}, line])
    with pytest.raises(InputError, match=message) as info:
        list(read_pairs(path))
    assert info.value.line == 2 and isinstance(info.value, ValueError)


def test_csv_row_errors(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("premise,hypothesis,label\nP.,H.,e\nP.\nP.,H.,e,extra\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"x\.csv:3: field 'hypothesis'"):
        list(read_pairs(path))
    bad = Counter()
    assert len(list(read_pairs(path, skip_bad=True, bad_counter=bad))) == 1
    assert bad["malformed"] == 2


def test_skip_bad_counts_and_continues(tmp_path):
    path = write_jsonl(
        tmp_path / "x.jsonl",
        [{"premise": "P1.", "hypothesis": "H1."}, "not json", {"premise": "P3."},
         {"premise": "P4.", "hypothesis": "H4.", "label": "?"},
         {"premise": "P5.", "hypothesis": "H5."}],
    )  # fmt: skip
    bad = Counter()
    pairs = list(read_pairs(path, skip_bad=True, bad_counter=bad))
    assert [p.line for p in pairs] == [1, 5]
    assert bad == Counter(malformed=3)
    assert len(list(read_pairs(path, skip_bad=True))) == 2  # no counter given: still skips


def test_streaming_does_not_parse_ahead(tmp_path):
    path = write_jsonl(
        tmp_path / "x.jsonl",
        [{"premise": "P1.", "hypothesis": "H1."}, {"premise": "P2.", "hypothesis": "H2."}, "{oops"],
    )
    it = read_pairs(path)
    assert next(it).premise == "P1."
    assert next(it).premise == "P2."
    with pytest.raises(InputError, match=r":3: invalid JSON"):
        next(it)


def test_bundled_sample_parses():
    pairs = list(read_pairs(SAMPLE))
    assert detect_format(SAMPLE) == "snli"
    assert 90 <= len(pairs) <= 120
    labels = Counter(p.gold_label for p in pairs)
    assert set(labels) == {"entailment", "neutral", "contradiction", None}
    assert len({p.source_id for p in pairs}) == len(pairs)
    assert all(p.premise.strip() and p.hypothesis.strip() for p in pairs)
