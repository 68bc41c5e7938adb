"""Exports of a finished run (transnli.generator.publish): the declared schema, exports of two
different runs loading together, the dataset card, `transnli export` and `transnli publish`."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import yaml
from click.testing import CliRunner
from transnli.generator.filters import filter_names
from transnli.generator.output import RunWriter
from transnli.generator.publish import ExportError, export_finished, parse_kinds, publish
from transnli.generator.record import TripleRecord, read_triples
from transnli.generator.schema import CHECK_NAMES, SchemaError, normalise, triple_features
from transnli.generator.triples_reader import read_any

from transnli.cli import main

FILTERS_OK = {name: {"backend": "rules", "passed": True} for name in ("auxiliary", "light_verb")}


def record(i: int, dataset: str = "snli", **over) -> TripleRecord:
    rec = TripleRecord(
        premise=f"A woman opens door {i}.",
        hypothesis=f"A woman is here {i}.",
        modified_hypothesis=f"A man is here {i}.",
        id=f"{dataset}-{i}",
        source_id=f"s{i}",
        dataset=dataset,
        split="test",
        gold_label="entailment",
        word="woman",
        word_index=1,
        char_start=2,
        char_end=7,
        pos="NOUN",
        tag="NN",
        antonym="man",
        candidates=[{"antonym": "man", "score": 0.75}],
        checks={
            **FILTERS_OK,
            "grammar": {"backend": "harper", "passed": True, "errors_candidate": 0, "added": []},
            "acceptability": {"backend": "link-grammar", "passed": True, "null_count": 0},
        },
    )
    for k, v in over.items():
        setattr(rec, k, v)
    return rec


def rejected_grammar(i: int) -> TripleRecord:
    return record(
        i,
        checks={
            **FILTERS_OK,
            "grammar": {
                "backend": "harper",
                "passed": False,
                "errors_original": 0,
                "errors_candidate": 1,
                "added": ["AN_A: Use 'an' before a vowel"],
            },
        },
        rejected_by="grammar",
        reason="harper: 1 new error(s)",
    )


def make_run(
    folder,
    accepted,
    rejected,
    *,
    preset="default",
    filters=("auxiliary", "light_verb"),
    finish=True,
    stats=None,
):
    w = RunWriter(folder, "fp-" + folder.name)
    w.open()
    w.write_config(
        {
            "transnli_version": "0.1.0",
            "input": {"source": "in.jsonl", "format": None, "sha256": "ab" * 32},
            "config": {
                "preset": preset,
                "description": "test preset",
                "pipeline": "wordnet",
                "antonyms": "direct",
                "pos": ["NOUN"],
                "include_aux": False,
                "filters": list(filters),
                "grammar": "harper",
                "acceptability": "link-grammar",
                "max_chars": 400,
                "seed": 0,
                "limit": None,
            },
            "resources": {
                "wordnet": "wordnet-3.0",
                "spacy_model": "en_core_web_sm-3.8.0",
                "vectors": "glove-6B-50d",
                "python": "3.11.7",
                "checks": {"grammar": {"backend": "harper", "version": "harper-py 0.2.0"}},
            },
        }
    )
    w.write_batch(list(accepted), list(rejected), n_pairs=len(accepted), stats={})
    if finish:
        w.finish(
            stats
            or {
                "sentences_read": len(accepted),
                "candidates_built": len(accepted) + len(rejected),
                "rejected_filters": {"light_verb": 0},
                "rejected_grammar": len(rejected),
                "triples_accepted": len(accepted),
                "acceptance_rate": 0.8,
            }
        )
    else:
        w.close()
    return folder


def cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


# -- the schema ------------------------------------------------------------------------------------
def test_every_check_and_filter_has_a_place_in_the_schema():
    # lm_choice and max_per_sentence: the language model's choices (transnli.generator.lm_choice)
    named = {"grammar", "acceptability", "llm_answer", "lm_choice", "max_per_sentence"}
    assert set(filter_names()) | named == set(CHECK_NAMES)
    from transnli.generator.filters import filter_class, filter_summary

    # the card says what each filter of a run did, from the filter's own registration
    assert all(filter_class(name).summary == filter_summary(name) != "" for name in filter_names())
    assert filter_summary("a_filter_that_was_removed") == ""
    feats = triple_features()
    assert feats["gold_label"].names == ["entailment", "neutral", "contradiction"]
    assert list(feats["checks"]) == list(CHECK_NAMES)


def test_normalised_rows_have_every_key_with_fixed_types():
    bare = normalise({"premise": "p", "hypothesis": "h", "modified_hypothesis": "x"})
    full = normalise(rejected_grammar(1).to_dict())
    assert list(bare) == list(full) == list(triple_features())
    assert bare["gold_label"] == -1 and full["gold_label"] == 0
    assert bare["checks"]["grammar"] is None and full["checks"]["grammar"]["added"] == [
        "AN_A: Use 'an' before a vowel"
    ]
    assert list(full["checks"]["grammar"]) == list(
        full["checks"]["auxiliary"]
    )  # one shape for every check
    odd = normalise(
        {
            **record(2).to_dict(),
            "checks": {"grammar": {"backend": "x", "passed": True, "new_key": [1]}},
        }
    )
    assert odd["checks"]["grammar"]["extra"] == '{"new_key": [1]}'


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"gold_label": "yes"}, "gold_label"),
        ({"checks": {"grammar": {"backend": "harper", "passed": "no"}}}, "checks.grammar.passed"),
        ({"checks": {"spelling": {}}}, "spelling"),
        ({"candidates": [{"antonym": "man", "score": "high"}]}, "candidates[0].score"),
    ],
)
def test_records_that_do_not_fit_are_refused_naming_the_field(bad, field):
    with pytest.raises(SchemaError, match=field.replace("[", r"\[").replace("]", r"\]")):
        normalise({**record(1).to_dict(), **bad})


# -- exports of two runs load together -------------------------------------------------------------
def test_two_runs_with_different_settings_load_together(tmp_path):
    import datasets
    import pyarrow.parquet as pq

    # run 1: accepted only, no grammar additions anywhere, filters auxiliary+light_verb
    one = make_run(tmp_path / "one", [record(i) for i in range(3)], [])
    # run 2: another preset without filters or a grammar check, a rejected candidate with an added
    # error, an LLM-less record with a null score, and no gold labels
    two_acc = [
        record(
            i,
            "mnli",
            gold_label=None,
            checks={"acceptability": {"backend": "none", "passed": True}},
            candidates=[{"antonym": "man", "score": None}],
        )
        for i in range(2)
    ]
    two = make_run(tmp_path / "two", two_acc, [rejected_grammar(9)], preset="paper", filters=())
    for run in (one, two):
        assert export_finished(run, ["parquet"])
    # the old inferred schemas differed; the declared one does not
    schemas = [pq.read_schema(run / "triples.parquet") for run in (one, two)]
    assert schemas[0].equals(schemas[1], check_metadata=True)
    assert pq.read_schema(two / "rejected.parquet").equals(schemas[0])
    ds = datasets.load_dataset(
        "parquet",
        data_files=[
            str(one / "triples.parquet"),
            str(two / "triples.parquet"),
            str(two / "rejected.parquet"),
        ],
        split="train",
        cache_dir=str(tmp_path / "hf-cache"),
    )
    assert len(ds) == 6
    assert ds.features == triple_features()
    assert isinstance(ds.features["gold_label"], datasets.ClassLabel)
    assert ds["gold_label"] == [0, 0, 0, -1, -1, 0]
    assert ds[5]["checks"]["grammar"]["added"] == ["AN_A: Use 'an' before a vowel"]
    assert ds[0]["checks"]["grammar"]["added"] == [] and ds[3]["checks"]["grammar"] is None
    assert ds[3]["candidates"] == [{"antonym": "man", "score": None, "rule": None}]


def test_exports_are_deterministic_and_round_trip(tmp_path):
    runs = [
        make_run(tmp_path / name, [record(i) for i in range(4)], [rejected_grammar(7)])
        for name in ("a", "b")
    ]
    for run in runs:
        export_finished(run, ["parquet", "hf", "card"])

    def files(run):
        return {
            p.relative_to(run).as_posix(): p.read_bytes()
            for p in sorted(run.rglob("*"))
            if p.is_file() and p.name not in ("config.json", "finished.json", "run.lock")
        }

    a, b = files(runs[0]), files(runs[1])
    assert {
        "triples.parquet",
        "rejected.parquet",
        "hf_dataset/triples/state.json",
        "hub/README.md",
        "hub/data/snli/test.parquet",
        "hub/data/snli/rejected.parquet",
    } <= set(a)
    different = [name for name in a if a[name] != b.get(name)]
    # only the card differs: it names each run's own fingerprint
    assert different == ["hub/README.md"]
    # the saved HF dataset carries the declared features, a description and the citations
    import datasets

    saved = datasets.load_from_disk(str(runs[0] / "hf_dataset"))
    assert list(saved) == ["triples", "rejected"] and saved["triples"].features == triple_features()
    assert "Wu & Last (2025)" in saved["triples"].info.description
    assert "@inproceedings{wu-last-2025-transitive" in saved["triples"].info.citation
    # exporting the same run again gives the same bytes, the card included
    export_finished(runs[0], ["parquet", "hf", "card"])
    assert files(runs[0]) == a
    # Parquet and the HF folder give back the records of the JSONL files
    for jsonl, table in (
        ("rejected.jsonl", "rejected.parquet"),
        ("triples.jsonl", "triples.parquet"),
        ("triples.jsonl", "hf_dataset"),
    ):
        expected = [r.to_dict() for r in read_triples(runs[0] / jsonl)]
        assert [r.to_dict() for r in read_any(runs[0] / table)] == expected, table


# -- the card --------------------------------------------------------------------------------------
def split_card(text: str):
    assert text.startswith("---\n")
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def test_card_front_matter_and_body(tmp_path):
    run = make_run(
        tmp_path / "run", [record(i) for i in range(3)] + [record(5, "anli")], [rejected_grammar(8)]
    )
    export_finished(run, ["card"], title="My triples")
    meta, body = split_card((run / "hub" / "README.md").read_text())
    assert set(meta) == {
        "license",
        "task_categories",
        "task_ids",
        "language",
        "size_categories",
        "source_datasets",
        "tags",
        "configs",
        "pretty_name",
    }  # no dataset_info: the features are in each Parquet file (issue 38: 1,339 lines of YAML)
    front_lines = (run / "hub" / "README.md").read_text().split("---\n")[1].count("\n")
    assert front_lines < 60, front_lines
    assert meta["task_categories"] == ["text-classification"]
    assert meta["task_ids"] == ["natural-language-inference"]
    assert meta["language"] == ["en"] and meta["size_categories"] == ["n<1K"]
    assert meta["license"] == "other"  # snli and anli have different licences
    configs = {c["config_name"]: c for c in meta["configs"]}
    assert set(configs) == {"all", "anli", "snli"} and configs["all"]["default"] is True
    assert configs["snli"]["data_files"] == [
        {"split": "test", "path": "data/snli/test.parquet"},
        {"split": "rejected", "path": "data/snli/rejected.parquet"},
    ]
    assert configs["anli"]["data_files"] == [{"split": "test", "path": "data/anli/test.parquet"}]
    for c in meta["configs"]:
        for f in c["data_files"]:
            assert "*" in f["path"] or (run / "hub" / f["path"]).is_file()
    # the folder loads as the Hub would serve it: by default the `all` config, with the declared
    # features read from the files (the ClassLabel and the nested checks struct)
    import datasets

    loaded = datasets.load_dataset(str(run / "hub"), cache_dir=str(tmp_path / "hf-cache"))
    assert {k: len(v) for k, v in loaded.items()} == {"test": 4, "rejected": 1}
    assert loaded["test"].features == triple_features() == loaded["rejected"].features
    assert loaded["test"].features["gold_label"].names == ["entailment", "neutral", "contradiction"]
    snli = datasets.load_dataset(str(run / "hub"), "snli", cache_dir=str(tmp_path / "hf-cache"))
    assert {k: len(v) for k, v in snli.items()} == {"test": 3, "rejected": 1}
    # the body: what, method, preset, filters, statistics, provenance, fields, citation
    assert body.lstrip().startswith("# My triples")
    for needle in (
        "Wu & Last (2025)",
        "| preset | default |",
        "- `light_verb`:",
        "| triples accepted | 4 |",
        "| acceptance rate | 0.8 |",
        "| wordnet | wordnet-3.0 |",
        "| check grammar | harper: harper-py 0.2.0 |",
        "| gold_label | ClassLabel |",
        "@inproceedings{wu-last-2025-transitive",
        "author = {Wu, Wei and Last, Mark}",
        "@software{transnli",
        "## Limitations",
    ):
        assert needle in body, needle


def test_card_names_the_language_models_choices_and_settings(tmp_path):
    """A run with the lm check: the card shows its model and threshold, and the triples the
    language model chose against are not called filter rejections."""
    stats = {"rejected_filters": {"lm_choice": 2, "max_per_sentence": 1, "light_verb": 3}}
    run = make_run(tmp_path / "run", [record(i) for i in range(3)], [], stats=stats)
    config_path = run / "config.json"
    config = json.loads(config_path.read_text())
    config["config"].update(
        acceptability="lm", lm="gemma3-270m", lm_threshold=-9.5, lm_antonyms=2, max_per_sentence=1
    )
    config_path.write_text(json.dumps(config))
    export_finished(run, ["card"], title="LM triples")
    _, body = split_card((run / "hub" / "README.md").read_text())
    for needle in (
        "| lm | gemma3-270m |",
        "| lm_threshold | -9.5 |",
        "| lm_antonyms | 2 |",
        "| not chosen among a word's antonyms by the language model (lm_antonyms) | 2 |",
        "| over the per-sentence limit, by the language model's score (max_per_sentence) | 1 |",
        "| rejected by filter light_verb | 3 |",
    ):
        assert needle in body, needle
    assert "rejected by filter lm_choice" not in body


def test_card_of_one_dataset_takes_its_licence_and_loads_by_config(tmp_path):
    import datasets

    run = make_run(tmp_path / "run", [record(i) for i in range(2)], [])
    export_finished(run, ["card"])
    meta, _ = split_card((run / "hub" / "README.md").read_text())
    assert meta["license"] == "cc-by-sa-4.0"
    assert [c["config_name"] for c in meta["configs"]] == ["snli"] and meta["configs"][0]["default"]
    # the folder is what the Hub serves: datasets reads it by the card's configs
    ds = datasets.load_dataset(
        str(run / "hub"), "snli", split="test", cache_dir=str(tmp_path / "hf-cache")
    )
    assert ds["id"] == ["snli-0", "snli-1"] and ds.features == triple_features()


# -- the export command ----------------------------------------------------------------------------
def test_export_command_on_a_finished_run(tmp_path):
    run = make_run(tmp_path / "run", [record(i) for i in range(2)], [rejected_grammar(3)])
    before = (run / "triples.jsonl").read_bytes()
    res = cli("export", run, "--to", "parquet,hf", "--to", "card")
    assert res.exit_code == 0, res.output
    assert {p.name for p in run.iterdir()} >= {
        "triples.parquet",
        "rejected.parquet",
        "hf_dataset",
        "hub",
    }
    assert (run / "triples.jsonl").read_bytes() == before  # nothing generated again
    assert "exported" in res.output


def test_export_refuses_an_unfinished_run_and_other_folders(tmp_path):
    unfinished = make_run(tmp_path / "run", [record(0)], [], finish=False)
    res = cli("export", unfinished, "--to", "parquet")
    assert res.exit_code == 1 and "unfinished run" in res.output and "progress.json" in res.output
    assert "Traceback" not in res.output and not (unfinished / "triples.parquet").exists()
    (tmp_path / "empty").mkdir()
    res = cli("export", tmp_path / "empty", "--to", "card")
    assert res.exit_code == 1 and "not a finished transnli run" in res.output
    res = cli("export", tmp_path / "empty", "--to", "csv")
    assert res.exit_code == 1 and "unknown export kind(s) csv" in res.output


def test_an_empty_run_exports_nothing_and_publishes_nothing(tmp_path, monkeypatch):
    run = make_run(tmp_path / "run", [], [])
    res = cli("export", run, "--to", "parquet,hf,card")
    assert res.exit_code == 0 and "has no triples; nothing was exported" in res.output
    assert not any((run / name).exists() for name in ("triples.parquet", "hf_dataset", "hub"))
    monkeypatch.setenv("HF_TOKEN", "t")
    with pytest.raises(ExportError, match="holds no triples"):
        publish(run, "someone/triples", api=FakeApi())


def test_export_names_the_bad_line(tmp_path):
    run = make_run(tmp_path / "run", [record(0)], [])
    with open(run / "triples.jsonl", "a") as fh:
        fh.write(json.dumps({**record(1).to_dict(), "gold_label": "maybe"}) + "\n")
    res = cli("export", run, "--to", "parquet")
    assert res.exit_code == 1 and "triples.jsonl:2: field gold_label" in res.output


def negation(i: int) -> TripleRecord:
    """A record as the negation pipeline writes it: its one candidate names the rule."""
    return record(
        i,
        pipeline="negation",
        modified_hypothesis=f"A woman is not here {i}.",
        word="is",
        antonym="is not",
        candidates=[{"antonym": "is not", "score": None, "rule": "add_not"}],
        checks={"grammar": {"backend": "harper", "passed": True}},
    )


def test_negation_records_export_publish_and_round_trip(tmp_path, monkeypatch):
    # issue 27: `field candidates[0]: unknown key(s) rule` stopped every negation export
    accepted = [negation(0), record(1), negation(2)]  # wordnet+negation: both kinds in one run
    run = make_run(tmp_path / "run", accepted, [])
    res = cli("export", run, "--to", "parquet,hf,card")
    assert res.exit_code == 0, res.output
    expected = [r.to_dict() for r in accepted]
    for table in ("triples.parquet", "hf_dataset", "hub/data/snli/test.parquet"):
        assert [r.to_dict() for r in read_any(run / table)] == expected, table
    assert normalise(negation(0).to_dict())["candidates"][0]["rule"] == "add_not"
    monkeypatch.setenv("MY_TOKEN", "hf_secret")
    fake = FakeApi()
    publish(run, "someone/negations", token_env="MY_TOKEN", api=fake)
    assert fake.calls[-1][1]["files"] == ["README.md", "data/snli/test.parquet"]


def test_parse_kinds():
    assert parse_kinds(["card,parquet", "hf"]) == ["parquet", "hf", "card"]
    with pytest.raises(ExportError):
        parse_kinds([""])


# -- publish ---------------------------------------------------------------------------------------
class FakeApi:
    def __init__(self):
        self.calls = []

    def create_repo(self, repo_id, **kw):
        self.calls.append(("create_repo", repo_id, kw))
        return f"https://huggingface.co/datasets/{repo_id}"

    def upload_folder(self, **kw):
        from pathlib import Path

        folder = Path(kw["folder_path"])
        kw["files"] = sorted(
            p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()
        )
        kw["card"] = (folder / "README.md").read_text()
        self.calls.append(("upload_folder", kw))

    @classmethod
    def patched_in(cls, monkeypatch):
        """A fake put in place of HfApi's two methods that publish calls (the client is patched
        at its boundary), with a token in the environment."""
        import huggingface_hub

        fake = cls()
        monkeypatch.setattr(
            huggingface_hub.HfApi,
            "create_repo",
            lambda self, repo_id, **kw: fake.create_repo(repo_id),
        )
        monkeypatch.setattr(
            huggingface_hub.HfApi, "upload_folder", lambda self, **kw: fake.upload_folder(**kw)
        )
        monkeypatch.setenv("HF_TOKEN", "hf_secret")
        return fake


def test_publish_uploads_the_hub_folder(tmp_path, monkeypatch):
    import huggingface_hub

    run = make_run(tmp_path / "run", [record(i) for i in range(2)], [rejected_grammar(3)])
    fake = FakeApi()
    # the client is patched at its boundary: HfApi's two methods publish calls
    monkeypatch.setattr(
        huggingface_hub.HfApi,
        "create_repo",
        lambda self, repo_id, **kw: fake.create_repo(repo_id, **kw),
    )
    monkeypatch.setattr(
        huggingface_hub.HfApi, "upload_folder", lambda self, **kw: fake.upload_folder(**kw)
    )
    monkeypatch.setenv("MY_TOKEN", "hf_secret")
    res = cli(
        "publish", run, "--repo-id", "someone/triples", "--private", "--token-env", "MY_TOKEN"
    )
    assert res.exit_code == 0, res.output
    (name, repo, kw), (name2, up) = fake.calls
    assert name == "create_repo" and repo == "someone/triples"
    assert kw == {"repo_type": "dataset", "private": True, "exist_ok": True, "token": "hf_secret"}
    assert (
        name2 == "upload_folder"
        and up["repo_id"] == "someone/triples"
        and up["repo_type"] == "dataset"
    )
    assert up["token"] == "hf_secret"
    assert up["files"] == ["README.md", "data/snli/rejected.parquet", "data/snli/test.parquet"]
    assert 'load_dataset("someone/triples", "snli", split="test")' in up["card"]
    assert "https://huggingface.co/datasets/someone/triples" in res.output


def test_publish_without_a_token_or_a_finished_run(tmp_path, monkeypatch):
    import huggingface_hub

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no saved login
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    run = make_run(tmp_path / "run", [record(0)], [])
    res = cli("publish", run, "--repo-id", "someone/triples")
    assert res.exit_code == 1 and "no Hugging Face token: set HF_TOKEN" in res.output
    res = cli("publish", run, "--repo-id", "not a repo")
    assert res.exit_code == 1 and "USER/NAME" in res.output
    unfinished = make_run(tmp_path / "half", [record(0)], [], finish=False)
    monkeypatch.setenv("HF_TOKEN", "t")
    res = cli("publish", unfinished, "--repo-id", "someone/triples")
    assert res.exit_code == 1 and "unfinished run" in res.output


class _RefusingHub(BaseHTTPRequestHandler):
    """The Hub's create-repo endpoint answering 401, as it does for a bad token."""

    def log_message(self, *args):
        pass

    def do_POST(self):  # noqa: N802 - http.server's name
        body = json.dumps({"error": "Invalid credentials in Authorization header"}).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def test_publish_reports_an_unreachable_or_refusing_hub(tmp_path, monkeypatch):
    import socket

    from huggingface_hub import HfApi

    run = make_run(tmp_path / "run", [record(0)], [])
    monkeypatch.setenv("HF_TOKEN", "hf_bad")
    # a real client against a port nobody listens on: offline
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(ExportError, match="cannot reach the Hugging Face Hub"):
        publish(run, "someone/triples", api=HfApi(endpoint=f"http://127.0.0.1:{port}"))
    # a real client against a local server that refuses the token
    server = ThreadingHTTPServer(("127.0.0.1", 0), _RefusingHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(ExportError, match="refused the upload to someone/triples"):
            publish(
                run, "someone/triples", api=HfApi(endpoint=f"http://127.0.0.1:{server.server_port}")
            )
    finally:
        server.shutdown()


# -- real runs -------------------------------------------------------------------------------------
def test_real_runs_of_two_presets_export_and_load_together(tmp_path):
    """Every stage of two real generation runs (the default preset with its filters and checks; no
    checks but sense_fit) gives records the declared schema takes, and their exports load
    together."""
    import datasets
    from transnli.resources import resource_path

    sample = str(resource_path("samples", "snli_sample.jsonl"))
    one, two = tmp_path / "one", tmp_path / "two"
    res = cli("generate", sample, "--out", one, "-q", "--limit", "12", "--export", "card")
    assert res.exit_code == 0, res.output
    res = cli(
        "generate",
        sample,
        "--out",
        two,
        "-q",
        "--limit",
        "12",
        "--filters",
        "sense_fit",
        "--grammar",
        "none",
        "--acceptability",
        "none",
    )
    assert res.exit_code == 0, res.output
    assert (one / "hub" / "README.md").is_file() and not (two / "hub").exists()
    for run in (one, two):
        res = cli("export", run, "--to", "parquet")
        assert res.exit_code == 0, res.output
    files = [
        str(run / name)
        for run in (one, two)
        for name in ("triples.parquet", "rejected.parquet")
        if (run / name).exists()
    ]
    ds = datasets.load_dataset(
        "parquet", data_files=files, split="train", cache_dir=str(tmp_path / "hf-cache")
    )
    n = sum(
        len(list(read_triples(run / name)))
        for run in (one, two)
        for name in ("triples.jsonl", "rejected.jsonl")
    )
    assert len(ds) == n and ds.features == triple_features()
    backends = {(c["grammar"] or {}).get("backend") for c in ds["checks"]}
    assert {"harper", "none"} <= backends
    assert any(c["sense_fit"] for c in ds["checks"]) and any(c["light_verb"] for c in ds["checks"])
    meta, body = split_card((one / "hub" / "README.md").read_text())
    stats = json.loads((one / "stats.json").read_text())
    assert (
        meta["license"] == "cc-by-sa-4.0"
        and f"| triples accepted | {stats['triples_accepted']} |" in body
    )
