"""Triples files are checked as strictly as the generator's readers check their inputs: each field
of its type, no lone surrogate, UTF-8 text, readable gzip. Each problem is one line naming the
file, the line (or row) and the field, and `transnli evaluate` shows no traceback."""

from __future__ import annotations

import gzip
import json

import pytest
from click.testing import CliRunner
from transnli.generator.record import RecordError
from transnli.generator.triples_reader import read_any

from transnli.cli.evaluate import evaluate

GOOD = {
    "premise": "A man sleeps.",
    "hypothesis": "A man rests.",
    "modified_hypothesis": "A man works.",
}


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def lines_file(path, *lines: str | bytes):
    """A file of the given lines (str: JSON text; bytes: written as they are)."""
    data = b"".join((x if isinstance(x, bytes) else x.encode()) + b"\n" for x in lines)
    path.write_bytes(data)
    return path


def good(**fields) -> str:
    return json.dumps({**GOOD, **fields})


def read_error(path) -> str:
    with pytest.raises(RecordError) as info:
        list(read_any(path))
    return str(info.value)


def evaluate_cli(tmp_path, triples):
    labels = lines_file(
        tmp_path / "labels.jsonl",
        json.dumps({"premise": "A man sleeps.", "hypothesis": "A man rests.", "label": "neutral"}),
    )
    args = [str(triples), "--model", f"precomputed:{labels}", "--out", str(tmp_path / "out")]
    return CliRunner().invoke(evaluate, [*args, "-q", "--no-plots"])


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("dataset", ["snli"], "expected a string, got a list"),
        ("dataset", 3, "expected a string, got a number (3)"),
        ("id", 17, "expected a string, got a number (17)"),
        ("id", {"n": 1}, "expected a string, got an object"),
        ("source_id", 2.5, "expected a string, got a number (2.5)"),
        ("pipeline", True, "expected a string, got true/false"),
        ("word_index", "3", "expected an integer, got a string"),
        ("char_start", True, "expected an integer, got true/false"),
        ("candidates", "unable", "expected a list, got a string"),
        ("checks", [], "expected an object, got a list"),
        ("gold_label", 1, "expected a string, got a number (1)"),
    ],
)
def test_a_field_of_the_wrong_type_names_file_line_and_field(tmp_path, field, value, expected):
    path = lines_file(tmp_path / "t.jsonl", good(), good(**{field: value}))
    assert read_error(path) == f"{path}:2: field '{field}': {expected}"


def test_null_in_a_field_with_a_default_means_not_given(tmp_path):
    path = lines_file(tmp_path / "nulls.jsonl", good(dataset=None, id=None, source_id=None))
    (rec,) = read_any(path)
    assert rec.dataset == "nulls" and rec.id and rec.source_id == ""


def test_a_lone_surrogate_is_named(tmp_path):
    path = lines_file(
        tmp_path / "t.jsonl",
        good(hypothesis="A man \U0001f600 rests."),  # a surrogate pair is text
        '{"premise": "P", "hypothesis": "A man \\ud800 rests.", "modified_hypothesis": "H2"}',
    )
    assert read_error(path) == (
        f"{path}:2: field 'hypothesis': a lone surrogate \\ud800 at character 7 is not text; "
        "fix the escape in the file"
    )
    nested = lines_file(
        tmp_path / "n.jsonl", good()[:-1] + ', "checks": {"x": {"note": "\\udc00"}}}'
    )
    assert read_error(nested).startswith(f"{nested}:1: field 'checks': a lone surrogate \\udc00")


def test_invalid_utf8_names_the_line_and_byte(tmp_path):
    bad = good().encode().replace(b"rests", b"r\xffsts")
    path = lines_file(tmp_path / "t.jsonl", good(), good(), bad)
    at = bad.index(b"\xff") + 1
    assert read_error(path) == (
        f"{path}:3: not UTF-8 (byte 0xff at byte {at} of the line); save the file as UTF-8"
    )


def test_gzip_triples_are_read_and_a_broken_stream_is_named(tmp_path):
    text = "".join(good(id=f"t{i}") + "\n" for i in range(2000)).encode()
    ok = tmp_path / "t.jsonl.gz"
    ok.write_bytes(gzip.compress(text))
    assert [r.id for r in read_any(ok)] == [f"t{i}" for i in range(2000)]
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(text)[:-200])
    message = read_error(cut)
    assert message.startswith(f"{cut}:") and "not a readable gzip file" in message
    not_gz = lines_file(tmp_path / "plain.jsonl.gz", good())
    assert "not a readable gzip file" in read_error(not_gz)
    unnamed = tmp_path / "zipped.jsonl"
    unnamed.write_bytes(gzip.compress(text))
    assert read_error(unnamed) == (
        f"{unnamed}:1: gzip-compressed data; name the file .gz (e.g. triples.jsonl.gz) or unzip it"
    )


def test_invalid_json_says_column_once(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"premise": "abc')  # a last line cut short
    message = read_error(path)
    assert message == f"{path}:1: not valid JSON: Unterminated string starting at (column 13)"
    assert "at at" not in message


def test_a_table_row_of_the_wrong_type_names_the_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    table = pa.table(
        {
            "premise": ["P1", "P2"],
            "hypothesis": ["H1", "H2"],
            "modified_hypothesis": ["M1", "M2"],
            "id": [1, 2],
        }
    )
    pq.write_table(table, path)
    assert read_error(path) == f"{path}: row 1: field 'id': expected a string, got a number (1)"


@pytest.mark.parametrize(
    "content",
    [
        good(dataset=["snli"]),
        good(id=7),
        '{"premise": "P", "hypothesis": "\\ud800", "modified_hypothesis": "H2"}',
        good().encode().replace(b"rests", b"r\xffsts"),
        gzip.compress(good().encode()),
        '{"premise": "abc',
    ],
    ids=["list", "number", "surrogate", "utf8", "gzip-unnamed", "json"],
)
def test_evaluate_prints_one_line_and_no_traceback(tmp_path, content):
    triples = lines_file(tmp_path / "t.jsonl", good(), content)
    result = evaluate_cli(tmp_path, triples)
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and f"{triples}:2" in lines[0], result.output
    assert not (tmp_path / "out" / "summary.json").exists()
