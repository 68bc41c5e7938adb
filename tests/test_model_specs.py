"""Model specs: NAME=SPEC aliases, per-model options, normalised names, --limit, run_info.json."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from transnli.evaluator.backends import BackendOptions
from transnli.evaluator.errors import BackendError
from transnli.evaluator.modelspec import parse_model_spec, parse_model_specs

from transnli.cli.evaluate import evaluate

GENERIC = {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}


@pytest.fixture(autouse=True)
def _private_default_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path / "default-cache"))


def triples_file(tmp_path, n=6):
    rows = [
        {
            "id": f"t{i}",
            "premise": "the man is happy .",
            "hypothesis": f"a man is {w} .",
            "modified_hypothesis": f"a man is not {w} .",
            "gold_label": "entailment",
        }
        for i, w in enumerate(["happy", "old", "young", "big", "small", "sad"][:n])
    ]
    path = tmp_path / "demo.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(args):
    return CliRunner().invoke(evaluate, [str(a) for a in args])


# ------------------------------------------------------------------ parsing
def test_name_and_options_are_read(tmp_path):
    spec = parse_model_spec(
        f"base=hf:{tmp_path}/?label_map=0=contradiction,1=neutral,2=entailment"
        "&dtype=bfloat16&max_length=256&revision=abc&trust_remote_code=1"
    )
    assert spec.name == "base"
    assert spec.target == f"hf:{tmp_path}"  # the trailing slash is gone
    assert dict(spec.options) == {
        "label_map": "0=contradiction,1=neutral,2=entailment",
        "dtype": "bfloat16",
        "max_length": 256,
        "revision": "abc",
        "trust_remote_code": True,
    }
    opts = spec.backend_options(BackendOptions(dtype="float32", max_length=64, batch_size=5))
    assert (opts.dtype, opts.max_length, opts.batch_size, opts.trust_remote_code) == (
        "bfloat16",
        256,
        5,
        True,
    )
    assert spec.canonical.startswith(f"hf:{tmp_path}?dtype=bfloat16&label_map=")  # sorted options


def test_default_names_are_normalised(tmp_path):
    names = {
        parse_model_spec(s).name
        for s in (f"hf:{tmp_path}", str(tmp_path), f"{tmp_path}/", f"hf:{tmp_path}/./")
    }
    assert names == {str(tmp_path)}
    assert parse_model_spec("roberta-large-mnli").name == "roberta-large-mnli"
    assert parse_model_spec("hf:org/model@v2").name == "org/model@v2"
    assert (
        parse_model_spec(f"precomputed:{tmp_path}/x.jsonl").name
        == f"precomputed:{tmp_path}/x.jsonl"
    )
    assert parse_model_spec("org/model?dtype=float16").name == "org/model?dtype=float16"
    # the same model given by two spellings is one model
    assert len(parse_model_specs([f"hf:{tmp_path}", str(tmp_path)])) == 1


@pytest.mark.parametrize(
    "text, message",
    [
        ("hf:x?colour=red", "unknown option 'colour' (known: label_map, dtype"),
        ("hf:x?dtype=float8", "dtype must be one of auto, float32, float16, bfloat16"),
        ("hf:x?max_length=4", "max_length must be at least 8"),
        ("hf:x?max_length=many", "max_length must be a whole number"),
        ("hf:x?trust_remote_code=perhaps", "trust_remote_code must be 1/0"),
        ("hf:x?label_map=0=yes", "label"),
        ("hf:x?dtype", "option 'dtype' needs a value"),
        ("hf:x?dtype=float16&dtype=float32", "given twice"),
        ("precomputed:f.jsonl?dtype=float16", "does not apply (precomputed: models take none)"),
        ("base=", "nothing after 'base='"),
    ],
)
def test_bad_specs_say_what_is_wrong(text, message):
    with pytest.raises(BackendError) as e:
        parse_model_spec(text)
    assert message in str(e.value)


def test_one_name_for_two_models_is_refused(tmp_path):
    with pytest.raises(BackendError, match="two models are named 'm'"):
        parse_model_specs([f"m=hf:{tmp_path}/a", f"m=hf:{tmp_path}/b"])


# ------------------------------------------------------------------ through `transnli evaluate`
def test_alias_names_the_model_everywhere(tmp_path, tiny_nli_entailing_model_dir):
    out = tmp_path / "out"
    res = run(
        [
            triples_file(tmp_path),
            "--model",
            f"base=hf:{tiny_nli_entailing_model_dir}",
            "--model",
            f"{tiny_nli_entailing_model_dir}/",
            "--out",
            out,
            "--no-progress",
            "--no-plots",
        ]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert [m["model"] for m in summary["models"]] == ["base", str(tiny_nli_entailing_model_dir)]
    assert [m["name"] for m in summary["provenance"]["models"]] == [
        "base",
        str(tiny_nli_entailing_model_dir),
    ]
    assert summary["provenance"]["models"][0]["spec"] == f"hf:{tiny_nli_entailing_model_dir}"
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert {p["model"] for p in preds} == {"base", str(tiny_nli_entailing_model_dir)}
    header = (out / "tables" / "table2_mutual_contradiction.csv").read_text().splitlines()[0]
    assert header == f"dataset,base,{tiny_nli_entailing_model_dir}"
    assert "- base: `hf:" in (out / "report.md").read_text()


def test_per_model_label_map_applies_to_that_model_only(tmp_path, tiny_nli_model_factory):
    # A LABEL_0..2 checkpoint that always answers index 0: the label map says what index 0 means.
    folder = tiny_nli_model_factory("generic_forced0", id2label=GENERIC, force=0)
    out = tmp_path / "out"
    res = run(
        [
            triples_file(tmp_path),
            "--out",
            out,
            "--no-progress",
            "--no-plots",
            "--label-map",
            "0=entailment,1=neutral,2=contradiction",
            "--model",
            f"as_e=hf:{folder}",
            "--model",
            f"as_c=hf:{folder}?label_map=0=contradiction,1=neutral,2=entailment",
        ]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    rates = {m["model"]: m["overall"] for m in summary["models"]}
    assert rates["as_e"]["mutual_entailment_rate"] == 1.0
    assert rates["as_c"]["mutual_contradiction_rate"] == 1.0


def test_unknown_option_is_a_one_line_error(tmp_path, tiny_nli_entailing_model_dir):
    res = run(
        [
            triples_file(tmp_path),
            "--out",
            tmp_path / "o",
            "--no-progress",
            "--model",
            f"hf:{tiny_nli_entailing_model_dir}?temprature=0",
        ]
    )
    assert res.exit_code == 1 and "Traceback" not in res.output
    assert "unknown option 'temprature'" in res.output
    assert not (tmp_path / "o").exists()


def test_revision_for_a_folder_is_refused(tmp_path, tiny_nli_entailing_model_dir):
    res = run(
        [
            triples_file(tmp_path),
            "--out",
            tmp_path / "o",
            "--no-progress",
            "--model",
            f"hf:{tiny_nli_entailing_model_dir}?revision=main",
        ]
    )
    assert res.exit_code == 1 and "a revision applies to hub models only" in res.output


def test_limit_and_run_info(tmp_path, tiny_nli_entailing_model_dir, monkeypatch):
    out = tmp_path / "out"
    # what a shell would have put in sys.argv for this run (pytest's own argv varies with how it is
    # called)
    monkeypatch.setattr(
        "sys.argv", ["/venv/bin/transnli", "evaluate", "triples.jsonl", "--limit", "4"]
    )
    res = run(
        [
            triples_file(tmp_path),
            "--limit",
            "4",
            "--out",
            out,
            "--no-progress",
            "--no-plots",
            "--model",
            f"m=hf:{tiny_nli_entailing_model_dir}?max_length=32",
            "--device",
            "cpu",
        ]
    )
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["n_triples"] == 4
    assert summary["provenance"]["triples_files"][0]["n_triples"] == 4
    assert summary["provenance"]["config"]["limit"] == 4
    assert summary["provenance"]["models"][0]["max_length"] == 32
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 4
    assert "date" not in json.dumps(summary)  # run facts stay out of summary.json

    info = json.loads((out / "run_info.json").read_text())
    assert info["date_utc"].endswith("Z") and len(info["date_utc"]) == 20
    assert set(info["versions"]) >= {
        "python",
        "torch",
        "transformers",
        "datasets",
        "spacy",
        "transnli",
    } - {"python"}
    assert info["python"] and info["versions"]["torch"]
    assert info["command_line"] == "transnli evaluate triples.jsonl --limit 4"
    (model,) = info["models"]
    assert model["name"] == "m" and model["device"] == "cpu" and model["dtype"] == "float32"
    assert model["pairs"] == model["computed"] + model["from_cache"] > 0

    # a different --limit is a different evaluation: refused without --overwrite
    again = run(
        [
            triples_file(tmp_path),
            "--limit",
            "5",
            "--out",
            out,
            "--no-progress",
            "--no-plots",
            "--model",
            f"m=hf:{tiny_nli_entailing_model_dir}?max_length=32",
        ]
    )
    assert (
        again.exit_code == 1 and "already holds the outputs of another evaluation" in again.output
    )


def test_trust_remote_code_reaches_every_loader_only_when_asked(
    tmp_path, tiny_nli_entailing_model_dir, monkeypatch
):
    import transformers
    from transnli.evaluator.backends import create_backend

    seen = []
    for cls in (
        transformers.AutoConfig,
        transformers.AutoTokenizer,
        transformers.AutoModelForSequenceClassification,
    ):
        original = cls.from_pretrained.__func__

        def spy(klass, *args, _original=original, _name=cls.__name__, **kwargs):
            seen.append((_name, kwargs.get("trust_remote_code")))
            return _original(klass, *args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    calls = {}
    for text in (
        f"hf:{tiny_nli_entailing_model_dir}?trust_remote_code=1",
        f"hf:{tiny_nli_entailing_model_dir}",
    ):
        spec = parse_model_spec(text)
        seen.clear()
        create_backend(spec.target, spec.backend_options(BackendOptions())).close()
        calls[text.endswith("=1")] = set(seen)
    loaders = {"AutoConfig", "AutoTokenizer", "AutoModelForSequenceClassification"}
    assert calls[True] == {(name, True) for name in loaders}
    assert calls[False] == {(name, None) for name in loaders}


def test_a_models_own_batch_size_wins_over_batch_size_auto(tmp_path):
    auto = BackendOptions(batch_auto=True)
    own = parse_model_spec(f"m=hf:{tmp_path}?batch_size=8").backend_options(auto)
    assert (own.batch_size, own.batch_auto) == (8, False)
    plain = parse_model_spec(f"n=hf:{tmp_path}?dtype=float32").backend_options(auto)
    assert plain.batch_auto and plain.dtype == "float32"
