"""Readers: NLI pairs from local files or Hugging Face datasets, as a stream of `NLIPair`.

Supported inputs (`FORMATS`):

- ``jsonl`` / ``csv`` / ``tsv``: generic files with columns ``premise``, ``hypothesis`` and
  optional ``label`` (or ``gold_label``) and ``id``;
- ``snli`` / ``mnli``: the native files of SNLI 1.0 and MultiNLI 1.0, JSONL or the ``.txt`` TSV
  (``sentence1``, ``sentence2``, ``gold_label``, ``pairID``; gold ``-`` means no label);
- ``anli``: ANLI v1.0 JSONL (``context``, ``hypothesis``, label ``e``/``n``/``c``, ``uid``);
  the round is taken from an ``R1``/``R2``/``R3`` folder, so ``R1/test.jsonl`` is split ``test_r1``;
- ``wanli``: WANLI JSONL (``premise``, ``hypothesis``, ``gold``, ``id``);
- ``hf``: a Hugging Face dataset by name, ``hf:NAME:SPLIT`` or ``hf:NAME:CONFIG:SPLIT``
  (``hf:snli:validation``, ``hf:nyu-mll/multi_nli:validation_matched``,
  ``hf:facebook/anli:test_r1``, ``hf:alisawuffles/WANLI:test``).

The format is detected from the extension and the keys of the first record; ``format`` overrides.
A named dataset is detected only from the full set of keys its files have (WANLI: ``id``,
``premise``, ``hypothesis``, ``gold``, ``genre``); any other file is read as a generic one (which
also takes the native key names) and its records are named after the file's stem, or `dataset`.

Files are read one physical line at a time, so no record can hide another: a CSV field may not
span lines (a quote left open is reported at the line where it starts, and every line it runs
over is counted as skipped), TSV is read as SNLI/MultiNLI write it (no quote processing), and a
row with more fields than the header, or without a column the reader needs, is an error with its
line, as is text that is not UTF-8 or holds a lone surrogate.
Labels are normalised to ``entailment`` / ``neutral`` / ``contradiction`` / ``None``. Integer
labels are accepted only from Hugging Face datasets (their ClassLabel names when the dataset has
them, else the hub convention 0 entailment, 1 neutral, 2 contradiction, -1 no label), because
integer orders differ between sources; `label_order` names them for files. Files are read lazily,
one record at a time.
"""

from __future__ import annotations

import csv
import gzip
import json
import re
import socket
import threading
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from transnli.generator.jsonl import GZIP_ERRORS, damaged_gzip, gzip_damage, is_gzip_data
from transnli.generator.record import LABELS

FORMATS = ("jsonl", "csv", "tsv", "snli", "mnli", "anli", "wanli", "hf")

ENTAILMENT, NEUTRAL, CONTRADICTION = LABELS


@dataclass(frozen=True)
class NLIPair:
    source_id: str  # the dataset's own id (pairID, uid, id), or "<file stem>:<line>" when absent
    premise: str
    hypothesis: str
    gold_label: str | None  # "entailment" | "neutral" | "contradiction" | None
    dataset: str  # "snli", "mnli", "anli", "wanli", or the file's stem for generic files
    split: str  # "train", "dev", "test_r1", ... or "" when unknown
    line: int  # 1-based line (JSONL) or row (CSV/TSV, header is 1); 0 for hub datasets


class InputError(ValueError):
    """A problem with an input: the message names the source, the line and the field when known."""

    def __init__(
        self, path: str | Path, line: int | None, field: str | None, problem: str, lines: int = 1
    ):
        where = str(path) + (f":{line}" if line else "") + (f": field '{field}'" if field else "")
        super().__init__(f"{where}: {problem}")
        self.path, self.line, self.field, self.problem = str(path), line, field, problem
        self.lines = lines  # input lines the problem covers: what --skip-bad counts as skipped


@dataclass(frozen=True)
class _Schema:
    """Where each part of a pair lives in a record: candidate keys, the first present wins."""

    premise: tuple[str, ...]
    hypothesis: tuple[str, ...]
    label: tuple[str, ...]
    id: tuple[str, ...]


_NATIVE = _Schema(("sentence1",), ("sentence2",), ("gold_label",), ("pairID",))
_SCHEMAS: dict[str, _Schema] = {
    # Generic files may use any dataset's key names; the dataset is named after the file.
    "generic": _Schema(
        ("premise", "sentence1", "context"),
        ("hypothesis", "sentence2"),
        ("label", "gold_label", "gold"),
        ("id", "pairID", "uid"),
    ),
    "snli": _NATIVE,
    "mnli": _NATIVE,
    "anli": _Schema(("context",), ("hypothesis",), ("label",), ("uid",)),
    "wanli": _Schema(("premise",), ("hypothesis",), ("gold",), ("id",)),
    # Hub datasets mostly use premise/hypothesis/label; accept the native names too.
    "hf": _Schema(
        ("premise", "sentence1", "context"),
        ("hypothesis", "sentence2"),
        ("label", "gold", "gold_label"),
        ("uid", "id", "pairID", "idx"),
    ),
}

# Keys every file of a named dataset has: a dataset is recognised only from all of them, since
# one name (``gold``, ``context``) is not enough to tell a dataset from a file of one's own.
_DISTINCTIVE_KEYS = {
    "snli": {"sentence1", "sentence2", "gold_label", "pairID"},
    "anli": {"uid", "context", "hypothesis", "label"},
    "wanli": {"id", "premise", "hypothesis", "gold", "genre"},
}
ROLES = ("premise", "hypothesis", "label", "id")

# File extension (after any .gz) -> container syntax.
_CONTAINERS = {
    ".jsonl": "jsonl", ".json": "jsonl", ".ndjson": "jsonl",
    ".csv": "csv", ".tsv": "tsv", ".txt": "tsv",
}  # fmt: skip

# Hub names -> dataset name used in records (lower-case keys).
_HF_DATASETS = {
    "snli": "snli", "stanfordnlp/snli": "snli",
    "multi_nli": "mnli", "nyu-mll/multi_nli": "mnli",
    "anli": "anli", "facebook/anli": "anli",
    "alisawuffles/wanli": "wanli",
}  # fmt: skip

_LABEL_WORDS = {
    "e": ENTAILMENT, "entailment": ENTAILMENT,
    "n": NEUTRAL, "neutral": NEUTRAL,
    "c": CONTRADICTION, "contradiction": CONTRADICTION,
    "-": None, "": None,
}  # fmt: skip
_HF_INT_LABELS = {0: ENTAILMENT, 1: NEUTRAL, 2: CONTRADICTION, -1: None}

_SPLIT_WORDS = {"train", "dev", "test", "validation", "valid", "val"}


def parse_gold_label(
    value: Any, *, int_names: Mapping[int, str | None] | None = None
) -> str | None:
    """An input file's gold label `value` as "entailment" / "neutral" / "contradiction" / None;
    ValueError when unknown. Stricter than the evaluator's `labels.normalize_label`, which reads
    models' label names (LABEL_0, entail, ...): a gold label must be one of a few spellings.

    Integers are accepted only when `int_names` says what they mean (Hugging Face inputs).
    """
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in _LABEL_WORDS:
        return _LABEL_WORDS[value.strip().lower()]
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if is_int and int_names is not None and value in int_names:
        return parse_gold_label(int_names[value])
    expected = "e/n/c, entailment/neutral/contradiction, '-' or empty"
    if is_int and int_names is None:
        expected += (
            "; integer labels are read only from hf: datasets, or from files with a "
            "label order (--label-order entailment,neutral,contradiction)"
        )
    raise ValueError(f"unknown label {value!r} (expected {expected})")


def detect_format(path: str | Path) -> str:
    """The format of `path` (one of `FORMATS`), from its extension and its first record's keys.

    A named dataset (``snli``, ``mnli``, ``anli``, ``wanli``) only when the keys include every
    key its files have; any other file with premise/hypothesis keys is its container
    (``jsonl``, ``csv``, ``tsv``), read as a generic file.
    """
    if str(path).startswith("hf:"):
        return "hf"
    path = Path(path)
    container = _container(path)
    keys = _first_keys(path, container)
    if _DISTINCTIVE_KEYS["snli"] <= keys:
        name = path.name.lower()
        return "mnli" if "genre" in keys or "multinli" in name or "mnli" in name else "snli"
    for name in ("anli", "wanli"):
        if _DISTINCTIVE_KEYS[name] <= keys:
            return name
    generic = _SCHEMAS["generic"]
    if (set(generic.premise) & keys and set(generic.hypothesis) & keys) or not keys:
        return container
    raise InputError(
        path, None, None,
        f"cannot tell the format from the keys {sorted(keys)}; expected premise/hypothesis "
        f"(or the native keys of SNLI, MNLI, ANLI, WANLI); name the columns with "
        f"--columns premise=COLUMN,hypothesis=COLUMN, or pass a format ({', '.join(FORMATS)})",
    )  # fmt: skip


def read_pairs(
    source: str | Path,
    format: str | None = None,
    skip_bad: bool = False,
    bad_counter: Counter | None = None,
    *,
    dataset: str | None = None,
    columns: Mapping[str, str] | None = None,
    label_order: Sequence[str] | None = None,
) -> Iterator[NLIPair]:
    """Stream the NLI pairs of `source`: a file path, or ``hf:NAME[:CONFIG]:SPLIT``.

    The source is checked and its format resolved at the call (a missing file or an unknown
    format fails here; a hub dataset is loaded here); records are then parsed one at a time as
    the iterator is consumed. A malformed record raises `InputError`, or with `skip_bad` is
    skipped and the input lines it covers are counted in ``bad_counter["malformed"]``.

    `dataset` names the records' dataset (default: the detected dataset, else the file's stem).
    `columns` maps roles (``premise``, ``hypothesis``, ``label``, ``id``) to the file's own
    column names; a file read with it is generic unless `format` names a dataset.
    `label_order` gives the labels of the integers 0, 1, 2 (-1 is no label) in a file.
    """
    if format is not None and format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    bad_roles = sorted(set(columns or {}) - set(ROLES))
    if bad_roles:
        raise ValueError(f"unknown column role(s) {bad_roles}; choose from {', '.join(ROLES)}")
    int_names = label_order_names(label_order) if label_order else None
    text = str(source)
    if format == "hf" or text.startswith("hf:"):
        if format not in (None, "hf"):
            raise InputError(text, None, None, f"a hub source is read as 'hf', not {format!r}")
        return _read_hub(
            text if text.startswith("hf:") else f"hf:{text}", skip_bad, bad_counter,
            dataset=dataset, columns=columns, int_names=int_names,
        )  # fmt: skip
    path = Path(source)
    if not path.is_file():
        problem = "is not a file" if path.exists() else "no such file"
        raise InputError(path, None, None, problem)
    if format is None:
        try:
            format = _container(path) if columns else detect_format(path)
        except InputError as e:
            raise _gzip_or(e, path) from None
    if format in ("jsonl", "csv", "tsv"):
        container, schema_name, name = format, "generic", _stem(path)
    else:
        container, schema_name, name = _container(path), format, format
    schema = _with_columns(_SCHEMAS[schema_name], columns)
    split = _split_from_path(path, with_round=(format == "anli"))
    pairs = _read_file(
        path, container, schema, dataset or name, split, skip_bad, bad_counter, int_names
    )
    return _gzip_checked(pairs, path) if path.suffix.lower() == ".gz" else pairs


def pairs_from_hf_rows(
    rows: Iterable[Mapping[str, Any]],
    dataset: str,
    split: str = "",
    *,
    source: str | None = None,
    skip_bad: bool = False,
    bad_counter: Counter | None = None,
    name: str | None = None,
    columns: Mapping[str, str] | None = None,
    int_names: Mapping[int, str | None] | None = None,
) -> Iterator[NLIPair]:
    """NLI pairs from Hugging Face-style row dicts (a `datasets.Dataset`, or any iterable).

    Integer labels are read through `int_names` when given, else the dataset's ``ClassLabel``
    names when `rows` has them, else by the hub convention of SNLI/MNLI/ANLI: 0 entailment,
    1 neutral, 2 contradiction, -1 no label. `dataset` is the hub name; records are named
    `name`, by default `dataset` shortened (``facebook/anli`` is ``anli``); ids default to
    ``<that name>:<split>:<row index>``.
    """
    short = _HF_DATASETS.get(dataset.lower(), dataset.rsplit("/", 1)[-1].lower())
    name = name or short
    source = source or f"hf:{dataset}:{split}"
    schema = _with_columns(_SCHEMAS["hf"], columns)
    if int_names is None:
        int_names = _HF_INT_LABELS
        features = getattr(rows, "features", None) or {}
        for key in schema.label:
            names = getattr(features.get(key), "names", None)
            if names:
                int_names = {-1: None, **dict(enumerate(names))}
                break

    def convert(index: int, row: Mapping[str, Any]) -> NLIPair:
        return _to_pair(
            row, schema, where=f"{source}[{index}]", line=0,
            fallback_id=f"{short}:{split}:{index}", dataset=name, split=split, int_names=int_names,
        )  # fmt: skip

    yield from _guarded(convert, enumerate(rows), skip_bad, bad_counter)


# --- internals -------------------------------------------------------------------------------


def label_order_names(order: Sequence[str]) -> dict[int, str | None]:
    labels = [parse_gold_label(word) for word in order]
    if sorted(label or "" for label in labels) != sorted(LABELS):
        raise ValueError(
            f"label order {','.join(order)!r} must name each of {', '.join(LABELS)} once"
        )
    return {-1: None, **dict(enumerate(labels))}


def _with_columns(schema: _Schema, columns: Mapping[str, str] | None) -> _Schema:
    return replace(schema, **{role: (column,) for role, column in (columns or {}).items()})


def _read_hub(
    source: str,
    skip_bad: bool,
    bad_counter: Counter | None,
    *,
    dataset: str | None = None,
    columns: Mapping[str, str] | None = None,
    int_names: Mapping[int, str | None] | None = None,
) -> Iterator[NLIPair]:
    parts = source[len("hf:") :].split(":")
    if len(parts) not in (2, 3) or not all(parts):
        raise InputError(source, None, None, "expected hf:NAME:SPLIT or hf:NAME:CONFIG:SPLIT")
    hub_name, config, split = parts[0], (parts[1] if len(parts) == 3 else None), parts[-1]
    advice = (
        "Without hub access, download the dataset's files (e.g. SNLI/MultiNLI .jsonl, ANLI "
        "R1/test.jsonl, WANLI test.jsonl) and pass the file path instead"
    )
    offline = None
    try:
        import datasets
        from huggingface_hub import constants

        # datasets retries an unreachable hub for half a minute before it gives up; when a
        # quick connection test fails, ask only the local cache (offline mode), which answers
        # at once, with the dataset when it is there.
        if constants.is_offline_mode():
            offline = "offline mode is on (HF_HUB_OFFLINE or HF_DATASETS_OFFLINE)"
        else:
            offline = _hub_unreachable(constants.ENDPOINT)
        with _hub_offline() if offline else _no_change():
            rows = datasets.load_dataset(hub_name, config, split=split)
    except Exception as exc:  # any failure (offline, unknown name, bad split): same advice
        why = f"{type(exc).__name__}: {exc}"
        if offline and isinstance(exc, ConnectionError):  # what offline mode raises
            why = f"{offline}, and it is not in the local datasets cache"
        raise InputError(
            source, None, None,
            f"could not load {hub_name!r} split {split!r} from the Hugging Face hub ({why}). "
            f"{advice}",
        ) from exc  # fmt: skip
    return pairs_from_hf_rows(
        rows, hub_name, split, source=source, skip_bad=skip_bad, bad_counter=bad_counter,
        name=dataset, columns=columns, int_names=int_names,
    )  # fmt: skip


def _hub_unreachable(endpoint: str, timeout: float = 2.0) -> str | None:
    """Why `endpoint` (or the proxy it is reached through) cannot be reached, or None when a
    TCP connection opens within `timeout` seconds (name resolution included)."""
    url = urllib.parse.urlsplit(endpoint)
    host, port = url.hostname or "", url.port or (443 if url.scheme == "https" else 80)
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        proxy_url = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        host, port = proxy_url.hostname or "", proxy_url.port or 80
    outcome: list[OSError | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc)

    # A thread, because name resolution has no timeout of its own.
    probe = threading.Thread(target=connect, daemon=True)
    probe.start()
    probe.join(timeout + 0.5)
    if not outcome:
        return f"the hub {endpoint} did not answer within {timeout:g} s"
    if outcome[0] is not None:
        return f"the hub {endpoint} cannot be reached ({outcome[0]})"
    return None


@contextmanager
def _hub_offline():
    """datasets and huggingface_hub in offline mode (they read HF_HUB_OFFLINE at import)."""
    import datasets.config
    from huggingface_hub import constants

    saved = datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE
    datasets.config.HF_HUB_OFFLINE = constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, constants.HF_HUB_OFFLINE = saved


@contextmanager
def _no_change():
    yield


def _read_file(
    path: Path,
    container: str,
    schema: _Schema,
    dataset: str,
    split: str,
    skip_bad: bool,
    bad_counter: Counter | None,
    int_names: Mapping[int, str | None] | None = None,
) -> Iterator[NLIPair]:
    def convert(line: int, record: dict[str, Any] | InputError) -> NLIPair:
        if isinstance(record, InputError):
            raise record
        return _to_pair(
            record, schema, where=path, line=line, fallback_id=f"{_stem(path)}:{line}",
            dataset=dataset, split=split, int_names=int_names, digits=True,
        )  # fmt: skip

    if container == "jsonl":
        records = _json_records(path)
    else:
        records = _table_records(path, container, schema)
    yield from _guarded(convert, records, skip_bad, bad_counter)


def _guarded(
    convert: Callable[..., NLIPair],
    items: Iterable[tuple[Any, Any]],
    skip_bad: bool,
    bad_counter: Counter | None,
) -> Iterator[NLIPair]:
    """``convert(*item)`` for each item; an `InputError` is raised, or skipped and its lines
    counted."""
    for item in items:
        try:
            pair = convert(*item)
        except InputError as exc:
            if not skip_bad:
                raise
            if bad_counter is not None:
                bad_counter["malformed"] += exc.lines
            continue
        yield pair


def _to_pair(
    record: Mapping[str, Any],
    schema: _Schema,
    *,
    where: str | Path,
    line: int,
    fallback_id: str,
    dataset: str,
    split: str,
    int_names: Mapping[int, str | None] | None = None,
    digits: bool = False,
) -> NLIPair:
    """The pair in `record`; with `digits`, a label written as an integer string (CSV, TSV) is
    read as that integer."""

    def first(keys: tuple[str, ...]) -> tuple[str, Any]:
        for key in keys:
            if key in record:
                return key, record[key]
        return keys[0], None

    texts = []
    for keys in (schema.premise, schema.hypothesis):
        key, value = first(keys)
        if not isinstance(value, str):
            raise InputError(where, line, key, "missing or not a string")
        texts.append(_valid_text(value, where, line, key))
    key, value = first(schema.label)
    if digits and isinstance(value, str) and re.fullmatch(r"\s*-?\d+\s*", value):
        value = int(value)
    try:
        gold = parse_gold_label(value, int_names=int_names)
    except ValueError as exc:
        raise InputError(where, line, key, str(exc)) from None
    key, ident = first(schema.id)
    if isinstance(ident, str):
        ident = _valid_text(ident, where, line, key)
    source_id = fallback_id if ident is None or ident == "" else str(ident)
    return NLIPair(source_id, texts[0], texts[1], gold, dataset, split, line)


def _valid_text(text: str, where: str | Path, line: int, field: str) -> str:
    """`text`, unless it holds a lone surrogate (a JSON escape such as \\ud800 without its pair),
    which no output file could hold."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = f"\\u{ord(text[exc.start]):04x}"
        raise InputError(
            where,
            line,
            field,
            f"a lone surrogate {code} at character "
            f"{exc.start + 1} is not text; fix the escape in the file",
        ) from None
    return text


# --- lines -----------------------------------------------------------------------------------


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    """(number, bytes) of each physical line, split at ``\\n`` only; the BOM is dropped. A
    gzip stream that breaks, or gzip data in a file not named .gz, is an InputError for the
    whole file (no line of it can be trusted, so --skip-bad does not skip it)."""
    gz = path.suffix.lower() == ".gz"
    if not gz and is_gzip_data(path):
        raise InputError(
            path, None, None,
            f"gzip-compressed data; name the file .gz (e.g. {path.name}.gz) or unzip it",
        )  # fmt: skip
    try:
        with gzip.open(path, "rb") if gz else open(path, "rb") as f:
            for number, data in enumerate(f, 1):
                if number == 1 and data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
                yield number, data
    except GZIP_ERRORS as e:
        raise InputError(path, None, None, damaged_gzip(str(e) or type(e).__name__)) from None


def _gzip_checked(pairs: Iterator[NLIPair], path: Path) -> Iterator[NLIPair]:
    """`pairs` of a .gz file, where a bad record is first checked against the gzip stream: a
    damaged stream decompresses to wrong bytes long before its final check fails, and is then
    reported as what it is rather than as the bad field it made."""
    try:
        yield from pairs
    except InputError as e:
        raise _gzip_or(e, path) from None


def _gzip_or(error: InputError, path: Path) -> InputError:
    """The damaged-gzip error for `path` when its stream is damaged, else `error` itself."""
    damage = gzip_damage(path) if path.suffix.lower() == ".gz" else None
    if damage is None or "gzip" in error.problem:
        return error
    found = f"line {error.line}: " if error.line else ""
    found += (f"field '{error.field}': " if error.field else "") + error.problem
    return InputError(path, None, None, damaged_gzip(damage, found))


def _undecodable(data: bytes, exc: UnicodeDecodeError) -> str:
    return (f"not UTF-8 (byte 0x{data[exc.start]:02x} at byte {exc.start + 1} of the line); "
            "save the file as UTF-8")  # fmt: skip


def _strip_newline(text: str) -> str:
    text = text[:-1] if text.endswith("\n") else text
    return text[:-1] if text.endswith("\r") else text


def _json_records(path: Path) -> Iterator[tuple[int, Any]]:
    for line, data in _raw_lines(path):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            yield line, InputError(path, line, None, _undecodable(data, exc))
            continue
        if not text.strip():
            continue
        problem = None
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            problem = f"invalid JSON: {exc.msg} (column {exc.colno})"
        else:
            if not isinstance(record, dict):
                problem = "not a JSON object"
        yield line, InputError(path, line, None, problem) if problem else record


class _LineFeed:
    """The lines of a file for `csv.reader`, decoded; remembers where the current record started,
    its first line, the last line read, and the first line that was not UTF-8."""

    def __init__(self, path: Path):
        self._lines = _raw_lines(path)
        self.last = 0
        self.start_record()

    def start_record(self) -> None:
        self.first: str | None = None
        self.start = self.last + 1
        self.undecodable: tuple[int, str] | None = None

    def __iter__(self) -> _LineFeed:
        return self

    def __next__(self) -> str:
        self.last, data = next(self._lines)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            text = data.decode("utf-8", errors="replace")
            if self.undecodable is None:
                self.undecodable = (self.last, _undecodable(data, exc))
        if self.first is None:
            self.first = text
        if len(text) >= csv.field_size_limit():
            # The limit (128 KiB) guards against runaway fields; here no field spans lines, so
            # the longest line bounds it. It is process-wide and only ever raised.
            csv.field_size_limit(len(text) + 1)
        return text


def _csv_rows(path: Path) -> Iterator[tuple[int, list[str] | Callable[[list[str]], InputError]]]:
    """(line, fields) for each CSV record; a broken one gives (line, a function of the header
    that makes its error). Strict quoting; a record spanning lines is an error at its first line
    that covers every line it spans, and reading goes on after them."""
    feed = _LineFeed(path)
    reader = csv.reader(feed, strict=True)
    while True:
        feed.start_record()
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            row, error = None, str(exc)
        else:
            error = None
        start, end, first = feed.start, feed.last, feed.first or ""
        if row is not None and end == start and feed.undecodable is None:
            if row:  # a blank line is no record
                yield start, row
            continue
        yield start, _csv_problem(path, start, end, first, row, error, feed.undecodable)


def _csv_problem(
    path: Path,
    start: int,
    end: int,
    first: str,
    row: list[str] | None,
    error: str | None,
    undecodable: tuple[int, str] | None,
) -> Callable[[list[str]], InputError]:
    lines = end - start + 1

    def make(header: list[str]) -> InputError:
        index = _quote_fault(_strip_newline(first))
        field = header[index] if index < len(header) else f"column {index + 1}"
        fix = ("a field cannot span lines: close the quote on its line, and write a quote inside "
               'a quoted field twice ("")')  # fmt: skip
        if lines > 1:
            if error == "unexpected end of data":
                how = f"is never closed: lines {start}-{end}, the end of the file, are inside it"
            else:
                how = f"runs over lines {start}-{end}, which are skipped"
            problem = f"the quoted field that starts on this line {how}; {fix}"
            return InputError(path, start, field, problem, lines=lines)
        if undecodable is not None:
            return InputError(path, undecodable[0], None, undecodable[1])
        if error and "expected after" in error:
            problem = f"text after the closing quote of a quoted field; {fix}"
            return InputError(path, start, field, problem)
        if error and "new-line character" in error:
            problem = "a carriage return inside an unquoted field; quote the field"
            return InputError(path, start, field, problem)
        return InputError(path, start, None, f"unreadable CSV line ({error})")

    return make


def _quote_fault(text: str, delimiter: str = ",") -> int:
    """Index of the field of one CSV line whose quoting is broken, or that holds a carriage
    return unquoted (csv.Error does not say which)."""
    index, i = 0, 0
    while i < len(text):
        if text[i] == '"':
            i += 1
            while True:  # to the closing quote; "" inside is a quote
                j = text.find('"', i)
                if j < 0:
                    return index
                if text.startswith('""', j):
                    i = j + 2
                    continue
                i = j + 1
                break
            if i < len(text) and text[i] != delimiter:
                return index
        j = text.find(delimiter, i)
        if "\r" in text[i : len(text) if j < 0 else j] or j < 0:
            return index
        index, i = index + 1, j + 1
    return index


def _tsv_rows(path: Path) -> Iterator[tuple[int, list[str] | Callable[[list[str]], InputError]]]:
    """(line, fields) for each line: fields split at tabs, quotes kept as they are."""
    for line, data in _raw_lines(path):
        try:
            text = _strip_newline(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            error = InputError(path, line, None, _undecodable(data, exc))
            yield line, lambda header, error=error: error
            continue
        if text:
            yield line, text.split("\t")


def _table_records(path: Path, container: str, schema: _Schema) -> Iterator[tuple[int, Any]]:
    rows = _tsv_rows(path) if container == "tsv" else _csv_rows(path)
    first = next(rows, None)
    if first is None:
        return
    line, header = first
    if callable(header):  # a broken header: nothing after it can be read
        raise header([])
    needed = []  # the column each role reads: a row must reach it
    roles = (schema.premise, schema.hypothesis, schema.label, schema.id)
    for role, keys in zip(ROLES, roles, strict=True):
        present = [key for key in keys if key in header]
        if present:
            needed.append(header.index(present[0]))
        elif role in ("premise", "hypothesis"):
            raise InputError(path, line, keys[0], f"no such column in the header {header}")
    reach = max(needed)
    for line, row in rows:
        if callable(row):
            yield line, row(header)
        elif len(row) > len(header):
            problem = f"{len(row)} fields, but the header has {len(header)}"
            if container == "tsv":
                problem += " (a tab inside a field?)"
            yield line, InputError(path, line, None, problem)
        elif len(row) <= reach:
            problem = f"missing: the line has {len(row)} fields, the header {len(header)}"
            yield line, InputError(path, line, header[len(row)], problem)
        else:  # a row may lack trailing columns no role reads (SNLI's label2..label5)
            yield line, dict(zip(header, row, strict=False))


def _stem(path: Path) -> str:
    name = path.name[: -len(".gz")] if path.name.lower().endswith(".gz") else path.name
    return Path(name).stem


def _container(path: Path) -> str:
    name = path.name.lower().removesuffix(".gz")
    container = _CONTAINERS.get(Path(name).suffix)
    if container:
        return container
    # no known extension: sniff the first non-blank line
    first = next((data for _, data in _raw_lines(path) if data.strip()), b"")
    if first.lstrip().startswith(b"{"):
        return "jsonl"
    if b"\t" in first or b"," in first:
        return "tsv" if b"\t" in first else "csv"
    raise InputError(path, None, None, f"cannot tell the format; pass one of {', '.join(FORMATS)}")


def _first_keys(path: Path, container: str, max_lines: int = 1000) -> set[str]:
    """Keys of the first readable record (JSONL) or the header (CSV/TSV); empty when none."""
    if container != "jsonl":
        first = next(_tsv_rows(path) if container == "tsv" else _csv_rows(path), None)
        if first is None:
            return set()
        line, header = first
        if callable(header):
            raise header([])
        return set(header)
    for _, record in zip(range(max_lines), _json_records(path), strict=False):
        if isinstance(record[1], dict):
            return set(record[1])
    return set()


def _split_from_path(path: Path, with_round: bool) -> str:
    """``snli_1.0_dev`` -> dev, ``multinli_1.0_dev_matched`` -> dev_matched, ``R1/test`` ->
    test_r1."""
    words = re.split(r"[^a-z0-9]+", _stem(path).lower())
    split = ""
    for i, word in enumerate(words):
        if word in _SPLIT_WORDS:
            follow = words[i + 1] if i + 1 < len(words) else ""
            split = word + (f"_{follow}" if follow in ("matched", "mismatched") else "")
            break
    if with_round and split:
        rounds = [p.lower() for p in (*path.parent.parts, *words) if re.fullmatch(r"[rR][1-3]", p)]
        if rounds:
            split += f"_{rounds[-1]}"
    return split
