"""Run integrity of the evaluator: a model that outputs NaN, a corrupt or truncated weights file,
a damaged label or LLM reply cache, a full disk under the label cache. Each stops with one line
that names the file and the fix (or, for a full disk, goes on without losing a label)."""

import json
import shutil
import sqlite3

import pytest
from click.testing import CliRunner
from transnli.common.llm.base import LLMError, LLMReply
from transnli.common.llm.reply_cache import ReplyCache, cache_key
from transnli.evaluator import evaluate as evaluate_module
from transnli.evaluator.backends import BackendOptions, create_backend
from transnli.evaluator.cache import LabelCache
from transnli.evaluator.errors import BackendError, EvaluatorError
from transnli.evaluator.formatting import write_jsonl

from transnli.cli import main

WORDS = ["a", "man", "woman", "dog", "is", "sleeping", "awake", "happy", "sad", "old", "young"]


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


@pytest.fixture
def triples(tmp_path):
    rows = []
    for i in range(40):
        w = WORDS[i % len(WORDS)]
        v = WORDS[(i * 7 + 3) % len(WORDS)]
        rows.append(
            {
                "id": f"t{i}",
                "dataset": "demo",
                "premise": f"a {w} is {v} {i}",
                "hypothesis": f"the {v} {w} {i}",
                "modified_hypothesis": f"the {w} {v} {i}",
            }
        )
    path = tmp_path / "triples.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def evaluate(triples, model, out, *extra):
    return CliRunner().invoke(
        main,
        [
            "evaluate",
            str(triples),
            "--model",
            str(model),
            "--out",
            str(out),
            "--no-plots",
            "--no-progress",
            *extra,
        ],
    )


def garble_middle(path, n=2048):
    """Overwrite n bytes in the middle of a file with garbage (a damaged page)."""
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid : mid + n] = bytes((i * 37 + 11) % 256 for i in range(n))
    path.write_bytes(bytes(data))


# -- broken models ---------------------------------------------------------------------------------
def test_a_model_that_outputs_nan_stops_the_run(tiny_nli_model_factory, triples, tmp_path):
    folder = tiny_nli_model_factory("nan_bias", force=0, bias_size=float("nan"))
    result = evaluate(triples, folder, tmp_path / "e", "--no-cache")
    assert result.exit_code != 0
    assert f"{folder}: the model output non-finite logits (NaN or infinity)" in result.output
    assert not (tmp_path / "e" / "predictions.jsonl").exists()


def test_json_outputs_never_hold_nan(tmp_path):
    with pytest.raises(EvaluatorError, match="not a finite number"):
        write_jsonl(tmp_path / "p.jsonl", [{"probs": {"entailment": float("nan")}}])


@pytest.mark.parametrize("cut", ["half", "header"])
def test_a_truncated_or_corrupt_safetensors_file_is_named(tiny_nli_model_dir, tmp_path, cut):
    folder = tmp_path / "model"
    shutil.copytree(tiny_nli_model_dir, folder)
    weights = folder / "model.safetensors"
    data = weights.read_bytes()
    weights.write_bytes(data[: len(data) // 2] if cut == "half" else b"\x7f" * 64 + data[64:])
    with pytest.raises(
        BackendError,
        match=rf"model folder {folder}: weights file model.safetensors is "
        r"corrupt or truncated \(.+\)",
    ):
        create_backend(str(folder), BackendOptions())


# -- the caches ------------------------------------------------------------------------------------
def test_a_damaged_label_cache_names_the_file_and_the_fix(tiny_nli_model_dir, triples, tmp_path):
    cache = tmp_path / "cache"
    assert (
        evaluate(triples, tiny_nli_model_dir, tmp_path / "e", "--cache-dir", str(cache)).exit_code
        == 0
    )
    db = cache / "labels.sqlite3"
    garble_middle(db)
    result = evaluate(triples, tiny_nli_model_dir, tmp_path / "e", "--cache-dir", str(cache))
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"the label cache {db} is damaged" in result.output
    assert "delete it" in result.output and "--no-cache" in result.output


def test_a_file_that_is_not_a_database(tmp_path):
    (tmp_path / "labels.sqlite3").write_bytes(b"this is not SQLite" * 300)
    with pytest.raises(
        EvaluatorError, match=r"labels.sqlite3 is damaged \(file is not a database\)"
    ):
        LabelCache(tmp_path)


def test_a_damaged_llm_reply_cache_names_the_file_and_the_fix(tmp_path):
    path = tmp_path / "replies.sqlite3"
    cache = ReplyCache(path)
    keys = [cache_key("openai", "m", {}, f"prompt {i} " + "x" * 200) for i in range(300)]
    for i, k in enumerate(keys):
        cache.put(
            k, "openai", "m", {}, f"prompt {i} " + "x" * 200, LLMReply(f"reply {i} " + "y" * 200)
        )
    cache.close()
    garble_middle(path, 8192)
    with pytest.raises(LLMError, match=rf"the LLM reply cache {path} is damaged .*delete it"):
        ReplyCache(path).get_many(keys)


class _SmallDisk(LabelCache):
    """A label cache whose database may not grow past its current size: SQLite's own 'database or
    disk is full' on the first write of labels, as on a full disk."""

    def __init__(self, folder):
        super().__init__(folder)
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        pages = self.conn.execute("PRAGMA page_count").fetchone()[0]
        self.conn.execute(f"PRAGMA max_page_count = {pages}")


def test_a_full_disk_under_the_label_cache_loses_no_label(
    tiny_nli_model_dir, triples, tmp_path, monkeypatch
):
    monkeypatch.setattr(evaluate_module, "LabelCache", _SmallDisk)
    result = evaluate(
        triples, tiny_nli_model_dir, tmp_path / "e", "--cache-dir", str(tmp_path / "cache")
    )
    assert result.exit_code == 0, result.output
    assert "cannot grow: the disk is full" in result.output and "not cached" in result.output
    rows = [
        json.loads(line) for line in (tmp_path / "e" / "predictions.jsonl").read_text().splitlines()
    ]
    assert len(rows) == 40 and all(r["labels"]["p_h"] for r in rows)
    with sqlite3.connect(tmp_path / "cache" / "labels.sqlite3") as conn:  # the cache is still sound
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


# -- offline ---------------------------------------------------------------------------------------
def _bounded_create(spec):
    """create_backend on a thread with a hang guard (the hub client's retries took ~30 s)."""
    import threading

    box = {}

    def work():
        try:
            create_backend(spec, BackendOptions())
        except BaseException as e:  # noqa: BLE001 - inspected below
            box["error"] = e

    t = threading.Thread(target=work, daemon=True)
    t.start()
    t.join(20)
    assert not t.is_alive(), "still asking the hub after 20 s"
    return box.get("error")


def test_a_relative_model_path_that_does_not_exist_is_a_missing_folder(tmp_path, monkeypatch):
    (tmp_path / "models").mkdir()
    monkeypatch.chdir(tmp_path)
    err = _bounded_create("models/nli-base")
    assert isinstance(
        err, BackendError
    ) and "hf model folder 'models/nli-base' does not exist" in str(err)


@pytest.mark.parametrize("how", ["offline", "no_route"])
def test_a_hub_id_offline_fails_at_once(tmp_path, monkeypatch, how):
    from llm_fakes import closed_port_url

    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))  # an empty Hugging Face cache
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))
    if how == "offline":
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    else:
        monkeypatch.setenv("HF_ENDPOINT", closed_port_url().removesuffix("/v1"))
    err = _bounded_create("transnli-test/no-such-model")
    assert isinstance(err, BackendError)
    assert (
        "neither a folder here nor in the Hugging Face cache, and the hub cannot be reached"
        in str(err)
    )
