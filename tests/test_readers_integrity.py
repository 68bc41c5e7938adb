"""Readers never lose a row silently: each row is read with its exact content, or reported with
its line (and, with --skip-bad, counted). Targeted cases, then property-based fuzzing."""

from __future__ import annotations

import csv
import io
import json
import os
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from transnli.generator import readers
from transnli.generator.readers import InputError, detect_format, read_pairs


def read_all(path, **kwargs):
    bad = Counter()
    pairs = list(read_pairs(path, skip_bad=True, bad_counter=bad, **kwargs))
    return pairs, bad["malformed"]


def numbered_csv(path: Path, n: int, change: dict[int, str] | None = None) -> Path:
    """premise,hypothesis,label with row i (line i + 2) as Pi.,Hi.,e; `change` replaces lines."""
    lines = ["premise,hypothesis,label"] + [f"P{i}.,H{i}.,e" for i in range(n)]
    for line, text in (change or {}).items():
        lines[line - 1] = text
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# --- CSV quoting -----------------------------------------------------------------------------


def test_csv_quote_never_closed_is_reported_where_it_starts_and_every_line_counted(tmp_path):
    path = numbered_csv(tmp_path / "q.csv", 108, {52: 'P50.,"H50 says hi,e'})
    with pytest.raises(InputError, match=r"q\.csv:52: field 'hypothesis': .*never closed.*52-109"):
        list(read_pairs(path))
    pairs, bad = read_all(path)
    assert [p.line for p in pairs] == list(range(2, 52))
    assert len(pairs) + bad == 108


def test_csv_quote_closed_rows_later_skips_only_those_rows(tmp_path):
    path = numbered_csv(tmp_path / "q.csv", 108, {52: 'P50.,"H50 says hi,e', 60: 'P58.,H58",e'})
    with pytest.raises(InputError, match=r"q\.csv:52: field 'hypothesis': .*lines 52-60"):
        list(read_pairs(path))
    pairs, bad = read_all(path)
    assert bad == 9 and len(pairs) == 99  # the rows after the closing quote are read
    assert pairs[-1].premise == "P107." and pairs[50].line == 61


def test_csv_text_after_closing_quote_names_the_field(tmp_path):
    path = numbered_csv(tmp_path / "q.csv", 3, {3: 'P1.,"He said" no,e'})
    with pytest.raises(
        InputError, match=r"q\.csv:3: field 'hypothesis': text after the closing quote"
    ):
        list(read_pairs(path))
    pairs, bad = read_all(path)
    assert [p.line for p in pairs] == [2, 4] and bad == 1


def test_csv_field_spanning_lines_is_one_error_at_its_first_line(tmp_path):
    path = tmp_path / "m.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerows(
            [["premise", "hypothesis"], ["A.", "B."], ["Two\nlines.", "C."], ["D.", "E."]]
        )
    with pytest.raises(InputError, match=r"m\.csv:3: field 'premise': .*lines 3-4"):
        list(read_pairs(path))
    pairs, bad = read_all(path)
    assert [(p.premise, p.line) for p in pairs] == [("A.", 2), ("D.", 5)] and bad == 2


def test_csv_field_of_a_megabyte_is_read(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text(f'premise,hypothesis\n"{"x" * 1_000_000}",H.\nP.,H.\n', encoding="utf-8")
    pairs = list(read_pairs(path))
    assert len(pairs[0].premise) == 1_000_000 and pairs[1].premise == "P."


@pytest.mark.parametrize("sep", [",", "\t"])
def test_more_fields_than_the_header_or_a_missing_needed_column_is_an_error(tmp_path, sep):
    path = tmp_path / f"x.{'csv' if sep == ',' else 'tsv'}"
    rows = (
        ["premise", "hypothesis", "label"],
        ["P.", "H.", "e"],
        ["P.", "H.", "e", "x"],
        ["P.", "H."],
    )
    path.write_text("".join(sep.join(r) + "\n" for r in rows), encoding="utf-8")
    with pytest.raises(InputError, match=r":3: 4 fields, but the header has 3"):
        list(read_pairs(path))
    pairs, bad = read_all(path)
    assert [p.line for p in pairs] == [2] and bad == 2
    path.write_text("".join(sep.join(r) + "\n" for r in rows[:2] + rows[3:]), encoding="utf-8")
    with pytest.raises(InputError, match=r":3: field 'label': missing: the line has 2 fields"):
        list(read_pairs(path))


# --- TSV -------------------------------------------------------------------------------------


def test_tsv_field_starting_with_a_quote_is_kept_and_merges_nothing(tmp_path):
    lines = ["premise\thypothesis\tlabel"] + [f"P{i}.\tH{i}.\te" for i in range(108)]
    lines[11] = 'P10.\t"Hi, there\te'
    path = tmp_path / "pairs.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    pairs = list(read_pairs(path))
    assert len(pairs) == 108 and pairs[10].hypothesis == '"Hi, there'
    assert pairs[11].hypothesis == "H11."


def test_tsv_tab_inside_a_field_is_an_error_with_its_line(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("premise\thypothesis\nP1.\tH1.\nP\t2.\tH2.\nP3.\tH3.\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"pairs\.tsv:3: 3 fields, but the header has 2 \(a tab"):
        list(read_pairs(path))
    pairs, bad = read_all(path)
    assert [p.premise for p in pairs] == ["P1.", "P3."] and bad == 1


# --- encoding --------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["jsonl", "csv", "tsv"])
def test_invalid_utf8_is_reported_at_its_line_after_every_earlier_pair(tmp_path, kind):
    def row(i: int) -> bytes:
        text = f"P{i} caf\xe9."
        data = {"jsonl": json.dumps({"premise": text, "hypothesis": "H."}, ensure_ascii=False),
                "csv": f"{text},H.", "tsv": f"{text}\tH."}[kind].encode("utf-8")  # fmt: skip
        return data.replace("é".encode(), b"\xe9") if i == 1998 else data

    header = {"jsonl": [], "csv": [b"premise,hypothesis"], "tsv": [b"premise\thypothesis"]}[kind]
    rows = [row(i) for i in range(3000 - len(header))]
    path = tmp_path / f"x.{kind}"
    path.write_bytes(b"\n".join(header + rows) + b"\n")
    bad_line = 1998 + 1 + len(header)
    seen = []
    with pytest.raises(InputError, match=rf"x\.{kind}:{bad_line}: not UTF-8 \(byte 0xe9"):
        for pair in read_pairs(path):
            seen.append(pair)
    assert len(seen) == 1998 and seen[-1].premise == "P1997 café."
    pairs, bad = read_all(path)
    assert len(pairs) == len(rows) - 1 and bad == 1


def test_jsonl_lone_surrogate_escape_is_reported_with_its_field(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text('{"premise": "P.", "hypothesis": "H."}\n'
                    '{"premise": "P.", "hypothesis": "H\\ud800."}\n'
                    '{"premise": "P.", "hypothesis": "\\ud83d\\ude00"}\n',
                    encoding="utf-8")  # fmt: skip
    with pytest.raises(
        InputError, match=r"s\.jsonl:2: field 'hypothesis': a lone surrogate \\ud800"
    ):
        list(read_pairs(path))
    pairs, bad = read_all(path)
    assert [p.hypothesis for p in pairs] == ["H.", "\U0001f600"] and bad == 1


# --- dataset detection, names, columns, label order ------------------------------------------


# --- gzip ------------------------------------------------------------------------------------


def damaged_gzip_file(path: Path, written: bytes, meant: bytes) -> Path:
    """A gzip file that decompresses to `written` but whose trailer (CRC-32 and size) is that of
    `meant`: what a flipped bit in the compressed data does (the stream still decodes, to other
    bytes, and only the check at its end fails)."""
    import gzip
    import zlib

    data = bytearray(gzip.compress(written, mtime=0))
    data[-8:] = zlib.crc32(meant).to_bytes(4, "little") + len(meant).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    return path


PAIRS = [
    {"id": str(i), "premise": f"P{i}.", "hypothesis": f"H{i}.", "label": "e"} for i in range(5)
]


def jsonl_bytes(rows) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_a_damaged_gzip_input_is_reported_as_damaged_not_as_a_missing_field(tmp_path):
    meant = jsonl_bytes(PAIRS)
    garbled = meant.replace(b'"premise"', b'"prem1se"', 1)  # what the damage made of line 1
    path = damaged_gzip_file(tmp_path / "pairs.jsonl.gz", garbled, meant)
    for skip_bad in (False, True):
        with pytest.raises(InputError) as info:
            list(read_pairs(path, skip_bad=skip_bad))
        message = str(info.value)
        assert message.startswith(f"{path}: not a readable gzip file: damaged (CRC check failed")
        assert "download or compress it again" in message
        assert info.value.line is None  # the whole file, so no --skip-bad hint
    # only the trailer damaged: the lines read fine, the end does not
    crc_only = damaged_gzip_file(tmp_path / "crc.jsonl.gz", meant, meant + b"x")
    with pytest.raises(InputError, match="not a readable gzip file: damaged"):
        list(read_pairs(crc_only))


def test_gzip_data_without_a_gz_name_is_named_gzip_not_undecodable(tmp_path):
    import gzip

    path = tmp_path / "pairs.jsonl"
    path.write_bytes(gzip.compress(jsonl_bytes(PAIRS)))
    for skip_bad in (False, True):
        with pytest.raises(InputError) as info:
            list(read_pairs(path, skip_bad=skip_bad))
        assert str(info.value) == (
            f"{path}: gzip-compressed data; name the file .gz (e.g. pairs.jsonl.gz) or unzip it"
        )
    (tmp_path / "ok.jsonl.gz").write_bytes(path.read_bytes())
    assert [p.source_id for p in read_pairs(tmp_path / "ok.jsonl.gz")] == ["0", "1", "2", "3", "4"]


def test_generate_says_a_damaged_gzip_in_one_line(tmp_path):
    from click.testing import CliRunner

    from transnli.cli import main

    meant = jsonl_bytes(PAIRS)
    path = damaged_gzip_file(tmp_path / "pairs.jsonl.gz", meant, meant + b"x")
    result = CliRunner().invoke(main, ["generate", str(path), "--out", str(tmp_path / "o"), "-q"])
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output and "--skip-bad" not in result.output
    assert f"Error: {path}: not a readable gzip file: damaged (CRC check failed" in result.output


def test_a_damaged_gzip_triples_file_is_reported_as_damaged_not_as_a_missing_field(tmp_path):
    from transnli.generator.record import RecordError
    from transnli.generator.triples_reader import read_any

    rows = [
        {"id": f"t{i}", "premise": f"P{i}.", "hypothesis": f"H{i}.", "modified_hypothesis": "X."}
        for i in range(5)
    ]
    meant = jsonl_bytes(rows)
    garbled = meant.replace(b'"premise"', b'"prem1se"', 1)
    path = damaged_gzip_file(tmp_path / "triples.jsonl.gz", garbled, meant)
    with pytest.raises(RecordError) as info:
        list(read_any(path))
    message = str(info.value)
    assert message.startswith(f"{path}:1: not a readable gzip file: damaged (CRC check failed")
    assert "field 'premise'" in message  # what the wrong bytes looked like, as a detail


def test_one_wanli_column_name_does_not_make_a_file_wanli(tmp_path):
    path = tmp_path / "mine.csv"
    path.write_text("premise,hypothesis,gold\nP.,H.,contradiction\n", encoding="utf-8")
    assert detect_format(path) == "csv"
    (pair,) = read_pairs(path)
    assert (pair.dataset, pair.gold_label) == ("mine", "contradiction")
    wanli = tmp_path / "test.jsonl"
    record = {"id": 1, "premise": "P.", "hypothesis": "H.", "gold": "neutral", "genre": "generated"}
    wanli.write_text(json.dumps(record) + "\n", encoding="utf-8")
    assert detect_format(wanli) == "wanli"
    assert next(read_pairs(wanli)).dataset == "wanli"
    assert next(read_pairs(wanli, dataset="wanli-subset")).dataset == "wanli-subset"


def test_columns_and_label_order(tmp_path):
    path = tmp_path / "glue.tsv"
    path.write_text("idx\tsent1\tsent2\tgold\n7\tP.\tH.\t0\n8\tP.\tH.\t2\n9\tP.\tH.\t-1\n")
    with pytest.raises(InputError, match="cannot tell the format"):
        read_pairs(path)
    order = ["contradiction", "neutral", "entailment"]
    columns = {"premise": "sent1", "hypothesis": "sent2", "label": "gold", "id": "idx"}
    pairs = list(read_pairs(path, columns=columns, label_order=order, dataset="rte"))
    assert [(p.source_id, p.gold_label, p.dataset) for p in pairs] == [
        ("7", "contradiction", "rte"), ("8", "entailment", "rte"), ("9", None, "rte"),
    ]  # fmt: skip
    with pytest.raises(InputError, match=r"glue\.tsv:2: field 'gold': .*integer labels"):
        next(read_pairs(path, columns=columns))
    with pytest.raises(ValueError, match="must name each of"):
        read_pairs(path, columns=columns, label_order=["entailment", "neutral", "neutral"])
    with pytest.raises(InputError, match=r"glue\.tsv:1: field 'nope': no such column"):
        next(read_pairs(path, columns={**columns, "premise": "nope"}))


def test_generate_cli_takes_dataset_columns_and_label_order(tmp_path):
    from click.testing import CliRunner

    from transnli.cli import main

    path = tmp_path / "pairs.csv"
    path.write_text("s1,s2,y\nA man sleeps.,A man is awake.,2\n", encoding="utf-8")
    args = ["generate", str(path), "--out", str(tmp_path / "out"), "-q", "--dataset", "mine",
            "--columns", "premise=s1,hypothesis=s2,label=y",
            "--label-order", "entailment,neutral,contradiction"]  # fmt: skip
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    triples = [json.loads(t) for t in (tmp_path / "out" / "triples.jsonl").read_text().splitlines()]
    assert triples and {(t["dataset"], t["gold_label"]) for t in triples} == {
        ("mine", "contradiction")
    }
    bad = CliRunner().invoke(main, [*args[:4], "--columns", "premise"])
    assert bad.exit_code == 2 and "ROLE=COLUMN" in bad.output


# --- hub without network ---------------------------------------------------------------------

HUB_PROBE = (
    "from transnli.generator.readers import read_pairs, InputError\n"
    "try:\n    read_pairs('hf:snli:validation')\n"
    "except InputError as e:\n    print(e)\n"
)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the socket is


@pytest.mark.parametrize(
    ("env", "reason"),
    [({"HF_ENDPOINT": f"http://127.0.0.1:{closed_port()}"}, "cannot be reached"),
     ({"HF_HUB_OFFLINE": "1"}, "offline mode is on")],
)  # fmt: skip
def test_unreachable_hub_fails_at_once_with_advice(tmp_path, env, reason):
    full = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    full.update(env, HF_HOME=str(tmp_path / "hf"))
    # The timeout guards against a hang (datasets' own retries take about 30 s), no speed target.
    out = subprocess.run([sys.executable, "-c", HUB_PROBE], env=full, cwd=tmp_path, timeout=15,
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    assert reason in out and "not in the local datasets cache" in out
    assert "pass the file path instead" in out


def test_unreachable_hub_still_serves_the_local_cache(monkeypatch):
    datasets = pytest.importorskip("datasets")
    from huggingface_hub import constants

    seen = []

    def cached(name, config=None, split=None):  # the local cache, as offline mode reads it
        seen.append((datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE))
        return [{"premise": "P.", "hypothesis": "H.", "label": 0}]

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(readers, "_hub_unreachable", lambda endpoint: "no route")
    monkeypatch.setattr(datasets, "load_dataset", cached)
    (pair,) = read_pairs("hf:snli:validation")
    assert pair.gold_label == "entailment" and seen == [(True, True)]
    assert (datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE) == (False, False)


def test_hub_probe_reports_a_closed_port():
    assert "cannot be reached" in readers._hub_unreachable(f"http://127.0.0.1:{closed_port()}")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert readers._hub_unreachable(f"http://127.0.0.1:{server.getsockname()[1]}") is None


# --- fuzzing ---------------------------------------------------------------------------------

# Text with what breaks readers: quotes, separators, line breaks, non-ASCII, empty strings.
TEXT = st.text(
    alphabet=st.one_of(
        st.sampled_from(
            ['"', "'", ",", "\t", "\n", "\r", " ", "\\", "{", "}", "é", "日", "\U0001f600"]
        ),
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
    ),
    max_size=12,
)
LABEL = st.sampled_from(["entailment", "neutral", "contradiction", "e", "n", "c", "-", ""])
ROWS = st.lists(st.tuples(TEXT, TEXT, LABEL), min_size=1, max_size=12)
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def check_accounting(path: Path, rows, status) -> None:
    """Rows are read exactly and in order, or reported: status[i] says whether row i must be
    read ("read"), may be ("maybe") or must be reported ("bad"); read + reported lines == the
    file's non-blank data lines."""
    pairs, bad = read_all(path)
    got = [(p.premise, p.hypothesis, p.gold_label) for p in pairs]
    unread = iter(got)
    following = next(unread, None)
    for (p, h, label), state in zip(rows, status, strict=True):
        if state != "bad" and following == (p, h, readers.parse_gold_label(label)):
            following = next(unread, None)
        else:
            assert state != "read", f"{(p, h, label)!r} was not read; read: {got!r}"
    assert following is None, f"{following!r} read, but no row was written so"
    lines = path.read_bytes().split(b"\n")[:-1]
    if path.suffix == ".jsonl":  # blank lines are no records: JSONL's may hold spaces
        data_lines = [line for line in lines if line.strip()]
    else:
        data_lines = [line for line in lines[1:] if line not in (b"", b"\r")]
    assert len(pairs) + bad == len(data_lines)
    if bad:
        with pytest.raises(InputError) as info:
            list(read_pairs(path))
        assert 1 <= info.value.line <= len(lines)


@FUZZ
@given(rows=ROWS, crlf=st.booleans())
def test_fuzz_csv(tmp_path, rows, crlf):
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer, lineterminator="\r\n" if crlf else "\n")
    writer.writerows([("premise", "hypothesis", "label"), *rows])
    path = tmp_path / "fuzz.csv"
    path.write_bytes(buffer.getvalue().encode("utf-8"))
    # A field with a line break spans lines, which is reported; every other row is read, except
    # that csv.writer leaves a carriage return unquoted when it ends lines with "\n" alone
    # (a row that is then reported, and may as well be).
    status = [
        "bad"
        if any("\n" in f for f in r)
        else "maybe"
        if not crlf and any("\r" in f for f in r)
        else "read"
        for r in rows
    ]
    check_accounting(path, rows, status)


@FUZZ
@given(rows=ROWS)
def test_fuzz_tsv(tmp_path, rows):
    rows = [
        tuple(f.replace("\n", " ").replace("\r", " ").replace("\t", " ") for f in r) for r in rows
    ]
    path = tmp_path / "fuzz.tsv"
    path.write_bytes(
        "".join("\t".join(r) + "\n" for r in [("premise", "hypothesis", "label"), *rows]).encode()
    )
    check_accounting(
        path, rows, ["read"] * len(rows)
    )  # no quoting: every row comes back as written


@FUZZ
@given(rows=ROWS, broken=st.sets(st.integers(0, 11), max_size=3), ascii_only=st.booleans())
def test_fuzz_jsonl(tmp_path, rows, broken, ascii_only):
    lines, status = [], []
    for i, (p, h, label) in enumerate(rows):
        line = json.dumps(
            {"premise": p, "hypothesis": h, "label": label}, ensure_ascii=ascii_only
        ).encode()
        if i in broken and i % 3 == 0:
            line = line[:-1] + b"\xff}"  # not UTF-8
        elif i in broken and i % 3 == 1:
            line = line.replace(b'"premise": "', b'"premise": "\\udc80', 1)  # a lone surrogate
        elif i in broken:
            line = line[:-1]  # truncated JSON
        status.append("bad" if i in broken else "read")
        lines.append(line)
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    check_accounting(path, rows, status)
