import json
import subprocess
import sys

import pytest
from click.testing import CliRunner
from tiny_lm import build_tiny_causal_lm

from transnli.cli import main

LM_ROW = "acceptability: lm (gemma3-270m)"


@pytest.fixture(scope="module")
def tiny_conversion(tmp_path_factory):
    """A converted default model as setup.sh leaves it, made of a tiny LM (a cache of its own, so
    the tests hold whatever TRANSNLI_CACHE points at)."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transnli.common.lm.conversion import write_conversion

    built = build_tiny_causal_lm(tmp_path_factory.mktemp("doctor-lm") / "tiny", max_positions=64)
    cache = tmp_path_factory.mktemp("doctor-cache")
    folder = cache / "lm" / "gemma-3-270m-q4_k_m-tiny"
    folder.parent.mkdir(parents=True)
    model, tokenizer = (
        AutoModelForCausalLM.from_pretrained(built),
        AutoTokenizer.from_pretrained(built),
    )
    write_conversion(model, tokenizer, folder, {"source": "tiny.gguf", "source_sha256": "0"})
    return cache, folder


@pytest.fixture
def converted_lm(tiny_conversion, monkeypatch):
    from transnli.common.lm import conversion

    cache, folder = tiny_conversion
    monkeypatch.setenv("TRANSNLI_CACHE", str(cache))
    monkeypatch.setattr(conversion, "default_model_folder", lambda cache=None: folder)
    return folder


def test_doctor_lists_every_resource_with_status_and_fix(converted_lm):
    result = CliRunner().invoke(main, ["doctor", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}  # stdout must be clean JSON
    for name in (
        "WordNet (nltk)",
        "spaCy English model",
        "word vectors (GloVe 6B 50-d)",
        "grammar: harper",
        "grammar: languagetool",
        "acceptability: link-grammar",
        "acceptability: cola",
        "acceptability: lm (gemma3-270m)",
        "torch",
    ):
        assert name in rows and rows[name]["fix"]
    # Provisioned by scripts/setup.sh on every machine the tests run on.
    for name in (
        "WordNet (nltk)",
        "spaCy English model",
        "grammar: harper",
        "acceptability: link-grammar",
        "acceptability: lm (gemma3-270m)",
    ):
        assert rows[name]["usable"], rows[name]
    assert rows["WordNet (nltk)"]["version"] == "3.0"


def test_doctor_is_quick_and_names_commands_that_exist():
    """No slow import in the report's own process (torch runs in a child): nltk, spaCy,
    transformers and torch stay unloaded, and the fix for a missing hub model names `hf`."""
    import subprocess
    import sys

    code = (
        "import sys, json; from click.testing import CliRunner; "
        "from transnli.cli import main; r = CliRunner().invoke(main, ['doctor', '--json']); "
        "assert r.exit_code == 0, r.output; rows = json.loads(r.stdout); "
        "print(json.dumps({'heavy': [m for m in ('nltk', 'spacy', 'torch', 'transformers') "
        "if m in sys.modules], "
        "'rows': rows}))"
    )
    out = json.loads(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert out["heavy"] == []
    rows = {r["name"]: r for r in out["rows"]}
    assert rows["torch"]["usable"] and rows["torch"]["detail"].startswith("devices: cpu")
    assert rows["transformers"]["usable"] and rows["transformers"]["version"]
    assert "hf download" in rows["acceptability: cola"]["fix"]
    assert "huggingface-cli" not in json.dumps(out["rows"])


def test_doctor_deep_loads_for_real(converted_lm):
    result = CliRunner().invoke(main, ["doctor", "--json", "--deep"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows[LM_ROW]["usable"], rows[LM_ROW]  # loaded and scored a pair
    assert rows["WordNet (nltk)"]["version"] == "3.0"
    assert (
        rows["spaCy English model"]["usable"]
        and rows["grammar: harper"]["detail"] == "offline, no Java"
    )


def test_doctor_checks_model_specs_without_loading(
    tmp_path, tiny_nli_entailing_model_dir, tiny_nli_model_factory
):
    generic = tiny_nli_model_factory(
        "doctor_generic", id2label={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}
    )
    broken = tmp_path / "broken"
    broken.mkdir()
    for f in tiny_nli_entailing_model_dir.iterdir():
        (broken / f.name).write_bytes(f.read_bytes())
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:-100])  # truncated
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"premise": "a", "hypothesis": "b", "label": "entailment"}\n')
    args = [
        "doctor",
        "--json",
        "--model",
        f"good=hf:{tiny_nli_entailing_model_dir}",
        "--model",
        f"generic=hf:{generic}",
        "--model",
        f"mapped=hf:{generic}?label_map=0=contradiction,1=neutral,2=entailment",
        "--model",
        f"broken=hf:{broken}",
        "--model",
        f"labels=precomputed:{labels}",
        "--model",
        f"typo=hf:{generic}?labelmap=x",
        "--model",
        f"gone=hf:{tmp_path}/missing",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1  # some model cannot be used
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert (
        rows["model: good"]["usable"]
        and "0=contradiction, 1=neutral, 2=entailment" in rows["model: good"]["detail"]
    )
    assert "weights not loaded" in rows["model: good"]["detail"]
    assert (
        not rows["model: generic"]["usable"]
        and "placeholder labels" in rows["model: generic"]["detail"]
    )
    assert (
        rows["model: mapped"]["usable"]
        and "(from the label-map)" in rows["model: mapped"]["detail"]
    )
    assert not rows["model: broken"]["usable"] and "truncated" in rows["model: broken"]["detail"]
    assert rows["model: labels"]["usable"] and "1 labelled pairs" in rows["model: labels"]["detail"]
    typo = [r for name, r in rows.items() if "typo" in name][0]
    assert not typo["usable"] and "unknown option 'labelmap'" in typo["detail"]
    assert not rows["model: gone"]["usable"] and "does not exist" in rows["model: gone"]["detail"]

    ok = CliRunner().invoke(main, ["doctor", "--model", f"good=hf:{tiny_nli_entailing_model_dir}"])
    assert ok.exit_code == 0 and "good: usable: folder: bert model" in ok.output


def test_a_cpu_only_torch_is_reported_without_importing_it_unless_deep(monkeypatch):
    import transnli.evaluator.doctor as doc

    real = doc.dist_version("torch")
    monkeypatch.setattr(doc, "dist_version", lambda name: "2.13.0+cpu" if name == "torch" else real)
    quick = doc.TorchProbe()
    assert quick.proc is None
    row = quick.status()
    assert row.usable and row.version == "2.13.0+cpu" and "CPU-only" in row.detail
    deep = doc.TorchProbe(deep=True)  # --deep imports it for real, in the child
    assert deep.proc is not None
    row = deep.status()
    assert row.usable and row.detail.startswith("devices: cpu") and "CPU-only" not in row.detail
    monkeypatch.setattr(doc, "dist_version", lambda name: "2.13.0" if name == "torch" else real)
    cuda_build = doc.TorchProbe()  # a build that may see GPUs: always probed
    assert cuda_build.proc is not None
    cuda_build.status()


def test_doctor_says_how_to_get_the_language_model(tmp_path, monkeypatch):
    from transnli.common.lm import conversion
    from transnli.generator.doctor import run_checks

    monkeypatch.setenv("TRANSNLI_CACHE", str(tmp_path))  # nothing converted here
    monkeypatch.setattr(
        conversion, "default_model_folder", lambda cache=None: tmp_path / "lm" / "gemma"
    )
    status = {s.name: s for s in run_checks()}["acceptability: lm (gemma3-270m)"]
    # converted on first use (a pip install without setup): usable, and says what it will cost
    assert status.usable and status.version == "not converted yet"
    assert "on first use" in status.detail and "transnli setup" in status.detail
    assert "transnli setup" in status.fix and "scripts/setup.sh" not in status.fix


def test_doctor_finds_a_damaged_conversion(converted_lm, tmp_path, monkeypatch):
    """A cut model.safetensors gave a traceback in generate while doctor said ok."""
    import shutil

    from transnli.common.lm import conversion
    from transnli.generator.doctor import run_checks

    copy = tmp_path / "copy"
    shutil.copytree(converted_lm, copy)
    monkeypatch.setattr(conversion, "default_model_folder", lambda cache=None: copy)
    weights = copy / "model.safetensors"
    whole = weights.read_bytes()
    weights.write_bytes(whole[:1000])
    status = {s.name: s for s in run_checks()}[LM_ROW]
    assert not status.usable and "damaged: model.safetensors is 1000 bytes" in status.detail
    assert "transnli setup" in status.fix
    weights.write_bytes(whole[:-1] + bytes([whole[-1] ^ 0xFF]))  # same size, other bytes
    assert {s.name: s for s in run_checks()}[LM_ROW].usable  # sizes only, instantly
    deep = {s.name: s for s in run_checks(deep=True)}[LM_ROW]
    assert not deep.usable and "do not match the digest" in deep.detail


def test_doctor_checks_every_backend_evaluate_accepts():
    """One checker per registered spec prefix, and every LLM client backend understood."""
    from transnli.common.llm.clients import BACKENDS
    from transnli.evaluator.backends import registered_prefixes
    from transnli.evaluator.backends.llm import split_llm_spec
    from transnli.evaluator.doctor import SPEC_CHECKS

    # the package's own prefixes, read in a fresh process: other test files register fakes
    # (test_precomputed_cache's "counting") in this one
    listed = subprocess.run(
        [sys.executable, "-c", "from transnli.evaluator.backends import registered_prefixes as r;"
         "print(' '.join(r()))"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert set(SPEC_CHECKS) == set(listed)
    assert set(listed) <= set(registered_prefixes())
    for backend in BACKENDS:
        assert split_llm_spec(f"{backend}:some/model") == (backend, "some/model")
    assert split_llm_spec("gpt-4o-mini") == ("openai", "gpt-4o-mini")


def test_a_local_llm_judge_is_checked_as_a_folder_not_a_server(tmp_path, monkeypatch):
    """`llm:hf-causal:PATH` runs locally: doctor once said "https://api.openai.com/v1: no
    connection" for it."""
    monkeypatch.setenv("TRANSNLI_LLM_BASE_URL", "http://127.0.0.1:9")  # nothing listens there
    folder = build_tiny_causal_lm(tmp_path / "judge", max_positions=64)
    empty = tmp_path / "empty"
    empty.mkdir()
    args = ["doctor", "--json", "--model", f"local=llm:hf-causal:{folder}"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    row = {r["name"]: r for r in json.loads(result.stdout)}["model: local"]
    assert row["usable"] and "hf-causal folder" in row["detail"] and "openai" not in row["detail"]
    bad = CliRunner().invoke(main, ["doctor", "--json", "-m", f"e=llm:hf-seq2seq:{empty}"])
    row = {r["name"]: r for r in json.loads(bad.stdout)}["model: e"]
    assert bad.exit_code == 1 and not row["usable"] and "holds no weights" in row["detail"]
    server = CliRunner().invoke(main, ["doctor", "--json", "-m", "s=llm:openai:gpt-x"])
    row = {r["name"]: r for r in json.loads(server.stdout)}["model: s"]
    assert not row["usable"] and "127.0.0.1:9: no connection" in row["detail"]
    assert "llm:hf-causal:FOLDER" in row["fix"]


def test_doctor_has_a_row_for_the_default_judge_and_fails_when_the_preset_cannot_run(
    tmp_path, monkeypatch
):
    """The default preset's check is the pair judge on Gemma: its row says whether the shipped
    folder is valid and its head fits the converted model, and doctor exits 1 when the preset
    cannot run; the linear judge's row stays for `--acceptability judge`."""
    import transnli.generator.pair_judge as pair_judge_module

    pair = "acceptability: pair judge (gemma3-270m)"
    result = CliRunner().invoke(main, ["doctor", "--json", "--preset", "default"])
    assert result.exit_code == 0, result.output  # setup.sh converted Gemma on this machine
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    assert rows[pair]["usable"] and "fits gemma-3-270m" in rows[pair]["detail"]
    assert rows["acceptability: judge (gemma3-270m)"]["usable"]
    assert rows["preset: default"]["usable"]
    broken = tmp_path / "pair_judge"
    broken.mkdir()
    (broken / "pair_judge.json").write_text("{not json")
    monkeypatch.setattr(pair_judge_module, "default_pair_judge_path", lambda: broken)
    result = CliRunner().invoke(main, ["doctor", "--preset", "default"])
    assert result.exit_code == 1
    assert "pair_judge.json: not readable JSON" in result.output  # the why, beside the fix
    assert f"default preset: cannot run: {pair} not usable" in result.output
    fast = CliRunner().invoke(main, ["doctor", "--preset", "fast"])  # needs no judge
    assert fast.exit_code == 0 and "fast preset: can run here" in fast.output
    unknown = CliRunner().invoke(main, ["doctor", "--preset", "bogus"])
    assert unknown.exit_code == 1 and "unknown preset 'bogus'" in unknown.output


def test_a_judge_for_another_model_is_reported(converted_lm):
    """The tiny conversion stands in for Gemma: the shipped judge's layer and width do not fit."""
    result = CliRunner().invoke(main, ["doctor", "--json", "--preset", "default"])
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    for name in ("acceptability: judge (gemma3-270m)", "acceptability: pair judge (gemma3-270m)"):
        row = rows[name]
        assert not row["usable"] and "trained for hidden states" in row["detail"], row
    assert result.exit_code == 1
